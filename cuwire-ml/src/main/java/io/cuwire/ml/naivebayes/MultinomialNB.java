package io.cuwire.ml.naivebayes;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DType;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import io.cuwire.ml.BinaryOp;
import io.cuwire.ml.Classifier;
import io.cuwire.ml.ComputeBackend;
import io.cuwire.ml.Estimator;
import io.cuwire.ml.Param;
import io.cuwire.ml.Partial;
import io.cuwire.ml.Reduction;
import io.cuwire.ml.internal.HostArrays;
import io.cuwire.serialize.WireType;
import java.io.Serial;
import java.util.List;

/**
 * Naive Bayes for count features (scikit-learn's and cuML's {@code MultinomialNB}) with additive (Laplace/Lidstone)
 * smoothing. {@link #partial} counts a partition's samples and feature totals per class on its device (a scatter-add
 * of rows and a bincount); {@link #merge} sums the counts and turns them into log probabilities on the host.
 * Prediction is one GEMM plus the class log priors, then an argmax or a softmax per row.
 */
@WireType("cuwire.ml.MultinomialNB")
public final class MultinomialNB extends Estimator implements Classifier {
    @Serial
    private static final long serialVersionUID = 1L;

    /** The additive smoothing, {@code >= 0}. */
    @Param
    double alpha = 1.0;

    /** Whether to learn class priors (else uniform). */
    @Param
    boolean fitPrior = true;

    /** The number of classes, or 0 to count them from the labels; partitions need it set. */
    @Param
    int nClasses;

    /** Samples per class (k). */
    NdArray classCount;

    /** Summed features per class (k x d). */
    NdArray featureCount;

    /** {@code log P(feature | class)} (k x d). */
    NdArray featureLogProb;

    /** {@code log P(class)} (k). */
    NdArray classLogPrior;

    /** A model with {@code alpha = 1} and learned priors. */
    public MultinomialNB() {}

    /** Sets the smoothing; returns this. */
    public MultinomialNB alpha(double value) {
        if (!(value >= 0)) {
            throw new IllegalArgumentException("alpha: " + value + " (expected: >= 0)");
        }
        alpha = value;
        return this;
    }

    /** Sets whether to learn class priors; returns this. */
    public MultinomialNB fitPrior(boolean value) {
        fitPrior = value;
        return this;
    }

    /** Sets the number of classes (0: count them); returns this. */
    public MultinomialNB nClasses(int value) {
        nClasses = value;
        return this;
    }

    @Override
    public boolean isFitted() {
        return featureLogProb != null;
    }

    @Override
    public int classes() {
        checkFitted();
        return (int) classCount.dim(0);
    }

    /** Samples per class (k); owned by the estimator. */
    public NdArray classCount() {
        checkFitted();
        return classCount;
    }

    /** Summed features per class (k x d); owned by the estimator. */
    public NdArray featureCount() {
        checkFitted();
        return featureCount;
    }

    /** {@code log P(feature | class)} (k x d); owned by the estimator. */
    public NdArray featureLogProb() {
        checkFitted();
        return featureLogProb;
    }

    /** {@code log P(class)} (k); owned by the estimator. */
    public NdArray classLogPrior() {
        checkFitted();
        return classLogPrior;
    }

    @Override
    public MultinomialNB fit(NdArray x, NdArray y) {
        try (Counts c = partial(x, y)) {
            return merge(List.of(c));
        }
    }

    /**
     * The counts of one partition.
     *
     * @param classCount samples per class (k, the data's dtype)
     * @param featureCount summed features per class (k x d)
     */
    @WireType("cuwire.ml.MultinomialNB.Counts")
    public record Counts(NdArray classCount, NdArray featureCount) implements Partial {
        @Override
        public void close() {
            classCount.close();
            featureCount.close();
        }
    }

    /** Counts partition ({@code x}, {@code y}) on its device; {@code x} holds non-negative counts. */
    public Counts partial(NdArray x, NdArray y) {
        String op = "MultinomialNB.partial";
        checkTraining(op, x);
        checkLabels(op, y, x);
        int k = classes(op, y, nClasses);
        ComputeBackend b = backend(x);
        double min = b.reduce(Reduction.MIN, x);
        if (min < 0) {
            throw new IllegalArgumentException(op + ": X holds " + min + " (expected: counts >= 0)");
        }
        BufferAllocator<?> mem = memoryFor(x);
        NdArray cc = NdArray.zeros(mem, x.dtype(), Order.C, k);
        NdArray fc = null;
        try {
            fc = NdArray.zeros(mem, x.dtype(), Order.C, k, x.dim(1));
            b.bincount(y, cc);
            b.scatterAddRows(x, y, fc);
            return new Counts(cc, fc);
        } catch (RuntimeException | Error e) {
            cc.close();
            if (fc != null) {
                fc.close();
            }
            throw e;
        }
    }

