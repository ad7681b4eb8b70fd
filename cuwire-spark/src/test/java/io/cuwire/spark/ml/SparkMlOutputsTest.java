package io.cuwire.spark.ml;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.spark.SparkCluster;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.spark.ml.attribute.Attribute;
import org.apache.spark.ml.attribute.AttributeGroup;
import org.apache.spark.ml.attribute.NominalAttribute;
import org.apache.spark.ml.evaluation.BinaryClassificationEvaluator;
import org.apache.spark.ml.evaluation.ClusteringEvaluator;
import org.apache.spark.ml.evaluation.MulticlassClassificationEvaluator;
import org.apache.spark.ml.feature.PCAModel;
import org.apache.spark.ml.linalg.DenseMatrix;
import org.apache.spark.ml.linalg.Vector;
import org.apache.spark.ml.param.ParamMap;
import org.apache.spark.ml.regression.LinearRegressionModel;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * MLlib's outputs: classifiers' {@code rawPrediction}, {@code probability} and {@code prediction} columns that
 * Spark's evaluators take; k-means predictions as integers; PCA projecting as MLlib's does (checked against MLlib's
 * PCA on the same rows), centering an option; typed models with their fitted attributes (linear regression's
 * checked against MLlib's) and training summaries.
 */
@ExtendWith(SparkCluster.class)
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class SparkMlOutputsTest {
    /** Every row's probability vector sums to 1, its raw vector has {@code k} elements, argmax is the prediction. */
    static void assertClassifierColumns(Dataset<Row> out, int k) {
        StructType schema = out.schema();
        assertEquals(DataTypes.DoubleType, schema.apply("prediction").dataType());
        NominalAttribute prediction = (NominalAttribute) Attribute.fromStructField(schema.apply("prediction"));
        assertEquals(k, prediction.getNumValues().get());
        assertEquals(
                k, AttributeGroup.fromStructField(schema.apply("probability")).size());
        assertEquals(
                k, AttributeGroup.fromStructField(schema.apply("rawPrediction")).size());
        List<Row> rows =
                out.select("rawPrediction", "probability", "prediction").collectAsList();
        assertEquals(SparkMlTest.ROWS, rows.size());
        for (Row r : rows) {
            Vector raw = (Vector) r.get(0);
            Vector p = (Vector) r.get(1);
            assertEquals(k, raw.size());
            assertEquals(k, p.size());
            double sum = 0;
            for (double v : p.toArray()) {
                assertTrue(v >= -1e-12 && v <= 1 + 1e-12, "probability " + p);
                sum += v;
            }
            assertEquals(1.0, sum, 1e-9, "probabilities " + p);
            assertEquals(p.argmax(), (int) r.getDouble(2), "prediction is the likeliest class: " + p);
        }
    }

    @Test
    void shouldWriteBinaryLogisticRegressionMarginsAndProbabilitiesThatSparksEvaluatorsTake() {
        SparkMlTest.Data d = SparkMlTest.data(SparkCluster.session(), 2, 31);
        CuwireLogisticRegressionModel model =
                new CuwireLogisticRegression().setMaxIter(30).fit(d.frame());
        assertEquals(2, model.numClasses());
        assertEquals(4, model.numFeatures());
        assertFalse(model.isMultinomial());
        assertEquals(4, model.coefficients().size());
        assertEquals(model.coefficients().apply(2), model.coefficientMatrix().apply(0, 2), 0.0);
        assertEquals(model.intercept(), model.interceptVector().apply(0), 0.0);
        Dataset<Row> out = model.transform(d.frame());
        assertClassifierColumns(out, 2);
        for (Row r : out.select("rawPrediction", "probability").collectAsList()) {
            double[] raw = ((Vector) r.get(0)).toArray();
            assertEquals(-raw[0], raw[1], 0.0, "MLlib's binary raw prediction: [-margin, margin]");
            assertEquals(1 / (1 + Math.exp(-raw[1])), ((Vector) r.get(1)).apply(1), 1e-9, "sigmoid of the margin");
        }
        double auc = new BinaryClassificationEvaluator().evaluate(out);
        assertTrue(auc > 0.99, "area under ROC " + auc);
        double logLoss =
                new MulticlassClassificationEvaluator().setMetricName("logLoss").evaluate(out);
        assertTrue(logLoss < 0.1, "log loss " + logLoss);
        CuwireClassificationSummary summary = model.summary();
        // the summary ranks by probability, as MLlib's does; saturated probabilities tie where margins do not
        assertEquals(auc, summary.areaUnderROC(), 1e-5);
        assertEquals(
                new MulticlassClassificationEvaluator()
                        .setMetricName("accuracy")
                        .evaluate(out),
                summary.accuracy(),
                1e-12);
        assertEquals(model.estimator().nIter(), summary.totalIterations());
        // a column set to "" is not made
        Dataset<Row> only = model.copy(new ParamMap())
                .setRawPredictionCol("")
                .setProbabilityCol("")
                .transform(d.frame());
        assertFalse(List.of(only.columns()).contains("rawPrediction"));
        assertFalse(List.of(only.columns()).contains("probability"));
    }

    @Test
    void shouldWriteMllibsClassifierColumnsFromMulticlassStages() {
        SparkMlTest.Data d = SparkMlTest.data(SparkCluster.session(), 3, 32);
        CuwireLogisticRegressionModel lr =
                new CuwireLogisticRegression().setMaxIter(30).fit(d.frame());
        assertTrue(lr.isMultinomial());
        assertEquals(3, lr.coefficientMatrix().numRows());
        UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class, lr::coefficients);
        assertEquals(
                "Multinomial models contain a matrix of coefficients, use coefficientMatrix instead.", e.getMessage());
        assertClassifierColumns(lr.transform(d.frame()), 3);

        CuwireRandomForestClassificationModel forest = new CuwireRandomForestClassifier()
                .setNEstimators(5)
                .setMaxDepth(4)
                .setSeed(2)
                .fit(d.frame());
        assertEquals(5, forest.getNumTrees());
        Dataset<Row> out = forest.transform(d.frame());
        assertClassifierColumns(out, 3);
        for (Row r : out.select("rawPrediction").collectAsList()) {
            double votes = 0;
            for (double v : ((Vector) r.get(0)).toArray()) {
                votes += v;
            }
            assertEquals(5, votes, 1e-9, "a forest's raw prediction adds up to its trees");
        }
        assertTrue(
                forest.summary().accuracy() > 0.9,
                "forest accuracy " + forest.summary().accuracy());

        CuwireKNeighborsClassificationModel knn =
                new CuwireKNeighborsClassifier().setNNeighbors(4).fit(d.frame());
        assertClassifierColumns(knn.transform(d.frame()), 3);

        Dataset<Row> counts =
                d.frame().selectExpr("id", "label", "array(abs(f0), abs(f1), abs(f2), abs(f3)) as " + "features");
        assertClassifierColumns(new CuwireMultinomialNB().fit(counts).transform(counts), 3);
    }

    @Test
    void shouldPredictKMeansIntegersWithCentersAndASummary() {
        SparkMlTest.Data d = SparkMlTest.data(SparkCluster.session(), 3, 33);
        CuwireKMeansModel model = new CuwireKMeans().setNClusters(3).setSeed(5L).fit(d.frame());
        Dataset<Row> out = model.transform(d.frame());
        assertEquals(DataTypes.IntegerType, out.schema().apply("prediction").dataType());
        double silhouette = new ClusteringEvaluator().evaluate(out);
        assertTrue(silhouette > 0.8, "silhouette " + silhouette);
        Vector[] centers = model.clusterCenters();
        assertEquals(3, centers.length);
        assertArrayEquals(model.estimator().clusterCenters().toDoubleMatrix()[1], centers[1].toArray(), 0.0);
        CuwireClusteringSummary summary = model.summary();
        long rows = 0;
        for (long size : summary.clusterSizes()) {
            rows += size;
        }
        assertEquals(SparkMlTest.ROWS, rows);
        assertEquals(model.estimator().inertia(), summary.trainingCost(), 0.0);
        assertEquals(3, summary.k());
    }

    @Test
    void shouldProjectAsMllibsPcaAndCenterOnRequest() {
        SparkMlTest.Data d = SparkMlTest.data(SparkCluster.session(), 0, 34);
        CuwirePCAModel model =
                new CuwirePCA().setNComponents(2).setOutputCol("projected").fit(d.frame());
        PCAModel mllib = new org.apache.spark.ml.feature.PCA()
                .setInputCol("features")
                .setOutputCol("mllib")
                .setK(2)
                .fit(d.frame());
        DenseMatrix pc = model.pc();
        assertEquals(4, pc.numRows());
        assertEquals(2, pc.numCols());
        double[] sign = new double[2];
        for (int c = 0; c < 2; c++) {
            double dot = 0;
            for (int j = 0; j < 4; j++) {
                dot += pc.apply(j, c) * mllib.pc().apply(j, c);
            }
            sign[c] = Math.signum(dot);
            for (int j = 0; j < 4; j++) {
                assertEquals(mllib.pc().apply(j, c), sign[c] * pc.apply(j, c), 1e-6, "component " + c);
            }
        }
        assertArrayEquals(
                mllib.explainedVariance().toArray(), model.explainedVariance().toArray(), 1e-6);
        List<Row> rows = mllib.transform(model.transform(d.frame()))
                .select("projected", "mllib", "features")
                .collectAsList();
        for (int i = 0; i < rows.size(); i++) {
            double[] got = ((Vector) rows.get(i).get(0)).toArray();
            double[] want = ((Vector) rows.get(i).get(1)).toArray();
            for (int c = 0; c < 2; c++) {
                assertEquals(want[c], sign[c] * got[c], 1e-6, "row " + i + ": MLlib's projection, not centered");
            }
        }
        double[] mean = model.mean().toArray();
        List<Row> centered = model.copy(new ParamMap())
                .setCenter(true)
                .transform(d.frame())
                .select("projected", "features")
                .collectAsList();
        for (Row r : centered) {
            double[] x = ((Vector) r.get(1)).toArray();
            double[] want = new double[2];
            for (int c = 0; c < 2; c++) {
                for (int j = 0; j < 4; j++) {
                    want[c] += (x[j] - mean[j]) * pc.apply(j, c);
                }
            }
            assertArrayEquals(want, ((Vector) r.get(0)).toArray(), 1e-9, "centered: (x - mean) pc");
        }
    }

    @Test
    void shouldGiveLinearRegressionMllibsCoefficientsAndSummary(@TempDir Path dir) throws IOException {
        SparkMlTest.Data d = SparkMlTest.data(SparkCluster.session(), 0, 35);
        CuwireLinearRegressionModel model = new CuwireLinearRegression().fit(d.frame());
        LinearRegressionModel mllib = new org.apache.spark.ml.regression.LinearRegression().fit(d.frame());
        assertArrayEquals(mllib.coefficients().toArray(), model.coefficients().toArray(), 1e-6);
        assertEquals(mllib.intercept(), model.intercept(), 1e-6);
        assertEquals(mllib.numFeatures(), model.numFeatures());
        CuwireRegressionSummary summary = model.summary();
        assertEquals(mllib.summary().r2(), summary.r2(), 1e-6);
        assertEquals(mllib.summary().rootMeanSquaredError(), summary.rootMeanSquaredError(), 1e-6);
        assertEquals(mllib.summary().meanAbsoluteError(), summary.meanAbsoluteError(), 1e-6);
        assertEquals(SparkMlTest.ROWS, summary.numInstances());
        assertTrue(model.copy(new ParamMap()).hasSummary(), "copies share the summary");
        String path = dir.resolve("model").toString();
        model.write().save(path);
        CuwireLinearRegressionModel loaded = CuwireLinearRegressionModel.load(path);
        assertFalse(loaded.hasSummary());
        assertThrows(IllegalStateException.class, loaded::summary);
        assertArrayEquals(model.coefficients().toArray(), loaded.coefficients().toArray(), 0.0);
    }
}
