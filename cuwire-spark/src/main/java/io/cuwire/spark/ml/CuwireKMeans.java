package io.cuwire.spark.ml;

import io.cuwire.ml.cluster.KMeans;
import org.apache.spark.ml.param.DoubleParam;
import org.apache.spark.ml.param.IntParam;
import org.apache.spark.ml.param.LongParam;
import org.apache.spark.ml.param.Param;
import org.apache.spark.ml.util.DefaultParamsReader;
import org.apache.spark.ml.util.Identifiable;
import org.apache.spark.ml.util.MLReader;

/** K-means clustering (k-means|| start, Lloyd rounds over the partitions): cuwire's {@code KMeans} in Spark ML. */
public final class CuwireKMeans extends CuwireEstimator<KMeans> {
    private final IntParam nClusters;
    private final IntParam maxIter;
    private final DoubleParam tol;
    private final LongParam seed;
    private final Param<String> init;

    /** A stage with a fresh uid. */
    public CuwireKMeans() {
        this(Identifiable.randomUID("cuwireKMeans"));
    }

    /** A stage with {@code uid} (Spark's copy and load use it). */
    @SuppressWarnings("this-escape") // Spark params name their parent at construction
    public CuwireKMeans(String uid) {
        super(uid);
        this.nClusters = new IntParam(this, "nClusters", "number of clusters");
        this.maxIter = new IntParam(this, "maxIter", "most Lloyd rounds");
        this.tol = new DoubleParam(this, "tol", "relative tolerance on the centers' shift");
        this.seed = new LongParam(this, "seed", "random seed");
        this.init = new Param<>(this, "init", "initialization: SCALABLE_K_MEANS_PLUS_PLUS, K_MEANS_PLUS_PLUS"
                + " or RANDOM");
        cuwireDefaults();
    }

    @Override
    protected KMeans newEstimator() {
        return new KMeans();
    }

    /** The cuwire estimator's nClusters: number of clusters. */
    public IntParam nClusters() {
        return nClusters;
    }

    /** The cuwire estimator's maxIter: most Lloyd rounds. */
    public IntParam maxIter() {
        return maxIter;
    }

    /** The cuwire estimator's tol: relative tolerance on the centers' shift. */
    public DoubleParam tol() {
        return tol;
    }

    /** The cuwire estimator's seed: random seed. */
    public LongParam seed() {
        return seed;
    }

    /** The cuwire estimator's init: initialization. */
    public Param<String> init() {
        return init;
    }

    /** The reader of saved stages. */
    public static MLReader<CuwireKMeans> read() {
        return new DefaultParamsReader<>();
    }

    /** Loads a saved stage. */
    public static CuwireKMeans load(String path) {
        return read().load(path);
    }
}
