package io.cuwire.spark.ml;

import io.cuwire.cluster.PartialFits;
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
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.apache.spark.ml.param.BooleanParam;
import org.apache.spark.ml.param.DoubleParam;
import org.apache.spark.ml.param.IntParam;
import org.apache.spark.ml.param.LongParam;
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
 *
 * <h2>Params</h2>
 * Each stage has MLlib's names and defaults where the concept is MLlib's ({@code k}, {@code maxIter},
 * {@code regParam}, {@code numTrees}, {@code featureSubsetStrategy}, …), and keeps cuwire's (scikit-learn's) names
 * as aliases ({@code nClusters}, {@code nEstimators}, …): a value set under either name is the one used; both set
 * to different values is an error at fit. Values are checked when set (out of range: Spark's
 * {@code "... parameter k given invalid value 0."}); {@link #setParam} also checks the type. Rows and labels are
 * checked on the driver before the fit runs (Spark ML's messages: a numeric label column, labels neither null nor
 * NaN, class labels integers from 0).
 *
 * <p>Persisted with Spark ML's default params writer.
 *
 * @param <E> the cuwire estimator
 * @param <S> the concrete stage
 * @param <M> the model it fits
 */
public abstract class CuwireEstimator<E extends Estimator, S extends CuwireEstimator<E, S, M>, M extends CuwireModel<M>>
        extends org.apache.spark.ml.Estimator<M> implements DefaultParamsWritable {
    private final String uid;
    private final Param<String> featuresCol;

    /** An estimator with the given Spark uid. */
    @SuppressWarnings("this-escape") // Spark params name their parent at construction
    CuwireEstimator(String uid) {
        this.uid = uid;
        this.featuresCol = new Param<>(this, "featuresCol", "features column: ml vectors or arrays of numbers");
        setDefault(featuresCol, "features");
    }

    /** A new, unfitted cuwire estimator of this stage's type, with cuwire's defaults. */
    protected abstract E newEstimator();

    /** The model of this stage holding {@code state}, with default params. */
    abstract M newModel(String uid, FittedState state);

    /** The columns the models append, as far as the stage knows them before fitting. */
    abstract List<StructField> outputFields();

    /** The column the fitted model appends: {@code predictionCol}, or a transforming stage's output column. */
    abstract String appendedCol();

    /** The label column, or {@code null} for an estimator without labels. */
    String labelColumn() {
        return null;
    }

    /** What the labels must be: class indices for a classifier, finite targets for a regressor. */
    SparkPartitions.Labels labels() {
        return labelColumn() == null ? SparkPartitions.Labels.NONE : SparkPartitions.Labels.TARGETS;
    }

    /** The column the rows' features are read from. */
    String featuresColumn() {
        return getFeaturesCol();
    }

    /**
     * Sets what depends on the data ({@code regParam}'s penalty, which scales with the rows; the features a forest
     * tries) on {@code e}, from what the gathering pass saw; nothing by default.
     *
     * @throws IllegalArgumentException if the params ask for what the estimator cannot do
     */
    void configure(E e, SparkPartitions data) {}

    /** What the fitted model gets besides its state and params (a training summary); nothing by default. */
    void fitted(M model, Dataset<?> dataset) {}

    /** Sets the defaults of {@code params} to the cuwire estimator's defaults of the same names. */
    final void cuwireDefaults(Param<?>... params) {
        Map<String, Object> defaults = newEstimator().params();
        for (Param<?> p : params) {
            Object v = defaults.get(p.name());
            if (v == null) {
                throw new IllegalStateException(
                        newEstimator().getClass().getSimpleName() + " has no parameter " + p.name());
            }
            @SuppressWarnings("unchecked")
            Param<Object> o = (Param<Object>) p;
            setDefault(o, v instanceof Enum<?> en ? en.name() : v);
        }
    }

    /**
     * The value of {@code param}, or of its cuwire alias {@code alias} through {@code convert} when the alias is
     * set.
     *
     * @throws IllegalArgumentException if both are set, to values that differ
     */
    @SuppressWarnings("unchecked")
    final <T> T aliased(Param<?> param, Param<?> alias, Function<Object, T> convert) {
        if (!isSet(alias)) {
            return (T) getOrDefault(param);
        }
        T v = convert.apply(getOrDefault(alias));
        if (isSet(param) && !v.equals(getOrDefault(param))) {
            throw new IllegalArgumentException(uid + ": " + param.name() + " is set to " + getOrDefault(param)
                    + " and its cuwire alias " + alias.name() + " to " + getOrDefault(alias) + " (set one of them)");
        }
        return v;
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

    /**
     * Sets the param named {@code name} to {@code value}, a number converted to the param's type when it fits
     * exactly (an {@code Integer} for a long seed).
     *
     * @throws java.util.NoSuchElementException if there is no such param (Spark's {@code "Param x does not exist."})
     * @throws IllegalArgumentException if the value is of the wrong type, or out of the param's range
     */
    public final S setParam(String name, Object value) {
        Param<Object> p = getParam(name);
        set(p, typed(p, value));
        return self();
    }

    /** {@code v} as a value of {@code p}'s type. */
    private Object typed(Param<?> p, Object v) {
        String what = uid + " parameter " + p.name();
        if (p instanceof IntParam && v instanceof Number n && n.doubleValue() == n.intValue()) {
            return n.intValue();
        }
        if (p instanceof LongParam && v instanceof Number n && n.doubleValue() == n.longValue()) {
            return n.longValue();
        }
        if (p instanceof DoubleParam && v instanceof Number n) {
            return n.doubleValue();
        }
        if (p instanceof BooleanParam && v instanceof Boolean) {
            return v;
        }
        if (p.getClass() == Param.class && v instanceof String) {
            return v;
        }
        String type = p instanceof IntParam
                ? "an int"
                : p instanceof LongParam
                        ? "a long"
                        : p instanceof DoubleParam ? "a double" : p instanceof BooleanParam ? "a boolean" : "a string";
        throw new IllegalArgumentException(what + " takes " + type + ", not " + v
                + (v == null ? "" : " (" + v.getClass().getSimpleName() + ")"));
    }

    /** The cuwire estimator with this stage's parameters (those that do not depend on the data). */
    public abstract E estimator();

    @Override
    public M fit(Dataset<?> dataset) {
        transformSchema(dataset.schema());
        E e = estimator();
        e.allocator(Node.current().deviceMemory());
        Estimator fitted;
        try (SparkPartitions p = new SparkPartitions(dataset, featuresColumn(), labelColumn(), labels())) {
            configure(e, p);
            fitted = switch (e) {
                case LinearModel m -> PartialFits.fit(p, m);
                case KMeans m -> PartialFits.fit(p, m);
                case LogisticRegression m -> PartialFits.fit(p, m);
                case PCA m -> PartialFits.fit(p, m);
                case MultinomialNB m -> PartialFits.fit(p, m);
                case RandomForestClassifier m -> PartialFits.fit(p, m);
                case RandomForestRegressor m -> PartialFits.fit(p, m);
                case KNeighborsClassifier m -> PartialFits.fit(p, m);
                default ->
                    throw new UnsupportedOperationException(
                            e.getClass().getSimpleName() + " has no distributed fit in cuwire-spark");
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

    @Override
    public StructType transformSchema(StructType schema) {
        String label = labelColumn();
        if (label != null) {
            Schemas.checkNumeric(schema, label);
        }
        return Schemas.appended(schema, featuresColumn(), outputFields());
    }

    @Override
    public S copy(ParamMap extra) {
        return defaultCopy(extra);
    }
}
