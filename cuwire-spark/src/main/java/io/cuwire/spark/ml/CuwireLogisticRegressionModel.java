package io.cuwire.spark.ml;

import io.cuwire.memory.NdArray;
import io.cuwire.ml.Estimator;
import io.cuwire.ml.linear.LogisticRegression;
import org.apache.spark.ml.linalg.DenseMatrix;
import org.apache.spark.ml.linalg.Matrix;
import org.apache.spark.ml.linalg.Vector;
import org.apache.spark.ml.linalg.Vectors;
import org.apache.spark.ml.param.ParamMap;
import org.apache.spark.ml.util.Identifiable;
import org.apache.spark.ml.util.MLReader;

/**
 * A fitted {@link CuwireLogisticRegression}: MLlib's {@code LogisticRegressionModel} attributes
 * ({@code coefficientMatrix}, {@code interceptVector}, and for two classes {@code coefficients} and
 * {@code intercept}) and columns: {@code rawPrediction} holds the margins ({@code [-m, m]} for two classes, one per
 * class for more), {@code probability} the sigmoid or softmax of them.
 */
public final class CuwireLogisticRegressionModel extends CuwireClassificationModel<CuwireLogisticRegressionModel> {
    private CuwireClassificationSummary summary;

    /**
     * A model with no fitted state: what Spark Connect's ML discovery needs (a public no-argument constructor, for
     * {@code ServiceLoader}). Using it fails: fit an estimator or load a saved model.
     */
    public CuwireLogisticRegressionModel() {
        this(
                Identifiable.randomUID("cuwireLogisticRegressionModel"),
                FittedState.none("CuwireLogisticRegressionModel"));
    }

    CuwireLogisticRegressionModel(String uid, FittedState state) {
        super(uid, state);
    }

    @Override
    CuwireLogisticRegressionModel create(String uid, FittedState state) {
        return new CuwireLogisticRegressionModel(uid, state);
    }

    /** The fitted cuwire estimator (shared with this model's copies: do not close it). */
    @Override
    public LogisticRegression estimator() {
        return (LogisticRegression) super.estimator();
    }

    @Override
    public int numFeatures() {
        return (int) estimator().coef().dim(1);
    }

    /** Whether the model has a coefficient row per class (more than two classes), as MLlib's multinomial family. */
    public boolean isMultinomial() {
        return estimator().coef().dim(0) > 1;
    }

    /** The coefficients: one row per class ({@code numClasses x numFeatures}), or one row for two classes. */
    public Matrix coefficientMatrix() {
        NdArray c = estimator().coef();
        return new DenseMatrix((int) c.dim(0), (int) c.dim(1), doubles(c), true);
    }

    /** The intercepts: one per coefficient row. */
    public Vector interceptVector() {
        return Vectors.dense(doubles(estimator().intercept()));
    }

    /**
     * The coefficients of a two-class model.
     *
     * @throws UnsupportedOperationException for more classes (MLlib's message)
     */
    public Vector coefficients() {
        if (isMultinomial()) {
            throw new UnsupportedOperationException(
                    "Multinomial models contain a matrix of coefficients, use " + "coefficientMatrix instead.");
        }
        return Vectors.dense(doubles(estimator().coef()));
    }

    /**
     * The intercept of a two-class model.
     *
     * @throws UnsupportedOperationException for more classes (MLlib's message)
     */
    public double intercept() {
        if (isMultinomial()) {
            throw new UnsupportedOperationException(
                    "Multinomial models contain a vector of intercepts, use " + "interceptVector instead.");
        }
        return doubles(estimator().intercept())[0];
    }

    @Override
    Scoring rawScoring() {
        return CuwireLogisticRegressionModel::margins;
    }

    /** MLlib's raw predictions: the margins, {@code [-m, m]} for a two-class model. */
    private static Object[] margins(Estimator fitted, NdArray x) {
        NdArray z = ((LogisticRegression) fitted).decisionFunction(x);
        if (z.dim(1) > 1) {
            return rowVectors(z, 1);
        }
        double[] m;
        try (z) {
            m = doubles(z);
        }
        Object[] out = new Object[m.length];
        for (int i = 0; i < m.length; i++) {
            out[i] = Vectors.dense(-m[i], m[i]);
        }
        return out;
    }

    /** Whether the model has a training summary: models that {@code fit} made do, loaded ones do not. */
    public boolean hasSummary() {
        return summary != null;
    }

    /**
     * The training summary: metrics of the training rows' predictions, computed when first asked for.
     *
     * @throws IllegalStateException if the model has none (a loaded model)
     */
    public CuwireClassificationSummary summary() {
        return CuwireClassificationSummary.present(summary, this);
    }

    void setSummary(CuwireClassificationSummary s) {
        this.summary = s;
    }

    @Override
    void copyExtras(CuwireLogisticRegressionModel copy) {
        copy.summary = summary;
    }

    @Override
    public String toString() {
        return "CuwireLogisticRegressionModel: uid=" + uid() + ", numClasses=" + numClasses() + ", numFeatures="
                + numFeatures();
    }

    /** A copy sharing this model's fitted state (and training summary), with {@code extra}'s params. */
    @Override
    public CuwireLogisticRegressionModel copy(ParamMap extra) {
        return super.copy(extra);
    }

    /** The reader of saved models (Spark's {@code PipelineModel.load} finds it by reflection). */
    public static MLReader<CuwireLogisticRegressionModel> read() {
        return reader(
                CuwireLogisticRegressionModel.class, LogisticRegression.class, CuwireLogisticRegressionModel::new);
    }

    /** Loads a saved model into the driver's device memory. */
    public static CuwireLogisticRegressionModel load(String path) {
        return read().load(path);
    }
}
