package io.cuwire.spark.ml;

import io.cuwire.memory.NdArray;
import io.cuwire.ml.Estimator;
import io.cuwire.ml.naivebayes.MultinomialNB;
import org.apache.spark.ml.linalg.DenseMatrix;
import org.apache.spark.ml.linalg.Matrix;
import org.apache.spark.ml.linalg.Vector;
import org.apache.spark.ml.linalg.Vectors;
import org.apache.spark.ml.param.ParamMap;
import org.apache.spark.ml.util.Identifiable;
import org.apache.spark.ml.util.MLReader;

/**
 * A fitted {@link CuwireMultinomialNB}: MLlib's {@code NaiveBayesModel} attributes ({@code pi}, the log class
 * priors, and {@code theta}, the log feature probabilities, one row per class) and columns: {@code rawPrediction}
 * holds each class's joint log-likelihood, {@code probability} their softmax.
 */
public final class CuwireMultinomialNBModel extends CuwireClassificationModel<CuwireMultinomialNBModel> {
    /**
     * A model with no fitted state: what Spark Connect's ML discovery needs (a public no-argument constructor, for
     * {@code ServiceLoader}). Using it fails: fit an estimator or load a saved model.
     */
    public CuwireMultinomialNBModel() {
        this(Identifiable.randomUID("cuwireMultinomialNBModel"), FittedState.none("CuwireMultinomialNBModel"));
    }

    CuwireMultinomialNBModel(String uid, FittedState state) {
        super(uid, state);
    }

    @Override
    CuwireMultinomialNBModel create(String uid, FittedState state) {
        return new CuwireMultinomialNBModel(uid, state);
    }

    /** The fitted cuwire estimator (shared with this model's copies: do not close it). */
    @Override
    public MultinomialNB estimator() {
        return (MultinomialNB) super.estimator();
    }

    /** The log class priors. */
    public Vector pi() {
        return Vectors.dense(doubles(estimator().classLogPrior()));
    }

    /** The log probability of each feature given each class ({@code numClasses x numFeatures}). */
    public Matrix theta() {
        NdArray t = estimator().featureLogProb();
        return new DenseMatrix((int) t.dim(0), (int) t.dim(1), doubles(t), true);
    }

    @Override
    public int numFeatures() {
        return (int) estimator().featureLogProb().dim(1);
    }

    @Override
    Scoring rawScoring() {
        return CuwireMultinomialNBModel::logLikelihoods;
    }

    private static Object[] logLikelihoods(Estimator fitted, NdArray x) {
        return rowVectors(((MultinomialNB) fitted).jointLogLikelihood(x), 1);
    }

    @Override
    public String toString() {
        return "CuwireMultinomialNBModel: uid=" + uid() + ", numClasses=" + numClasses() + ", numFeatures="
                + numFeatures();
    }

    /** A copy sharing this model's fitted state (and training summary), with {@code extra}'s params. */
    @Override
    public CuwireMultinomialNBModel copy(ParamMap extra) {
        return super.copy(extra);
    }

    /** The reader of saved models (Spark's {@code PipelineModel.load} finds it by reflection). */
    public static MLReader<CuwireMultinomialNBModel> read() {
        return reader(CuwireMultinomialNBModel.class, MultinomialNB.class, CuwireMultinomialNBModel::new);
    }

    /** Loads a saved model into the driver's device memory. */
    public static CuwireMultinomialNBModel load(String path) {
        return read().load(path);
    }
}
