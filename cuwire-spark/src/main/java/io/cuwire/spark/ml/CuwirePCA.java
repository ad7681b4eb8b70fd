package io.cuwire.spark.ml;

import io.cuwire.ml.decomposition.PCA;
import java.util.List;
import org.apache.spark.ml.param.BooleanParam;
import org.apache.spark.ml.param.IntParam;
import org.apache.spark.ml.param.Param;
import org.apache.spark.ml.param.ParamMap;
import org.apache.spark.ml.util.DefaultParamsReader;
import org.apache.spark.ml.util.Identifiable;
import org.apache.spark.ml.util.MLReader;
import org.apache.spark.sql.types.StructField;

/**
 * Principal component analysis (each partition's mean and scatter, merged on the driver): cuwire's {@code PCA} in
 * Spark ML. Its model appends {@code outputCol}, the projected features as ml vectors: MLlib's projection of the rows
 * as they are, or with {@code center} of the rows minus the training mean (see {@link CuwirePCAModel}).
 */
public final class CuwirePCA extends CuwireEstimator<PCA, CuwirePCA, CuwirePCAModel> {
    private final IntParam nComponents;
    private final BooleanParam whiten;
    private final Param<String> outputCol;
    private final BooleanParam center;

    /** A stage with a fresh uid. */
    public CuwirePCA() {
        this(Identifiable.randomUID("cuwirePCA"));
    }

    /** A stage with {@code uid} (Spark's copy and load use it). */
    @SuppressWarnings("this-escape") // Spark params name their parent at construction
    public CuwirePCA(String uid) {
        super(uid);
        this.nComponents = new IntParam(this, "nComponents", "components to keep (k; 0: min(samples, features))");
        this.whiten = new BooleanParam(this, "whiten", "whether to scale the projections to unit "
                + "variance (with center)");
        this.outputCol = new Param<>(this, "outputCol", "output column: the projections as ml vectors");
        this.center = new BooleanParam(this, "center", "whether to subtract the training mean before "
                + "projecting (false: MLlib's projection of the rows as they are)");
        setDefault(outputCol(), "pcaFeatures");
        setDefault(center(), false);
        cuwireDefaults();
    }

    @Override
    protected PCA newEstimator() {
        return new PCA();
    }

    @Override
    CuwirePCAModel newModel(String uid, FittedState state) {
        return new CuwirePCAModel(uid, state);
    }

    /** Components to keep (k; 0: min(samples, features)). */
    public IntParam nComponents() {
        return nComponents;
    }

    public int getNComponents() {
        return (Integer) getOrDefault(nComponents);
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

    /** Output column: the projections as ml vectors. */
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

    @Override
    String appendedCol() {
        return getOutputCol();
    }

    @Override
    List<StructField> outputFields() {
        return getOutputCol().isEmpty() ? List.of() : List.of(Schemas.vectors(getOutputCol(), -1));
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
