package io.cuwire.spark.connect;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.when;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.spark.ConnectMl;
import io.cuwire.spark.SparkCluster;
import io.cuwire.spark.TestFrames;
import io.cuwire.spark.ml.CuwireRandomForestClassificationModel;
import io.cuwire.spark.ml.CuwireRandomForestClassifier;
import io.cuwire.spark.ml.CuwireRandomForestRegressionModel;
import io.cuwire.spark.ml.CuwireRandomForestRegressor;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.spark.connect.proto.Expression;
import org.apache.spark.ml.attribute.Attribute;
import org.apache.spark.ml.attribute.AttributeGroup;
import org.apache.spark.ml.attribute.NominalAttribute;
import org.apache.spark.ml.attribute.NumericAttribute;
import org.apache.spark.ml.classification.DecisionTreeClassificationModel;
import org.apache.spark.ml.classification.RandomForestClassificationModel;
import org.apache.spark.ml.classification.RandomForestClassifier;
import org.apache.spark.ml.linalg.Vector;
import org.apache.spark.ml.regression.RandomForestRegressionModel;
import org.apache.spark.ml.regression.RandomForestRegressor;
import org.apache.spark.ml.tree.InternalNode;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Spark's random forests through the ML backend plugin under Spark Connect's server code ({@link ConnectMl}): a
 * client's fit of {@code RandomForestClassifier} or {@code RandomForestRegressor} grows cuwire's forest and hands it
 * back as Spark's own model, which predicts what cuwire's forest predicts on the same rows; each param cuwire's trees
 * cannot honour runs Spark's fit instead.
 */
