package io.cuwire.spark.ml;

import io.cuwire.ml.linear.LogisticRegression;
import io.cuwire.spark.internal.SparkPartitions;
import org.apache.spark.ml.param.BooleanParam;
import org.apache.spark.ml.param.DoubleParam;
import org.apache.spark.ml.param.IntParam;
import org.apache.spark.ml.param.ParamMap;
import org.apache.spark.ml.param.ParamValidators;
import org.apache.spark.ml.util.DefaultParamsReader;
import org.apache.spark.ml.util.Identifiable;
import org.apache.spark.ml.util.MLReader;
import org.apache.spark.sql.Dataset;

/**
 * Logistic regression (L-BFGS on the driver, gradients from the partitions; binary for two classes, multinomial for
 * more): cuwire's {@code LogisticRegression} with MLlib's params and defaults ({@code regParam} 0, no penalty;
 * {@code elasticNetParam}, {@code standardization}, {@code maxIter}, {@code fitIntercept}), cuwire's {@code tol}
 * criterion, and scikit-learn's {@code c} as the alternative to {@code regParam}. {@code regParam > 0} minimizes
 * MLlib's objective for {@code standardization=false}; {@code elasticNetParam > 0}, and {@code regParam > 0} with
 * {@code standardization=true}, are refused at fit.
 */
