package io.cuwire.spark.connect;

import java.util.Map;
import java.util.Optional;
import org.apache.spark.sql.connect.plugin.MLBackendPlugin;

/**
 * Spark Connect's ML backend plugin for cuwire: with {@code spark.connect.ml.backend.classes} set to this class, a
 * Connect client's {@code org.apache.spark.ml} (or {@code pyspark.ml}) estimators fit with cuwire's where their params
 * agree with what cuwire computes, unchanged on the client:
 *
 * <table>
 *   <caption>Spark's estimators and what fits them</caption>
 *   <tr><th>Spark's estimator</th><th>fitted by</th><th>runs on Spark's own implementation when</th></tr>
 *   <tr><td>{@code regression.LinearRegression}</td><td>{@link CuwireBackedLinearRegression}</td>
 *       <td>{@code weightCol} set, {@code loss=huber}, {@code elasticNetParam > 0}, or {@code regParam > 0} with
 *       {@code standardization=true}</td></tr>
 *   <tr><td>{@code classification.LogisticRegression}</td><td>{@link CuwireBackedLogisticRegression}</td>
 *       <td>{@code weightCol} set, {@code family=multinomial}, bounds on coefficients or intercepts,
 *       {@code elasticNetParam > 0}, or {@code regParam > 0} with {@code standardization=true}</td></tr>
 *   <tr><td>{@code clustering.KMeans}</td><td>{@link CuwireBackedKMeans}</td>
 *       <td>{@code weightCol} set, {@code distanceMeasure=cosine}, or {@code initSteps} set</td></tr>
 *   <tr><td>{@code feature.PCA}</td><td>{@link CuwireBackedPCA}</td><td>never</td></tr>
 *   <tr><td>{@code classification.RandomForestClassifier}</td><td>{@link CuwireBackedRandomForestClassifier}</td>
 *       <td>{@code impurity=entropy}, or as for the regressor</td></tr>
 *   <tr><td>{@code regression.RandomForestRegressor}</td><td>{@link CuwireBackedRandomForestRegressor}</td>
 *       <td>{@code weightCol} set, {@code subsamplingRate < 1}, {@code minWeightFractionPerNode > 0},
 *       {@code minInfoGain > 0}, {@code maxBins > 256}, or categorical features (the features column's
 *       metadata)</td></tr>
 * </table>
 *
 * <p>Each mapped stage is Spark's estimator (a subclass: the same params, defaults and validation, so every param a
 * client sets is accepted) whose fit runs cuwire's estimator and hands the result back as Spark's own model
 * ({@code LinearRegressionModel}, …, a {@code RandomForestClassificationModel} of Spark's tree nodes): the client's
 * model attributes ({@code coefficients}, {@code clusterCenters}, {@code pc}, {@code trees}, …), its transform, save
 * and load, and Connect's model cache work as with Spark's fit. Such a model has no training summary, and a forest's
 * {@code featureImportances} are NaN (cuwire's trees keep no split gains). Where the params disagree, the fit is
 * Spark's, and the log says why (a warning, once per estimator and reason).
 */
public final class CuwireMlBackend implements MLBackendPlugin {
    /** Spark's estimators that cuwire fits, and the stage that does. */
    static final Map<String, String> MAPPED = Map.of(
            "org.apache.spark.ml.regression.LinearRegression",
            CuwireBackedLinearRegression.class.getName(),
            "org.apache.spark.ml.classification.LogisticRegression",
            CuwireBackedLogisticRegression.class.getName(),
            "org.apache.spark.ml.clustering.KMeans",
            CuwireBackedKMeans.class.getName(),
            "org.apache.spark.ml.feature.PCA",
            CuwireBackedPCA.class.getName(),
            "org.apache.spark.ml.classification.RandomForestClassifier",
            CuwireBackedRandomForestClassifier.class.getName(),
            "org.apache.spark.ml.regression.RandomForestRegressor",
            CuwireBackedRandomForestRegressor.class.getName());

    /** Made by Spark Connect's plugin registry. */
    public CuwireMlBackend() {}

    /**
     * The class that fits {@code name}: a cuwire-backed stage for the estimators above, else empty (Spark's own
     * class, or the next backend plugin's).
     */
    @Override
    public Optional<String> transform(String name) {
        return Optional.ofNullable(MAPPED.get(name));
    }
}
