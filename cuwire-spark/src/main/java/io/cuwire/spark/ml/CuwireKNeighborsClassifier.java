package io.cuwire.spark.ml;

import io.cuwire.ml.neighbors.KNeighborsClassifier;
import org.apache.spark.ml.param.IntParam;
import org.apache.spark.ml.param.ParamMap;
import org.apache.spark.ml.param.ParamValidators;
import org.apache.spark.ml.util.DefaultParamsReader;
import org.apache.spark.ml.util.Identifiable;
import org.apache.spark.ml.util.MLReader;

/**
 * Classification by a vote of the {@code nNeighbors} nearest training rows: cuwire's {@code KNeighborsClassifier} in
 * Spark ML (MLlib has none; the params are cuwire's). {@code fit} brings every partition's rows and labels to the
 * driver's device memory (the model is the training set: it must fit there, and in each executor that predicts with
 * it).
 */
public final class CuwireKNeighborsClassifier
        extends CuwireClassifier<
                KNeighborsClassifier, CuwireKNeighborsClassifier, CuwireKNeighborsClassificationModel> {
    private final IntParam nNeighbors;
    private final IntParam nClasses;

    /** A stage with a fresh uid. */
    public CuwireKNeighborsClassifier() {
        this(Identifiable.randomUID("cuwireKNeighborsClassifier"));
    }

    /** A stage with {@code uid} (Spark's copy and load use it). */
    @SuppressWarnings("this-escape") // Spark params name their parent at construction
    public CuwireKNeighborsClassifier(String uid) {
        super(uid);
        this.nNeighbors =
                new IntParam(this, "nNeighbors", "the neighbors that vote (k, >= 1)", ParamValidators.gtEq(1));
        this.nClasses =
                new IntParam(this, "nClasses", "the number of classes (0: from the labels)", ParamValidators.gtEq(0));
        cuwireDefaults(nNeighbors, nClasses);
    }

    @Override
    protected KNeighborsClassifier newEstimator() {
        return new KNeighborsClassifier();
    }

    @Override
    CuwireKNeighborsClassificationModel newModel(String uid, FittedState state) {
        return new CuwireKNeighborsClassificationModel(uid, state);
    }

    @Override
    public KNeighborsClassifier estimator() {
        return new KNeighborsClassifier().nNeighbors(getNNeighbors()).nClasses(getNClasses());
    }

    /** The neighbors that vote (k, >= 1). */
    public IntParam nNeighbors() {
        return nNeighbors;
    }

    public int getNNeighbors() {
        return (Integer) getOrDefault(nNeighbors);
    }

    public CuwireKNeighborsClassifier setNNeighbors(int value) {
        set(nNeighbors, value);
        return this;
    }

    /** The number of classes (0: from the labels). */
    public IntParam nClasses() {
        return nClasses;
    }

    public int getNClasses() {
        return (Integer) getOrDefault(nClasses);
    }

    public CuwireKNeighborsClassifier setNClasses(int value) {
        set(nClasses, value);
        return this;
    }

    @Override
    public CuwireKNeighborsClassifier copy(ParamMap extra) {
        return defaultCopy(extra);
    }

    /** The reader of saved stages. */
    public static MLReader<CuwireKNeighborsClassifier> read() {
        return new DefaultParamsReader<>();
    }

    /** Loads a saved stage. */
    public static CuwireKNeighborsClassifier load(String path) {
        return read().load(path);
    }
}
