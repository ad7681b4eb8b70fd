package io.cuwire.spark.ml;

import io.cuwire.ml.linear.Ridge;
import org.apache.spark.ml.param.BooleanParam;
import org.apache.spark.ml.param.DoubleParam;
import org.apache.spark.ml.param.ParamMap;
import org.apache.spark.ml.param.ParamValidators;
import org.apache.spark.ml.util.DefaultParamsReader;
import org.apache.spark.ml.util.Identifiable;
import org.apache.spark.ml.util.MLReader;
import org.apache.spark.sql.Dataset;

/**
 * Least squares with scikit-learn's L2 penalty {@code alpha}: cuwire's {@code Ridge} as a Spark ML estimator; its
 * models are linear regression models. (MLlib's {@code regParam} is {@link CuwireLinearRegression}'s.)
 */
public final class CuwireRidge extends CuwirePredictor<Ridge, CuwireRidge, CuwireLinearRegressionModel> {
    private final BooleanParam fitIntercept;
    private final DoubleParam alpha;

    /** A stage with a fresh uid. */
    public CuwireRidge() {
        this(Identifiable.randomUID("cuwireRidge"));
    }

    /** A stage with {@code uid} (Spark's copy and load use it). */
    @SuppressWarnings("this-escape") // Spark params name their parent at construction
    public CuwireRidge(String uid) {
        super(uid);
        this.fitIntercept = new BooleanParam(this, "fitIntercept", "whether to fit an intercept");
        this.alpha = new DoubleParam(
                this,
                "alpha",
                "the L2 penalty strength, scikit-learn's: ||y - Xw - b||² + alpha " + "||w||² (>= 0)",
                ParamValidators.gtEq(0));
        cuwireDefaults(fitIntercept, alpha);
    }

    @Override
    protected Ridge newEstimator() {
        return new Ridge();
    }

    @Override
    CuwireLinearRegressionModel newModel(String uid, FittedState state) {
        return new CuwireLinearRegressionModel(uid, state);
    }

    @Override
    public Ridge estimator() {
        return new Ridge().fitIntercept(getFitIntercept()).alpha(getAlpha());
    }

    @Override
    void fitted(CuwireLinearRegressionModel model, Dataset<?> dataset) {
        model.setSummary(new CuwireRegressionSummary(
                model,
                dataset,
                getLabelCol(),
                model.getPredictionCol(),
                !model.estimator().fitIntercept()));
    }

    /** Whether to fit an intercept. */
    public BooleanParam fitIntercept() {
        return fitIntercept;
    }

    public boolean getFitIntercept() {
        return (Boolean) getOrDefault(fitIntercept);
    }

    public CuwireRidge setFitIntercept(boolean value) {
        set(fitIntercept, value);
        return this;
    }

    /** The L2 penalty strength, scikit-learn's: ||y - Xw - b||² + alpha ||w||² (>= 0). */
    public DoubleParam alpha() {
        return alpha;
    }

    public double getAlpha() {
        return (Double) getOrDefault(alpha);
    }

    public CuwireRidge setAlpha(double value) {
        set(alpha, value);
        return this;
    }

    @Override
    public CuwireRidge copy(ParamMap extra) {
        return defaultCopy(extra);
    }

    /** The reader of saved stages. */
    public static MLReader<CuwireRidge> read() {
        return new DefaultParamsReader<>();
    }

    /** Loads a saved stage. */
    public static CuwireRidge load(String path) {
        return read().load(path);
    }
}
