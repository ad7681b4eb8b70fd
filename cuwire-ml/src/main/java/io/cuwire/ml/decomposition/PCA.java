package io.cuwire.ml.decomposition;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.Closeables;
import io.cuwire.memory.DType;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import io.cuwire.ml.BinaryOp;
import io.cuwire.ml.ComputeBackend;
import io.cuwire.ml.Estimator;
import io.cuwire.ml.Param;
import io.cuwire.ml.UnaryOp;
import io.cuwire.ml.internal.HostArrays;
import io.cuwire.ml.internal.HostMath;
import io.cuwire.serialize.WireType;
import java.io.Serial;
import java.util.List;

/**
 * Principal component analysis (scikit-learn's and cuML's {@code PCA}) by the eigen-decomposition of the covariance
 * matrix, as cuML's {@code full} solver does. {@link #partial} computes a partition's mean and centered scatter on
 * its device; {@link #merge} combines them and decomposes the d x d covariance on the host. Component signs follow
 * scikit-learn: the largest absolute entry of each component is positive.
 */
@WireType("cuwire.ml.PCA")
public final class PCA extends Estimator {
    @Serial
    private static final long serialVersionUID = 1L;

    /** Components to keep; 0 keeps {@code min(samples, features)}. */
    @Param
    int nComponents;

    /** Whether {@link #transform} scales the projections to unit variance. */
    @Param
    boolean whiten;

    /** The mean of each feature (d). */
    NdArray mean;

    /** The principal axes, one per row (k x d). */
    NdArray components;

    /** The variance along each component (k). */
    NdArray explainedVariance;

    /** The fraction of the total variance along each component (k). */
    NdArray explainedVarianceRatio;

    /** The singular values of the centered data (k). */
    NdArray singularValues;

    /** The mean of the variances left out (0 when every component is kept). */
    double noiseVariance;

    /** Samples fitted on. */
    long nSamples;

    /** PCA keeping every component. */
    public PCA() {}

    /** Sets the components to keep (0: all); returns this. */
    public PCA nComponents(int value) {
        if (value < 0) {
            throw new IllegalArgumentException("nComponents: " + value + " (expected: >= 0)");
        }
        nComponents = value;
        return this;
    }

    /** Sets whitening; returns this. */
    public PCA whiten(boolean value) {
        whiten = value;
        return this;
    }

    @Override
    public boolean isFitted() {
        return components != null;
    }

    /** The mean of each feature (d); owned by the estimator. */
    public NdArray mean() {
        checkFitted();
        return mean;
    }

    /** The principal axes (k x d); owned by the estimator. */
    public NdArray components() {
        checkFitted();
        return components;
    }

    /** The variance along each component (k); owned by the estimator. */
    public NdArray explainedVariance() {
        checkFitted();
        return explainedVariance;
    }

    /** The fraction of the variance along each component (k); owned by the estimator. */
    public NdArray explainedVarianceRatio() {
        checkFitted();
        return explainedVarianceRatio;
    }

    /** The singular values (k); owned by the estimator. */
    public NdArray singularValues() {
        checkFitted();
        return singularValues;
    }

    /** The mean variance of the components left out. */
    public double noiseVariance() {
        checkFitted();
        return noiseVariance;
    }

    /** The samples fitted on. */
    public long nSamples() {
        checkFitted();
        return nSamples;
    }

