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
 *   <tr><td>{@code classification.RandomForestClassifier}, {@code regression.RandomForestRegressor}</td>
 *       <td>Spark</td><td>always: cuwire's forests cannot be handed back as Spark's tree models yet</td></tr>
 * </table>
 *
 * <p>Each mapped stage is Spark's estimator (a subclass: the same params, defaults and validation, so every param a
 * client sets is accepted) whose fit runs cuwire's estimator and hands the result back as Spark's own model
 * ({@code LinearRegressionModel}, …): the client's model attributes ({@code coefficients}, {@code clusterCenters},
 * {@code pc}, …), its transform, save and load, and Connect's model cache work as with Spark's fit. Such a model has
 * no training summary. Where the params disagree, the fit is Spark's, and the log says why (a warning, once per
 * estimator and reason).
 */
public final class CuwireMlBackend implements MLBackendPlugin {
    /** Spark's estimators that cuwire fits, and the stage that does. */
    static final Map<String, String> MAPPED = Map.of(
            "org.apache.spark.ml.regression.LinearRegression", CuwireBackedLinearRegression.class.getName(),
            "org.apache.spark.ml.classification.LogisticRegression", CuwireBackedLogisticRegression.class.getName(),
            "org.apache.spark.ml.clustering.KMeans", CuwireBackedKMeans.class.getName(),
            "org.apache.spark.ml.feature.PCA", CuwireBackedPCA.class.getName());

    /** Spark's estimators that stay Spark's, and why. */
    static final Map<String, String> UNMAPPED = Map.of(
            "org.apache.spark.ml.classification.RandomForestClassifier",
            "cuwire's forests cannot be handed back as Spark's RandomForestClassificationModel yet",
            "org.apache.spark.ml.regression.RandomForestRegressor",
            "cuwire's forests cannot be handed back as Spark's RandomForestRegressionModel yet");

    /** Made by Spark Connect's plugin registry. */
    public CuwireMlBackend() {}

    /**
     * The class that fits {@code name}: a cuwire-backed stage for the estimators above, else empty (Spark's own
     * class, or the next backend plugin's).
     */
    @Override
    public Optional<String> transform(String name) {
        String why = UNMAPPED.get(name);
        if (why != null) {
            Agreement.fallBack(name, why);
        }
        return Optional.ofNullable(MAPPED.get(name));
    }
}
