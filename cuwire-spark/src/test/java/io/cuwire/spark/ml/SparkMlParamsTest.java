package io.cuwire.spark.ml;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.ml.cluster.KMeans;
import io.cuwire.ml.linear.LogisticRegression;
import io.cuwire.spark.SparkCluster;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.ml.classification.LogisticRegressionModel;
import org.apache.spark.ml.linalg.VectorUDT;
import org.apache.spark.ml.linalg.Vectors;
import org.apache.spark.ml.param.Param;
import org.apache.spark.ml.param.Params;
import org.apache.spark.ml.regression.LinearRegressionModel;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * MLlib's contract for params and labels: MLlib's names and defaults (checked against MLlib's own stages), cuwire's
 * names as aliases, typed setters that chain, values and types checked when set with Spark's messages, MLlib's
 * objective for {@code regParam} (checked against MLlib's fits), and labels checked on the driver with MLlib's
 * messages before any task of the fit runs.
 */
@ExtendWith(SparkCluster.class)
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class SparkMlParamsTest {
    private static final int ROWS = 400;

    /** {@code id}, {@code features} (3 values) and {@code label}: two overlapping classes, or a noisy linear target. */
    static Dataset<Row> frame(boolean classes, long seed) {
        Random r = new Random(seed);
        List<Row> rows = new ArrayList<>();
        for (int i = 0; i < ROWS; i++) {
            int k = i % 2;
            double[] x = {r.nextGaussian() + k, r.nextGaussian() * 2 - k, r.nextGaussian() * 0.5 + 3};
            double y = classes ? k : 1.5 * x[0] - 0.5 * x[1] + 2 * x[2] + 1 + r.nextGaussian();
            rows.add(RowFactory.create((long) i, Vectors.dense(x), y));
        }
        StructType schema = new StructType(new StructField[] {
            new StructField("id", DataTypes.LongType, false, Metadata.empty()),
            new StructField("features", new VectorUDT(), false, Metadata.empty()),
            new StructField("label", DataTypes.DoubleType, true, Metadata.empty())
        });
        JavaSparkContext jsc =
                JavaSparkContext.fromSparkContext(SparkCluster.session().sparkContext());
        return SparkCluster.session().createDataFrame(jsc.parallelize(rows, 2), schema);
    }

    /** The params {@code ours} shares by name with MLlib's {@code theirs} whose defaults differ (but those listed). */
    static List<String> defaultsDiffering(Params ours, Params theirs, Set<String> expected) {
        List<String> differ = new ArrayList<>();
        for (Param<?> p : theirs.params()) {
            if (!ours.hasParam(p.name()) || expected.contains(p.name()) || !theirs.hasDefault(p)) {
                continue;
            }
            Param<Object> mine = ours.getParam(p.name());
            Object want = theirs.getOrDefault(p);
            if (!ours.hasDefault(mine) || !want.equals(ours.getOrDefault(mine))) {
                differ.add(p.name() + ": MLlib " + want + ", cuwire "
                        + (ours.hasDefault(mine) ? ours.getOrDefault(mine) : "none"));
            }
        }
        return differ;
    }

    @Test
    void shouldGiveTheStagesMllibsNamesAndDefaults() {
        Set<String> columns = Set.of();
        // seeds: MLlib's hash their own class names; tol: cuwire's criteria differ; maxBins: a forest's bins are
        // cuwire's 256, not MLlib's 32 (documented per stage)
        assertEquals(
                List.of(),
                defaultsDiffering(new CuwireKMeans(), new org.apache.spark.ml.clustering.KMeans(), Set.of("seed")));
        assertEquals(
                List.of(),
                defaultsDiffering(
                        new CuwireLinearRegression(), new org.apache.spark.ml.regression.LinearRegression(), columns));
        assertEquals(
                List.of(),
                defaultsDiffering(
                        new CuwireLogisticRegression(),
                        new org.apache.spark.ml.classification.LogisticRegression(),
                        Set.of("tol")));
        assertEquals(
                List.of(),
                defaultsDiffering(
                        new CuwireMultinomialNB(), new org.apache.spark.ml.classification.NaiveBayes(), columns));
        assertEquals(
                List.of(),
                defaultsDiffering(
                        new CuwireRandomForestClassifier(),
                        new org.apache.spark.ml.classification.RandomForestClassifier(),
                        Set.of("seed", "maxBins")));
        assertEquals(
                List.of(),
                defaultsDiffering(
                        new CuwireRandomForestRegressor(),
                        new org.apache.spark.ml.regression.RandomForestRegressor(),
                        Set.of("seed", "maxBins")));
        assertEquals(
                List.of(),
                defaultsDiffering(new CuwirePCA(), new org.apache.spark.ml.feature.PCA(), Set.of("outputCol")));
        for (String name : List.of("k", "maxIter", "tol", "seed", "initMode")) {
            assertTrue(new CuwireKMeans().hasParam(name), name);
        }
        for (String name : List.of(
                "numTrees",
                "maxDepth",
                "featureSubsetStrategy",
                "minInstancesPerNode",
                "bootstrap",
                "seed",
                "rawPredictionCol",
                "probabilityCol")) {
            assertTrue(new CuwireRandomForestClassifier().hasParam(name), name);
        }
        for (String name : List.of("regParam", "elasticNetParam", "standardization", "maxIter", "fitIntercept")) {
            assertTrue(new CuwireLogisticRegression().hasParam(name), name);
        }
        // typed setters chain and return the stage's own type
        CuwirePCA pca = new CuwirePCA().setK(8).setOutputCol("pca").setCenter(true);
        assertEquals(8, pca.getK());
        CuwireRandomForestClassifier forest = new CuwireRandomForestClassifier()
                .setNumTrees(7)
                .setMaxDepth(3)
                .setFeatureSubsetStrategy("log2")
                .setSeed(4)
                .setLabelCol("y")
                .setProbabilityCol("p");
        assertEquals("log2", forest.getFeatureSubsetStrategy());
        assertEquals(7, forest.estimator().params().get("nEstimators"));
    }

    @Test
    void shouldTakeCuwireNamesAsAliases() {
        CuwireKMeans kmeans = new CuwireKMeans().setNClusters(4).setInit("RANDOM");
        assertEquals(4, kmeans.getK());
        assertEquals("random", kmeans.getInitMode());
        KMeans e = kmeans.estimator();
        assertEquals(4, e.params().get("nClusters"));
        assertEquals(KMeans.Init.RANDOM, e.params().get("init"));
        kmeans.setK(3);
        IllegalArgumentException both = assertThrows(IllegalArgumentException.class, kmeans::estimator);
        assertTrue(both.getMessage().contains("k is set to 3 and its cuwire alias nClusters to 4"), both.getMessage());
        assertEquals(9, new CuwireRandomForestRegressor().setNEstimators(9).getNumTrees());
        assertEquals(
                0.25,
                new CuwireMultinomialNB().setAlpha(0.25).estimator().params().get("alpha"));
        assertEquals(
                LogisticRegression.Penalty.NONE,
                new CuwireLogisticRegression().estimator().params().get("penalty"),
                "unregularized by default, as MLlib's");
        assertEquals(
                LogisticRegression.Penalty.L2,
                new CuwireLogisticRegression().setC(2).estimator().params().get("penalty"));
    }

    @Test
    void shouldCheckValuesAndTypesWhenSet(@TempDir Path dir) throws IOException {
        CuwireKMeans k = new CuwireKMeans();
        IllegalArgumentException zero = assertThrows(IllegalArgumentException.class, () -> k.setK(1));
        assertEquals(k.uid() + " parameter k given invalid value 1.", zero.getMessage());
        assertThrows(IllegalArgumentException.class, () -> k.setNClusters(0));
        assertThrows(IllegalArgumentException.class, () -> k.setInitMode("K_MEANS_PLUS_PLUS"));
        assertThrows(
                IllegalArgumentException.class,
                () -> new CuwireRandomForestClassifier().setFeatureSubsetStrategy("most"));
        assertThrows(
                IllegalArgumentException.class,
                () -> new CuwireRandomForestClassifier().setFeatureSubsetStrategy("1.5"));
        new CuwireRandomForestClassifier().setFeatureSubsetStrategy("0.5").setFeatureSubsetStrategy("3");
        assertThrows(IllegalArgumentException.class, () -> new CuwireLogisticRegression().setRegParam(-1));
        assertThrows(IllegalArgumentException.class, () -> new CuwireMultinomialNB().setModelType("bernoulli"));
        IllegalArgumentException type = assertThrows(IllegalArgumentException.class, () -> k.setParam("k", "three"));
        assertEquals(k.uid() + " parameter k takes an int, not three (String)", type.getMessage());
        NoSuchElementException missing = assertThrows(NoSuchElementException.class, () -> k.setParam("nope", 1));
        assertEquals("Param nope does not exist.", missing.getMessage());
        // an Integer seed is taken as the long it is, and the stage saves
        k.setParam("seed", 3);
        assertEquals(3L, k.getSeed());
        k.write().save(dir.resolve("kmeans").toString());
        assertEquals(3L, CuwireKMeans.load(dir.resolve("kmeans").toString()).getSeed());
    }

    @Test
    void shouldTryMllibsCountsForFeatureSubsetStrategies() {
        // cuwire tries ceil(share * features) features
        Map<String, Integer> counts = Map.of("all", 16, "sqrt", 4, "log2", 4, "onethird", 6, "0.5", 8, "3", 3);
        for (Map.Entry<String, Integer> c : counts.entrySet()) {
            double share = CuwireRandomForest.share(c.getKey(), 16, 20, true);
            assertEquals(c.getValue(), (int) Math.ceil(share * 16), c.getKey());
        }
        assertEquals(4, (int) Math.ceil(CuwireRandomForest.share("auto", 16, 20, true) * 16), "sqrt for classes");
        assertEquals(6, (int) Math.ceil(CuwireRandomForest.share("auto", 16, 20, false) * 16), "onethird");
        assertEquals(16, (int) Math.ceil(CuwireRandomForest.share("auto", 16, 1, true) * 16), "all for one tree");
        assertEquals(7, (int) Math.ceil(CuwireRandomForest.share("sqrt", 37, 20, true) * 37));
    }

    @Test
    void shouldMinimizeMllibsObjectiveWithRegParam() {
        Dataset<Row> targets = frame(false, 41);
        LinearRegressionModel mllib = new org.apache.spark.ml.regression.LinearRegression()
                .setRegParam(0.3)
                .setStandardization(false)
                .fit(targets);
        CuwireLinearRegressionModel ours = new CuwireLinearRegression()
                .setRegParam(0.3)
                .setStandardization(false)
                .fit(targets);
        assertArrayEquals(mllib.coefficients().toArray(), ours.coefficients().toArray(), 1e-6);
        assertEquals(mllib.intercept(), ours.intercept(), 1e-6);
        IllegalArgumentException standardized = assertThrows(
                IllegalArgumentException.class,
                () -> new CuwireLinearRegression().setRegParam(0.3).fit(targets));
        assertTrue(standardized.getMessage().contains("standardization"), standardized.getMessage());

        Dataset<Row> classes = frame(true, 42);
        for (double reg : new double[] {0.0, 0.05}) {
            LogisticRegressionModel theirs = new org.apache.spark.ml.classification.LogisticRegression()
                    .setRegParam(reg)
                    .setStandardization(false)
                    .setTol(1e-9)
                    .fit(classes);
            CuwireLogisticRegressionModel mine = new CuwireLogisticRegression()
                    .setRegParam(reg)
                    .setStandardization(false)
                    .setTol(1e-6)
                    .fit(classes);
            assertArrayEquals(
                    theirs.coefficients().toArray(), mine.coefficients().toArray(), 1e-3, "regParam " + reg);
            assertEquals(theirs.intercept(), mine.intercept(), 1e-3, "regParam " + reg);
        }
    }

    @Test
    void shouldCheckLabelsOnTheDriverWithMllibsMessages() {
        Dataset<Row> df = frame(true, 43);
        Dataset<Row> strings = df.selectExpr("features", "cast(label as string) as label");
        IllegalArgumentException s =
                assertThrows(IllegalArgumentException.class, () -> new CuwireLogisticRegression().fit(strings));
        assertEquals("Column label must be of type numeric but was actually of type string.", s.getMessage());
        Dataset<Row> withNull = df.selectExpr("features", "case when id = 7 then null else label end as label");
        assertEquals(
                "Labels MUST NOT be Null or NaN (column 'label': 1 row(s))",
                assertThrows(IllegalArgumentException.class, () -> new CuwireMultinomialNB().fit(withNull))
                        .getMessage());
        assertEquals(
                "Labels MUST NOT be Null or NaN (column 'label': 1 row(s))",
                assertThrows(IllegalArgumentException.class, () -> new CuwireLinearRegression().fit(withNull))
                        .getMessage());
        Dataset<Row> fractional = df.selectExpr("features", "case when id = 9 then 2.5 else label end as label");
        assertEquals(
                "Labels MUST be Integers, but got 2.5 (column 'label')",
                assertThrows(IllegalArgumentException.class, () -> new CuwireRandomForestClassifier().fit(fractional))
                        .getMessage());
        Dataset<Row> negative = df.selectExpr("features", "case when id = 9 then -1.0 else label end as label");
        assertTrue(assertThrows(IllegalArgumentException.class, () -> new CuwireKNeighborsClassifier().fit(negative))
                .getMessage()
                .startsWith("Labels MUST be in [0, 2147483647), but got -1.0"));
        Dataset<Row> negativeCounts = df.selectExpr("array(-1.0, 2.0) as features", "label");
        assertEquals(
                "Naive Bayes requires nonnegative feature values but found -1.0.",
                assertThrows(IllegalArgumentException.class, () -> new CuwireMultinomialNB().fit(negativeCounts))
                        .getMessage());
        assertEquals(
                3,
                new CuwireLinearRegression().fit(fractional).coefficients().size(),
                "a regressor takes fractional targets");
        Dataset<Row> empty = df.where("id < 0");
        for (CuwireEstimator<?, ?, ?> stage :
                List.of(new CuwireLogisticRegression(), new CuwireLinearRegression(), new CuwireKMeans())) {
            assertEquals(
                    "the data set has no rows to fit on",
                    assertThrows(IllegalArgumentException.class, () -> stage.fit(empty))
                            .getMessage(),
                    stage + ": no rows, not a label's message");
        }
    }
}