    /**
     * Makes the given arrays the fitted state, as a fit would have left it ({@link #nComponents} becomes k): how a
     * model fitted elsewhere is rebuilt ({@link io.cuwire.ml.modelfile.ModelFile}). Takes ownership of the five
     * arrays, also when it throws; returns this.
     *
     * @param mean the feature means (d)
     * @param components the principal axes, one per row (k x d)
     * @param explainedVariance the variance along each component (k)
     * @param explainedVarianceRatio the share of the total variance along each component (k)
     * @param singularValues the singular values (k)
     * @param noiseVariance the mean variance left out
     * @param nSamples the samples fitted on
     * @throws IllegalArgumentException if the shapes or dtypes disagree
     */
    public PCA adoptFitted(
            NdArray mean,
            NdArray components,
            NdArray explainedVariance,
            NdArray explainedVarianceRatio,
            NdArray singularValues,
            double noiseVariance,
            long nSamples) {
        List<NdArray> all = List.of(mean, components, explainedVariance, explainedVarianceRatio, singularValues);
        boolean ok = components.rank() == 2 && mean.rank() == 1 && mean.dim(0) == components.dim(1);
        for (NdArray a : all) {
            ok &= a.dtype() == mean.dtype() && a.dtype().isFloatingPoint();
            if (a != mean && a != components) {
                ok &= a.rank() == 1 && a.dim(0) == components.dim(0);
            }
        }
        if (!ok) {
            Closeables.closeAll(all);
            throw new IllegalArgumentException("PCA.adoptFitted: mean " + mean + ", components " + components
                    + ", explained variance " + explainedVariance + ", ratio " + explainedVarianceRatio
                    + ", singular values " + singularValues + " (expected: d, k x d and three of k, one float dtype)");
        }
        close();
        this.mean = mean;
        this.components = components;
        this.explainedVariance = explainedVariance;
        this.explainedVarianceRatio = explainedVarianceRatio;
        this.singularValues = singularValues;
        this.noiseVariance = noiseVariance;
        this.nSamples = nSamples;
        this.nComponents = Math.toIntExact(components.dim(0));
        return this;
    }

    /** Fits on {@code x}; returns this. */
    public PCA fit(NdArray x) {
        try (PcaStats s = partial(x)) {
            return merge(List.of(s));
        }
    }

    /** Fits on {@code x} and returns its projection. */
    public NdArray fitTransform(NdArray x) {
        return fit(x).transform(x);
    }

    /** The mean and centered scatter of partition {@code x}, on its device. */
    public PcaStats partial(NdArray x) {
        String op = "PCA.partial";
        checkTraining(op, x);
        ComputeBackend b = backend(x);
        BufferAllocator<?> mem = memoryFor(x);
        long d = x.dim(1);
        NdArray m = NdArray.empty(mem, x.dtype(), Order.C, d);
        NdArray scatter = null;
        try {
            b.columnSums(x, m);
            b.scale(1.0 / x.dim(0), m);
            scatter = NdArray.empty(mem, x.dtype(), Order.C, d, d);
            b.centeredCross(x, m, null, scatter, null, mem);
            return new PcaStats(x.dim(0), m, scatter);
        } catch (RuntimeException | Error e) {
            m.close();
            if (scatter != null) {
                scatter.close();
            }
            throw e;
        }
    }

