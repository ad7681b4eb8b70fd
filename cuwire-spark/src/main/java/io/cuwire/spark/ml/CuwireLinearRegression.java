package io.cuwire.spark.ml;

import io.cuwire.ml.linear.LinearRegression;
import org.apache.spark.ml.param.BooleanParam;
import org.apache.spark.ml.util.DefaultParamsReader;
import org.apache.spark.ml.util.Identifiable;
import org.apache.spark.ml.util.MLReader;

/** Ordinary least squares: cuwire's {@code LinearRegression} as a Spark ML estimator. */
public final class CuwireLinearRegression extends CuwireEstimator<LinearRegression> {
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

    /** The cuwire estimator's fitIntercept: whether to fit an intercept. */
    public BooleanParam fitIntercept() {
        return fitIntercept;
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
