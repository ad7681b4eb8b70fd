package io.cuwire.spark.ml;

import io.cuwire.ml.linear.LogisticRegression;
import org.apache.spark.ml.param.BooleanParam;
import org.apache.spark.ml.param.DoubleParam;
import org.apache.spark.ml.param.IntParam;
import org.apache.spark.ml.util.DefaultParamsReader;
import org.apache.spark.ml.util.Identifiable;
import org.apache.spark.ml.util.MLReader;

/**
 * Multinomial logistic regression (L-BFGS on the driver, gradients from the partitions): cuwire's
 * {@code LogisticRegression} as a Spark ML estimator.
 */
public final class CuwireLogisticRegression extends CuwireEstimator<LogisticRegression> {
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

    /** The cuwire estimator's c: inverse regularization strength. */
    public DoubleParam c() {
        return c;
    }

    /** The cuwire estimator's fitIntercept: whether to fit an intercept. */
    public BooleanParam fitIntercept() {
        return fitIntercept;
    }

    /** The cuwire estimator's maxIter: most L-BFGS iterations. */
    public IntParam maxIter() {
        return maxIter;
    }

    /** The cuwire estimator's tol: tolerance on the gradient. */
    public DoubleParam tol() {
        return tol;
    }

    /** The cuwire estimator's nClasses: classes (0: from the labels). */
    public IntParam nClasses() {
        return nClasses;
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
