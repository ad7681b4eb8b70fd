package io.cuwire.spark.ml;

import io.cuwire.ml.linear.LogisticRegression;
import org.apache.spark.ml.param.BooleanParam;
import org.apache.spark.ml.param.DoubleParam;
import org.apache.spark.ml.param.IntParam;
import org.apache.spark.ml.param.ParamMap;
import org.apache.spark.ml.util.DefaultParamsReader;
import org.apache.spark.ml.util.Identifiable;
import org.apache.spark.ml.util.MLReader;
import org.apache.spark.sql.Dataset;

/**
 * Logistic regression (L-BFGS on the driver, gradients from the partitions; binary for two classes, multinomial for
 * more): cuwire's {@code LogisticRegression} as a Spark ML estimator.
 */
public final class CuwireLogisticRegression
        extends CuwireClassifier<LogisticRegression, CuwireLogisticRegression, CuwireLogisticRegressionModel> {
    private final DoubleParam c;
    private final BooleanParam fitIntercept;
    private final IntParam maxIter;
    private final DoubleParam tol;
    private final IntParam nClasses;

    /** A stage with a fresh uid. */
    public CuwireLogisticRegression() {
        this(Identifiable.randomUID("cuwireLogisticRegression"));
    }

    /** A stage with {@code uid} (Spark's copy and load use it). */
    @SuppressWarnings("this-escape") // Spark params name their parent at construction
    public CuwireLogisticRegression(String uid) {
        super(uid);
        this.c = new DoubleParam(this, "c", "inverse regularization strength");
        this.fitIntercept = new BooleanParam(this, "fitIntercept", "whether to fit an intercept");
        this.maxIter = new IntParam(this, "maxIter", "most L-BFGS iterations");
        this.tol = new DoubleParam(this, "tol", "tolerance on the gradient");
        this.nClasses = new IntParam(this, "nClasses", "classes (0: from the labels)");
        cuwireDefaults();
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
    void fitted(CuwireLogisticRegressionModel model, Dataset<?> dataset) {
        model.setSummary(new CuwireClassificationSummary(model, dataset, getLabelCol(), model.estimator().nIter()));
    }

    /** Inverse regularization strength. */
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

    /** Most L-BFGS iterations. */
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

    /** Tolerance on the gradient. */
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

    /** Classes (0: from the labels). */
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