    /** Fits from the counts of every partition; the state goes where the counts live. Returns this. */
    public MultinomialNB merge(List<Counts> parts) {
        String op = "MultinomialNB.merge";
        if (parts.isEmpty()) {
            throw new IllegalArgumentException(op + ": no partials");
        }
        NdArray first = parts.getFirst().featureCount();
        int k = (int) first.dim(0);
        int d = (int) first.dim(1);
        DType dtype = first.dtype();
        double[] cc = new double[k];
        double[] fc = new double[k * d];
        for (Counts c : parts) {
            if (c.featureCount().dim(0) != k
                    || c.featureCount().dim(1) != d
                    || c.featureCount().dtype() != dtype) {
                throw new IllegalArgumentException(op + ": counts of shape " + shape(c.featureCount()) + " "
                        + c.featureCount().dtype().wireName() + " (expected: (" + k + ", " + d + ") "
                        + dtype.wireName() + ", as the first; set nClasses so that every partition agrees)");
            }
            double[] a = HostArrays.doubles(c.classCount());
            double[] f = HostArrays.doubles(c.featureCount());
            for (int i = 0; i < k; i++) {
                cc[i] += a[i];
            }
            for (int i = 0; i < fc.length; i++) {
                fc[i] += f[i];
            }
        }
        double[] flp = new double[k * d];
        for (int c = 0; c < k; c++) {
            double total = alpha * d;
            for (int j = 0; j < d; j++) {
                total += fc[c * d + j];
            }
            for (int j = 0; j < d; j++) {
                flp[c * d + j] = Math.log(fc[c * d + j] + alpha) - Math.log(total);
            }
        }
        double n = 0;
        for (double v : cc) {
            n += v;
        }
        double[] prior = new double[k];
        for (int c = 0; c < k; c++) {
            prior[c] = fitPrior ? Math.log(cc[c]) - Math.log(n) : -Math.log(k);
        }
        BufferAllocator<?> mem = memoryFor(first);
        close();
        classCount = HostArrays.upload(mem, dtype, cc, k);
        featureCount = HostArrays.upload(mem, dtype, fc, k, d);
        featureLogProb = HostArrays.upload(mem, dtype, flp, k, d);
        classLogPrior = HostArrays.upload(mem, dtype, prior, k);
        return this;
    }

    /** The joint log likelihood {@code log P(class) + sum_j x_j log P(feature j | class)} (n x k). */
    public NdArray jointLogLikelihood(NdArray x) {
        checkFitted();
        checkInput(
                "MultinomialNB.jointLogLikelihood", x, featureLogProb.dim(1), featureLogProb.dtype(), featureLogProb);
        ComputeBackend b = backend(x);
        NdArray jll = NdArray.empty(memoryFor(x), x.dtype(), Order.C, x.dim(0), featureLogProb.dim(0));
        try {
            b.gemm(false, true, 1, x, featureLogProb, 0, jll);
            b.broadcastRows(BinaryOp.ADD, jll, classLogPrior);
            return jll;
        } catch (RuntimeException | Error e) {
            jll.close();
            throw e;
        }
    }

    @Override
    public NdArray predict(NdArray x) {
        ComputeBackend b = backend(x);
        try (NdArray jll = jointLogLikelihood(x)) {
            NdArray labels = NdArray.empty(memoryFor(x), DType.INT32, Order.C, x.dim(0));
            try {
                b.argmaxRows(jll, labels);
                return labels;
            } catch (RuntimeException | Error e) {
                labels.close();
                throw e;
            }
        }
    }

    @Override
    public NdArray predictProba(NdArray x) {
        NdArray jll = jointLogLikelihood(x);
        try {
            backend(x).softmaxRows(jll, jll);
            return jll;
        } catch (RuntimeException | Error e) {
            jll.close();
            throw e;
        }
    }
}
