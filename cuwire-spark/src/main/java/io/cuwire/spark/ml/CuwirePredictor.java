package io.cuwire.spark.ml;

import io.cuwire.ml.Estimator;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.ml.param.Param;
import org.apache.spark.sql.types.StructField;

/**
 * A stage fitted on labelled rows: a features column, a numeric {@code labelCol} (targets, or class indices
 * {@code 0 .. k-1}) and the {@code predictionCol} its models append.
 *
 * @param <E> the cuwire estimator
 * @param <S> the concrete stage
 * @param <M> the model it fits
 */
public abstract class CuwirePredictor<E extends Estimator, S extends CuwirePredictor<E, S, M>, M extends CuwireModel<M>>
        extends CuwireEstimator<E, S, M> {
    private final Param<String> labelCol;
    private final Param<String> predictionCol;

    @SuppressWarnings("this-escape") // Spark params name their parent at construction
    CuwirePredictor(String uid) {
        super(uid);
        this.labelCol = new Param<>(this, "labelCol", "label column: targets, or class indices 0..k-1");
        this.predictionCol = new Param<>(this, "predictionCol", "prediction column made by the model");
        setDefault(labelCol, "label");
        setDefault(predictionCol, "prediction");
    }

    /** The label column: targets, or class indices {@code 0 .. k-1}. */
    public final Param<String> labelCol() {
        return labelCol;
    }

    /** The prediction column made by the model. */
    public final Param<String> predictionCol() {
        return predictionCol;
    }

    public final String getLabelCol() {
        return getOrDefault(labelCol);
    }

    public final String getPredictionCol() {
        return getOrDefault(predictionCol);
    }

    public final S setLabelCol(String value) {
        set(labelCol, value);
        return self();
    }

    public final S setPredictionCol(String value) {
        set(predictionCol, value);
        return self();
    }

    @Override
    final String labelColumn() {
        return getLabelCol();
    }

    @Override
    final String appendedCol() {
        return getPredictionCol();
    }

    @Override
    List<StructField> outputFields() {
        List<StructField> out = new ArrayList<>();
        if (!getPredictionCol().isEmpty()) {
            out.add(Schemas.doubles(getPredictionCol()));
        }
        return out;
    }
}
