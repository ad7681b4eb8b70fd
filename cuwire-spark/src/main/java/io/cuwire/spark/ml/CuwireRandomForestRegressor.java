package io.cuwire.spark.ml;

import io.cuwire.ml.ensemble.RandomForestRegressor;
import org.apache.spark.ml.param.ParamMap;
import org.apache.spark.ml.util.DefaultParamsReader;
import org.apache.spark.ml.util.Identifiable;
import org.apache.spark.ml.util.MLReader;

/**
 * A random-forest regressor grown in the executors: cuwire's {@code RandomForestRegressor} with MLlib's
 * {@code RandomForestRegressor} params (see {@link CuwireRandomForest}).
 */
public final class CuwireRandomForestRegressor
        extends CuwireRandomForest<
                RandomForestRegressor, CuwireRandomForestRegressor, CuwireRandomForestRegressionModel> {

    /** A stage with a fresh uid. */
    public CuwireRandomForestRegressor() {
        this(Identifiable.randomUID("cuwireRandomForestRegressor"));
    }

    /** A stage with {@code uid} (Spark's copy and load use it). */
    @SuppressWarnings("this-escape") // Spark params name their parent at construction
    public CuwireRandomForestRegressor(String uid) {
        super(uid);
    }

    @Override
    protected RandomForestRegressor newEstimator() {
        return new RandomForestRegressor();
    }

    @Override
    CuwireRandomForestRegressionModel newModel(String uid, FittedState state) {
        return new CuwireRandomForestRegressionModel(uid, state);
    }

    @Override
    public RandomForestRegressor estimator() {
        return forest(new RandomForestRegressor());
    }

    @Override
    public CuwireRandomForestRegressor copy(ParamMap extra) {
        return defaultCopy(extra);
    }

    /** The reader of saved stages. */
    public static MLReader<CuwireRandomForestRegressor> read() {
        return new DefaultParamsReader<>();
    }

    /** Loads a saved stage. */
    public static CuwireRandomForestRegressor load(String path) {
        return read().load(path);
    }
}
