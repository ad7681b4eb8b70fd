package io.cuwire.spark.ml;

import io.cuwire.memory.NdArray;
import io.cuwire.ml.Estimator;
import io.cuwire.ml.cluster.KMeans;
import java.util.Arrays;
import java.util.List;
import org.apache.spark.ml.linalg.Vector;
import org.apache.spark.ml.linalg.Vectors;
import org.apache.spark.ml.param.Param;
import org.apache.spark.ml.param.ParamMap;
import org.apache.spark.ml.util.Identifiable;
import org.apache.spark.ml.util.MLReader;

/**
 * A fitted {@link CuwireKMeans}: MLlib's {@code KMeansModel} attributes ({@code clusterCenters}, a training
 * {@code summary}) and its column, the index of each row's nearest center as an integer (with MLlib's nominal
 * attribute of {@code k} values).
 */
public final class CuwireKMeansModel extends CuwireModel<CuwireKMeansModel> {
    private final Param<String> predictionCol;
    private CuwireClusteringSummary summary;

    /**
     * A model with no fitted state: what Spark Connect's ML discovery needs (a public no-argument constructor, for
     * {@code ServiceLoader}). Using it fails: fit an estimator or load a saved model.
     */
    public CuwireKMeansModel() {
        this(Identifiable.randomUID("cuwireKMeansModel"), FittedState.none("CuwireKMeansModel"));
    }

    @SuppressWarnings("this-escape") // Spark params name their parent at construction
    CuwireKMeansModel(String uid, FittedState state) {
        super(uid, state);
        this.predictionCol = new Param<>(this, "predictionCol", "prediction column: the nearest center's index");
        setDefault(predictionCol, "prediction");
    }

    @Override
    CuwireKMeansModel create(String uid, FittedState state) {
        return new CuwireKMeansModel(uid, state);
    }

    /** The fitted cuwire estimator (shared with this model's copies: do not close it). */
    @Override
    public KMeans estimator() {
        return (KMeans) super.estimator();
    }

    /** The prediction column: the nearest center's index. */
    public Param<String> predictionCol() {
        return predictionCol;
    }

    public String getPredictionCol() {
        return getOrDefault(predictionCol);
    }

    public CuwireKMeansModel setPredictionCol(String value) {
        set(predictionCol, value);
        return this;
    }

    @Override
    Param<String> appendedCol() {
        return predictionCol;
    }

    /** The cluster centers. */
    public Vector[] clusterCenters() {
        NdArray c = estimator().clusterCenters();
        int k = (int) c.dim(0);
        int d = (int) c.dim(1);
        double[] v = doubles(c);
        Vector[] out = new Vector[k];
        for (int i = 0; i < k; i++) {
            out[i] = Vectors.dense(Arrays.copyOfRange(v, i * d, (i + 1) * d));
        }
        return out;
    }

    /** The number of clusters. */
    public int numClusters() {
        return (int) estimator().clusterCenters().dim(0);
    }

    /** The number of features each row has. */
    public int numFeatures() {
        return (int) estimator().clusterCenters().dim(1);
    }

    @Override
    List<Output> outputs() {
        return getPredictionCol().isEmpty()
                ? List.of()
                : List.of(new Output(Schemas.clusters(getPredictionCol(), numClusters()), CuwireKMeansModel::predict));
    }

    private static Object[] predict(Estimator fitted, NdArray x) {
        return boxedInts(((KMeans) fitted).predict(x));
    }

    /** Whether the model has a training summary: models that {@code fit} made do, loaded ones do not. */
    public boolean hasSummary() {
        return summary != null;
    }

    /**
     * The training summary: the cluster sizes, iterations and cost of the fit.
     *
     * @throws IllegalStateException if the model has none (a loaded model)
     */
    public CuwireClusteringSummary summary() {
        if (summary == null) {
            throw new IllegalStateException("No training summary available for this CuwireKMeansModel");
        }
        return summary;
    }

    void setSummary(CuwireClusteringSummary s) {
        this.summary = s;
    }

    @Override
    void copyExtras(CuwireKMeansModel copy) {
        copy.summary = summary;
    }

    @Override
    public String toString() {
        return "CuwireKMeansModel: uid=" + uid() + ", k=" + numClusters() + ", numFeatures=" + numFeatures();
    }

    /** A copy sharing this model's fitted state (and training summary), with {@code extra}'s params. */
    @Override
    public CuwireKMeansModel copy(ParamMap extra) {
        return super.copy(extra);
    }

    /** The reader of saved models (Spark's {@code PipelineModel.load} finds it by reflection). */
    public static MLReader<CuwireKMeansModel> read() {
        return reader(CuwireKMeansModel.class, KMeans.class, CuwireKMeansModel::new);
    }

    /** Loads a saved model into the driver's device memory. */
    public static CuwireKMeansModel load(String path) {
        return read().load(path);
    }
}
