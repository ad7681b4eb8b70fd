package io.cuwire.spark.ml;

import io.cuwire.cluster.PartialFits;
import io.cuwire.ml.Classifier;
import io.cuwire.ml.Estimator;
import io.cuwire.ml.cluster.KMeans;
import io.cuwire.ml.decomposition.PCA;
import io.cuwire.ml.ensemble.RandomForestClassifier;
import io.cuwire.ml.ensemble.RandomForestRegressor;
import io.cuwire.ml.linear.LinearModel;
import io.cuwire.ml.linear.LogisticRegression;
import io.cuwire.ml.naivebayes.MultinomialNB;
import io.cuwire.ml.neighbors.KNeighborsClassifier;
import io.cuwire.spark.internal.Node;
import io.cuwire.spark.internal.SparkPartitions;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.spark.ml.param.Param;
import org.apache.spark.ml.param.ParamMap;
import org.apache.spark.ml.util.DefaultParamsWritable;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.types.StructType;

/**
 * A Spark ML estimator over a cuwire estimator of type {@code E}: {@link #fit} computes the estimator's partial
 * statistics in the executors (each partition's rows as arrays on the executor's device) and merges them on the
 * driver ({@link PartialFits}), giving a {@link CuwireModel} whose fitted state lives in the driver's device memory.
 * Estimators without labels (k-means, PCA) ignore {@code labelCol}; PCA's model appends its own output column
 * rather than {@code predictionCol}.
 * Spark {@code Param}s named like the cuwire estimator's parameters are passed on to it; their defaults are the
 * cuwire estimator's. Persisted with Spark ML's default params writer.
 *
 * @param <E> the cuwire estimator
 */
public abstract class CuwireEstimator<E extends Estimator> extends org.apache.spark.ml.Estimator<CuwireModel>
        implements DefaultParamsWritable {
    private final String uid;
    private final Param<String> featuresCol;
    private final Param<String> labelCol;
    private final Param<String> predictionCol;

    /** An estimator with the given Spark uid. */
    @SuppressWarnings("this-escape") // Spark params name their parent at construction
    protected CuwireEstimator(String uid) {
        this.uid = uid;
        this.featuresCol = new Param<>(this, "featuresCol", "features column: ml vectors or arrays of numbers");
        this.labelCol = new Param<>(this, "labelCol", "label column: targets, or class indices 0..k-1");
        this.predictionCol = new Param<>(this, "predictionCol", "prediction column made by the model");
        setDefault(featuresCol, "features");
        setDefault(labelCol, "label");
        setDefault(predictionCol, "prediction");
    }

    /** A new, unfitted cuwire estimator of this stage's type. */
    protected abstract E newEstimator();

    /**
     * Sets the defaults of this stage's Spark params that the cuwire estimator also has to the cuwire estimator's
     * defaults; subclasses call it at the end of their constructor (Spark finds params by reflection, which must
     * not run before the subclass's params exist).
     */
    protected final void cuwireDefaults() {
        for (Map.Entry<String, Object> e : newEstimator().params().entrySet()) {
            if (hasParam(e.getKey()) && e.getValue() != null) {
                Object v = e.getValue() instanceof Enum<?> en ? en.name() : e.getValue();
                setDefault(getParam(e.getKey()), v);
            }
        }
    }

    @Override
    public String uid() {
        return uid;
    }

    public Param<String> featuresCol() {
        return featuresCol;
    }

    public Param<String> labelCol() {
        return labelCol;
    }

    public Param<String> predictionCol() {
        return predictionCol;
    }

    public String getFeaturesCol() {
        return getOrDefault(featuresCol);
    }

    public String getLabelCol() {
        return getOrDefault(labelCol);
    }

    public String getPredictionCol() {
        return getOrDefault(predictionCol);
    }

    public CuwireEstimator<E> setFeaturesCol(String value) {
        set(featuresCol, value);
        return this;
    }

    public CuwireEstimator<E> setLabelCol(String value) {
        set(labelCol, value);
        return this;
    }

    public CuwireEstimator<E> setPredictionCol(String value) {
        set(predictionCol, value);
        return this;
    }

    /** Sets the Spark param named {@code name} (one of the cuwire estimator's parameters); returns this. */
    public CuwireEstimator<E> setParam(String name, Object value) {
        set(getParam(name), value);
        return this;
    }

    /** The cuwire estimator with this stage's parameters. */
    public E estimator() {
        E e = newEstimator();
        Map<String, Object> values = new LinkedHashMap<>();
        for (String name : e.params().keySet()) {
            if (hasParam(name) && isDefined(getParam(name))) {
                values.put(name, getOrDefault(getParam(name)));
            }
        }
        e.setParams(values);
        return e;
    }

    @Override
    public CuwireModel fit(Dataset<?> dataset) {
        transformSchema(dataset.schema());
        E e = estimator();
        e.allocator(Node.current().deviceMemory());
        boolean labelled = !(e instanceof KMeans || e instanceof PCA);
        Estimator fitted;
        try (SparkPartitions p = new SparkPartitions(dataset, getFeaturesCol(), labelled ? getLabelCol() : null,
                e instanceof Classifier)) {
            fitted = switch (e) {
                case LinearModel m -> PartialFits.fit(p, m);
                case KMeans m -> PartialFits.fit(p, m);
                case LogisticRegression m -> PartialFits.fit(p, m);
                case PCA m -> PartialFits.fit(p, m);
                case MultinomialNB m -> PartialFits.fit(p, m);
                case RandomForestClassifier m -> PartialFits.fit(p, m);
                case RandomForestRegressor m -> PartialFits.fit(p, m);
                case KNeighborsClassifier m -> PartialFits.fit(p, m);
                default -> throw new UnsupportedOperationException(e.getClass().getSimpleName()
                        + " has no distributed fit in cuwire-spark");
            };
        } catch (RuntimeException ex) {
            e.close();
            throw ex;
        }
        CuwireModel model = new CuwireModel(uid, fitted);
        model.set(model.featuresCol(), getFeaturesCol());
        model.set(model.appendedCol(), appendedCol());
        model.setParent(this);
        return model;
    }

    /** The column the fitted model appends: {@link #predictionCol}, or a transforming stage's output column. */
    protected String appendedCol() {
        return getPredictionCol();
    }

    @Override
    public StructType transformSchema(StructType schema) {
        return CuwireModel.withOutput(schema, getFeaturesCol(), CuwireModel.Output.of(newEstimator()), appendedCol());
    }

    @Override
    public CuwireEstimator<E> copy(ParamMap extra) {
        return defaultCopy(extra);
    }
}
