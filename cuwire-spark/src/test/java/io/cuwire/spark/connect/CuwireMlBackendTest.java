package io.cuwire.spark.connect;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.spark.ConnectMl;
import io.cuwire.spark.SparkCluster;
import io.cuwire.spark.TestFrames;
import io.cuwire.test.TestRandom;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.apache.spark.connect.proto.Expression;
import org.apache.spark.ml.classification.LogisticRegression;
import org.apache.spark.ml.classification.LogisticRegressionModel;
import org.apache.spark.ml.clustering.KMeans;
import org.apache.spark.ml.clustering.KMeansModel;
import org.apache.spark.ml.feature.PCA;
import org.apache.spark.ml.feature.PCAModel;
import org.apache.spark.ml.linalg.Matrix;
import org.apache.spark.ml.linalg.Vector;
import org.apache.spark.ml.regression.LinearRegression;
import org.apache.spark.ml.regression.LinearRegressionModel;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The ML backend plugin under Spark Connect's server code ({@link ConnectMl}): a client's fit of Spark's own
 * {@code LinearRegression}, {@code LogisticRegression}, {@code KMeans} and {@code PCA}, named as the client names them,
 * runs cuwire's fit where the params agree (a model without Spark's training summary, whose attributes match Spark's
 * own fit on the same rows) and Spark's where they do not (with Spark's summary, and one warning per reason).
 */
@ExtendWith(SparkCluster.class)
@Timeout(value = 4, unit = TimeUnit.MINUTES)
class CuwireMlBackendTest {
    private static final int ROWS = 1000;
    private static final Map<String, String> BACKEND =
            Map.of("spark.connect.ml.backend.classes", CuwireMlBackend.class.getName());

    @Test
    void shouldMapSparksEstimatorsAndNothingElse() {
        CuwireMlBackend b = new CuwireMlBackend();
        assertEquals(
                Optional.of(CuwireBackedLinearRegression.class.getName()),
                b.transform(LinearRegression.class.getName()));
        assertEquals(
                Optional.of(CuwireBackedLogisticRegression.class.getName()),
                b.transform(LogisticRegression.class.getName()));
        assertEquals(Optional.of(CuwireBackedKMeans.class.getName()), b.transform(KMeans.class.getName()));
        assertEquals(Optional.of(CuwireBackedPCA.class.getName()), b.transform(PCA.class.getName()));
        assertEquals(
                Optional.of(CuwireBackedRandomForestClassifier.class.getName()),
                b.transform("org.apache.spark.ml.classification.RandomForestClassifier"));
        assertEquals(
                Optional.of(CuwireBackedRandomForestRegressor.class.getName()),
                b.transform("org.apache.spark.ml.regression.RandomForestRegressor"));
        // models, loaded by their own names, and everything else stay Spark's
        assertEquals(Optional.empty(), b.transform(LinearRegressionModel.class.getName()));
        assertEquals(Optional.empty(), b.transform("org.apache.spark.ml.feature.StandardScaler"));
        assertEquals(Optional.empty(), b.transform("org.apache.spark.ml.classification.GBTClassifier"));
    }

    @Test
    void shouldFitSparksLinearRegressionOnCuwireAsSparkWould() {
        Dataset<Row> frame = regression();
        ConnectMl c = ConnectMl.session(SparkCluster.session(), BACKEND);
        c.table("train", frame);
        String id = c.fit(LinearRegression.class.getName(), Map.of("regParam", 0.0), "train");
        LinearRegressionModel onCuwire = assertInstanceOf(LinearRegressionModel.class, c.cached(id));
        assertFalse(onCuwire.hasSummary(), "Spark's own fit ran: it leaves a training summary");
        LinearRegressionModel spark = new LinearRegression().setSolver("normal").fit(frame);
        assertArrayEquals(
                spark.coefficients().toArray(), onCuwire.coefficients().toArray(), 1e-8);
        assertEquals(spark.intercept(), onCuwire.intercept(), 1e-8);
        // what a client reads: the attribute through Connect's fetch, the predictions through its transform
        Expression.Literal coefficients = c.fetch(id, "coefficients");
        assertTrue(coefficients.hasStruct(), coefficients.toString());
        double[] viaConnect = predictions(c.transform(id, "train"));
        assertArrayEquals(predictions(spark.transform(frame)), viaConnect, 1e-8);
        c.holder().mlCache().clear();
    }