public final class CuwireLogisticRegression
        extends CuwireClassifier<LogisticRegression, CuwireLogisticRegression, CuwireLogisticRegressionModel> {
    private final DoubleParam regParam;
    private final DoubleParam elasticNetParam;
    private final BooleanParam standardization;
    private final IntParam maxIter;
    private final DoubleParam tol;
    private final BooleanParam fitIntercept;
    private final DoubleParam c;
    private final IntParam nClasses;

    /** A stage with a fresh uid. */
    public CuwireLogisticRegression() {
        this(Identifiable.randomUID("cuwireLogisticRegression"));
    }

    /** A stage with {@code uid} (Spark's copy and load use it). */
    @SuppressWarnings("this-escape") // Spark params name their parent at construction
    public CuwireLogisticRegression(String uid) {
        super(uid);
        this.regParam = new DoubleParam(
                this,
                "regParam",
                "the L2 penalty, as MLlib's: (1/n) Σ loss + regParam ||W||² "
                        + "/ 2 (>= 0; 0: none; with regParam > 0, standardization must be false)",
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
                        + "coefficients (MLlib's default; regParam > 0 needs false)");
        this.maxIter = new IntParam(this, "maxIter", "the most L-BFGS iterations (>= 0)", ParamValidators.gtEq(0));
        this.tol = new DoubleParam(
                this,
                "tol",
                "the convergence tolerance: the largest gradient component of the "
                        + "objective (cuwire's criterion; >= 0)",
                ParamValidators.gtEq(0));
        this.fitIntercept = new BooleanParam(this, "fitIntercept", "whether to fit an intercept");
        this.c = new DoubleParam(
                this,
                "c",
                "scikit-learn's inverse L2 strength C: (1/n) Σ loss + ||W||² / (2 C n); "
                        + "set instead of regParam (> 0)",
                ParamValidators.gt(0));
        this.nClasses =
                new IntParam(this, "nClasses", "the number of classes (0: from the labels)", ParamValidators.gtEq(0));
        cuwireDefaults(tol, nClasses);
        setDefault(regParam, 0.0);
        setDefault(elasticNetParam, 0.0);
        setDefault(standardization, true);
        setDefault(maxIter, 100);
        setDefault(fitIntercept, true);
    }

    @Override
    protected LogisticRegression newEstimator() {
        return new LogisticRegression();
    }

    @Override
    CuwireLogisticRegressionModel newModel(String uid, FittedState state) {
        return new CuwireLogisticRegressionModel(uid, state);
    }

    @Override
    public LogisticRegression estimator() {
        LogisticRegression e = new LogisticRegression()
                .fitIntercept(getFitIntercept())
                .maxIter(getMaxIter())
                .tol(getTol())
                .nClasses(getNClasses());
        return isSet(c())
                ? e.c(getC())
                : e.penalty(getRegParam() > 0 ? LogisticRegression.Penalty.L2 : LogisticRegression.Penalty.NONE);
    }

    @Override
    void configure(LogisticRegression e, SparkPartitions data) {
        if (getElasticNetParam() > 0) {
            throw new IllegalArgumentException(uid() + ": elasticNetParam is " + getElasticNetParam()
                    + ", but cuwire's logistic regression has no L1 penalty (expected: 0)");
        }
        if (isSet(c()) && isSet(regParam())) {
            throw new IllegalArgumentException(
                    uid() + ": both regParam (" + getRegParam() + ") and c (" + getC() + ") are set (set one of them)");
        }
        if (!isSet(c()) && getRegParam() > 0) {
            if (getStandardization()) {
                throw new IllegalArgumentException(uid() + ": regParam > 0 with standardization=true penalizes "
                        + "standardized coefficients, which cuwire does not do (set standardization to false)");
            }
            e.c(1 / (getRegParam() * data.rows()));
        }
    }

    @Override
    void fitted(CuwireLogisticRegressionModel model, Dataset<?> dataset) {
        model.setSummary(new CuwireClassificationSummary(
                model, dataset, getLabelCol(), model.estimator().nIter()));
    }

    /**
     * The L2 penalty, as MLlib's: (1/n) Σ loss + regParam ||W||² / 2 (>= 0; 0: none; with regParam > 0, standardization
     * must be false).
     */
    public DoubleParam regParam() {
        return regParam;
    }

    public double getRegParam() {
        return (Double) getOrDefault(regParam);
    }

    public CuwireLogisticRegression setRegParam(double value) {
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

    public CuwireLogisticRegression setElasticNetParam(double value) {
        set(elasticNetParam, value);
        return this;
    }

    /** Whether the penalty applies to standardized coefficients (MLlib's default; regParam > 0 needs false). */
    public BooleanParam standardization() {
        return standardization;
    }

    public boolean getStandardization() {
        return (Boolean) getOrDefault(standardization);
    }

    public CuwireLogisticRegression setStandardization(boolean value) {
        set(standardization, value);
        return this;
    }

    /** The most L-BFGS iterations (>= 0). */
    public IntParam maxIter() {
        return maxIter;
    }

    public int getMaxIter() {
        return (Integer) getOrDefault(maxIter);
    }

    public CuwireLogisticRegression setMaxIter(int value) {
        set(maxIter, value);
        return this;
    }

    /** The convergence tolerance: the largest gradient component of the objective (cuwire's criterion; >= 0). */
    public DoubleParam tol() {
        return tol;
    }

    public double getTol() {
        return (Double) getOrDefault(tol);
    }

    public CuwireLogisticRegression setTol(double value) {
        set(tol, value);
        return this;
    }

    /** Whether to fit an intercept. */
    public BooleanParam fitIntercept() {
        return fitIntercept;
    }

    public boolean getFitIntercept() {
        return (Boolean) getOrDefault(fitIntercept);
    }

    public CuwireLogisticRegression setFitIntercept(boolean value) {
        set(fitIntercept, value);
        return this;
    }

    /** Scikit-learn's inverse L2 strength C: (1/n) Σ loss + ||W||² / (2 C n); set instead of regParam (> 0). */
    public DoubleParam c() {
        return c;
    }

    public double getC() {
        return (Double) getOrDefault(c);
    }

    public CuwireLogisticRegression setC(double value) {
        set(c, value);
        return this;
    }

    /** The number of classes (0: from the labels). */
    public IntParam nClasses() {
        return nClasses;
    }

    public int getNClasses() {
        return (Integer) getOrDefault(nClasses);
    }

    public CuwireLogisticRegression setNClasses(int value) {
        set(nClasses, value);
        return this;
    }

    @Override
    public CuwireLogisticRegression copy(ParamMap extra) {
        return defaultCopy(extra);
    }

    /** The reader of saved stages. */
    public static MLReader<CuwireLogisticRegression> read() {
        return new DefaultParamsReader<>();
    }

    /** Loads a saved stage. */
    public static CuwireLogisticRegression load(String path) {
        return read().load(path);
    }
}