@ExtendWith(SparkCluster.class)
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class CuwireBackedRandomForestTest {
    private static final int ROWS = 600;
    private static final Map<String, String> BACKEND =
            Map.of("spark.connect.ml.backend.classes", CuwireMlBackend.class.getName());
    /** The params a client sets, and cuwire's own stages below get. */
    private static final Map<String, Object> PARAMS =
            Map.of("numTrees", 6, "maxDepth", 4, "seed", 11L, "maxBins", 16, "minInstancesPerNode", 2);

    @Test
    void shouldGrowSparksClassifierOnCuwireAndPredictAsCuwiresForest() {
        Dataset<Row> frame = classes();
        ConnectMl c = ConnectMl.session(SparkCluster.session(), BACKEND);
        c.table("train", frame);
        String id = c.fit(RandomForestClassifier.class.getName(), PARAMS, "train");
        RandomForestClassificationModel spark = assertInstanceOf(RandomForestClassificationModel.class, c.cached(id));
        assertEquals(CuwireBackedRandomForestClassifier.class, spark.parent().getClass());
        assertFalse(spark.hasSummary(), "Spark's own fit ran: it leaves a training summary");

        CuwireRandomForestClassifier own = new CuwireRandomForestClassifier();
        PARAMS.forEach(own::setParam);
        try (CuwireRandomForestClassificationModel cuwire = own.fit(frame)) {
            List<Row> expected = ordered(cuwire.transform(frame));
            List<Row> viaConnect = ordered(c.transform(id, "train"));
            for (int i = 0; i < ROWS; i++) {
                assertEquals(expected.get(i).getDouble(1), viaConnect.get(i).getDouble(1), "row " + i);
                assertArrayEquals(
                        ((Vector) expected.get(i).get(2)).toArray(),
                        ((Vector) viaConnect.get(i).get(2)).toArray(),
                        1e-12,
                        "row " + i);
            }
            // Spark's model API on cuwire's trees
            assertEquals(3, spark.numClasses());
            assertEquals(4, spark.numFeatures());
            assertEquals(6, spark.getNumTrees());
            DecisionTreeClassificationModel[] trees = spark.trees();
            assertEquals(6, trees.length);
            assertEquals(cuwire.totalNumNodes(), spark.totalNumNodes());
            assertTrue(trees[0].depth() <= 4 && trees[0].rootNode() instanceof InternalNode, trees[0].toDebugString());
            assertTrue(spark.toDebugString().contains("If (feature "), spark.toDebugString());
            double[] importances = spark.featureImportances().toArray();
            assertEquals(4, importances.length);
            assertTrue(Double.isNaN(importances[0]), "no split gains: NaN, not a made-up importance");
        }
        // and through Connect's fetch, as a client reads them
        Expression.Literal nodes = c.fetch(id, "totalNumNodes");
        assertEquals(spark.totalNumNodes(), nodes.getInteger(), nodes.toString());
        assertEquals(6, c.fetch(id, "getNumTrees").getInteger());
        c.holder().mlCache().clear();
    }

    @Test
    void shouldGrowSparksRegressorOnCuwireAndPredictAsCuwiresForest() {
        Dataset<Row> frame = TestFrames.linear("CuwireBackedRandomForestTest.regression", ROWS, 0.3, 2);
        ConnectMl c = ConnectMl.session(SparkCluster.session(), BACKEND);
        c.table("train", frame);
        String id = c.fit(RandomForestRegressor.class.getName(), PARAMS, "train");
        RandomForestRegressionModel spark = assertInstanceOf(RandomForestRegressionModel.class, c.cached(id));
        assertEquals(CuwireBackedRandomForestRegressor.class, spark.parent().getClass());
        CuwireRandomForestRegressor own = new CuwireRandomForestRegressor();
        PARAMS.forEach(own::setParam);
        try (CuwireRandomForestRegressionModel cuwire = own.fit(frame)) {
            List<Row> expected = ordered(cuwire.transform(frame));
            List<Row> viaConnect = ordered(c.transform(id, "train"));
            double spread = 0;
            for (int i = 0; i < ROWS; i++) {
                assertEquals(expected.get(i).getDouble(1), viaConnect.get(i).getDouble(1), 1e-12, "row " + i);
                spread +=
                        Math.abs(expected.get(i).getDouble(1) - expected.get(0).getDouble(1));
            }
            assertTrue(spread > 0, "a forest that predicts one value for every row proves nothing");
            assertEquals(cuwire.totalNumNodes(), spark.totalNumNodes());
            assertEquals(6, spark.trees().length);
        }
        c.holder().mlCache().clear();
    }

    @Test
    void shouldFallBackToSparksForestAndSayWhy() {
        Dataset<Row> frame = classes();
        ConnectMl c = ConnectMl.session(SparkCluster.session(), BACKEND);
        c.table("train", frame);
        String reason = "org.apache.spark.ml.classification.RandomForestClassifier: impurity is entropy (cuwire's "
                + "trees split on Gini impurity)";
        for (int fit = 0; fit < 2; fit++) {
            String id = c.fit(
                    RandomForestClassifier.class.getName(),
                    Map.of("numTrees", 3, "maxDepth", 3, "impurity", "entropy"),
                    "train");
            RandomForestClassificationModel m = assertInstanceOf(RandomForestClassificationModel.class, c.cached(id));
            assertTrue(m.hasSummary(), "cuwire's fit ran: Spark's leaves a training summary");
            assertTrue(m.featureImportances().toArray()[0] >= 0, "Spark's trees have their gains");
        }
        assertEquals(2, Agreement.logged().get(reason), Agreement.logged().toString());
        c.holder().mlCache().clear();
    }

    @Test
    void shouldSayEveryReasonAForestsParamsDisagree() {
        Dataset<Row> frame = classes();
        CuwireBackedRandomForestClassifier rfc = new CuwireBackedRandomForestClassifier();
        assertEquals(List.of(), rfc.agreement(frame).reasons());
        rfc.setImpurity("entropy")
                .setWeightCol("w")
                .setSubsamplingRate(0.5)
                .setMinWeightFractionPerNode(0.1)
                .setMinInfoGain(0.01)
                .setMaxBins(1000);
        assertEquals(
                List.of(
                        "impurity is entropy (cuwire's trees split on Gini impurity)",
                        "weightCol is set (cuwire fits unweighted rows)",
                        "subsamplingRate is 0.5 (each cuwire tree samples as many rows as its partition has)",
                        "minWeightFractionPerNode is 0.1 (cuwire bounds a leaf by rows only: minInstancesPerNode)",
                        "minInfoGain is 0.01 (cuwire splits on any gain above 0)",
                        "maxBins is 1000 (cuwire's histograms hold at most 256 bins a feature)"),
                rfc.agreement(frame).reasons());
        CuwireBackedRandomForestRegressor rfr = new CuwireBackedRandomForestRegressor();
        rfr.setMaxBins(256);
        assertEquals(List.of(), rfr.agreement(frame).reasons());
        Attribute[] features = {
            NominalAttribute.defaultAttr().withNumValues(3),
            NumericAttribute.defaultAttr(),
            NumericAttribute.defaultAttr(),
            NumericAttribute.defaultAttr()
        };
        Dataset<Row> categorical = frame.withColumn(
                "features", col("features").as("features", new AttributeGroup("features", features).toMetadata()));
        assertEquals(
                List.of("the features column marks categorical features (cuwire splits every feature as ordered "
                        + "values)"),
                rfr.agreement(categorical).reasons());
    }

    // ---------------------------------------------------------------- helpers

    /** Three classes cut from a linear target over 4 features, in 2 slices. */
    private static Dataset<Row> classes() {
        Dataset<Row> linear = TestFrames.linear("CuwireBackedRandomForestTest.classes", ROWS, 0.5, 2);
        return linear.withColumn(
                "label",
                when(col("label").gt(3), 2.0).when(col("label").gt(-1), 1.0).otherwise(0.0));
    }

    /** {@code id}, {@code prediction} and, for a classifier, {@code probability}, in the order of {@code id}. */
    private static List<Row> ordered(Dataset<Row> transformed) {
        boolean classifier = List.of(transformed.columns()).contains("probability");
        return (classifier
                        ? transformed.select("id", "prediction", "probability")
                        : transformed.select("id", "prediction"))
                .orderBy("id")
                .collectAsList();
    }
}
