package io.cuwire.spark.ml;

import io.cuwire.ml.linear.LinearRegression;
import org.apache.spark.ml.param.BooleanParam;
import org.apache.spark.ml.param.ParamMap;
import org.apache.spark.ml.util.DefaultParamsReader;
import org.apache.spark.ml.util.Identifiable;
import org.apache.spark.ml.util.MLReader;
import org.apache.spark.sql.Dataset;

/** Ordinary least squares: cuwire's {@code LinearRegression} as a Spark ML estimator. */
public final class CuwireLinearRegression
        extends CuwirePredictor<LinearRegression, CuwireLinearRegression, CuwireLinearRegressionModel> {
    private final BooleanParam fitIntercept;

    /** A stage with a fresh uid. */
    public CuwireLinearRegression() {
        this(Identifiable.randomUID("cuwireLinearRegression"));
    }

    /** A stage with {@code uid} (Spark's copy and load use it). */
    @SuppressWarnings("this-escape") // Spark params name their parent at construction
    public CuwireLinearRegression(String uid) {
        super(uid);
        this.fitIntercept = new BooleanParam(this, "fitIntercept", "whether to fit an intercept");
        cuwireDefaults();
    }

    @Override
    protected LinearRegression newEstimator() {
        return new LinearRegression();
    }

    @Override
    CuwireLinearRegressionModel newModel(String uid, FittedState state) {
        return new CuwireLinearRegressionModel(uid, state);
    }

    @Override
    void fitted(CuwireLinearRegressionModel model, Dataset<?> dataset) {
        model.setSummary(new CuwireRegressionSummary(model, dataset, getLabelCol(), model.getPredictionCol(),
                !model.estimator().fitIntercept()));
    }

    /** Whether to fit an intercept. */
    public BooleanParam fitIntercept() {
        return fitIntercept;
    }

    public boolean getFitIntercept() {
        return (Boolean) getOrDefault(fitIntercept);
    }

    public CuwireLinearRegression setFitIntercept(boolean value) {
        set(fitIntercept, value);
        return this;
    }

    @Override
    public CuwireLinearRegression copy(ParamMap extra) {
        return defaultCopy(extra);
    }

    /** The reader of saved stages. */
    public static MLReader<CuwireLinearRegression> read() {
        return new DefaultParamsReader<>();
    }

    /** Loads a saved stage. */
    public static CuwireLinearRegression load(String path) {
        return read().load(path);
    }
}
