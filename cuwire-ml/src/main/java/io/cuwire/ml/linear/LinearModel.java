package io.cuwire.ml.linear;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DType;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import io.cuwire.ml.ComputeBackend;
import io.cuwire.ml.Estimator;
import io.cuwire.ml.Param;
import io.cuwire.ml.Reduction;
import io.cuwire.ml.Regressor;
import io.cuwire.ml.internal.HostArrays;
import io.cuwire.ml.internal.HostMath;
import java.io.Serial;
import java.util.List;

/**
 * Least squares with an optional L2 penalty on the coefficients (never on the intercept):
 * {@link LinearRegression} and {@link Ridge}. Fitting solves the d x d normal equations from {@link LinearStats};
 * {@link #partial} computes them for one partition and {@link #merge} solves from all of them.
 */
public abstract sealed class LinearModel extends Estimator implements Regressor permits LinearRegression, Ridge {
    @Serial
    private static final long serialVersionUID = 1L;

    /** Whether to fit an intercept (the data are centered); without one the model passes through the origin. */
    @Param
    boolean fitIntercept = true;

    /** The coefficients (d), in the dtype of the training data. */
    NdArray coef;

    /** The intercept (0 without {@link #fitIntercept}). */
    double intercept;

    LinearModel() {}

    /** The L2 penalty: 0 for ordinary least squares. */
    abstract double penalty();

    @Override
    public boolean isFitted() {
        return coef != null;
    }

    /** The fitted coefficients (d); owned by the estimator. */
    public NdArray coef() {
        checkFitted();
        return coef;
    }

    /** The fitted intercept. */
    public double intercept() {
        checkFitted();
        return intercept;
    }

    /** Whether an intercept is fitted. */
    public boolean fitIntercept() {
        return fitIntercept;
    }

    /**
     * Makes {@code coef} (d, floating) and {@code intercept} the fitted state, as a fit would have left it: how a model
     * fitted elsewhere is rebuilt ({@link io.cuwire.ml.modelfile.ModelFile}). Takes ownership of {@code coef}, also
     * when it throws; returns this.
     *
     * @throws IllegalArgumentException if {@code coef} is not a floating vector or {@code intercept} is not finite
     */
    public LinearModel adoptFitted(NdArray coef, double intercept) {
        String op = getClass().getSimpleName() + ".adoptFitted";
        if (coef.rank() != 1 || !coef.dtype().isFloatingPoint() || !Double.isFinite(intercept)) {
            coef.close();
            throw new IllegalArgumentException(op + ": coef " + coef + ", intercept " + intercept
                    + " (expected: a float32 or float64 vector and a finite intercept)");
        }
        close();
        this.coef = coef;
        this.intercept = intercept;
        return this;
    }

    @Override
    public LinearModel fit(NdArray x, NdArray y) {
        try (LinearStats s = partial(x, y)) {
            return merge(List.of(s), memoryFor(x));
        }
    }

    /** The statistics of one partition, on its device. */
    public LinearStats partial(NdArray x, NdArray y) {
        String op = getClass().getSimpleName() + ".partial";
        checkTraining(op, x);
        checkTargets(op, y, x);
        ComputeBackend b = backend(x);
        BufferAllocator<?> mem = memoryFor(x);
        long n = x.dim(0);
        long d = x.dim(1);
        NdArray xMean = NdArray.empty(mem, x.dtype(), Order.C, d);
        NdArray gram = null;
        NdArray xty = null;
        try (NdArray yc = NdArray.empty(mem, y.dtype(), Order.C, n)) {
            b.columnSums(x, xMean);
            b.scale(1.0 / n, xMean);
            double yMean = b.reduce(Reduction.SUM, y) / n;
            b.fill(yc, -yMean);
            b.axpy(1, y, yc);
            gram = NdArray.empty(mem, x.dtype(), Order.C, d, d);
            xty = NdArray.empty(mem, x.dtype(), Order.C, d);
            b.centeredCross(x, xMean, yc, gram, xty, mem);
            return new LinearStats(n, yMean, xMean, gram, xty);
        } catch (RuntimeException | Error e) {
            xMean.close();
            if (gram != null) {
                gram.close();
            }
            if (xty != null) {
                xty.close();
            }
            throw e;
        }
    }

    /** Fits from the statistics of all partitions; the coefficients go where the partials' arrays live. */
    public LinearModel merge(List<LinearStats> parts) {
        if (parts.isEmpty()) {
            throw new IllegalArgumentException(getClass().getSimpleName() + ".merge: no partials");
        }
        return merge(parts, memoryFor(parts.getFirst().xMean()));
    }

    private LinearModel merge(List<LinearStats> parts, BufferAllocator<?> mem) {
        String op = getClass().getSimpleName() + ".merge";
        int d = (int) parts.getFirst().xMean().dim(0);
        DType dtype = parts.getFirst().xMean().dtype();
        long n = 0;
        double[] xm = new double[d];
        double ym = 0;
        for (LinearStats p : parts) {
            if (p.xMean().dim(0) != d || p.xMean().dtype() != dtype) {
                throw new IllegalArgumentException(
                        op + ": a partial of " + p.xMean().dim(0) + " "
                                + p.xMean().dtype().wireName() + " features (expected: " + d + " " + dtype.wireName()
                                + ", as the first)");
            }
            n += p.n();
        }
        double[][] means = new double[parts.size()][];
        for (int i = 0; i < parts.size(); i++) {
            LinearStats p = parts.get(i);
            means[i] = HostArrays.doubles(p.xMean());
            double w = (double) p.n() / n;
            for (int j = 0; j < d; j++) {
                xm[j] += w * means[i][j];
            }
            ym += w * p.yMean();
        }
        double[] gram = new double[d * d];
        double[] xty = new double[d];
        for (int i = 0; i < parts.size(); i++) {
            LinearStats p = parts.get(i);
            double[] g = HostArrays.doubles(p.gram());
            double[] b = HostArrays.doubles(p.xty());
            double dy = p.yMean() - ym;
            for (int r = 0; r < d; r++) {
                double dr = means[i][r] - xm[r];
                xty[r] += b[r] + p.n() * dr * dy;
                for (int c = 0; c < d; c++) {
                    gram[r * d + c] += g[r * d + c] + p.n() * dr * (means[i][c] - xm[c]);
                }
            }
        }
        if (!fitIntercept) {
            for (int r = 0; r < d; r++) {
                xty[r] += n * xm[r] * ym;
                for (int c = 0; c < d; c++) {
                    gram[r * d + c] += n * xm[r] * xm[c];
                }
            }
        }
        double alpha = penalty();
        for (int r = 0; r < d; r++) {
            gram[r * d + r] += alpha;
        }
        double[] w = HostMath.solveSymmetric(gram, d, xty);
        double b0 = 0;
        if (fitIntercept) {
            b0 = ym;
            for (int j = 0; j < d; j++) {
                b0 -= xm[j] * w[j];
            }
        }
        close();
        coef = HostArrays.upload(mem, dtype, w, d);
        intercept = b0;
        return this;
    }

    @Override
    public NdArray predict(NdArray x) {
        checkFitted();
        checkInput(getClass().getSimpleName() + ".predict", x, coef.dim(0), coef.dtype(), coef);
        ComputeBackend b = backend(x);
        NdArray out = NdArray.empty(memoryFor(x), x.dtype(), Order.C, x.dim(0));
        try {
            b.fill(out, intercept);
            b.gemv(false, 1, x, coef, 1, out);
            return out;
        } catch (RuntimeException | Error e) {
            out.close();
            throw e;
        }
    }
}
