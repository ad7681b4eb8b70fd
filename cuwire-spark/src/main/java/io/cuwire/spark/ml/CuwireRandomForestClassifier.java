package io.cuwire.spark.ml;

import io.cuwire.ml.ensemble.RandomForestClassifier;
import io.cuwire.spark.internal.SparkPartitions;
import java.util.List;
import org.apache.spark.ml.param.IntParam;
import org.apache.spark.ml.param.Param;
import org.apache.spark.ml.param.ParamMap;
import org.apache.spark.ml.param.ParamValidators;
import org.apache.spark.ml.util.DefaultParamsReader;
import org.apache.spark.ml.util.Identifiable;
import org.apache.spark.ml.util.MLReader;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.types.StructField;

/**
 * A random-forest classifier grown in the executors: cuwire's {@code RandomForestClassifier} with MLlib's
 * {@code RandomForestClassifier} params (see {@link CuwireRandomForest}). Its models append MLlib's classifier
 * columns (see {@link CuwireClassificationModel}).
 */
public final class CuwireRandomForestClassifier
        extends CuwireRandomForest<
                RandomForestClassifier, CuwireRandomForestClassifier, CuwireRandomForestClassificationModel> {
    private final IntParam nClasses;
    private final Param<String> rawPredictionCol;
    private final Param<String> probabilityCol;

    /** A stage with a fresh uid. */
    public CuwireRandomForestClassifier() {
        this(Identifiable.randomUID("cuwireRandomForestClassifier"));
    }

    /** A stage with {@code uid} (Spark's copy and load use it). */
    @SuppressWarnings("this-escape") // Spark params name their parent at construction
    public CuwireRandomForestClassifier(String uid) {
        super(uid);
        this.nClasses =
                new IntParam(this, "nClasses", "the number of classes (0: from the labels)", ParamValidators.gtEq(0));
        this.rawPredictionCol = CuwireClassifier.classifierColumn(this, "rawPredictionCol");
        this.probabilityCol = CuwireClassifier.classifierColumn(this, "probabilityCol");
        setDefault(rawPredictionCol, "rawPrediction");
        setDefault(probabilityCol, "probability");
        cuwireDefaults(nClasses);
    }

    @Override
    protected RandomForestClassifier newEstimator() {
        return new RandomForestClassifier();
    }

    @Override
    CuwireRandomForestClassificationModel newModel(String uid, FittedState state) {
        return new CuwireRandomForestClassificationModel(uid, state);
    }

    @Override
    public RandomForestClassifier estimator() {
        return forest(new RandomForestClassifier().nClasses(getNClasses()));
    }

    @Override
    boolean classification() {
        return true;
    }

    @Override
    SparkPartitions.Labels labels() {
        return SparkPartitions.Labels.CLASSES;
    }

    @Override
    void fitted(CuwireRandomForestClassificationModel model, Dataset<?> dataset) {
        model.setSummary(new CuwireClassificationSummary(model, dataset, getLabelCol(), -1));
    }

    /** The raw prediction column: a vector of class votes. */
    public Param<String> rawPredictionCol() {
        return rawPredictionCol;
    }

    /** The probability column: a vector of class probabilities. */
    public Param<String> probabilityCol() {
        return probabilityCol;
    }

    public String getRawPredictionCol() {
        return getOrDefault(rawPredictionCol);
    }

    public String getProbabilityCol() {
        return getOrDefault(probabilityCol);
    }

    public CuwireRandomForestClassifier setRawPredictionCol(String value) {
        set(rawPredictionCol, value);
        return this;
    }

    public CuwireRandomForestClassifier setProbabilityCol(String value) {
        set(probabilityCol, value);
        return this;
    }

    @Override
    List<StructField> outputFields() {
        return CuwireClassifier.classifierFields(getRawPredictionCol(), getProbabilityCol(), getPredictionCol());
    }

    /** The number of classes (0: from the labels). */
    public IntParam nClasses() {
        return nClasses;
    }

    public int getNClasses() {
        return (Integer) getOrDefault(nClasses);
    }

    public CuwireRandomForestClassifier setNClasses(int value) {
        set(nClasses, value);
        return this;
    }

    @Override
    public CuwireRandomForestClassifier copy(ParamMap extra) {
        return defaultCopy(extra);
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
