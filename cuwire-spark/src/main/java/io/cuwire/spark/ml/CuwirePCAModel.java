package io.cuwire.spark.ml;

import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import io.cuwire.ml.Estimator;
import io.cuwire.ml.decomposition.PCA;
import java.util.List;
import org.apache.spark.ml.linalg.DenseMatrix;
import org.apache.spark.ml.linalg.DenseVector;
import org.apache.spark.ml.linalg.Vectors;
import org.apache.spark.ml.param.BooleanParam;
import org.apache.spark.ml.param.Param;
import org.apache.spark.ml.param.ParamMap;
import org.apache.spark.ml.util.Identifiable;
import org.apache.spark.ml.util.MLReader;

/**
 * A fitted {@link CuwirePCA}: MLlib's {@code PCAModel} attributes ({@code pc}, the principal components as the
 * columns of a {@code numFeatures x k} matrix, and {@code explainedVariance}, the share of the variance each
 * explains) and its column: each row's projection onto the components, as an ml vector. As MLlib's, the projection
 * is of the row as it is, {@code x · pc}; with {@code center} it is of the row minus the training mean (and, with the
 * estimator's {@code whiten}, scaled to unit variance), as scikit-learn's and cuML's.
 */
public final class CuwirePCAModel extends CuwireModel<CuwirePCAModel> {
    private final Param<String> outputCol;
    private final BooleanParam center;

    /**
     * A model with no fitted state: what Spark Connect's ML discovery needs (a public no-argument constructor, for
     * {@code ServiceLoader}). Using it fails: fit an estimator or load a saved model.
     */
    public CuwirePCAModel() {
        this(Identifiable.randomUID("cuwirePCAModel"), FittedState.none("CuwirePCAModel"));
    }

    @SuppressWarnings("this-escape") // Spark params name their parent at construction
    CuwirePCAModel(String uid, FittedState state) {
        super(uid, state);
        this.outputCol = new Param<>(this, "outputCol", "output column: the projections as ml vectors");
        this.center = new BooleanParam(
                this,
                "center",
                "whether to subtract the training mean before projecting "
                        + "(false: MLlib's projection of the rows as they are)");
        setDefault(outputCol, "pcaFeatures");
        setDefault(center, false);
    }

    @Override
    CuwirePCAModel create(String uid, FittedState state) {
        return new CuwirePCAModel(uid, state);
    }

    /** The fitted cuwire estimator (shared with this model's copies: do not close it). */
    @Override
    public PCA estimator() {
        return (PCA) super.estimator();
    }

    /** The output column: the projections as ml vectors. */
    public Param<String> outputCol() {
        return outputCol;
    }

    /** Whether to subtract the training mean before projecting. */
    public BooleanParam center() {
        return center;
    }

    public String getOutputCol() {
        return getOrDefault(outputCol);
    }

    public boolean getCenter() {
        return (Boolean) getOrDefault(center);
    }

    public CuwirePCAModel setOutputCol(String value) {
        set(outputCol, value);
        return this;
    }

    public CuwirePCAModel setCenter(boolean value) {
        set(center, value);
        return this;
    }

    @Override
    Param<String> appendedCol() {
        return outputCol;
    }

    /** The principal components, one per column ({@code numFeatures x k}). */
    public DenseMatrix pc() {
        NdArray c = estimator().components();
        return new DenseMatrix((int) c.dim(1), (int) c.dim(0), doubles(c), false);
    }

    /** The share of the training variance each component explains (MLlib's {@code explainedVariance}). */
    public DenseVector explainedVariance() {
        return (DenseVector) Vectors.dense(doubles(estimator().explainedVarianceRatio()));
    }

    /** The training mean. */
    public DenseVector mean() {
        return (DenseVector) Vectors.dense(doubles(estimator().mean()));
    }

    /** The number of components. */
    public int k() {
        return (int) estimator().components().dim(0);
    }

    @Override
    List<Output> outputs() {
        if (getOutputCol().isEmpty()) {
            return List.of();
        }
        boolean centered = getCenter();
        return List.of(new Output(Schemas.vectors(getOutputCol(), k()), (fitted, x) -> project(fitted, x, centered)));
    }

    /**
     * The projections of {@code x}; uncentered, {@code transform(x) - transform(0)}: the estimator's own centered
     * (and whitened) projection, less that of the origin, which is minus the mean's.
     */
    private static Object[] project(Estimator fitted, NdArray x, boolean centered) {
        PCA p = (PCA) fitted;
        NdArray t = p.transform(x);
        if (centered) {
            return rowVectors(t, 1);
        }
        double[] origin;
        try (NdArray zero = NdArray.zeros(x.buffer().allocator(), x.dtype(), Order.C, 1, x.dim(1));
                NdArray o = p.transform(zero)) {
            origin = doubles(o);
        } catch (RuntimeException | Error e) {
            t.close();
            throw e;
        }
        Object[] rows = rowVectors(t, 1);
        for (int i = 0; i < rows.length; i++) {
            double[] v = ((DenseVector) rows[i]).values();
            for (int j = 0; j < v.length; j++) {
                v[j] -= origin[j];
            }
        }
        return rows;
    }

    @Override
    public String toString() {
        return "CuwirePCAModel: uid=" + uid() + ", k=" + k();
    }

    /** A copy sharing this model's fitted state (and training summary), with {@code extra}'s params. */
    @Override
    public CuwirePCAModel copy(ParamMap extra) {
        return super.copy(extra);
    }

    /** The reader of saved models (Spark's {@code PipelineModel.load} finds it by reflection). */
    public static MLReader<CuwirePCAModel> read() {
        return reader(CuwirePCAModel.class, PCA.class, CuwirePCAModel::new);
    }

    /** Loads a saved model into the driver's device memory. */
    public static CuwirePCAModel load(String path) {
        return read().load(path);
    }
}
