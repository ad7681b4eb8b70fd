package io.cuwire.spark.ml;

import io.cuwire.ml.ensemble.RandomForest;
import io.cuwire.spark.internal.SparkPartitions;
import java.io.Serial;
import java.io.Serializable;
import java.util.Locale;
import java.util.Map;
import org.apache.spark.ml.param.BooleanParam;
import org.apache.spark.ml.param.DoubleParam;
import org.apache.spark.ml.param.IntParam;
import org.apache.spark.ml.param.LongParam;
import org.apache.spark.ml.param.Param;
import org.apache.spark.ml.param.ParamValidators;
import scala.runtime.AbstractFunction1;

/**
 * The params both random-forest stages share: MLlib's {@code numTrees} (20), {@code maxDepth} (5),
 * {@code minInstancesPerNode}, {@code featureSubsetStrategy} ({@code auto}), {@code bootstrap} and {@code seed};
 * cuwire's {@code nEstimators}, {@code minSamplesLeaf} and {@code maxFeatures} as aliases; cuwire's
 * {@code minSamplesSplit} and {@code maxBins} (256: a feature's bins are at most 256 of its partition's quantiles;
 * MLlib's default is 32). Each Spark partition grows its share of the trees on its own rows (partition {@code i}
 * of {@code n} the trees {@code numTrees * i / n} up to the next partition's, tree {@code t} seeded
 * {@code seed + t}); the driver concatenates them. The forest depends on how the rows are partitioned: the same
 * partitions give the same forest.
 *
 * @param <E> the cuwire forest
 * @param <S> the concrete stage
 * @param <M> the model it fits
 */