    @Test
    void shouldFitSparksLogisticRegressionKMeansAndPcaOnCuwire() {
        Dataset<Row> frame = blobs();
        ConnectMl c = ConnectMl.session(SparkCluster.session(), BACKEND);
        c.table("train", frame);

        // strictly convex (L2, unstandardized): Spark's optimum and cuwire's are the same coefficients
        Map<String, Object> lrParams = Map.of("regParam", 0.01, "standardization", false, "tol", 1e-4);
        LogisticRegressionModel lr = assertInstanceOf(
                LogisticRegressionModel.class, c.cached(c.fit(LogisticRegression.class.getName(), lrParams, "train")));
        assertFalse(lr.hasSummary(), "Spark's own fit ran");
        LogisticRegressionModel sparkLr = new LogisticRegression()
                .setRegParam(0.01)
                .setStandardization(false)
                .fit(frame);
        assertEquals(3, lr.numClasses());
        assertEquals(3, lr.coefficientMatrix().numRows());
        // near one optimum: cuwire stops at a largest gradient component of 1e-4 (an iteration is a Spark job),
        // Spark at its default relative change of the loss
        assertClose(sparkLr.coefficientMatrix(), lr.coefficientMatrix(), 1e-2);

        KMeansModel km = assertInstanceOf(
                KMeansModel.class, c.cached(c.fit(KMeans.class.getName(), Map.of("k", 3, "seed", 7L), "train")));
        assertFalse(km.hasSummary(), "Spark's own fit ran");
        KMeansModel sparkKm = new KMeans().setK(3).setSeed(7).fit(frame);
        assertArrayEquals(sorted(sparkKm.clusterCenters()), sorted(km.clusterCenters()), 1e-3);

        PCAModel pca = assertInstanceOf(
                PCAModel.class,
                c.cached(c.fit(
                        PCA.class.getName(), Map.of("k", 2, "inputCol", "features", "outputCol", "pcs"), "train")));
        assertEquals(CuwireBackedPCA.class, pca.parent().getClass());
        PCAModel sparkPca =
                new PCA().setK(2).setInputCol("features").setOutputCol("pcs").fit(frame);
        assertArrayEquals(
                sparkPca.explainedVariance().toArray(), pca.explainedVariance().toArray(), 1e-8);
        double[] a = sparkPca.pc().toArray();
        double[] b = pca.pc().toArray();
        for (int col = 0; col < 2; col++) { // a component's sign is either
            double sign = Math.signum(a[col * 4]) * Math.signum(b[col * 4]);
            for (int j = 0; j < 4; j++) {
                assertEquals(a[col * 4 + j], sign * b[col * 4 + j], 1e-6, "component " + col);
            }
        }
        c.holder().mlCache().clear();
    }

    @Test
    void shouldFallBackToSparkAndSayWhyOncePerReason() {
        Dataset<Row> frame = regression();
        ConnectMl c = ConnectMl.session(SparkCluster.session(), BACKEND);
        c.table("train", frame);
        String reason = "org.apache.spark.ml.regression.LinearRegression: elasticNetParam is 0.5 (cuwire has no L1 "
                + "penalty)";
        List<String> lines = new ArrayList<>();
        Handler capture = new Handler() {
            @Override
            public void publish(LogRecord r) {
                lines.add(new java.util.logging.SimpleFormatter().formatMessage(r));
            }

            @Override
            public void flush() {}

            @Override
            public void close() {}
        };
        Logger log = Logger.getLogger(CuwireMlBackend.class.getName());
        log.addHandler(capture);
        try {
            for (int fit = 0; fit < 2; fit++) {
                String id =
                        c.fit(LinearRegression.class.getName(), Map.of("elasticNetParam", 0.5, "maxIter", 5), "train");
                LinearRegressionModel m = assertInstanceOf(LinearRegressionModel.class, c.cached(id));
                assertTrue(m.hasSummary(), "cuwire's fit ran: Spark's leaves a training summary");
                assertEquals(CuwireBackedLinearRegression.class, m.parent().getClass());
            }
        } finally {
            log.removeHandler(capture);
        }
        assertEquals(2, Agreement.logged().get(reason), Agreement.logged().toString());
        assertEquals(
                List.of("cuwire: org.apache.spark.ml.regression.LinearRegression runs on Spark's own implementation: "
                        + "elasticNetParam is 0.5 (cuwire has no L1 penalty)"),
                lines.stream().filter(l -> l.contains("elasticNetParam is 0.5")).toList());
        c.holder().mlCache().clear();
    }

