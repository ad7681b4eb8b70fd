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
 */
public abstract class CuwireRandomForest<E extends RandomForest> extends CuwireEstimator<E> {
    private final IntParam nEstimators;
    private final IntParam maxDepth;
    private final IntParam minSamplesSplit;
    private final IntParam minSamplesLeaf;
    private final DoubleParam maxFeatures;
    private final BooleanParam bootstrap;
    private final LongParam seed;

    /** A stage with {@code uid}; the subclass calls {@link #cuwireDefaults()} once its own params exist. */
    @SuppressWarnings("this-escape") // Spark params name their parent at construction
    protected CuwireRandomForest(String uid) {
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
    public IntParam nEstimators() {
        return nEstimators;
    }

    /** The cuwire estimator's maxDepth: the deepest a tree grows. */
    public IntParam maxDepth() {
        return maxDepth;
    }

    /** The cuwire estimator's minSamplesSplit: fewest samples a node needs to be split. */
    public IntParam minSamplesSplit() {
        return minSamplesSplit;
    }

    /** The cuwire estimator's minSamplesLeaf: fewest samples in a leaf. */
    public IntParam minSamplesLeaf() {
        return minSamplesLeaf;
    }

    /** The cuwire estimator's maxFeatures: share of the features tried at each split. */
    public DoubleParam maxFeatures() {
        return maxFeatures;
    }

    /** The cuwire estimator's bootstrap: whether each tree sees a bootstrap sample. */
    public BooleanParam bootstrap() {
        return bootstrap;
    }

    /** The cuwire estimator's seed: random seed. */
    public LongParam seed() {
        return seed;
    }
}
