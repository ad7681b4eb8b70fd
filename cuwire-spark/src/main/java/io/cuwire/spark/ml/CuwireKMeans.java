package io.cuwire.spark.ml;

import io.cuwire.ml.cluster.KMeans;
import java.util.List;
import org.apache.spark.ml.param.DoubleParam;
import org.apache.spark.ml.param.IntParam;
import org.apache.spark.ml.param.LongParam;
import org.apache.spark.ml.param.Param;
import org.apache.spark.ml.param.ParamMap;
import org.apache.spark.ml.param.ParamValidators;
import org.apache.spark.ml.util.DefaultParamsReader;
import org.apache.spark.ml.util.Identifiable;
import org.apache.spark.ml.util.MLReader;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;

/**
 * K-means clustering (k-means|| start, Lloyd rounds over the partitions): cuwire's {@code KMeans} with MLlib's
 * {@code KMeans} params ({@code k}, {@code maxIter}, {@code tol}, {@code seed}, {@code initMode}; cuwire's
 * {@code nClusters} and {@code init} as aliases). Its models append {@code predictionCol}, each row's cluster index as
 * an integer.
 */
public final class CuwireKMeans extends CuwireEstimator<KMeans, CuwireKMeans, CuwireKMeansModel> {
    private final IntParam k;
    private final IntParam maxIter;
    private final DoubleParam tol;
    private final LongParam seed;
    private final Param<String> initMode;
    private final IntParam nClusters;
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
        this.k = new IntParam(this, "k", "the number of clusters to create (> 1)", ParamValidators.gt(1));
        this.maxIter = new IntParam(this, "maxIter", "the most Lloyd iterations (>= 0)", ParamValidators.gtEq(0));
        this.tol = new DoubleParam(
                this,
                "tol",
                "the convergence tolerance: the centers' squared movement relative to "
                        + "the mean squared distance of a row to its center (>= 0)",
                ParamValidators.gtEq(0));
        this.seed = new LongParam(this, "seed", "the random seed");
        this.initMode = new Param<>(
                this, "initMode", "the initialization: k-means|| or random", ParamValidators.inArray(new String[] {
                    "k-means||", "random"
                }));
        this.nClusters = new IntParam(this, "nClusters", "the number of clusters", ParamValidators.gt(1));
        this.init = new Param<>(
                this,
                "init",
                "the initialization: SCALABLE_K_MEANS_PLUS_PLUS (k-means||) or RANDOM",
                ParamValidators.inArray(new String[] {"SCALABLE_K_MEANS_PLUS_PLUS", "RANDOM"}));
        this.predictionCol = new Param<>(this, "predictionCol", "prediction column: the nearest center's index");
        setDefault(predictionCol, "prediction");
        setDefault(k, 2);
        setDefault(maxIter, 20);
        setDefault(tol, 1e-4);
        setDefault(seed, (long) CuwireKMeans.class.getName().hashCode());
        setDefault(initMode, "k-means||");
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
    public KMeans estimator() {
        return new KMeans()
                .nClusters(getK())
                .maxIter(getMaxIter())
                .tol(getTol())
                .seed(getSeed())
                .init(getInitMode().equals("random") ? KMeans.Init.RANDOM : KMeans.Init.SCALABLE_K_MEANS_PLUS_PLUS);
    }

    @Override
    void fitted(CuwireKMeansModel model, Dataset<?> dataset) {
        KMeans k = model.estimator();
        model.setSummary(new CuwireClusteringSummary(model, dataset, model.numClusters(), k.nIter(), k.inertia()));
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
        return getPredictionCol().isEmpty()
                ? List.of()
                : List.of(new StructField(getPredictionCol(), DataTypes.IntegerType, false, Metadata.empty()));
    }

    /** The number of clusters to create (> 1). */
    public IntParam k() {
        return k;
    }

    public int getK() {
        return aliased(k, nClusters, v -> (Integer) v);
    }

    public CuwireKMeans setK(int value) {
        set(k, value);
        return this;
    }

    /** The most Lloyd iterations (>= 0). */
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

    /**
     * The convergence tolerance: the centers' squared movement relative to the mean squared distance of a row to its
     * center (>= 0).
     */
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

    /** The random seed. */
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

    /** The initialization: k-means|| or random. */
    public Param<String> initMode() {
        return initMode;
    }

    public String getInitMode() {
        return aliased(initMode, init, v -> v.equals("RANDOM") ? "random" : "k-means||");
    }

    public CuwireKMeans setInitMode(String value) {
        set(initMode, value);
        return this;
    }

    /** The number of clusters (cuwire's name; MLlib's is {@code k}). */
    public IntParam nClusters() {
        return nClusters;
    }

    public int getNClusters() {
        return getK();
    }

    public CuwireKMeans setNClusters(int value) {
        set(nClusters, value);
        return this;
    }

    /**
     * The initialization: SCALABLE_K_MEANS_PLUS_PLUS (k-means||) or RANDOM (cuwire's name; MLlib's is {@code
     * initMode}).
     */
    public Param<String> init() {
        return init;
    }

    public String getInit() {
        return getInitMode().equals("random") ? "RANDOM" : "SCALABLE_K_MEANS_PLUS_PLUS";
    }

    public CuwireKMeans setInit(String value) {
        set(init, value);
        return this;
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
