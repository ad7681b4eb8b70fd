package io.cuwire.spark.ml;

import io.cuwire.memory.NdArray;
import io.cuwire.ml.Estimator;
import io.cuwire.ml.ensemble.RandomForestClassifier;
import org.apache.spark.ml.param.ParamMap;
import org.apache.spark.ml.util.Identifiable;
import org.apache.spark.ml.util.MLReader;

/**
 * A fitted {@link CuwireRandomForestClassifier}: its trees' count and size, as MLlib's
 * {@code RandomForestClassificationModel} ({@code getNumTrees}, {@code totalNumNodes}), a training summary, and
 * MLlib's columns: {@code rawPrediction} is the sum of the trees' class distributions (it adds up to the number of
 * trees), {@code probability} their mean.
 */
public final class CuwireRandomForestClassificationModel
        extends CuwireClassificationModel<CuwireRandomForestClassificationModel> {
    private CuwireClassificationSummary summary;

    /**
     * A model with no fitted state: what Spark Connect's ML discovery needs (a public no-argument constructor, for
     * {@code ServiceLoader}). Using it fails: fit an estimator or load a saved model.
     */
    public CuwireRandomForestClassificationModel() {
        this(
                Identifiable.randomUID("cuwireRandomForestClassificationModel"),
                FittedState.none("CuwireRandomForestClassificationModel"));
    }

    CuwireRandomForestClassificationModel(String uid, FittedState state) {
        super(uid, state);
    }

    @Override
    CuwireRandomForestClassificationModel create(String uid, FittedState state) {
        return new CuwireRandomForestClassificationModel(uid, state);
    }

    /** The fitted cuwire forest (shared with this model's copies: do not close it). */
    @Override
    public RandomForestClassifier estimator() {
        return (RandomForestClassifier) super.estimator();
    }

    /** The number of trees. */
    public int getNumTrees() {
        return estimator().info().trees();
    }

    /** The nodes of all trees, leaves included. */
    public long totalNumNodes() {
        return estimator().info().nodes();
    }

    @Override
    public int numFeatures() {
        return estimator().info().features();
    }

    @Override
    Scoring rawScoring() {
        double trees = getNumTrees();
        return (fitted, x) -> votes(fitted, x, trees);
    }

    private static Object[] votes(Estimator fitted, NdArray x, double trees) {
        return rowVectors(((RandomForestClassifier) fitted).predictProba(x), trees);
    }

    /** Whether the model has a training summary: models that {@code fit} made do, loaded ones do not. */
    public boolean hasSummary() {
        return summary != null;
    }

    /**
     * The training summary: metrics of the training rows' predictions, computed when first asked for.
     *
     * @throws IllegalStateException if the model has none (a loaded model)
     */
    public CuwireClassificationSummary summary() {
        return CuwireClassificationSummary.present(summary, this);
    }

    void setSummary(CuwireClassificationSummary s) {
        this.summary = s;
    }

    @Override
    void copyExtras(CuwireRandomForestClassificationModel copy) {
        copy.summary = summary;
    }

    @Override
    public String toString() {
        return "CuwireRandomForestClassificationModel: uid=" + uid() + ", numTrees=" + getNumTrees() + ", numClasses="
                + numClasses() + ", numFeatures=" + numFeatures();
    }

    /** A copy sharing this model's fitted state (and training summary), with {@code extra}'s params. */
    @Override
    public CuwireRandomForestClassificationModel copy(ParamMap extra) {
        return super.copy(extra);
    }

    /** The reader of saved models (Spark's {@code PipelineModel.load} finds it by reflection). */
    public static MLReader<CuwireRandomForestClassificationModel> read() {
        return reader(
                CuwireRandomForestClassificationModel.class,
                RandomForestClassifier.class,
                CuwireRandomForestClassificationModel::new);
    }

    /** Loads a saved model into the driver's device memory. */
    public static CuwireRandomForestClassificationModel load(String path) {
        return read().load(path);
    }
}
