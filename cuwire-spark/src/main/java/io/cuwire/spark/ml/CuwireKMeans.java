package io.cuwire.spark.ml;

import io.cuwire.ml.cluster.KMeans;
import java.util.List;
import org.apache.spark.ml.param.DoubleParam;
import org.apache.spark.ml.param.IntParam;
import org.apache.spark.ml.param.LongParam;
import org.apache.spark.ml.param.Param;
import org.apache.spark.ml.param.ParamMap;
import org.apache.spark.ml.util.DefaultParamsReader;
import org.apache.spark.ml.util.Identifiable;
import org.apache.spark.ml.util.MLReader;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;

/**
 * K-means clustering (k-means|| start, Lloyd rounds over the partitions): cuwire's {@code KMeans} in Spark ML. Its
 * models append {@code predictionCol}, each row's cluster index as an integer.
 */
public final class CuwireKMeans extends CuwireEstimator<KMeans, CuwireKMeans, CuwireKMeansModel> {
    private final IntParam nClusters;
    private final IntParam maxIter;
    private final DoubleParam tol;
    private final LongParam seed;
    private final Param<String> init;
    private final Param<String> predictionCol;

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
        this.init = new Param<>(this, "init", "initialization: SCALABLE_K_MEANS_PLUS_PLUS or RANDOM");
        this.predictionCol = new Param<>(this, "predictionCol", "prediction column: the nearest center's index");
        setDefault(predictionCol, "prediction");
        cuwireDefaults();
    }

    @Override
    protected KMeans newEstimator() {
        return new KMeans();
    }

    @Override
    CuwireKMeansModel newModel(String uid, FittedState state) {
        return new CuwireKMeansModel(uid, state);
    }

    @Override
    void fitted(CuwireKMeansModel model, Dataset<?> dataset) {
        KMeans k = model.estimator();
        model.setSummary(new CuwireClusteringSummary(model, dataset, model.numClusters(), k.nIter(), k.inertia()));
    }

    /** Number of clusters. */
    public IntParam nClusters() {
        return nClusters;
    }

    public int getNClusters() {
        return (Integer) getOrDefault(nClusters);
    }

    public CuwireKMeans setNClusters(int value) {
        set(nClusters, value);
        return this;
    }

    /** Most Lloyd rounds. */
    public IntParam maxIter() {
        return maxIter;
    }

    public int getMaxIter() {
        return (Integer) getOrDefault(maxIter);
    }

    public CuwireKMeans setMaxIter(int value) {
        set(maxIter, value);
        return this;
    }

    /** Relative tolerance on the centers' shift. */
    public DoubleParam tol() {
        return tol;
    }

    public double getTol() {
        return (Double) getOrDefault(tol);
    }

    public CuwireKMeans setTol(double value) {
        set(tol, value);
        return this;
    }

    /** Random seed. */
    public LongParam seed() {
        return seed;
    }

    public long getSeed() {
        return (Long) getOrDefault(seed);
    }

    public CuwireKMeans setSeed(long value) {
        set(seed, value);
        return this;
    }

    /** Initialization: SCALABLE_K_MEANS_PLUS_PLUS or RANDOM. */
    public Param<String> init() {
        return init;
    }

    public String getInit() {
        return getOrDefault(init);
    }

    public CuwireKMeans setInit(String value) {
        set(init, value);
        return this;
    }

    /** The prediction column: the nearest center's index. */
    public Param<String> predictionCol() {
        return predictionCol;
    }

    public String getPredictionCol() {
        return getOrDefault(predictionCol);
    }

    public CuwireKMeans setPredictionCol(String value) {
        set(predictionCol, value);
        return this;
    }

    @Override
    String appendedCol() {
        return getPredictionCol();
    }

    @Override
    List<StructField> outputFields() {
        return getPredictionCol().isEmpty() ? List.of()
                : List.of(new StructField(getPredictionCol(), DataTypes.IntegerType, false, Metadata.empty()));
    }

    @Override
    public CuwireKMeans copy(ParamMap extra) {
        return defaultCopy(extra);
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
