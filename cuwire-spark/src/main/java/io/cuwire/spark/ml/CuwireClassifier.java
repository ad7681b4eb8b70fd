package io.cuwire.spark.ml;

import io.cuwire.ml.Estimator;
import io.cuwire.spark.internal.SparkPartitions;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.ml.param.Param;
import org.apache.spark.ml.param.Params;
import org.apache.spark.sql.types.StructField;

/**
 * A classifier stage: labels are class indices {@code 0 .. k-1}, and its models append MLlib's
 * {@code rawPredictionCol}, {@code probabilityCol} and {@code predictionCol} (see
 * {@link CuwireClassificationModel}); a column set to {@code ""} is not made.
 *
 * @param <E> the cuwire estimator
 * @param <S> the concrete stage
 * @param <M> the model it fits
 */
public abstract class CuwireClassifier<
                E extends Estimator, S extends CuwireClassifier<E, S, M>, M extends CuwireClassificationModel<M>>
        extends CuwirePredictor<E, S, M> {
    private final Param<String> rawPredictionCol;
    private final Param<String> probabilityCol;

    @SuppressWarnings("this-escape") // Spark params name their parent at construction
    CuwireClassifier(String uid) {
        super(uid);
        this.rawPredictionCol = classifierColumn(this, "rawPredictionCol");
        this.probabilityCol = classifierColumn(this, "probabilityCol");
        setDefault(rawPredictionCol, "rawPrediction");
        setDefault(probabilityCol, "probability");
    }

    /** The param {@code rawPredictionCol} or {@code probabilityCol} of {@code parent}. */
    static Param<String> classifierColumn(Params parent, String name) {
        return new Param<>(
                parent,
                name,
                name.equals("rawPredictionCol")
                        ? "raw prediction column: a vector of class scores (margins, log-likelihoods or votes)"
                        : "probability column: a vector of class probabilities");
    }

    /** The output fields of a classifier with these columns, before fitting (sizes unknown). */
    static List<StructField> classifierFields(String raw, String probability, String prediction) {
        List<StructField> out = new ArrayList<>();
        if (!raw.isEmpty()) {
            out.add(Schemas.vectors(raw, -1));
        }
        if (!probability.isEmpty()) {
            out.add(Schemas.vectors(probability, -1));
        }
        if (!prediction.isEmpty()) {
            out.add(Schemas.doubles(prediction));
        }
        return out;
    }

    /** The raw prediction column: a vector of class scores. */
    public final Param<String> rawPredictionCol() {
        return rawPredictionCol;
    }

    /** The probability column: a vector of class probabilities. */
    public final Param<String> probabilityCol() {
        return probabilityCol;
    }

    public final String getRawPredictionCol() {
        return getOrDefault(rawPredictionCol);
    }

    public final String getProbabilityCol() {
        return getOrDefault(probabilityCol);
    }

    public final S setRawPredictionCol(String value) {
        set(rawPredictionCol, value);
        return self();
    }

    public final S setProbabilityCol(String value) {
        set(probabilityCol, value);
        return self();
    }

    @Override
    final SparkPartitions.Labels labels() {
        return SparkPartitions.Labels.CLASSES;
    }

    @Override
    final List<StructField> outputFields() {
        return classifierFields(getRawPredictionCol(), getProbabilityCol(), getPredictionCol());
    }
}