    /** Fits from the statistics of all partitions; the state goes where the partials live. Returns this. */
    public PCA merge(List<PcaStats> parts) {
        String op = "PCA.merge";
        if (parts.isEmpty()) {
            throw new IllegalArgumentException(op + ": no partials");
        }
        PcaStats first = parts.getFirst();
        int d = (int) first.mean().dim(0);
        DType dtype = first.mean().dtype();
        long n = 0;
        for (PcaStats p : parts) {
            if (p.mean().dim(0) != d || p.mean().dtype() != dtype) {
                throw new IllegalArgumentException(
                        op + ": a partial of " + p.mean().dim(0) + " "
                                + p.mean().dtype().wireName() + " features (expected: " + d + " " + dtype.wireName()
                                + ", as the first)");
            }
            n += p.n();
        }
        if (n < 2) {
            throw new IllegalArgumentException(op + ": " + n + " sample(s) (expected: at least 2)");
        }
        double[][] means = new double[parts.size()][];
        double[] mu = new double[d];
        for (int i = 0; i < parts.size(); i++) {
            means[i] = HostArrays.doubles(parts.get(i).mean());
            for (int j = 0; j < d; j++) {
                mu[j] += (double) parts.get(i).n() / n * means[i][j];
            }
        }
        double[] cov = new double[d * d];
        for (int i = 0; i < parts.size(); i++) {
            double[] s = HostArrays.doubles(parts.get(i).scatter());
            long ni = parts.get(i).n();
            for (int r = 0; r < d; r++) {
                double dr = means[i][r] - mu[r];
                for (int c = 0; c < d; c++) {
                    cov[r * d + c] += s[r * d + c] + ni * dr * (means[i][c] - mu[c]);
                }
            }
        }
        for (int i = 0; i < cov.length; i++) {
            cov[i] /= n - 1;
        }
        int limit = (int) Math.min(n, d);
        int k = nComponents == 0 ? limit : nComponents;
        if (k > limit) {
            throw new IllegalArgumentException(
                    op + ": nComponents " + k + " (expected: <= " + limit + ", min(samples, features))");
        }
        HostMath.Eigen e = HostMath.symmetricEigen(cov, d);
        double total = 0;
        for (int j = 0; j < d; j++) {
            total += cov[j * d + j];
        }
        double[] comps = new double[k * d];
        double[] ev = new double[k];
        double[] ratio = new double[k];
        double[] sv = new double[k];
        for (int c = 0; c < k; c++) {
            int arg = 0;
            for (int j = 0; j < d; j++) {
                if (Math.abs(e.vectors()[c * d + j]) > Math.abs(e.vectors()[c * d + arg])) {
                    arg = j;
                }
            }
            double sign = e.vectors()[c * d + arg] < 0 ? -1 : 1;
            for (int j = 0; j < d; j++) {
                comps[c * d + j] = sign * e.vectors()[c * d + j];
            }
            ev[c] = Math.max(e.values()[c], 0);
            ratio[c] = total > 0 ? ev[c] / total : 0;
            sv[c] = Math.sqrt(ev[c] * (n - 1));
        }
        double noise = 0;
        if (k < limit) {
            for (int c = k; c < limit; c++) {
                noise += Math.max(e.values()[c], 0);
            }
            noise /= limit - k;
        }
        BufferAllocator<?> mem = memoryFor(first.mean());
        close();
        mean = HostArrays.upload(mem, dtype, mu, d);
        components = HostArrays.upload(mem, dtype, comps, k, d);
        explainedVariance = HostArrays.upload(mem, dtype, ev, k);
        explainedVarianceRatio = HostArrays.upload(mem, dtype, ratio, k);
        singularValues = HostArrays.upload(mem, dtype, sv, k);
        noiseVariance = noise;
        nSamples = n;
        return this;
    }

    /**
     * The projection of {@code x} on the components (n x k), whitened if asked: {@code x C^T - (C mean)^T} on every
     * row, as scikit-learn computes it, so that {@code x} is read once and not copied.
     */
    public NdArray transform(NdArray x) {
        checkFitted();
        checkInput("PCA.transform", x, mean.dim(0), mean.dtype(), mean);
        ComputeBackend b = backend(x);
        BufferAllocator<?> mem = memoryFor(x);
        long k = components.dim(0);
        NdArray out = NdArray.empty(mem, x.dtype(), Order.C, x.dim(0), k);
        try (NdArray shift = NdArray.empty(mem, x.dtype(), Order.C, k)) {
            b.gemv(false, 1, components, mean, 0, shift);
            b.gemm(false, true, 1, x, components, 0, out);
            b.broadcastRows(BinaryOp.SUB, out, shift);
            if (whiten) {
                try (NdArray scale = NdArray.empty(mem, x.dtype(), Order.C, k)) {
                    b.map(UnaryOp.SQRT, explainedVariance, scale);
                    b.broadcastRows(BinaryOp.DIV, out, scale);
                }
            }
            return out;
        } catch (RuntimeException | Error e) {
            out.close();
            throw e;
        }
    }

    /** Maps projections (n x k) back to the data space (n x d). */
    public NdArray inverseTransform(NdArray t) {
        checkFitted();
        checkInput("PCA.inverseTransform", t, components.dim(0), mean.dtype(), mean);
        ComputeBackend b = backend(t);
        BufferAllocator<?> mem = memoryFor(t);
        NdArray out = NdArray.empty(mem, t.dtype(), Order.C, t.dim(0), mean.dim(0));
        try {
            if (whiten) {
                try (NdArray tw = t.copyTo(mem);
                        NdArray scale = NdArray.empty(mem, t.dtype(), Order.C, components.dim(0))) {
                    b.map(UnaryOp.SQRT, explainedVariance, scale);
                    b.broadcastRows(BinaryOp.MUL, tw, scale);
                    b.gemm(false, false, 1, tw, components, 0, out);
                }
            } else {
                b.gemm(false, false, 1, t, components, 0, out);
            }
            b.broadcastRows(BinaryOp.ADD, out, mean);
            return out;
        } catch (RuntimeException | Error e) {
            out.close();
            throw e;
        }
    }
}
