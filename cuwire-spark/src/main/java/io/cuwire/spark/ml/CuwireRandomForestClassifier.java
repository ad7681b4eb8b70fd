package io.cuwire.spark.ml;

import io.cuwire.ml.ensemble.RandomForestClassifier;
import org.apache.spark.ml.param.IntParam;
import org.apache.spark.ml.util.DefaultParamsReader;
import org.apache.spark.ml.util.Identifiable;
import org.apache.spark.ml.util.MLReader;

/** A random-forest classifier grown in the executors: cuwire's {@code RandomForestClassifier} in Spark ML. */
public final class CuwireRandomForestClassifier extends CuwireRandomForest<RandomForestClassifier> {
    private final IntParam nClasses;

    /** A stage with a fresh uid. */
    public CuwireRandomForestClassifier() {
        this(Identifiable.randomUID("cuwireRandomForestClassifier"));
    }

    /** A stage with {@code uid} (Spark's copy and load use it). */
    @SuppressWarnings("this-escape") // Spark params name their parent at construction
    public CuwireRandomForestClassifier(String uid) {
        super(uid);
        this.nClasses = new IntParam(this, "nClasses", "classes (0: from the labels)");
        cuwireDefaults();
    }

    @Override
    protected RandomForestClassifier newEstimator() {
        return new RandomForestClassifier();
    }

    /** The cuwire estimator's nClasses: classes (0: from the labels). */
    public IntParam nClasses() {
        return nClasses;
    }

    /** The reader of saved stages. */
    public static MLReader<CuwireRandomForestClassifier> read() {
        return new DefaultParamsReader<>();
    }

    /** Loads a saved stage. */
    public static CuwireRandomForestClassifier load(String path) {
        return read().load(path);
    }
}
