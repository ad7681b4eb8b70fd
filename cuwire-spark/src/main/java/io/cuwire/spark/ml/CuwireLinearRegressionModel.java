package io.cuwire.spark.ml;

import io.cuwire.memory.NdArray;
import io.cuwire.ml.Estimator;
import io.cuwire.ml.linear.LinearModel;
import java.util.List;
import org.apache.spark.ml.linalg.Vector;
import org.apache.spark.ml.linalg.Vectors;
import org.apache.spark.ml.param.Param;
import org.apache.spark.ml.param.ParamMap;
import org.apache.spark.ml.util.Identifiable;
import org.apache.spark.ml.util.MLReader;

/**
 * A fitted {@link CuwireLinearRegression} or {@link CuwireRidge}: MLlib's {@code LinearRegressionModel} attributes
 * ({@code coefficients}, {@code intercept}, {@code numFeatures}, a training {@code summary}) and its column, the
 * prediction as a double.
 */
public final class CuwireLinearRegressionModel extends CuwireModel<CuwireLinearRegressionModel> {
    private final Param<String> predictionCol;
    private CuwireRegressionSummary summary;

    /**
     * A model with no fitted state: what Spark Connect's ML discovery needs (a public no-argument constructor, for
     * {@code ServiceLoader}). Using it fails: fit an estimator or load a saved model.
     */
    public CuwireLinearRegressionModel() {
        this(Identifiable.randomUID("cuwireLinearRegressionModel"), FittedState.none("CuwireLinearRegressionModel"));
    }

    @SuppressWarnings("this-escape") // Spark params name their parent at construction
    CuwireLinearRegressionModel(String uid, FittedState state) {
        super(uid, state);
        this.predictionCol = new Param<>(this, "predictionCol", "prediction column");
        setDefault(predictionCol, "prediction");
    }

    @Override
    CuwireLinearRegressionModel create(String uid, FittedState state) {
        return new CuwireLinearRegressionModel(uid, state);
    }

    /** The fitted cuwire estimator, a {@code LinearRegression} or a {@code Ridge} (shared: do not close it). */
    @Override
    public LinearModel estimator() {
        return (LinearModel) super.estimator();
    }

    /** The prediction column. */
    public Param<String> predictionCol() {
        return predictionCol;
    }

    public String getPredictionCol() {
        return getOrDefault(predictionCol);
    }

    public CuwireLinearRegressionModel setPredictionCol(String value) {
        set(predictionCol, value);
        return this;
    }

    @Override
    Param<String> appendedCol() {
        return predictionCol;
    }

    /** The coefficients, one per feature. */
    public Vector coefficients() {
        return Vectors.dense(doubles(estimator().coef()));
    }

    /** The intercept (0 when not fitted with one). */
    public double intercept() {
        return estimator().intercept();
    }

    /** The number of features each row has. */
    public int numFeatures() {
        return (int) estimator().coef().dim(0);
    }

    @Override
    List<Output> outputs() {
        return getPredictionCol().isEmpty()
                ? List.of()
                : List.of(new Output(Schemas.doubles(getPredictionCol()), CuwireLinearRegressionModel::predict));
    }

    private static Object[] predict(Estimator fitted, NdArray x) {
        return boxedDoubles(((LinearModel) fitted).predict(x));
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
    public CuwireRegressionSummary summary() {
        return CuwireRegressionSummary.present(summary, this);
    }

    void setSummary(CuwireRegressionSummary s) {
        this.summary = s;
    }

    @Override
    void copyExtras(CuwireLinearRegressionModel copy) {
        copy.summary = summary;
    }

    @Override
    public String toString() {
        return "CuwireLinearRegressionModel: uid=" + uid() + ", numFeatures=" + numFeatures();
    }

    /** A copy sharing this model's fitted state (and training summary), with {@code extra}'s params. */
    @Override
    public CuwireLinearRegressionModel copy(ParamMap extra) {
        return super.copy(extra);
    }

    /** The reader of saved models (Spark's {@code PipelineModel.load} finds it by reflection). */
    public static MLReader<CuwireLinearRegressionModel> read() {
        return reader(CuwireLinearRegressionModel.class, LinearModel.class, CuwireLinearRegressionModel::new);
    }

    /** Loads a saved model into the driver's device memory. */
    public static CuwireLinearRegressionModel load(String path) {
        return read().load(path);
    }
}
