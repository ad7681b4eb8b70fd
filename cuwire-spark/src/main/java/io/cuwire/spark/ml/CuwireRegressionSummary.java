package io.cuwire.spark.ml;

import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.mllib.evaluation.RegressionMetrics;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.functions;
import scala.Tuple2;

/**
 * The training summary of a fitted linear regression, as MLlib's {@code LinearRegressionTrainingSummary}: the
 * model's predictions for the rows it was fitted on, and metrics of them against the labels, computed in one Spark
 * job when first asked for by MLlib's {@code RegressionMetrics} (through the origin when the model has no
 * intercept, as MLlib's). The summary uses the model it was made for: once that model is closed, a summary that did
 * not compute its predictions yet cannot.
 */
public final class CuwireRegressionSummary {
    private final CuwireModel<?> model;
    private final Dataset<?> training;
    private final String labelCol;
    private final String predictionCol;
    private final boolean throughOrigin;
    private Dataset<Row> predictions;
    private RegressionMetrics metrics;

    CuwireRegressionSummary(
            CuwireModel<?> model, Dataset<?> training, String labelCol, String predictionCol, boolean throughOrigin) {
        this.model = model;
        this.training = training;
        this.labelCol = labelCol;
        this.predictionCol = predictionCol;
        this.throughOrigin = throughOrigin;
    }

    /** {@code s}, or MLlib's error when a model has no summary. */
    static CuwireRegressionSummary present(CuwireRegressionSummary s, Object model) {
        if (s == null) {
            throw new IllegalStateException(
                    "No training summary available for this " + model.getClass().getSimpleName());
        }
        return s;
    }

    /** The training rows with the model's prediction. */
    public synchronized Dataset<Row> predictions() {
        if (predictions == null) {
            predictions = model.transform(training);
        }
        return predictions;
    }

    public String labelCol() {
        return labelCol;
    }

    public String predictionCol() {
        return predictionCol;
    }

    public String featuresCol() {
        return model.getFeaturesCol();
    }

    private synchronized RegressionMetrics metrics() {
        if (metrics == null) {
            JavaRDD<Tuple2<Object, Object>> pairs = predictions()
                    .select(
                            functions.col(predictionCol),
                            functions.col(labelCol).cast("double"))
                    .toJavaRDD()
                    .map(r -> new Tuple2<>(r.getDouble(0), r.getDouble(1)));
            metrics = new RegressionMetrics(pairs.rdd(), throughOrigin);
        }
        return metrics;
    }

    /** The coefficient of determination. */
    public double r2() {
        return metrics().r2();
    }

    public double meanSquaredError() {
        return metrics().meanSquaredError();
    }

    public double rootMeanSquaredError() {
        return metrics().rootMeanSquaredError();
    }

    public double meanAbsoluteError() {
        return metrics().meanAbsoluteError();
    }

    /** The variance the predictions explain (MLlib's definition: the mean squared deviation of the predictions). */
    public double explainedVariance() {
        return metrics().explainedVariance();
    }

    /** The rows fitted on. */
    public long numInstances() {
        return metrics().count();
    }
}
