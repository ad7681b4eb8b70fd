package io.cuwire.spark.connect;

import io.cuwire.ml.ForestLayout;
import io.cuwire.ml.ensemble.RandomForest;
import io.cuwire.spark.ml.CuwireModel;
import io.cuwire.spark.ml.CuwireRandomForest;
import java.util.List;
import org.apache.spark.ml.tree.ContinuousSplit;
import org.apache.spark.ml.tree.InternalNode;
import org.apache.spark.ml.tree.LeafNode;
import org.apache.spark.ml.tree.Node;
import org.apache.spark.ml.tree.RandomForestParams;
import org.apache.spark.ml.util.MetadataUtils$;
import org.apache.spark.mllib.tree.impurity.GiniCalculator;
import org.apache.spark.mllib.tree.impurity.ImpurityCalculator;
import org.apache.spark.mllib.tree.impurity.VarianceCalculator;
import org.apache.spark.sql.Dataset;

/**
 * cuwire's fitted trees ({@link ForestLayout.Tree}) as Spark's tree nodes, and the params both of Spark's forests
 * share where cuwire's trees do what they say.
 *
 * <p>A split is Spark's {@code ContinuousSplit} on the same feature and threshold ({@code x <= threshold} goes left
 * in both). cuwire's layout keeps per leaf its class frequencies (or its mean) and nothing about the rows that
 * reached a node, so the nodes carry what can be known: a classification leaf's statistics are its frequencies (its
 * prediction their argmax, its impurity their Gini impurity, as Spark's trees predict from the normalized statistics),
 * a regression leaf's are one row of its mean (its impurity NaN: the variance is not kept); a split's statistics are
 * the sum of its children's, its impurity and gain NaN: with no split gains, Spark's {@code featureImportances} is
 * NaN for every feature.
 */
final class SparkTrees {
    /** The most bins cuwire's histogram splits take per feature. */
    static final int MAX_BINS = 256;

    private SparkTrees() {}

    /**
     * Adds the reasons a Spark forest's params disagree with cuwire's trees to {@code a}: those both forests have.
     * {@code maxMemoryInMB}, {@code cacheNodeIds} and {@code checkpointInterval} steer Spark's implementation only.
     */
    static Agreement forest(Agreement a, RandomForestParams p, Dataset<?> dataset) {
        return a.unweighted(p.weightCol())
                .unless(
                        p.getSubsamplingRate() == 1.0,
                        "subsamplingRate is " + p.getSubsamplingRate() + " (each cuwire tree samples as many rows as "
                                + "its partition has)")
                .unless(
                        p.getMinWeightFractionPerNode() == 0.0,
                        "minWeightFractionPerNode is " + p.getMinWeightFractionPerNode()
                                + " (cuwire bounds a leaf by rows only: minInstancesPerNode)")
                .unless(
                        p.getMinInfoGain() == 0.0,
                        "minInfoGain is " + p.getMinInfoGain() + " (cuwire splits on any gain above 0)")
                .unless(
                        p.getMaxBins() <= MAX_BINS,
                        "maxBins is " + p.getMaxBins() + " (cuwire's histograms hold at most " + MAX_BINS
                                + " bins a feature)")
                .unless(
                        MetadataUtils$.MODULE$
                                .getCategoricalFeatures(dataset.schema().apply(p.getFeaturesCol()))
                                .isEmpty(),
                        "the features column marks categorical features (cuwire splits every feature as ordered "
                                + "values)");
    }

    /**
     * {@code cuwire} with the params of Spark's forest {@code p} that cuwire's forest takes as they are
     * ({@code numTrees}, {@code maxDepth}, {@code minInstancesPerNode}, {@code featureSubsetStrategy},
     * {@code bootstrap}, {@code seed}, {@code maxBins}) and its columns.
     */
    static <E extends RandomForest, S extends CuwireRandomForest<E, S, M>, M extends CuwireModel<M>> S grownAs(
            S cuwire, RandomForestParams p) {
        return cuwire.setNumTrees(p.getNumTrees())
                .setMaxDepth(p.getMaxDepth())
                .setMinInstancesPerNode(p.getMinInstancesPerNode())
                .setFeatureSubsetStrategy(p.getFeatureSubsetStrategy())
                .setBootstrap(p.getBootstrap())
                .setSeed(p.getSeed())
                .setMaxBins(p.getMaxBins())
                .setFeaturesCol(p.getFeaturesCol())
                .setLabelCol(p.getLabelCol());
    }

    /** Tree {@code t}'s nodes, from its root, for {@code classes} classes (0: a regression tree). */
    static Node root(ForestLayout.Tree t, int classes) {
        return node(t, 0, classes);
    }

    private static Node node(ForestLayout.Tree t, int at, int classes) {
        int outputs = Math.max(classes, 1);
        if (t.feature()[at] < 0) {
            double[] values = new double[outputs];
            System.arraycopy(t.values(), t.child()[at] * outputs, values, 0, outputs);
            if (classes == 0) {
                double mean = values[0];
                return new LeafNode(mean, Double.NaN, new VarianceCalculator(new double[] {1, mean, mean * mean}, 1));
            }
            ImpurityCalculator stats = new GiniCalculator(values, 1);
            return new LeafNode(stats.predict(), stats.calculate(), stats);
        }
        Node left = node(t, t.child()[at], classes);
        Node right = node(t, t.child()[at] + 1, classes);
        ImpurityCalculator stats = left.impurityStats().copy().add(right.impurityStats());
        return new InternalNode(
                stats.predict(),
                Double.NaN,
                Double.NaN,
                left,
                right,
                new ContinuousSplit(t.feature()[at], t.threshold()[at]),
                stats);
    }

    /** The trees of a fitted cuwire forest. */
    static List<ForestLayout.Tree> trees(RandomForest fitted) {
        return ForestLayout.decode(fitted.forest());
    }
}
