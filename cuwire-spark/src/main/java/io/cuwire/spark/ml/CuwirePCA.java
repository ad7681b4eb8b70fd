package io.cuwire.spark.ml;

import io.cuwire.ml.decomposition.PCA;
import java.util.List;
import org.apache.spark.ml.param.BooleanParam;
import org.apache.spark.ml.param.IntParam;
import org.apache.spark.ml.param.Param;
import org.apache.spark.ml.param.ParamMap;
import org.apache.spark.ml.param.ParamValidators;
import org.apache.spark.ml.util.DefaultParamsReader;
import org.apache.spark.ml.util.Identifiable;
import org.apache.spark.ml.util.MLReader;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.types.StructField;

/**
 * Principal component analysis (each partition's mean and scatter, merged on the driver): cuwire's {@code PCA} with
 * MLlib's {@code PCA} params ({@code k}, {@code inputCol}, {@code outputCol}; cuwire's {@code nComponents} and
 * {@code featuresCol} as aliases). Its model appends {@code outputCol}, the projected features as ml vectors:
 * MLlib's projection of the rows as they are, or with {@code center} of the rows minus the training mean (see
 * {@link CuwirePCAModel}).
 */
public final class CuwirePCA extends CuwireEstimator<PCA, CuwirePCA, CuwirePCAModel> {
    private final IntParam k;
    private final Param<String> inputCol;
    private final Param<String> outputCol;
    private final BooleanParam center;
    private final IntParam nComponents;
    private final BooleanParam whiten;

    /** A stage with a fresh uid. */
    public CuwirePCA() {
        this(Identifiable.randomUID("cuwirePCA"));
    }

    /** A stage with {@code uid} (Spark's copy and load use it). */
    @SuppressWarnings("this-escape") // Spark params name their parent at construction
    public CuwirePCA(String uid) {
        super(uid);
        this.k = new IntParam(
                this,
                "k",
                "the number of principal components (> 0); unset: all of them, min(rows, " + "features)",
                ParamValidators.gt(0));
        this.inputCol = new Param<>(
                this,
                "inputCol",
                "the input column (MLlib's name for featuresCol): ml vectors or " + "arrays of numbers");
        this.outputCol = new Param<>(this, "outputCol", "the output column: the projections as ml vectors");
        this.center = new BooleanParam(
                this,
                "center",
                "whether to subtract the training mean before projecting "
                        + "(false: MLlib's projection of the rows as they are)");
        this.nComponents = new IntParam(
                this, "nComponents", "the number of components to keep (0: all of them)", ParamValidators.gtEq(0));
        this.whiten = new BooleanParam(
                this, "whiten", "whether to scale the projections to unit variance (with " + "center)");
        cuwireDefaults(whiten);
        setDefault(inputCol, "features");
        setDefault(outputCol, "pcaFeatures");
        setDefault(center, false);
    }

    @Override
    protected PCA newEstimator() {
        return new PCA();
    }

    @Override
    CuwirePCAModel newModel(String uid, FittedState state) {
        return new CuwirePCAModel(uid, state);
    }

    @Override
    public PCA estimator() {
        return new PCA().nComponents(getK()).whiten(getWhiten());
    }

    @Override
    String featuresColumn() {
        if (isSet(inputCol) && isSet(featuresCol()) && !getOrDefault(inputCol).equals(getFeaturesCol())) {
            throw new IllegalArgumentException(uid() + ": inputCol is set to " + getOrDefault(inputCol) + " and its "
                    + "cuwire alias featuresCol to " + getFeaturesCol() + " (set one of them)");
        }
        return isSet(inputCol) ? getOrDefault(inputCol) : getFeaturesCol();
    }

    @Override
    void fitted(CuwirePCAModel model, Dataset<?> dataset) {
        model.setFeaturesCol(featuresColumn());
    }

    @Override
    String appendedCol() {
        return getOutputCol();
    }

    @Override
    List<StructField> outputFields() {
        return getOutputCol().isEmpty() ? List.of() : List.of(Schemas.vectors(getOutputCol(), -1));
    }

    /** The number of principal components (> 0); unset: all of them, min(rows, features). */
    public IntParam k() {
        return k;
    }

    public int getK() {
        return isDefined(k) || isSet(nComponents) ? aliased(k, nComponents, v -> (Integer) v) : 0;
    }

    public CuwirePCA setK(int value) {
        set(k, value);
        return this;
    }

    /** The input column (MLlib's name for featuresCol): ml vectors or arrays of numbers. */
    public Param<String> inputCol() {
        return inputCol;
    }

    public String getInputCol() {
        return featuresColumn();
    }

    public CuwirePCA setInputCol(String value) {
        set(inputCol, value);
        return this;
    }

    /** The output column: the projections as ml vectors. */
    public Param<String> outputCol() {
        return outputCol;
    }

    public String getOutputCol() {
        return getOrDefault(outputCol);
    }

    public CuwirePCA setOutputCol(String value) {
        set(outputCol, value);
        return this;
    }

    /** Whether to subtract the training mean before projecting (false: MLlib's projection of the rows as they are). */
    public BooleanParam center() {
        return center;
    }

    public boolean getCenter() {
        return (Boolean) getOrDefault(center);
    }

    public CuwirePCA setCenter(boolean value) {
        set(center, value);
        return this;
    }

    /** The number of components to keep (0: all of them) (cuwire's name; MLlib's is {@code k}). */
    public IntParam nComponents() {
        return nComponents;
    }

    public int getNComponents() {
        return getK();
    }

    public CuwirePCA setNComponents(int value) {
        set(nComponents, value);
        return this;
    }

    /** Whether to scale the projections to unit variance (with center). */
    public BooleanParam whiten() {
        return whiten;
    }

    public boolean getWhiten() {
        return (Boolean) getOrDefault(whiten);
    }

    public CuwirePCA setWhiten(boolean value) {
        set(whiten, value);
        return this;
    }

    @Override
    public CuwirePCA copy(ParamMap extra) {
        return defaultCopy(extra);
    }

    /** The reader of saved stages. */
    public static MLReader<CuwirePCA> read() {
        return new DefaultParamsReader<>();
    }

    /** Loads a saved stage. */
    public static CuwirePCA load(String path) {
        return read().load(path);
    }
}