public abstract class CuwireRandomForest<
                E extends RandomForest, S extends CuwireRandomForest<E, S, M>, M extends CuwireModel<M>>
        extends CuwirePredictor<E, S, M> {
    private final IntParam numTrees;
    private final IntParam maxDepth;
    private final IntParam minInstancesPerNode;
    private final Param<String> featureSubsetStrategy;
    private final BooleanParam bootstrap;
    private final LongParam seed;
    private final IntParam nEstimators;
    private final IntParam minSamplesLeaf;
    private final DoubleParam maxFeatures;
    private final IntParam minSamplesSplit;
    private final IntParam maxBins;

    /** A stage with {@code uid}. */
    @SuppressWarnings("this-escape") // Spark params name their parent at construction
    CuwireRandomForest(String uid) {
        super(uid);
        this.numTrees = new IntParam(
                this, "numTrees", "the number of trees in the whole forest (>= 1)", ParamValidators.gtEq(1));
        this.maxDepth =
                new IntParam(this, "maxDepth", "the deepest a tree grows (>= 0; 0: one leaf)", ParamValidators.gtEq(0));
        this.minInstancesPerNode =
                new IntParam(this, "minInstancesPerNode", "the fewest rows in a leaf (>= 1)", ParamValidators.gtEq(1));
        this.featureSubsetStrategy = new Param<>(
                this,
                "featureSubsetStrategy",
                "the features tried at each split: "
                        + "auto (sqrt for a classifier, onethird for a regressor, all for one tree), all, sqrt, log2, "
                        + "onethird, a share in (0, 1] or a count",
                new FeatureSubsetStrategy());
        this.bootstrap =
                new BooleanParam(this, "bootstrap", "whether each tree sees a bootstrap sample of its " + "partition");
        this.seed = new LongParam(this, "seed", "the random seed; tree t uses seed + t");
        this.nEstimators =
                new IntParam(this, "nEstimators", "the number of trees in the whole forest", ParamValidators.gtEq(1));
        this.minSamplesLeaf =
                new IntParam(this, "minSamplesLeaf", "the fewest rows in a leaf", ParamValidators.gtEq(1));
        this.maxFeatures = new DoubleParam(
                this,
                "maxFeatures",
                "the share of the features tried at each split, in "
                        + "[0, 1] (0: sqrt(features)); set instead of featureSubsetStrategy",
                ParamValidators.inRange(0, 1));
        this.minSamplesSplit = new IntParam(
                this, "minSamplesSplit", "the fewest rows a node needs to be split (>= 2)", ParamValidators.gtEq(2));
        this.maxBins = new IntParam(
                this,
                "maxBins",
                "the most bins per feature for histogram splits, in 2 .. 256 (edges at each partition's "
                        + "quantiles)",
                ParamValidators.inRange(2, 256));
        cuwireDefaults(minSamplesSplit, maxBins);
        setDefault(numTrees, 20);
        setDefault(maxDepth, 5);
        setDefault(minInstancesPerNode, 1);
        setDefault(featureSubsetStrategy, "auto");
        setDefault(bootstrap, true);
        setDefault(seed, (long) getClass().getName().hashCode());
    }

    /** Whether the trees classify (MLlib's {@code auto} strategy depends on it). */
    boolean classification() {
        return false;
    }

    /** {@code forest} with this stage's params (those that do not depend on the data). */
    final E forest(E forest) {
        forest.setParams(Map.of(
                "nEstimators",
                getNumTrees(),
                "maxDepth",
                getMaxDepth(),
                "minSamplesLeaf",
                getMinInstancesPerNode(),
                "minSamplesSplit",
                getMinSamplesSplit(),
                "bootstrap",
                getBootstrap(),
                "seed",
                getSeed(),
                "maxBins",
                getMaxBins()));
        return forest;
    }

    /** Sets the share of the features tried at each split, from {@code maxFeatures} or the strategy. */
    @Override
    final void configure(E e, SparkPartitions data) {
        if (isSet(maxFeatures) && isSet(featureSubsetStrategy)) {
            throw new IllegalArgumentException(uid() + ": both featureSubsetStrategy (" + getFeatureSubsetStrategy()
                    + ") and its cuwire alias maxFeatures (" + getMaxFeatures() + ") are set (set one of them)");
        }
        double share = isSet(maxFeatures)
                ? getMaxFeatures()
                : share(getFeatureSubsetStrategy(), data.features(), getNumTrees(), classification());
        e.setParams(Map.of("maxFeatures", share));
    }

    /** The share of {@code features} that gives the count MLlib's strategy tries at each split. */
    static double share(String strategy, int features, int trees, boolean classification) {
        String s = strategy.toLowerCase(Locale.ROOT);
        if (s.equals("auto")) {
            s = trees == 1 ? "all" : classification ? "sqrt" : "onethird";
        }
        double count = switch (s) {
            case "all" -> features;
            case "sqrt" -> Math.ceil(Math.sqrt(features));
            case "log2" -> Math.max(1, Math.ceil(Math.log(features) / Math.log(2)));
            case "onethird" -> Math.ceil(features / 3.0);
            default ->
                s.contains(".") ? Math.ceil(Double.parseDouble(s) * features) : Math.min(Integer.parseInt(s), features);
        };
        // cuwire tries ceil(share * features): half a feature below the count keeps rounding from adding one
        return Math.min(1, (Math.max(1, Math.min(count, features)) - 0.5) / features);
    }

    /** MLlib's check of {@code featureSubsetStrategy}: a name, a share in (0, 1] or a count >= 1. */
    static final class FeatureSubsetStrategy extends AbstractFunction1<String, Object> implements Serializable {
        @Serial
        private static final long serialVersionUID = 1L;

        @Override
        public Object apply(String v) {
            String s = v.toLowerCase(Locale.ROOT);
            if (Map.of("auto", 1, "all", 1, "sqrt", 1, "log2", 1, "onethird", 1).containsKey(s)) {
                return true;
            }
            try {
                if (!s.contains(".")) {
                    return Integer.parseInt(s) > 0;
                }
                double d = Double.parseDouble(s);
                return d > 0 && d <= 1;
            } catch (NumberFormatException e) {
                return false;
            }
        }
    }

    /** The number of trees in the whole forest (>= 1). */
    public final IntParam numTrees() {
        return numTrees;
    }

    public final int getNumTrees() {
        return aliased(numTrees, nEstimators, v -> (Integer) v);
    }

    public final S setNumTrees(int value) {
        set(numTrees, value);
        return self();
    }

    /** The deepest a tree grows (>= 0; 0: one leaf). */
    public final IntParam maxDepth() {
        return maxDepth;
    }

    public final int getMaxDepth() {
        return (Integer) getOrDefault(maxDepth);
    }

    public final S setMaxDepth(int value) {
        set(maxDepth, value);
        return self();
    }

    /** The fewest rows in a leaf (>= 1). */
    public final IntParam minInstancesPerNode() {
        return minInstancesPerNode;
    }

    public final int getMinInstancesPerNode() {
        return aliased(minInstancesPerNode, minSamplesLeaf, v -> (Integer) v);
    }

    public final S setMinInstancesPerNode(int value) {
        set(minInstancesPerNode, value);
        return self();
    }

    /**
     * The features tried at each split: auto (sqrt for a classifier, onethird for a regressor, all for one tree), all,
     * sqrt, log2, onethird, a share in (0, 1] or a count.
     */
    public final Param<String> featureSubsetStrategy() {
        return featureSubsetStrategy;
    }

    public final String getFeatureSubsetStrategy() {
        return getOrDefault(featureSubsetStrategy);
    }

    public final S setFeatureSubsetStrategy(String value) {
        set(featureSubsetStrategy, value);
        return self();
    }

    /** Whether each tree sees a bootstrap sample of its partition. */
    public final BooleanParam bootstrap() {
        return bootstrap;
    }

    public final boolean getBootstrap() {
        return (Boolean) getOrDefault(bootstrap);
    }

    public final S setBootstrap(boolean value) {
        set(bootstrap, value);
        return self();
    }

    /** The random seed; tree t uses seed + t. */
    public final LongParam seed() {
        return seed;
    }

    public final long getSeed() {
        return (Long) getOrDefault(seed);
    }

    public final S setSeed(long value) {
        set(seed, value);
        return self();
    }

    /** The number of trees in the whole forest (cuwire's name; MLlib's is {@code numTrees}). */
    public final IntParam nEstimators() {
        return nEstimators;
    }

    public final int getNEstimators() {
        return getNumTrees();
    }

    public final S setNEstimators(int value) {
        set(nEstimators, value);
        return self();
    }

    /** The fewest rows in a leaf (cuwire's name; MLlib's is {@code minInstancesPerNode}). */
    public final IntParam minSamplesLeaf() {
        return minSamplesLeaf;
    }

    public final int getMinSamplesLeaf() {
        return getMinInstancesPerNode();
    }

    public final S setMinSamplesLeaf(int value) {
        set(minSamplesLeaf, value);
        return self();
    }

    /**
     * The share of the features tried at each split, in [0, 1] (0: sqrt(features)); set instead of
     * featureSubsetStrategy.
     */
    public final DoubleParam maxFeatures() {
        return maxFeatures;
    }

    public final double getMaxFeatures() {
        return (Double) getOrDefault(maxFeatures);
    }

    public final S setMaxFeatures(double value) {
        set(maxFeatures, value);
        return self();
    }

    /** The fewest rows a node needs to be split (>= 2). */
    public final IntParam minSamplesSplit() {
        return minSamplesSplit;
    }

    public final int getMinSamplesSplit() {
        return (Integer) getOrDefault(minSamplesSplit);
    }

    public final S setMinSamplesSplit(int value) {
        set(minSamplesSplit, value);
        return self();
    }

    /** The most bins per feature for histogram splits, in 2 .. 256. */
    public final IntParam maxBins() {
        return maxBins;
    }

    public final int getMaxBins() {
        return (Integer) getOrDefault(maxBins);
    }

    public final S setMaxBins(int value) {
        set(maxBins, value);
        return self();
    }
}
