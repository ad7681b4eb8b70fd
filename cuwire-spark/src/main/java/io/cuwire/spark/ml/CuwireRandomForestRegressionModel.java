package io.cuwire.spark.ml;

import io.cuwire.memory.NdArray;
import io.cuwire.ml.Estimator;
import io.cuwire.ml.ensemble.RandomForestRegressor;
import java.util.List;
import org.apache.spark.ml.param.Param;
import org.apache.spark.ml.param.ParamMap;
import org.apache.spark.ml.util.Identifiable;
import org.apache.spark.ml.util.MLReader;

/**
 * A fitted {@link CuwireRandomForestRegressor}: its trees' count and size, as MLlib's
 * {@code RandomForestRegressionModel} ({@code getNumTrees}, {@code totalNumNodes}, {@code numFeatures}), and the
 * prediction (the mean of the trees') as a double.
 */
public final class CuwireRandomForestRegressionModel extends CuwireModel<CuwireRandomForestRegressionModel> {
    private final Param<String> predictionCol;

    /**
     * A model with no fitted state: what Spark Connect's ML discovery needs (a public no-argument constructor, for
     * {@code ServiceLoader}). Using it fails: fit an estimator or load a saved model.
     */
    public CuwireRandomForestRegressionModel() {
        this(
                Identifiable.randomUID("cuwireRandomForestRegressionModel"),
                FittedState.none("CuwireRandomForestRegressionModel"));
    }

    @SuppressWarnings("this-escape") // Spark params name their parent at construction
    CuwireRandomForestRegressionModel(String uid, FittedState state) {
        super(uid, state);
        this.predictionCol = new Param<>(this, "predictionCol", "prediction column");
        setDefault(predictionCol, "prediction");
    }

    @Override
    CuwireRandomForestRegressionModel create(String uid, FittedState state) {
        return new CuwireRandomForestRegressionModel(uid, state);
    }

    /** The fitted cuwire forest (shared with this model's copies: do not close it). */
    @Override
    public RandomForestRegressor estimator() {
        return (RandomForestRegressor) super.estimator();
    }

    /** The prediction column. */
    public Param<String> predictionCol() {
        return predictionCol;
    }

    public String getPredictionCol() {
        return getOrDefault(predictionCol);
    }

    public CuwireRandomForestRegressionModel setPredictionCol(String value) {
        set(predictionCol, value);
        return this;
    }

    @Override
    Param<String> appendedCol() {
        return predictionCol;
    }

    /** The number of trees. */
    public int getNumTrees() {
        return estimator().info().trees();
    }

    /** The nodes of all trees, leaves included. */
    public long totalNumNodes() {
        return estimator().info().nodes();
    }

    /** The number of features each row has. */
    public int numFeatures() {
        return estimator().info().features();
    }

    @Override
    List<Output> outputs() {
        return getPredictionCol().isEmpty()
                ? List.of()
                : List.of(new Output(Schemas.doubles(getPredictionCol()), CuwireRandomForestRegressionModel::predict));
    }

    private static Object[] predict(Estimator fitted, NdArray x) {
        return boxedDoubles(((RandomForestRegressor) fitted).predict(x));
    }

    @Override
    public String toString() {
        return "CuwireRandomForestRegressionModel: uid=" + uid() + ", numTrees=" + getNumTrees() + ", numFeatures="
                + numFeatures();
    }

    /** A copy sharing this model's fitted state (and training summary), with {@code extra}'s params. */
    @Override
    public CuwireRandomForestRegressionModel copy(ParamMap extra) {
        return super.copy(extra);
    }

    /** The reader of saved models (Spark's {@code PipelineModel.load} finds it by reflection). */
    public static MLReader<CuwireRandomForestRegressionModel> read() {
        return reader(
                CuwireRandomForestRegressionModel.class,
                RandomForestRegressor.class,
                CuwireRandomForestRegressionModel::new);
    }

    /** Loads a saved model into the driver's device memory. */
    public static CuwireRandomForestRegressionModel load(String path) {
        return read().load(path);
    }
}
