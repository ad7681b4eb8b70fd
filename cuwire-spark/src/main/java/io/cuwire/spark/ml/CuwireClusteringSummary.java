package io.cuwire.spark.ml;

import java.util.List;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;

/**
 * The training summary of a fitted k-means model, as MLlib's {@code KMeansSummary}: the model's predictions for the
 * rows it was fitted on, the cluster sizes (one Spark job, when first asked for), the iterations run and the
 * training cost (the sum of squared distances of the rows to their centers). The summary uses the model it was
 * made for: once that model is closed, a summary that did not compute its predictions yet cannot.
 */
public final class CuwireClusteringSummary {
    private final CuwireKMeansModel model;
    private final Dataset<?> training;
    private final int k;
    private final int numIter;
    private final double trainingCost;
    private Dataset<Row> predictions;
    private long[] clusterSizes;

    CuwireClusteringSummary(CuwireKMeansModel model, Dataset<?> training, int k, int numIter, double trainingCost) {
        this.model = model;
        this.training = training;
        this.k = k;
        this.numIter = numIter;
        this.trainingCost = trainingCost;
    }

    /** The training rows with the cluster of each. */
    public synchronized Dataset<Row> predictions() {
        if (predictions == null) {
            predictions = model.transform(training);
        }
        return predictions;
    }

    public String predictionCol() {
        return model.getPredictionCol();
    }

    public String featuresCol() {
        return model.getFeaturesCol();
    }

    /** The number of clusters. */
    public int k() {
        return k;
    }

    /** The Lloyd iterations run. */
    public int numIter() {
        return numIter;
    }

    /** The sum of squared distances of the training rows to their nearest center. */
    public double trainingCost() {
        return trainingCost;
    }

    /** The rows in each cluster, by cluster index. */
    public synchronized long[] clusterSizes() {
        if (clusterSizes == null) {
            long[] sizes = new long[k];
            List<Row> counts = predictions().groupBy(predictionCol()).count().collectAsList();
            for (Row r : counts) {
                sizes[r.getInt(0)] = r.getLong(1);
            }
            clusterSizes = sizes;
        }
        return clusterSizes.clone();
    }
}