    @Test
    void shouldSayEveryReasonTheParamsDisagree() {
        CuwireBackedLinearRegression lr = new CuwireBackedLinearRegression();
        assertEquals(List.of(), lr.agreement().reasons());
        lr.setWeightCol("w").setLoss("huber").setRegParam(0.1);
        assertEquals(
                List.of(
                        "weightCol is set (cuwire fits unweighted rows)",
                        "loss is huber (cuwire fits least squares)",
                        "regParam > 0 with standardization=true (cuwire penalizes the coefficients as they are)"),
                lr.agreement().reasons());
        CuwireBackedLogisticRegression log = new CuwireBackedLogisticRegression();
        assertEquals(List.of(), log.agreement().reasons());
        log.setFamily("multinomial").setElasticNetParam(0.5);
        assertEquals(
                2, log.agreement().reasons().size(), log.agreement().reasons().toString());
        CuwireBackedKMeans km = new CuwireBackedKMeans();
        assertEquals(List.of(), km.agreement().reasons());
        km.setDistanceMeasure("cosine").setInitSteps(2);
        assertEquals(
                List.of(
                        "distanceMeasure is cosine (cuwire's k-means is euclidean)",
                        "initSteps is set (cuwire's k-means|| oversamples in one round)"),
                km.agreement().reasons());
    }

    // ---------------------------------------------------------------- helpers

    /** y = x·w + 1 + noise over 4 features. */
    private static Dataset<Row> regression() {
        return TestFrames.linear("CuwireMlBackendTest.regression", ROWS, 0.3, 2);
    }

    /** Three overlapping gaussian blobs in 4 dimensions, labelled by blob. */
    private static Dataset<Row> blobs() {
        Random r = TestRandom.random("CuwireMlBackendTest.blobs");
        double[][] centers = {{3, 0, 0, 1}, {0, 3, 0, -1}, {0, 0, 3, 0}};
        double[][] x = new double[ROWS][4];
        double[] y = new double[ROWS];
        for (int i = 0; i < ROWS; i++) {
            y[i] = i % 3;
            for (int j = 0; j < 4; j++) {
                x[i][j] = centers[i % 3][j] + r.nextGaussian();
            }
        }
        return TestFrames.frame(x, y, 2);
    }

    private static double[] predictions(Dataset<Row> transformed) {
        double[] out = new double[ROWS];
        for (Row r : transformed.select("id", "prediction").collectAsList()) {
            out[(int) r.getLong(0)] = r.getDouble(1);
        }
        return out;
    }

    private static double[] sorted(Vector[] centers) {
        return Arrays.stream(centers)
                .map(Vector::toArray)
                .sorted(Comparator.comparingDouble(v -> v[0] * 100 + v[1]))
                .flatMapToDouble(Arrays::stream)
                .toArray();
    }

    private static void assertClose(Matrix expected, Matrix actual, double tolerance) {
        assertEquals(expected.numRows(), actual.numRows());
        assertEquals(expected.numCols(), actual.numCols());
        for (int i = 0; i < expected.numRows(); i++) {
            for (int j = 0; j < expected.numCols(); j++) {
                assertEquals(expected.apply(i, j), actual.apply(i, j), tolerance, "(" + i + ", " + j + ")");
            }
        }
    }
}
