package io.cuwire.spark.ml;

import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.ml.linalg.Vector;
import org.apache.spark.mllib.evaluation.BinaryClassificationMetrics;
import org.apache.spark.mllib.evaluation.MulticlassMetrics;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.functions;
import scala.Tuple2;

/**
 * The training summary of a fitted classifier, as MLlib's classification training summaries: the model's
 * predictions for the rows it was fitted on, and metrics of them against the labels (computed in one Spark job when
 * first asked for, by MLlib's {@code MulticlassMetrics}; for two classes the area under the ROC curve by
 * {@code BinaryClassificationMetrics}). The summary uses the model it was made for: once that model is closed, a
 * summary that did not compute its predictions yet cannot.
 */
public final class CuwireClassificationSummary {
    private final CuwireClassificationModel<?> model;
    private final Dataset<?> training;
    private final String labelCol;
    private final int totalIterations;
    private Dataset<Row> predictions;
    private MulticlassMetrics metrics;
    private Double areaUnderRoc;

    /** The summary of {@code model} fitted on {@code training}; {@code totalIterations < 0}: not iterative. */
    CuwireClassificationSummary(
            CuwireClassificationModel<?> model, Dataset<?> training, String labelCol, int totalIterations) {
        this.model = model;
        this.training = training;
        this.labelCol = labelCol;
        this.totalIterations = totalIterations;
    }

    /** {@code s}, or MLlib's error when a model has no summary. */
    static CuwireClassificationSummary present(CuwireClassificationSummary s, Object model) {
        if (s == null) {
            throw new IllegalStateException(
                    "No training summary available for this " + model.getClass().getSimpleName());
        }
        return s;
    }

    /** The training rows with the model's columns. */
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
        return model.getPredictionCol();
    }

    public String probabilityCol() {
        return model.getProbabilityCol();
    }

    public String featuresCol() {
        return model.getFeaturesCol();
    }

    /**
     * The iterations the solver ran.
     *
     * @throws UnsupportedOperationException for a model not fitted by iterations
     */
    public int totalIterations() {
        if (totalIterations < 0) {
            throw new UnsupportedOperationException(
                    model.getClass().getSimpleName() + " is not fitted by " + "iterations");
        }
        return totalIterations;
    }

    private synchronized MulticlassMetrics metrics() {
        if (metrics == null) {
            JavaRDD<Tuple2<Object, Object>> pairs = predictions()
                    .select(
                            functions.col(predictionCol()),
                            functions.col(labelCol).cast("double"))
                    .toJavaRDD()
                    .map(r -> new Tuple2<>(r.getDouble(0), r.getDouble(1)));
            metrics = new MulticlassMetrics(pairs.rdd());
        }
        return metrics;
    }

    /** The share of rows whose prediction is their label. */
    public double accuracy() {
        return metrics().accuracy();
    }

    /** The labels seen, in increasing order. */
    public double[] labels() {
        return metrics().labels();
    }

    public double weightedPrecision() {
        return metrics().weightedPrecision();
    }

    public double weightedRecall() {
        return metrics().weightedRecall();
    }

    public double weightedFMeasure() {
        return metrics().weightedFMeasure();
    }

    public double weightedTruePositiveRate() {
        return metrics().weightedTruePositiveRate();
    }

    public double weightedFalsePositiveRate() {
        return metrics().weightedFalsePositiveRate();
    }

    /** The precision of each of {@link #labels()}. */
    public double[] precisionByLabel() {
        MulticlassMetrics m = metrics();
        double[] labels = m.labels();
        double[] out = new double[labels.length];
        for (int i = 0; i < labels.length; i++) {
            out[i] = m.precision(labels[i]);
        }
        return out;
    }

    /** The recall of each of {@link #labels()}. */
    public double[] recallByLabel() {
        MulticlassMetrics m = metrics();
        double[] labels = m.labels();
        double[] out = new double[labels.length];
        for (int i = 0; i < labels.length; i++) {
            out[i] = m.recall(labels[i]);
        }
        return out;
    }

    /**
     * The area under the ROC curve of the probability of class 1, for a two-class model.
     *
     * @throws UnsupportedOperationException for more classes, or when the model's probability column is off
     */
    public synchronized double areaUnderROC() {
        if (model.numClasses() != 2 || probabilityCol().isEmpty()) {
            throw new UnsupportedOperationException("the area under the ROC curve needs two classes and a "
                    + "probability column (this model: " + model.numClasses() + " classes, probabilityCol '"
                    + probabilityCol() + "')");
        }
        if (areaUnderRoc == null) {
            JavaRDD<Tuple2<Object, Object>> pairs = predictions()
                    .select(
                            functions.col(probabilityCol()),
                            functions.col(labelCol).cast("double"))
                    .toJavaRDD()
                    .map(r -> new Tuple2<>(((Vector) r.get(0)).apply(1), r.getDouble(1)));
            BinaryClassificationMetrics b = new BinaryClassificationMetrics(pairs.rdd());
            try {
                areaUnderRoc = b.areaUnderROC();
            } finally {
                b.unpersist();
            }
        }
        return areaUnderRoc;
    }
}
