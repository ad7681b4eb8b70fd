package io.cuwire.spark.ml;

import io.cuwire.ml.naivebayes.MultinomialNB;
import io.cuwire.spark.internal.SparkPartitions;
import org.apache.spark.ml.param.BooleanParam;
import org.apache.spark.ml.param.DoubleParam;
import org.apache.spark.ml.param.IntParam;
import org.apache.spark.ml.param.Param;
import org.apache.spark.ml.param.ParamMap;
import org.apache.spark.ml.param.ParamValidators;
import org.apache.spark.ml.util.DefaultParamsReader;
import org.apache.spark.ml.util.Identifiable;
import org.apache.spark.ml.util.MLReader;

/**
 * Naive Bayes for count features (class and feature counts from the partitions, summed on the driver): cuwire's
 * {@code MultinomialNB} with MLlib's {@code NaiveBayes} params ({@code smoothing}, {@code modelType}
 * {@code multinomial}; cuwire's {@code alpha} as an alias). Labels are class indices 0..k-1; features must not be
 * negative (MLlib's message).
 */
public final class CuwireMultinomialNB
        extends CuwireClassifier<MultinomialNB, CuwireMultinomialNB, CuwireMultinomialNBModel> {
    private final DoubleParam smoothing;
    private final Param<String> modelType;
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
        this.smoothing = new DoubleParam(this, "smoothing", "the additive smoothing (>= 0)", ParamValidators.gtEq(0));
        this.modelType = new Param<>(
                this,
                "modelType",
                "the model type: multinomial (the only one cuwire has)",
                ParamValidators.inArray(new String[] {"multinomial"}));
        this.alpha = new DoubleParam(this, "alpha", "the additive smoothing", ParamValidators.gtEq(0));
        this.fitPrior = new BooleanParam(this, "fitPrior", "whether to learn the class priors (else uniform)");
        this.nClasses =
                new IntParam(this, "nClasses", "the number of classes (0: from the labels)", ParamValidators.gtEq(0));
        cuwireDefaults(fitPrior, nClasses);
        setDefault(smoothing, 1.0);
        setDefault(modelType, "multinomial");
    }

    @Override
    protected MultinomialNB newEstimator() {
        return new MultinomialNB();
    }

    @Override
    CuwireMultinomialNBModel newModel(String uid, FittedState state) {
        return new CuwireMultinomialNBModel(uid, state);
    }

    @Override
    public MultinomialNB estimator() {
        return new MultinomialNB().alpha(getSmoothing()).fitPrior(getFitPrior()).nClasses(getNClasses());
    }

    @Override
    void configure(MultinomialNB e, SparkPartitions data) {
        if (data.minFeature() < 0) {
            throw new IllegalArgumentException(
                    "Naive Bayes requires nonnegative feature values but found " + data.minFeature() + ".");
        }
    }

    /** The additive smoothing (>= 0). */
    public DoubleParam smoothing() {
        return smoothing;
    }

    public double getSmoothing() {
        return aliased(smoothing, alpha, v -> (Double) v);
    }

    public CuwireMultinomialNB setSmoothing(double value) {
        set(smoothing, value);
        return this;
    }

    /** The model type: multinomial (the only one cuwire has). */
    public Param<String> modelType() {
        return modelType;
    }

    public String getModelType() {
        return getOrDefault(modelType);
    }

    public CuwireMultinomialNB setModelType(String value) {
        set(modelType, value);
        return this;
    }

    /** The additive smoothing (cuwire's name; MLlib's is {@code smoothing}). */
    public DoubleParam alpha() {
        return alpha;
    }

    public double getAlpha() {
        return getSmoothing();
    }

    public CuwireMultinomialNB setAlpha(double value) {
        set(alpha, value);
        return this;
    }

    /** Whether to learn the class priors (else uniform). */
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

    /** The number of classes (0: from the labels). */
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
