package io.cuwire.spark.ml;

import io.cuwire.memory.NdArray;
import io.cuwire.ml.Estimator;
import io.cuwire.ml.neighbors.KNeighborsClassifier;
import org.apache.spark.ml.param.ParamMap;
import org.apache.spark.ml.util.Identifiable;
import org.apache.spark.ml.util.MLReader;

/**
 * A fitted {@link CuwireKNeighborsClassifier} (it holds the training rows): {@code rawPrediction} holds the votes of
 * the nearest rows for each class, {@code probability} their shares.
 */
public final class CuwireKNeighborsClassificationModel
        extends CuwireClassificationModel<CuwireKNeighborsClassificationModel> {
    /**
     * A model with no fitted state: what Spark Connect's ML discovery needs (a public no-argument constructor, for
     * {@code ServiceLoader}). Using it fails: fit an estimator or load a saved model.
     */
    public CuwireKNeighborsClassificationModel() {
        this(
                Identifiable.randomUID("cuwireKNeighborsClassificationModel"),
                FittedState.none("CuwireKNeighborsClassificationModel"));
    }

    CuwireKNeighborsClassificationModel(String uid, FittedState state) {
        super(uid, state);
    }

    @Override
    CuwireKNeighborsClassificationModel create(String uid, FittedState state) {
        return new CuwireKNeighborsClassificationModel(uid, state);
    }

    /** The fitted cuwire estimator (shared with this model's copies: do not close it). */
    @Override
    public KNeighborsClassifier estimator() {
        return (KNeighborsClassifier) super.estimator();
    }

    @Override
    public int numFeatures() {
        return (int) estimator().fitX().dim(1);
    }

    /** The number of training rows the model holds. */
    public long numRows() {
        return estimator().fitX().dim(0);
    }

    @Override
    Scoring rawScoring() {
        double voters = Math.min((Integer) estimator().params().get("nNeighbors"), numRows());
        return (fitted, x) -> votes(fitted, x, voters);
    }

    private static Object[] votes(Estimator fitted, NdArray x, double voters) {
        return rowVectors(((KNeighborsClassifier) fitted).predictProba(x), voters);
    }

    @Override
    public String toString() {
        return "CuwireKNeighborsClassificationModel: uid=" + uid() + ", numClasses=" + numClasses() + ", numFeatures="
                + numFeatures() + ", rows=" + numRows();
    }

    /** A copy sharing this model's fitted state (and training summary), with {@code extra}'s params. */
    @Override
    public CuwireKNeighborsClassificationModel copy(ParamMap extra) {
        return super.copy(extra);
    }

    /** The reader of saved models (Spark's {@code PipelineModel.load} finds it by reflection). */
    public static MLReader<CuwireKNeighborsClassificationModel> read() {
        return reader(
                CuwireKNeighborsClassificationModel.class,
                KNeighborsClassifier.class,
                CuwireKNeighborsClassificationModel::new);
    }

    /** Loads a saved model into the driver's device memory. */
    public static CuwireKNeighborsClassificationModel load(String path) {
        return read().load(path);
    }
}
