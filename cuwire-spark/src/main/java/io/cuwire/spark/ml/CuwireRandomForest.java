package io.cuwire.spark.ml;

import io.cuwire.ml.ensemble.RandomForest;
import org.apache.spark.ml.param.BooleanParam;
import org.apache.spark.ml.param.DoubleParam;
import org.apache.spark.ml.param.IntParam;
import org.apache.spark.ml.param.LongParam;

/**
 * The parameters both random-forest stages share. Each Spark partition grows its share of the trees on its own
 * rows (partition {@code i} of {@code n} the trees {@code nEstimators * i / n} up to the next partition's, tree
 * {@code t} seeded {@code seed + t}); the driver concatenates them. The forest depends on how the rows are
 * partitioned: the same partitions give the same forest.
 *
 * @param <E> the cuwire forest
 * @param <S> the concrete stage
 * @param <M> the model it fits
 */
public abstract class CuwireRandomForest<E extends RandomForest, S extends CuwireRandomForest<E, S, M>,
        M extends CuwireModel<M>> extends CuwirePredictor<E, S, M> {
    private final IntParam nEstimators;
    private final IntParam maxDepth;
    private final IntParam minSamplesSplit;
    private final IntParam minSamplesLeaf;
    private final DoubleParam maxFeatures;
    private final BooleanParam bootstrap;
    private final LongParam seed;

    /** A stage with {@code uid}; the subclass calls {@link #cuwireDefaults()} once its own params exist. */
    @SuppressWarnings("this-escape") // Spark params name their parent at construction
    CuwireRandomForest(String uid) {
        super(uid);
        this.nEstimators = new IntParam(this, "nEstimators", "trees in the whole forest");
        this.maxDepth = new IntParam(this, "maxDepth", "the deepest a tree grows");
        this.minSamplesSplit = new IntParam(this, "minSamplesSplit", "fewest samples a node needs to be split");
        this.minSamplesLeaf = new IntParam(this, "minSamplesLeaf", "fewest samples in a leaf");
        this.maxFeatures = new DoubleParam(this, "maxFeatures", "share of the features tried at each split, in"
                + " (0, 1]; 0: sqrt(features)");
        this.bootstrap = new BooleanParam(this, "bootstrap", "whether each tree sees a bootstrap sample of its"
                + " partition");
        this.seed = new LongParam(this, "seed", "random seed; tree t uses seed + t");
    }

    /** The cuwire estimator's nEstimators: trees in the whole forest. */
    public final IntParam nEstimators() {
        return nEstimators;
    }

    public final int getNEstimators() {
        return (Integer) getOrDefault(nEstimators);
    }

    public final S setNEstimators(int value) {
        set(nEstimators, value);
        return self();
    }

    /** The cuwire estimator's maxDepth: the deepest a tree grows. */
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

    /** The cuwire estimator's minSamplesSplit: fewest samples a node needs to be split. */
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

    /** The cuwire estimator's minSamplesLeaf: fewest samples in a leaf. */
    public final IntParam minSamplesLeaf() {
        return minSamplesLeaf;
    }

    public final int getMinSamplesLeaf() {
        return (Integer) getOrDefault(minSamplesLeaf);
    }

    public final S setMinSamplesLeaf(int value) {
        set(minSamplesLeaf, value);
        return self();
    }

    /** The cuwire estimator's maxFeatures: share of the features tried at each split. */
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

    /** The cuwire estimator's bootstrap: whether each tree sees a bootstrap sample. */
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

    /** The cuwire estimator's seed: random seed. */
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
}
