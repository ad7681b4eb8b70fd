package io.cuwire.spark.connect;

import io.cuwire.spark.ml.CuwireKMeans;
import io.cuwire.spark.ml.CuwireKMeansModel;
import java.util.Arrays;
import org.apache.spark.ml.clustering.KMeans;
import org.apache.spark.ml.clustering.KMeansModel;
import org.apache.spark.ml.util.Identifiable;
import org.apache.spark.mllib.linalg.Vector;
import org.apache.spark.mllib.linalg.Vectors;
import org.apache.spark.sql.Dataset;

/**
 * Spark's {@code KMeans}, fitted by {@link CuwireKMeans} (the same {@code k}, {@code maxIter}, {@code tol},
 * {@code seed} and {@code initMode}) where the params agree (see {@link CuwireMlBackend}): the centers come back as
 * Spark's {@code KMeansModel}. cuwire's k-means|| oversamples in one round: an explicitly set {@code initSteps} runs on
 * Spark's implementation; {@code solver} and {@code maxBlockSizeInMB} steer Spark's implementation only.
 */
public class CuwireBackedKMeans extends KMeans {
    /** A stage with a fresh uid. */
    public CuwireBackedKMeans() {
        this(Identifiable.randomUID("kmeans"));
    }

    /** A stage with {@code uid} (Spark Connect, copy and load use it). */
    public CuwireBackedKMeans(String uid) {
        super(uid);
    }

    /** Why cuwire cannot fit these params (empty: it can). */
    Agreement agreement() {
        return new Agreement(this)
                .unweighted(weightCol())
                .unless(
                        getDistanceMeasure().equals("euclidean"),
                        "distanceMeasure is " + getDistanceMeasure() + " (cuwire's k-means is euclidean)")
                .notSet(initSteps(), "initSteps is set (cuwire's k-means|| oversamples in one round)");
    }

    @Override
    public KMeansModel fit(Dataset<?> dataset) {
        if (!agreement().onCuwire()) {
            return super.fit(dataset);
        }
        CuwireKMeans cuwire = new CuwireKMeans(uid())
                .setK(getK())
                .setMaxIter(getMaxIter())
                .setTol(getTol())
                .setSeed(getSeed())
                .setInitMode(getInitMode())
                .setFeaturesCol(getFeaturesCol());
        try (CuwireKMeansModel m = cuwire.fit(dataset)) {
            Vector[] centers =
                    Arrays.stream(m.clusterCenters()).map(Vectors::fromML).toArray(Vector[]::new);
            KMeansModel model = new KMeansModel(uid(), new org.apache.spark.mllib.clustering.KMeansModel(centers));
            return copyValues(model.setParent(this), extractParamMap());
        }
    }
}
