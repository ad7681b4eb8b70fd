package io.cuwire.ml.linear;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.DType;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import io.cuwire.ml.BinaryOp;
import io.cuwire.ml.Classifier;
import io.cuwire.ml.ComputeBackend;
import io.cuwire.ml.Estimator;
import io.cuwire.ml.Param;
import io.cuwire.ml.Partial;
import io.cuwire.ml.internal.HostArrays;
import io.cuwire.ml.internal.Lbfgs;
import io.cuwire.serialize.WireType;
import java.io.Serial;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * Logistic regression (scikit-learn's {@code LogisticRegression} with the {@code lbfgs} solver): binary (one
 * coefficient row, sigmoid) for two classes, multinomial (one row per class, softmax) for more; an L2 penalty or
 * none; the intercept is never penalized. It minimizes
 * <pre>  (1/n) sum_i loss_i + ||W||² / (2 C n)</pre>
 * which has the minimizer of scikit-learn's {@code C sum_i loss_i + ||W||² / 2}, and stops when the largest
 * gradient component of that objective is at most {@link #tol}.
 *
 * <h2>Distribution</h2>
 * The L-BFGS loop runs on the client ({@link Solver}); each evaluation is a sum over partitions of
 * {@link #partialGradient} — loss and gradient of one partition at the current coefficients, computed on its device
 * (one GEMM for the logits, the fused cross-entropy kernel, one GEMM and a column sum for the gradient). Only
 * model-sized vectors travel per evaluation.
 */
@WireType("cuwire.ml.LogisticRegression")
public final class LogisticRegression extends Estimator implements Classifier {
    @Serial
    private static final long serialVersionUID = 1L;

    /** The penalty on the coefficients. */
    public enum Penalty {
        /** {@code ||W||² / (2 C)}. */
        L2,
        /** None. */
        NONE
    }

    /** The inverse of the penalty's strength (scikit-learn's {@code C}). */
    @Param
    double c = 1.0;

    /** The penalty. */
    @Param
    Penalty penalty = Penalty.L2;

    /** Whether to fit intercepts. */
    @Param
    boolean fitIntercept = true;

    /** The most L-BFGS iterations. */
    @Param
    int maxIter = 100;

    /** Stop when no gradient component of the objective exceeds this. */
    @Param
    double tol = 1e-4;

    /** The number of classes, or 0 to count them from the labels (largest plus one). */
    @Param
    int nClasses;

    /** The coefficients: 1 x d for two classes, classes x d for more. */
    NdArray coef;

    /** The intercepts: 1 or classes. */
    NdArray intercept;

    /** The number of classes fitted. */
    int classes;

    /** L-BFGS iterations run. */
    int nIter;

    /** A model with {@code C = 1}, an L2 penalty and intercepts. */
    public LogisticRegression() {}

    /** Sets {@code C}; returns this. */
    public LogisticRegression c(double value) {
        if (!(value > 0)) {
            throw new IllegalArgumentException("C: " + value + " (expected: > 0)");
        }
        c = value;
        return this;
    }

    /** Sets the penalty; returns this. */
    public LogisticRegression penalty(Penalty value) {
        penalty = Objects.requireNonNull(value, "penalty");
        return this;
    }

    /** Sets whether to fit intercepts; returns this. */
    public LogisticRegression fitIntercept(boolean value) {
        fitIntercept = value;
        return this;
    }

    /** Sets the most iterations; returns this. */
    public LogisticRegression maxIter(int value) {
        maxIter = value;
        return this;
    }

    /** Sets the gradient tolerance; returns this. */
    public LogisticRegression tol(double value) {
        tol = value;
        return this;
    }

    /** Sets the number of classes (0: count them); returns this. */
    public LogisticRegression nClasses(int value) {
        nClasses = value;
        return this;
    }

    @Override
    public boolean isFitted() {
        return coef != null;
    }

    /** The coefficients (1 x d, or classes x d); owned by the estimator. */
    public NdArray coef() {
        checkFitted();
        return coef;
    }

    /** The intercepts (1, or classes); owned by the estimator. */
    public NdArray intercept() {
        checkFitted();
        return intercept;
    }

    @Override
    public int classes() {
        checkFitted();
        return classes;
    }

    /** The L-BFGS iterations run. */
    public int nIter() {
        checkFitted();
        return nIter;
    }

    /**
     * Makes {@code coef} (1 x d for two classes, classes x d for more) and {@code intercept} (1, or classes) the
     * fitted state, as a fit would have left it ({@link #nIter()} 0): how a model fitted elsewhere is rebuilt
     * ({@link io.cuwire.ml.modelfile.ModelFile}). Takes ownership of both arrays, also when it throws; returns this.
     *
     * @throws IllegalArgumentException if the shapes or dtypes do not match {@code classes}
     */
    public LogisticRegression adoptFitted(NdArray coef, NdArray intercept, int classes) {
        long rows = classes == 2 ? 1 : classes;
        if (classes < 2
                || coef.rank() != 2
                || coef.dim(0) != rows
                || intercept.rank() != 1
                || intercept.dim(0) != rows
                || !coef.dtype().isFloatingPoint()
                || intercept.dtype() != coef.dtype()) {
            coef.close();
            intercept.close();
            throw new IllegalArgumentException("LogisticRegression.adoptFitted: coef " + coef + ", intercept "
                    + intercept + " for " + classes + " classes (expected: (" + rows + ", d) and (" + rows
                    + ",) of one float dtype, 2 or more classes)");
        }
        close();
        this.coef = coef;
        this.intercept = intercept;
        this.classes = classes;
        this.nIter = 0;
        return this;
    }

    // ---------------------------------------------------------------- single device

    @Override
    public LogisticRegression fit(NdArray x, NdArray y) {
        String op = "LogisticRegression.fit";
        checkTraining(op, x);
        checkLabels(op, y, x);
        int k = classes(op, y, nClasses);
        try (Solver s = solver((int) x.dim(1), k, x.dtype(), memoryFor(x))) {
            while (!s.done()) {
                try (Gradient g = partialGradient(x, y, s.coef(), s.intercept())) {
                    s.update(List.of(g));
                }
            }
            return s.finish();
        }
    }

    /** The logits (n x 1 for two classes, n x classes for more). */
    public NdArray decisionFunction(NdArray x) {
        checkFitted();
        checkInput("LogisticRegression.decisionFunction", x, coef.dim(1), coef.dtype(), coef);
        return logits(backend(x), memoryFor(x), x, coef, intercept);
    }

    @Override
    public NdArray predict(NdArray x) {
        checkFitted();
        checkInput("LogisticRegression.predict", x, coef.dim(1), coef.dtype(), coef);
        ComputeBackend b = backend(x);
        BufferAllocator<?> mem = memoryFor(x);
        NdArray labels = NdArray.empty(mem, DType.INT32, Order.C, x.dim(0));
        try (NdArray z = classLogits(b, mem, x)) {
            b.argmaxRows(z, labels);
            return labels;
        } catch (RuntimeException | Error e) {
            labels.close();
            throw e;
        }
    }

    @Override
    public NdArray predictProba(NdArray x) {
        checkFitted();
        checkInput("LogisticRegression.predictProba", x, coef.dim(1), coef.dtype(), coef);
        ComputeBackend b = backend(x);
        NdArray z = classLogits(b, memoryFor(x), x);
        try {
            b.softmaxRows(z, z);
            return z;
        } catch (RuntimeException | Error e) {
            z.close();
            throw e;
        }
    }

    /** Logits, a column per class: a binary model's {@code z} becomes {@code [0, z]} (softmax: the sigmoid). */
    private NdArray classLogits(ComputeBackend b, BufferAllocator<?> mem, NdArray x) {
        if (coef.dim(0) > 1) {
            return logits(b, mem, x, coef, intercept);
        }
        long d = coef.dim(1);
        long es = coef.dtype().byteSize();
        try (NdArray w2 = NdArray.zeros(mem, coef.dtype(), Order.C, 2, d);
                NdArray b2 = NdArray.zeros(mem, coef.dtype(), Order.C, 2)) {
            CopyEngine.copy(coef.buffer(), 0, w2.buffer(), d * es, d * es);
            CopyEngine.copy(intercept.buffer(), 0, b2.buffer(), es, es);
            return logits(b, mem, x, w2, b2);
        }
    }

    private static NdArray logits(ComputeBackend b, BufferAllocator<?> mem, NdArray x, NdArray w, NdArray b0) {
        NdArray z = NdArray.empty(mem, x.dtype(), Order.C, x.dim(0), w.dim(0));
        try {
            b.gemm(false, true, 1, x, w, 0, z);
            b.broadcastRows(BinaryOp.ADD, z, b0);
            return z;
        } catch (RuntimeException | Error e) {
            z.close();
            throw e;
        }
    }

    // ---------------------------------------------------------------- distribution

    /**
     * One partition's summed loss and its gradient at the given coefficients.
     *
     * @param n samples of the partition
     * @param loss summed cross-entropy (unpenalized, not divided by n)
     * @param coef the gradient in the coefficients (rows x d)
     * @param intercept the gradient in the intercepts (rows)
     */
    @WireType("cuwire.ml.LogisticRegression.Gradient")
    public record Gradient(long n, double loss, NdArray coef, NdArray intercept) implements Partial {
        @Override
        public void close() {
            coef.close();
            intercept.close();
        }
    }

    /**
     * The loss and gradient of partition ({@code x}, {@code y}) at {@code coef} (rows x d) and {@code intercept}
     * (rows), all where {@code x} lives.
     */
    public Gradient partialGradient(NdArray x, NdArray y, NdArray coef, NdArray intercept) {
        String op = "LogisticRegression.partialGradient";
        checkMatrix(op, "X", x);
        checkLabels(op, y, x);
        checkInput(op, x, coef.dim(1), coef.dtype(), coef);
        ComputeBackend b = backend(x);
        BufferAllocator<?> mem = memoryFor(x);
        NdArray gw = NdArray.empty(mem, x.dtype(), Order.C, coef.dim(0), coef.dim(1));
        NdArray gb = null;
        try (NdArray z = logits(b, mem, x, coef, intercept)) {
            double loss = b.crossEntropy(z, y, z);
            b.gemm(true, false, 1, z, x, 0, gw);
            gb = NdArray.empty(mem, x.dtype(), Order.C, coef.dim(0));
            b.columnSums(z, gb);
            return new Gradient(x.dim(0), loss, gw, gb);
        } catch (RuntimeException | Error e) {
            gw.close();
            if (gb != null) {
                gb.close();
            }
            throw e;
        }
    }

    /**
     * An L-BFGS loop for {@code classes} classes of {@code features} features in {@code dtype}, its point kept in
     * {@code mem}: the client's side of a distributed fit.
     */
    public Solver solver(int features, int classes, DType dtype, BufferAllocator<?> mem) {
        return new Solver(features, classes, dtype, mem);
    }

    /**
     * The client's side of the fit: the current coefficients to evaluate ({@link #coef()}, {@link #intercept()}),
     * {@link #update} with the partitions' gradients there, until {@link #done()}; then {@link #finish()}. Not
     * thread-safe.
     */
    public final class Solver implements AutoCloseable {
        private final int features;
        private final int classCount;
        private final int rows;
        private final Lbfgs lbfgs;
        private NdArray coefAt;
        private NdArray interceptAt;

        private Solver(int features, int classes, DType dtype, BufferAllocator<?> mem) {
            if (classes < 2) {
                throw new IllegalArgumentException("LogisticRegression: " + classes + " class(es) (expected: >= 2)");
            }
            if (!dtype.isFloatingPoint()) {
                throw new IllegalArgumentException(
                        "LogisticRegression: dtype " + dtype.wireName() + " (expected: float32 or float64)");
            }
            this.features = features;
            this.classCount = classes;
            this.rows = classes == 2 ? 1 : classes;
            this.lbfgs = new Lbfgs(new double[rows * (features + 1)], maxIter, tol);
            this.coefAt = NdArray.zeros(mem, dtype, Order.C, rows, features);
            this.interceptAt = NdArray.zeros(mem, dtype, Order.C, rows);
        }

        /** The coefficients to evaluate at next (rows x d); owned by the solver. */
        public NdArray coef() {
            return coefAt;
        }

        /** The intercepts to evaluate at next (rows); owned by the solver. */
        public NdArray intercept() {
            return interceptAt;
        }

        /** Whether the loop has stopped. */
        public boolean done() {
            return lbfgs.done();
        }

        /** Why the loop stopped, or {@code running}. */
        public String reason() {
            return lbfgs.reason();
        }

        /** Takes the gradients of every partition at {@link #coef()} and {@link #intercept()}. */
        public void update(List<Gradient> parts) {
            long n = 0;
            double loss = 0;
            int wn = rows * features;
            double[] g = new double[wn + rows];
            for (Gradient p : parts) {
                if (p.coef().dim(0) != rows || p.coef().dim(1) != features) {
                    throw new IllegalArgumentException("LogisticRegression.Solver.update: a gradient of shape "
                            + shape(p.coef()) + " (expected: (" + rows + ", " + features + "))");
                }
                n += p.n();
                loss += p.loss();
                double[] gw = HostArrays.doubles(p.coef());
                double[] gb = HostArrays.doubles(p.intercept());
                for (int i = 0; i < wn; i++) {
                    g[i] += gw[i];
                }
                for (int i = 0; i < rows; i++) {
                    g[wn + i] += gb[i];
                }
            }
            if (n == 0) {
                throw new IllegalArgumentException("LogisticRegression.Solver.update: no samples");
            }
            double[] x = lbfgs.point();
            double f = loss / n;
            for (int i = 0; i < g.length; i++) {
                g[i] /= n;
            }
            if (penalty == Penalty.L2) {
                double lambda = 1 / (c * n);
                for (int i = 0; i < wn; i++) {
                    f += 0.5 * lambda * x[i] * x[i];
                    g[i] += lambda * x[i];
                }
            }
            if (!fitIntercept) {
                for (int i = wn; i < g.length; i++) {
                    g[i] = 0;
                }
            }
            lbfgs.accept(f, g);
            double[] next = lbfgs.done() ? lbfgs.solution() : lbfgs.point();
            HostArrays.write(coefAt, Arrays.copyOfRange(next, 0, wn));
            HostArrays.write(interceptAt, Arrays.copyOfRange(next, wn, wn + rows));
        }

        /** Makes the solution the estimator's fitted state; returns the estimator. */
        public LogisticRegression finish() {
            if (!lbfgs.done()) {
                throw new IllegalStateException("LogisticRegression.Solver.finish before the loop stopped");
            }
            LogisticRegression.this.close();
            coef = coefAt;
            intercept = interceptAt;
            coefAt = null;
            interceptAt = null;
            classes = classCount;
            nIter = lbfgs.iterations();
            return LogisticRegression.this;
        }

        /** Releases the point unless {@link #finish()} took it. */
        @Override
        public void close() {
            if (coefAt != null) {
                coefAt.close();
                interceptAt.close();
                coefAt = null;
                interceptAt = null;
            }
        }
    }
}
