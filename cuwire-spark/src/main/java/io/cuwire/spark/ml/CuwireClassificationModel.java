package io.cuwire.spark.ml;

import io.cuwire.memory.NdArray;
import io.cuwire.ml.Classifier;
import io.cuwire.ml.Estimator;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.ml.param.Param;

/**
 * A fitted classifier, with MLlib's probabilistic classification columns: {@code rawPredictionCol} (a vector of
 * {@link #numClasses()} scores per row, the model's own: margins, log-likelihoods or votes), {@code probabilityCol}
 * (a vector of class probabilities) and {@code predictionCol} (the class index, a double, with MLlib's nominal
 * attribute of {@code numClasses} values), appended in that order. A column whose param is set to {@code ""} is not
 * computed.
 *
 * @param <M> the concrete model
 */
public abstract class CuwireClassificationModel<M extends CuwireClassificationModel<M>> extends CuwireModel<M> {
    private final Param<String> predictionCol;
    private final Param<String> rawPredictionCol;
    private final Param<String> probabilityCol;

    @SuppressWarnings("this-escape") // Spark params name their parent at construction
    CuwireClassificationModel(String uid, FittedState state) {
        super(uid, state);
        this.predictionCol = new Param<>(this, "predictionCol", "prediction column: the class index");
        this.rawPredictionCol = CuwireClassifier.classifierColumn(this, "rawPredictionCol");
        this.probabilityCol = CuwireClassifier.classifierColumn(this, "probabilityCol");
        setDefault(predictionCol, "prediction");
        setDefault(rawPredictionCol, "rawPrediction");
        setDefault(probabilityCol, "probability");
    }

    /** The prediction column: the class index. */
    public final Param<String> predictionCol() {
        return predictionCol;
    }

    /** The raw prediction column: a vector of class scores. */
    public final Param<String> rawPredictionCol() {
        return rawPredictionCol;
    }

    /** The probability column: a vector of class probabilities. */
    public final Param<String> probabilityCol() {
        return probabilityCol;
    }

    public final String getPredictionCol() {
        return getOrDefault(predictionCol);
    }

    public final String getRawPredictionCol() {
        return getOrDefault(rawPredictionCol);
    }

    public final String getProbabilityCol() {
        return getOrDefault(probabilityCol);
    }

    public final M setPredictionCol(String value) {
        set(predictionCol, value);
        return self();
    }

    public final M setRawPredictionCol(String value) {
        set(rawPredictionCol, value);
        return self();
    }

    public final M setProbabilityCol(String value) {
        set(probabilityCol, value);
        return self();
    }

    @Override
    final Param<String> appendedCol() {
        return predictionCol;
    }

    /** The number of classes. */
    public final int numClasses() {
        return ((Classifier) estimator()).classes();
    }

    /** The number of features each row has. */
    public abstract int numFeatures();

    /**
     * How an executor computes the raw scores of a batch: a vector of {@code numClasses} per row. Must not capture
     * the model (it travels to the executors).
     */
    abstract Scoring rawScoring();

    @Override
    final List<Output> outputs() {
        int k = numClasses();
        List<Output> out = new ArrayList<>();
        if (!getRawPredictionCol().isEmpty()) {
            out.add(new Output(Schemas.vectors(getRawPredictionCol(), k), rawScoring()));
        }
        if (!getProbabilityCol().isEmpty()) {
            out.add(new Output(Schemas.vectors(getProbabilityCol(), k), CuwireClassificationModel::probabilities));
        }
        if (!getPredictionCol().isEmpty()) {
            out.add(new Output(Schemas.classes(getPredictionCol(), k), CuwireClassificationModel::predictions));
        }
        return out;
    }

    private static Object[] probabilities(Estimator fitted, NdArray x) {
        return rowVectors(((Classifier) fitted).predictProba(x), 1);
    }

    private static Object[] predictions(Estimator fitted, NdArray x) {
        return boxedDoubles(((Classifier) fitted).predict(x));
    }
}
