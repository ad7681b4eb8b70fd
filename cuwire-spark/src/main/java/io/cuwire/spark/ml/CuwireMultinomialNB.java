package io.cuwire.spark.ml;

import io.cuwire.ml.naivebayes.MultinomialNB;
import org.apache.spark.ml.param.BooleanParam;
import org.apache.spark.ml.param.DoubleParam;
import org.apache.spark.ml.param.IntParam;
import org.apache.spark.ml.param.ParamMap;
import org.apache.spark.ml.util.DefaultParamsReader;
import org.apache.spark.ml.util.Identifiable;
import org.apache.spark.ml.util.MLReader;

/**
 * Naive Bayes for count features (class and feature counts from the partitions, summed on the driver): cuwire's
 * {@code MultinomialNB} as a Spark ML estimator. Labels are class indices 0..k-1.
 */
public final class CuwireMultinomialNB
        extends CuwireClassifier<MultinomialNB, CuwireMultinomialNB, CuwireMultinomialNBModel> {
    private final DoubleParam alpha;
    private final BooleanParam fitPrior;
    private final IntParam nClasses;

    /** A stage with a fresh uid. */
    public CuwireMultinomialNB() {
        this(Identifiable.randomUID("cuwireMultinomialNB"));
    }

    /** A stage with {@code uid} (Spark's copy and load use it). */
    @SuppressWarnings("this-escape") // Spark params name their parent at construction
    public CuwireMultinomialNB(String uid) {
        super(uid);
        this.alpha = new DoubleParam(this, "alpha", "additive smoothing, >= 0");
        this.fitPrior = new BooleanParam(this, "fitPrior", "whether to learn class priors (else uniform)");
        this.nClasses = new IntParam(this, "nClasses", "classes (0: from the labels)");
        cuwireDefaults();
    }

    @Override
    protected MultinomialNB newEstimator() {
        return new MultinomialNB();
    }

    @Override
    CuwireMultinomialNBModel newModel(String uid, FittedState state) {
        return new CuwireMultinomialNBModel(uid, state);
    }

    /** Additive smoothing, >= 0. */
    public DoubleParam alpha() {
        return alpha;
    }

    public double getAlpha() {
        return (Double) getOrDefault(alpha);
    }

    public CuwireMultinomialNB setAlpha(double value) {
        set(alpha, value);
        return this;
    }

    /** Whether to learn class priors (else uniform). */
    public BooleanParam fitPrior() {
        return fitPrior;
    }

    public boolean getFitPrior() {
        return (Boolean) getOrDefault(fitPrior);
    }

    public CuwireMultinomialNB setFitPrior(boolean value) {
        set(fitPrior, value);
        return this;
    }

    /** Classes (0: from the labels). */
    public IntParam nClasses() {
        return nClasses;
    }

    public int getNClasses() {
        return (Integer) getOrDefault(nClasses);
    }

    public CuwireMultinomialNB setNClasses(int value) {
        set(nClasses, value);
        return this;
    }

    @Override
    public CuwireMultinomialNB copy(ParamMap extra) {
        return defaultCopy(extra);
    }

    /** The reader of saved stages. */
    public static MLReader<CuwireMultinomialNB> read() {
        return new DefaultParamsReader<>();
    }

    /** Loads a saved stage. */
    public static CuwireMultinomialNB load(String path) {
        return read().load(path);
    }
}
