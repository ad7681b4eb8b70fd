package io.cuwire.spark.ml;

import io.cuwire.ml.linear.LinearModel;
import io.cuwire.ml.linear.LinearRegression;
import io.cuwire.ml.linear.Ridge;
import io.cuwire.spark.internal.SparkPartitions;
import java.util.Map;
import org.apache.spark.ml.param.BooleanParam;
import org.apache.spark.ml.param.DoubleParam;
import org.apache.spark.ml.param.ParamMap;
import org.apache.spark.ml.param.ParamValidators;
import org.apache.spark.ml.util.DefaultParamsReader;
import org.apache.spark.ml.util.Identifiable;
import org.apache.spark.ml.util.MLReader;
import org.apache.spark.sql.Dataset;

/**
 * Least squares, solved from each partition's normal-equation statistics: cuwire's {@code LinearRegression} (and,
 * with {@code regParam > 0}, {@code Ridge}) with MLlib's {@code LinearRegression} params and defaults
 * ({@code fitIntercept}, {@code regParam}, {@code elasticNetParam}, {@code standardization}). With
 * {@code regParam > 0} it minimizes MLlib's objective for {@code standardization=false},
 * {@code (1/2n) ||y - Xw - b||² + (regParam / σ_y) ||w||² / 2} (σ_y the labels' standard deviation, as MLlib's
 * normal-equation solver scales the penalty); {@code elasticNetParam > 0} and {@code standardization=true} with
 * {@code regParam > 0} are refused at fit.
 */
public final class CuwireLinearRegression
        extends CuwirePredictor<LinearModel, CuwireLinearRegression, CuwireLinearRegressionModel> {
    private final BooleanParam fitIntercept;
    private final DoubleParam regParam;
    private final DoubleParam elasticNetParam;
    private final BooleanParam standardization;

    /** A stage with a fresh uid. */
    public CuwireLinearRegression() {
        this(Identifiable.randomUID("cuwireLinearRegression"));
    }

    /** A stage with {@code uid} (Spark's copy and load use it). */
    @SuppressWarnings("this-escape") // Spark params name their parent at construction
    public CuwireLinearRegression(String uid) {
        super(uid);
        this.fitIntercept = new BooleanParam(this, "fitIntercept", "whether to fit an intercept");
        this.regParam = new DoubleParam(
                this,
                "regParam",
                "the L2 penalty, as MLlib's (>= 0; with regParam > 0, " + "standardization must be false)",
                ParamValidators.gtEq(0));
        this.elasticNetParam = new DoubleParam(
                this,
                "elasticNetParam",
                "the L1 share of the penalty: cuwire has no " + "L1 penalty, 0 only",
                ParamValidators.inRange(0, 1));
        this.standardization = new BooleanParam(
                this,
                "standardization",
                "whether the penalty applies to standardized "
                        + "coefficients (MLlib's default; cuwire penalizes the coefficients as they are, so regParam > 0 "
                        + "needs false)");
        setDefault(fitIntercept, true);
        setDefault(regParam, 0.0);
        setDefault(elasticNetParam, 0.0);
        setDefault(standardization, true);
    }

    @Override
    protected LinearModel newEstimator() {
        return new LinearRegression();
    }

    @Override
    CuwireLinearRegressionModel newModel(String uid, FittedState state) {
        return new CuwireLinearRegressionModel(uid, state);
    }

    @Override
    public LinearModel estimator() {
        return getRegParam() > 0
                ? new Ridge().fitIntercept(getFitIntercept())
                : new LinearRegression().fitIntercept(getFitIntercept());
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

    @Override
    void configure(LinearModel e, SparkPartitions data) {
        if (getElasticNetParam() > 0) {
            throw new IllegalArgumentException(uid() + ": elasticNetParam is " + getElasticNetParam()
                    + ", but cuwire's linear regression has no L1 penalty (expected: 0)");
        }
        if (getRegParam() > 0) {
            if (getStandardization()) {
                throw new IllegalArgumentException(uid() + ": regParam > 0 with standardization=true penalizes "
                        + "standardized coefficients, which cuwire does not do (set standardization to false)");
            }
            double n = data.rows();
            double std = data.labelStd() * Math.sqrt((n - 1) / n);
            double scale = std > 0 ? std : Math.abs(data.labelMean());
            e.setParams(Map.of("alpha", scale > 0 ? n * getRegParam() / scale : n * getRegParam()));
        }
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

    /** The L2 penalty, as MLlib's (>= 0; with regParam > 0, standardization must be false). */
    public DoubleParam regParam() {
        return regParam;
    }

    public double getRegParam() {
        return (Double) getOrDefault(regParam);
    }

    public CuwireLinearRegression setRegParam(double value) {
        set(regParam, value);
        return this;
    }

    /** The L1 share of the penalty: cuwire has no L1 penalty, 0 only. */
    public DoubleParam elasticNetParam() {
        return elasticNetParam;
    }

    public double getElasticNetParam() {
        return (Double) getOrDefault(elasticNetParam);
    }

    public CuwireLinearRegression setElasticNetParam(double value) {
        set(elasticNetParam, value);
        return this;
    }

    /**
     * Whether the penalty applies to standardized coefficients (MLlib's default; cuwire penalizes the coefficients as
     * they are, so regParam > 0 needs false).
     */
    public BooleanParam standardization() {
        return standardization;
    }

    public boolean getStandardization() {
        return (Boolean) getOrDefault(standardization);
    }

    public CuwireLinearRegression setStandardization(boolean value) {
        set(standardization, value);
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
