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
import java.util.List;
import java.util.Map;
import org.apache.spark.ml.param.Param;
import org.apache.spark.ml.param.ParamMap;
import org.apache.spark.ml.util.DefaultParamsWritable;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * A Spark ML estimator over a cuwire estimator of type {@code E}: {@link #fit} computes the estimator's partial
 * statistics in the executors (each partition's rows as arrays on the executor's device) and merges them on the
 * driver ({@link PartialFits}), giving a model of type {@code M} whose fitted state lives in the driver's device
 * memory (see {@link CuwireModel} for its lifetime). The stage's params that the model also has (the columns, and
 * options such as PCA's {@code center}) are copied to it.
 * Spark {@code Param}s named like the cuwire estimator's parameters are passed on to it; their defaults are the
 * cuwire estimator's. Persisted with Spark ML's default params writer.
 *
 * @param <E> the cuwire estimator
 * @param <S> the concrete stage
 * @param <M> the model it fits
 */
public abstract class CuwireEstimator<E extends Estimator, S extends CuwireEstimator<E, S, M>,
        M extends CuwireModel<M>> extends org.apache.spark.ml.Estimator<M> implements DefaultParamsWritable {
    private final String uid;
    private final Param<String> featuresCol;

    /** An estimator with the given Spark uid. */
    @SuppressWarnings("this-escape") // Spark params name their parent at construction
    CuwireEstimator(String uid) {
        this.uid = uid;
        this.featuresCol = new Param<>(this, "featuresCol", "features column: ml vectors or arrays of numbers");
        setDefault(featuresCol, "features");
    }

    /** A new, unfitted cuwire estimator of this stage's type. */
    protected abstract E newEstimator();

    /** The model of this stage holding {@code state}, with default params. */
    abstract M newModel(String uid, FittedState state);

    /** The columns the models append, as far as the stage knows them before fitting. */
    abstract List<StructField> outputFields();

    /** The label column, or {@code null} for an estimator without labels. */
    String labelColumn() {
        return null;
    }

    /** What the fitted model gets besides its state and params (a training summary); nothing by default. */
    void fitted(M model, Dataset<?> dataset) {
    }

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

    /** This stage, as its concrete type. */
    @SuppressWarnings("unchecked")
    final S self() {
        return (S) this;
    }

    @Override
    public final String uid() {
        return uid;
    }

    /** The features column: ml vectors or arrays of numbers. */
    public final Param<String> featuresCol() {
        return featuresCol;
    }

    public final String getFeaturesCol() {
        return getOrDefault(featuresCol);
    }

    public final S setFeaturesCol(String value) {
        set(featuresCol, value);
        return self();
    }

    /** Sets the Spark param named {@code name} (one of the cuwire estimator's parameters); returns this. */
    public final S setParam(String name, Object value) {
        set(getParam(name), value);
        return self();
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
    public M fit(Dataset<?> dataset) {
        transformSchema(dataset.schema());
        E e = estimator();
        e.allocator(Node.current().deviceMemory());
        String label = labelColumn();
        Estimator fitted;
        try (SparkPartitions p = new SparkPartitions(dataset, getFeaturesCol(), label, e instanceof Classifier)) {
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
        M model = newModel(uid, new FittedState(fitted));
        copyValues(model, ParamMap.empty());
        model.setParent(this);
        fitted(model, dataset);
        return model;
    }

    /** The column the fitted model appends: {@code predictionCol}, or a transforming stage's output column. */
    abstract String appendedCol();

    @Override
    public StructType transformSchema(StructType schema) {
        String label = labelColumn();
        if (label != null) {
            Schemas.checkNumeric(schema, label);
        }
        return Schemas.appended(schema, getFeaturesCol(), outputFields());
    }

    @Override
    public S copy(ParamMap extra) {
        return defaultCopy(extra);
    }
}
