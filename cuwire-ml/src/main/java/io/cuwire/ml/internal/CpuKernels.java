package io.cuwire.ml.internal;

import io.cuwire.ml.Reduction;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The CPU backend's inner loops: the JDK's Vector API ({@link VectorKernels}) when the JVM runs with
 * {@code --add-modules jdk.incubator.vector}, else plain loops. The Vector API is still incubating in JDK 25, so it
 * is optional: without the module every operation gives the same results to rounding, more slowly (C2 does not
 * vectorize these loops by itself: it cannot tell two {@code double[]} apart, and it keeps the order of floating-point
 * sums). The {@value #KERNELS_PROPERTY} system property set to {@code scalar} keeps to the plain loops.
 */
final class CpuKernels {
    /** The system property that picks the kernels: {@code auto} (the default) or {@code scalar}. */
    static final String KERNELS_PROPERTY = "cuwire.ml.cpuKernels";

    /** The elements of the segments the kernels read: float64, little-endian, aligned or not. */
    static final ValueLayout.OfDouble F64 = ValueLayout.JAVA_DOUBLE_UNALIGNED;

    /** Whether the Vector API kernels run. */
    static final boolean VECTOR = vector();

    private CpuKernels() {}

    private static boolean vector() {
        String v = System.getProperty(KERNELS_PROPERTY, "auto").strip();
        if (!v.equals("auto") && !v.equals("scalar")) {
            throw new IllegalArgumentException("-D" + KERNELS_PROPERTY + "=" + v + " (expected: auto or scalar)");
        }
        return v.equals("auto")
                && ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent();
    }

    /** {@code vector} or {@code scalar}: the kernels that run. */
    static String name() {
        return VECTOR ? "vector " + VectorKernels.lanes() + " x f64" : "scalar";
    }

    /**
     * {@code c[cOff + i ldc + j] += sum over p of a[aOff + i ai + p ap] b[bOff + p ldb + j]} for {@code i < m},
     * {@code j < n}, {@code p < k}: {@code C += A B} with {@code A} read through strides (row-major {@code A} has
     * {@code ai = k, ap = 1}; the transpose of a row-major {@code k x m} matrix {@code ai = 1, ap = m}) and
     * {@code B}, {@code C} row-major.
     */
    static void multiplyAdd(
            double[] a,
            int aOff,
            int ai,
            int ap,
            double[] b,
            int bOff,
            int ldb,
            double[] c,
            int cOff,
            int ldc,
            int m,
            int n,
            int k) {
        if (VECTOR) {
            VectorKernels.multiplyAdd(a, aOff, ai, ap, b, bOff, ldb, c, cOff, ldc, m, n, k);
        } else {
            scalarMultiplyAdd(a, aOff, ai, ap, b, bOff, ldb, c, cOff, ldc, m, n, k);
        }
    }

    /** {@link #multiplyAdd} in plain loops. */
    static void scalarMultiplyAdd(
            double[] a,
            int aOff,
            int ai,
            int ap,
            double[] b,
            int bOff,
            int ldb,
            double[] c,
            int cOff,
            int ldc,
            int m,
            int n,
            int k) {
        for (int i = 0; i < m; i++) {
            int cr = cOff + i * ldc;
            for (int p = 0; p < k; p++) {
                double x = a[aOff + i * ai + p * ap];
                int br = bOff + p * ldb;
                for (int j = 0; j < n; j++) {
                    c[cr + j] += x * b[br + j];
                }
            }
        }
    }

    /**
     * {@code out[r ldo + j] = sum over p of (qt[p ldq + j] - x[xOff + r d + p])²} for {@code r < rows},
     * {@code j < width}, {@code p < d}: the squared Euclidean distances of row-major rows {@code x} (rows x d) to the
     * queries held transposed in {@code qt} (d x width, row stride {@code ldq}). Each sum runs over {@code p} in order,
     * a fused multiply-add a term, so both kernels give the same bits.
     */
    static void squaredDifferences(
            double[] x, int xOff, int rows, int d, double[] qt, int ldq, int width, double[] out, int ldo) {
        if (VECTOR) {
            VectorKernels.squaredDifferences(x, xOff, rows, d, qt, ldq, width, out, ldo);
        } else {
            scalarSquaredDifferences(x, xOff, rows, d, qt, ldq, width, out, ldo);
        }
    }

    /** {@link #squaredDifferences} in plain loops. */
    static void scalarSquaredDifferences(
            double[] x, int xOff, int rows, int d, double[] qt, int ldq, int width, double[] out, int ldo) {
        for (int r = 0; r < rows; r++) {
            int xr = xOff + r * d;
            for (int j = 0; j < width; j++) {
                double s = 0;
                for (int p = 0; p < d; p++) {
                    double e = qt[p * ldq + j] - x[xr + p];
                    s = Math.fma(e, e, s);
                }
                out[r * ldo + j] = s;
            }
        }
    }

    /** {@code x[xo ..] . y[yo ..]} over {@code len} elements. */
    static double dot(double[] x, int xo, double[] y, int yo, int len) {
        return VECTOR ? VectorKernels.dot(x, xo, y, yo, len) : scalarDot(x, xo, y, yo, len);
    }

    /** {@link #dot} in plain loops. */
    static double scalarDot(double[] x, int xo, double[] y, int yo, int len) {
        double s0 = 0;
        double s1 = 0;
        double s2 = 0;
        double s3 = 0;
        int p = 0;
        for (; p + 3 < len; p += 4) {
            s0 += x[xo + p] * y[yo + p];
            s1 += x[xo + p + 1] * y[yo + p + 1];
            s2 += x[xo + p + 2] * y[yo + p + 2];
            s3 += x[xo + p + 3] * y[yo + p + 3];
        }
        for (; p < len; p++) {
            s0 += x[xo + p] * y[yo + p];
        }
        return (s0 + s1) + (s2 + s3);
    }

    /**
     * {@code out[i] = sum over p of a[i cols + p] x[p]} for {@code i < rows}, {@code p < cols}: the products of the
     * row-major float64 rows in {@code a} (host memory or a heap array's segment, read in place) with {@code x}.
     */
    static void rowDots(MemorySegment a, int rows, int cols, double[] x, double[] out) {
        if (VECTOR) {
            VectorKernels.rowDots(a, rows, cols, x, out);
        } else {
            scalarRowDots(a, rows, cols, x, out);
        }
    }

    /** {@link #rowDots} in plain loops. */
    static void scalarRowDots(MemorySegment a, int rows, int cols, double[] x, double[] out) {
        for (int i = 0; i < rows; i++) {
            long o = (long) i * cols;
            double s0 = 0;
            double s1 = 0;
            int p = 0;
            for (; p + 1 < cols; p += 2) {
                s0 += a.getAtIndex(F64, o + p) * x[p];
                s1 += a.getAtIndex(F64, o + p + 1) * x[p + 1];
            }
            if (p < cols) {
                s0 += a.getAtIndex(F64, o + p) * x[p];
            }
            out[i] = s0 + s1;
        }
    }

    /**
     * {@code init} combined by {@code r} with the {@code count} float64 elements of {@code v} (host memory or a heap
     * array's segment): a sum, a minimum or a maximum, {@link Math#min} and {@link Math#max} for the last two (a NaN
     * wins). The sum's order is fixed by {@code count} only, so a result is the same at every call.
     */
    static double reduce(Reduction r, MemorySegment v, int count, double init) {
        if (VECTOR) {
            return VectorKernels.reduce(r, v, count, init);
        }
        double acc = init;
        for (int i = 0; i < count; i++) {
            acc = reduce(r, acc, v.getAtIndex(F64, i));
        }
        return acc;
    }

    /** {@code acc} combined with {@code x} by {@code r}. */
    static double reduce(Reduction r, double acc, double x) {
        return switch (r) {
            case SUM -> acc + x;
            case MIN -> Math.min(acc, x);
            case MAX -> Math.max(acc, x);
        };
    }
}
