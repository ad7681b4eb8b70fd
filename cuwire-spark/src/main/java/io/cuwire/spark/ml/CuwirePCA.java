package io.cuwire.spark.ml;

import io.cuwire.ml.decomposition.PCA;
import org.apache.spark.ml.param.BooleanParam;
import org.apache.spark.ml.param.IntParam;
import org.apache.spark.ml.param.Param;
import org.apache.spark.ml.util.DefaultParamsReader;
import org.apache.spark.ml.util.Identifiable;
import org.apache.spark.ml.util.MLReader;

/**
 * Principal component analysis (each partition's mean and scatter, merged on the driver): cuwire's {@code PCA} in
 * Spark ML. Its model appends {@code outputCol}, the projected features as ml vectors; {@code labelCol} and
 * {@code predictionCol} play no part.
 */
public final class CuwirePCA extends CuwireEstimator<PCA> {
    private final IntParam nComponents;
    private final BooleanParam whiten;
    private final Param<String> outputCol;

    /** A stage with a fresh uid. */
    public CuwirePCA() {
        this(Identifiable.randomUID("cuwirePCA"));
    }

    /** A stage with {@code uid} (Spark's copy and load use it). */
    @SuppressWarnings("this-escape") // Spark params name their parent at construction
    public CuwirePCA(String uid) {
        super(uid);
        this.nComponents = new IntParam(this, "nComponents", "components to keep (k; 0: min(samples, features))");
        this.whiten = new BooleanParam(this, "whiten", "whether to scale the projections to unit variance");
        this.outputCol = new Param<>(this, "outputCol", "output column: the projected features as ml vectors");
        setDefault(outputCol, "pcaFeatures");
        cuwireDefaults();
    }

    @Override
    protected PCA newEstimator() {
        return new PCA();
    }

    @Override
    protected String appendedCol() {
        return getOutputCol();
    }

    /** The cuwire estimator's nComponents: components to keep. */
    public IntParam nComponents() {
        return nComponents;
    }

    /** The cuwire estimator's whiten: whether to scale the projections to unit variance. */
    public BooleanParam whiten() {
        return whiten;
    }

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

    /** The reader of saved stages. */
    public static MLReader<CuwirePCA> read() {
        return new DefaultParamsReader<>();
    }

    /** Loads a saved stage. */
    public static CuwirePCA load(String path) {
        return read().load(path);
    }
}
