package io.cuwire.ml.internal;

import io.cuwire.ml.Reduction;
import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;
import java.util.Arrays;
import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorSpecies;

/**
 * {@link CpuKernels} on the JDK's Vector API, the machine's widest double vectors: loaded only when the JVM has the
 * {@code jdk.incubator.vector} module. Products keep a block of 4 rows x 2 vectors of the output in registers over the
 * whole inner dimension (the edges in masked vectors), and so do the squared differences of 4 rows to 2 vectors of
 * queries; products of rows with one vector take 4 rows at a time straight from their memory segment. Sums across lanes
 * go lane by lane, in order
 * ({@code reduceLanes} leaves the order open), so a result is the same at every call.
 */
final class VectorKernels {
    private static final VectorSpecies<Double> S = DoubleVector.SPECIES_PREFERRED;
    private static final int L = S.length();
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;

    private VectorKernels() {}

    static int lanes() {
        return L;
    }

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
        int i = 0;
        for (; i + 4 <= m; i += 4) {
            int j = 0;
            for (; j + 2 * L <= n; j += 2 * L) {
                block4x2(a, aOff + i * ai, ai, ap, b, bOff + j, ldb, c, cOff + i * ldc + j, ldc, k);
            }
            for (; j < n; j += L) {
                block4x1(
                        a,
                        aOff + i * ai,
                        ai,
                        ap,
                        b,
                        bOff + j,
                        ldb,
                        c,
                        cOff + i * ldc + j,
                        ldc,
                        k,
                        S.indexInRange(j, n));
            }
        }
        for (; i < m; i++) {
            for (int j = 0; j < n; j += L) {
                VectorMask<Double> mask = S.indexInRange(j, n);
                DoubleVector acc = DoubleVector.zero(S);
                int ao = aOff + i * ai;
                for (int p = 0; p < k; p++) {
                    acc = DoubleVector.fromArray(S, b, bOff + p * ldb + j, mask)
                            .fma(DoubleVector.broadcast(S, a[ao + p * ap]), acc);
                }
                int co = cOff + i * ldc + j;
                DoubleVector.fromArray(S, c, co, mask).add(acc).intoArray(c, co, mask);
            }
        }
    }

    private static void block4x2(
            double[] a, int ao, int ai, int ap, double[] b, int bo, int ldb, double[] c, int co, int ldc, int k) {
        DoubleVector c00 = DoubleVector.zero(S);
        DoubleVector c01 = c00;
        DoubleVector c10 = c00;
        DoubleVector c11 = c00;
        DoubleVector c20 = c00;
        DoubleVector c21 = c00;
        DoubleVector c30 = c00;
        DoubleVector c31 = c00;
        for (int p = 0; p < k; p++) {
            int br = bo + p * ldb;
            DoubleVector b0 = DoubleVector.fromArray(S, b, br);
            DoubleVector b1 = DoubleVector.fromArray(S, b, br + L);
            int ar = ao + p * ap;
            DoubleVector a0 = DoubleVector.broadcast(S, a[ar]);
            c00 = b0.fma(a0, c00);
            c01 = b1.fma(a0, c01);
            DoubleVector a1 = DoubleVector.broadcast(S, a[ar + ai]);
            c10 = b0.fma(a1, c10);
            c11 = b1.fma(a1, c11);
            DoubleVector a2 = DoubleVector.broadcast(S, a[ar + 2 * ai]);
            c20 = b0.fma(a2, c20);
            c21 = b1.fma(a2, c21);
            DoubleVector a3 = DoubleVector.broadcast(S, a[ar + 3 * ai]);
            c30 = b0.fma(a3, c30);
            c31 = b1.fma(a3, c31);
        }
        add(c, co, c00, c01);
        add(c, co + ldc, c10, c11);
        add(c, co + 2 * ldc, c20, c21);
        add(c, co + 3 * ldc, c30, c31);
    }

    private static void add(double[] c, int co, DoubleVector v0, DoubleVector v1) {
        DoubleVector.fromArray(S, c, co).add(v0).intoArray(c, co);
        DoubleVector.fromArray(S, c, co + L).add(v1).intoArray(c, co + L);
    }

    private static void block4x1(
            double[] a,
            int ao,
            int ai,
            int ap,
            double[] b,
            int bo,
            int ldb,
            double[] c,
            int co,
            int ldc,
            int k,
            VectorMask<Double> mask) {
        DoubleVector c0 = DoubleVector.zero(S);
        DoubleVector c1 = c0;
        DoubleVector c2 = c0;
        DoubleVector c3 = c0;
        for (int p = 0; p < k; p++) {
            DoubleVector bv = DoubleVector.fromArray(S, b, bo + p * ldb, mask);
            int ar = ao + p * ap;
            c0 = bv.fma(DoubleVector.broadcast(S, a[ar]), c0);
            c1 = bv.fma(DoubleVector.broadcast(S, a[ar + ai]), c1);
            c2 = bv.fma(DoubleVector.broadcast(S, a[ar + 2 * ai]), c2);
            c3 = bv.fma(DoubleVector.broadcast(S, a[ar + 3 * ai]), c3);
        }
        DoubleVector.fromArray(S, c, co, mask).add(c0).intoArray(c, co, mask);
        DoubleVector.fromArray(S, c, co + ldc, mask).add(c1).intoArray(c, co + ldc, mask);
        DoubleVector.fromArray(S, c, co + 2 * ldc, mask).add(c2).intoArray(c, co + 2 * ldc, mask);
        DoubleVector.fromArray(S, c, co + 3 * ldc, mask).add(c3).intoArray(c, co + 3 * ldc, mask);
    }

    static void squaredDifferences(
            double[] x, int xOff, int rows, int d, double[] qt, int ldq, int width, double[] out, int ldo) {
        int r = 0;
        for (; r + 4 <= rows; r += 4) {
            int j = 0;
            for (; j + 2 * L <= width; j += 2 * L) {
                differences4x2(x, xOff + r * d, d, qt, j, ldq, out, r * ldo + j, ldo);
            }
            for (; j < width; j += L) {
                differences4x1(x, xOff + r * d, d, qt, j, ldq, out, r * ldo + j, ldo, S.indexInRange(j, width));
            }
        }
        for (; r < rows; r++) {
            int xr = xOff + r * d;
            for (int j = 0; j < width; j += L) {
                VectorMask<Double> mask = S.indexInRange(j, width);
                DoubleVector acc = DoubleVector.zero(S);
                for (int p = 0; p < d; p++) {
                    DoubleVector diff =
                            DoubleVector.fromArray(S, qt, p * ldq + j, mask).sub(x[xr + p]);
                    acc = diff.fma(diff, acc);
                }
                acc.intoArray(out, r * ldo + j, mask);
            }
        }
    }

    private static void differences4x2(
            double[] x, int xo, int d, double[] qt, int j, int ldq, double[] out, int oo, int ldo) {
        DoubleVector c00 = DoubleVector.zero(S);
        DoubleVector c01 = c00;
        DoubleVector c10 = c00;
        DoubleVector c11 = c00;
        DoubleVector c20 = c00;
        DoubleVector c21 = c00;
        DoubleVector c30 = c00;
        DoubleVector c31 = c00;
        for (int p = 0; p < d; p++) {
            int qr = p * ldq + j;
            DoubleVector q0 = DoubleVector.fromArray(S, qt, qr);
            DoubleVector q1 = DoubleVector.fromArray(S, qt, qr + L);
            double x0 = x[xo + p];
            DoubleVector e00 = q0.sub(x0);
            DoubleVector e01 = q1.sub(x0);
            c00 = e00.fma(e00, c00);
            c01 = e01.fma(e01, c01);
            double x1 = x[xo + d + p];
            DoubleVector e10 = q0.sub(x1);
            DoubleVector e11 = q1.sub(x1);
            c10 = e10.fma(e10, c10);
            c11 = e11.fma(e11, c11);
            double x2 = x[xo + 2 * d + p];
            DoubleVector e20 = q0.sub(x2);
            DoubleVector e21 = q1.sub(x2);
            c20 = e20.fma(e20, c20);
            c21 = e21.fma(e21, c21);
            double x3 = x[xo + 3 * d + p];
            DoubleVector e30 = q0.sub(x3);
            DoubleVector e31 = q1.sub(x3);
            c30 = e30.fma(e30, c30);
            c31 = e31.fma(e31, c31);
        }
        store(out, oo, c00, c01);
        store(out, oo + ldo, c10, c11);
        store(out, oo + 2 * ldo, c20, c21);
        store(out, oo + 3 * ldo, c30, c31);
    }

    private static void store(double[] out, int oo, DoubleVector v0, DoubleVector v1) {
        v0.intoArray(out, oo);
        v1.intoArray(out, oo + L);
    }

    private static void differences4x1(
            double[] x,
            int xo,
            int d,
            double[] qt,
            int j,
            int ldq,
            double[] out,
            int oo,
            int ldo,
            VectorMask<Double> mask) {
        DoubleVector c0 = DoubleVector.zero(S);
        DoubleVector c1 = c0;
        DoubleVector c2 = c0;
        DoubleVector c3 = c0;
        for (int p = 0; p < d; p++) {
            DoubleVector qv = DoubleVector.fromArray(S, qt, p * ldq + j, mask);
            DoubleVector e0 = qv.sub(x[xo + p]);
            DoubleVector e1 = qv.sub(x[xo + d + p]);
            DoubleVector e2 = qv.sub(x[xo + 2 * d + p]);
            DoubleVector e3 = qv.sub(x[xo + 3 * d + p]);
            c0 = e0.fma(e0, c0);
            c1 = e1.fma(e1, c1);
            c2 = e2.fma(e2, c2);
            c3 = e3.fma(e3, c3);
        }
        c0.intoArray(out, oo, mask);
        c1.intoArray(out, oo + ldo, mask);
        c2.intoArray(out, oo + 2 * ldo, mask);
        c3.intoArray(out, oo + 3 * ldo, mask);
    }

    static double dot(double[] x, int xo, double[] y, int yo, int len) {
        DoubleVector acc = DoubleVector.zero(S);
        int p = 0;
        for (; p + L <= len; p += L) {
            acc = DoubleVector.fromArray(S, x, xo + p).fma(DoubleVector.fromArray(S, y, yo + p), acc);
        }
        double s = 0;
        for (int lane = 0; lane < L; lane++) {
            s += acc.lane(lane);
        }
        for (; p < len; p++) {
            s += x[xo + p] * y[yo + p];
        }
        return s;
    }

    /** The sum of {@code v}'s lanes, lane by lane in order. */
    private static double sumLanes(DoubleVector v) {
        double s = 0;
        for (int lane = 0; lane < L; lane++) {
            s += v.lane(lane);
        }
        return s;
    }

    /**
     * The products of rows with {@code x}, 4 rows a call of {@link #dots4}: a small method that the JIT compiles after
     * a few thousand calls, within the first product of a large matrix, where one loop over all rows would run its
     * vectors unoptimized (boxed, a hundred times slower) until the whole method had been called some hundred times.
     */
    static void rowDots(MemorySegment a, int rows, int cols, double[] x, double[] out) {
        int i = 0;
        for (; i + DOT_ROWS <= rows; i += DOT_ROWS) {
            dotsBlock(a, i, cols, x, out);
        }
        for (; i + 4 <= rows; i += 4) {
            dots4(a, i, cols, x, out);
        }
        for (; i < rows; i++) {
            dots1(a, i, cols, x, out);
        }
    }

    /** Rows one call of {@link #dotsBlock} takes. */
    private static final int DOT_ROWS = 16;

    /** {@code out[i + r]} for {@code r < DOT_ROWS}: rows {@code i ..} of {@code a} times {@code x}, 4 at a time. */
    private static void dotsBlock(MemorySegment a, int i, int cols, double[] x, double[] out) {
        for (int r = i; r < i + DOT_ROWS; r += 4) {
            dots4(a, r, cols, x, out);
        }
    }

    /** {@code out[i + r]} for {@code r < 4}: rows {@code i} to {@code i + 3} of {@code a} times {@code x}. */
    private static void dots4(MemorySegment a, int i, int cols, double[] x, double[] out) {
        int full = cols - cols % L;
        long rb = (long) cols * Double.BYTES;
        long o = i * rb;
        DoubleVector c0 = DoubleVector.zero(S);
        DoubleVector c1 = c0;
        DoubleVector c2 = c0;
        DoubleVector c3 = c0;
        for (int p = 0; p < full; p += L) {
            DoubleVector xv = DoubleVector.fromArray(S, x, p);
            long at = o + (long) p * Double.BYTES;
            c0 = DoubleVector.fromMemorySegment(S, a, at, LE).fma(xv, c0);
            c1 = DoubleVector.fromMemorySegment(S, a, at + rb, LE).fma(xv, c1);
            c2 = DoubleVector.fromMemorySegment(S, a, at + 2 * rb, LE).fma(xv, c2);
            c3 = DoubleVector.fromMemorySegment(S, a, at + 3 * rb, LE).fma(xv, c3);
        }
        if (full < cols) {
            VectorMask<Double> tail = S.indexInRange(full, cols);
            DoubleVector xt = DoubleVector.fromArray(S, x, full, tail);
            long at = o + (long) full * Double.BYTES;
            c0 = DoubleVector.fromMemorySegment(S, a, at, LE, tail).fma(xt, c0);
            c1 = DoubleVector.fromMemorySegment(S, a, at + rb, LE, tail).fma(xt, c1);
            c2 = DoubleVector.fromMemorySegment(S, a, at + 2 * rb, LE, tail).fma(xt, c2);
            c3 = DoubleVector.fromMemorySegment(S, a, at + 3 * rb, LE, tail).fma(xt, c3);
        }
        out[i] = sumLanes(c0);
        out[i + 1] = sumLanes(c1);
        out[i + 2] = sumLanes(c2);
        out[i + 3] = sumLanes(c3);
    }

    /** {@code out[i]}: row {@code i} of {@code a} times {@code x}. */
    private static void dots1(MemorySegment a, int i, int cols, double[] x, double[] out) {
        int full = cols - cols % L;
        long o = i * (long) cols * Double.BYTES;
        DoubleVector c = DoubleVector.zero(S);
        for (int p = 0; p < full; p += L) {
            c = DoubleVector.fromMemorySegment(S, a, o + (long) p * Double.BYTES, LE)
                    .fma(DoubleVector.fromArray(S, x, p), c);
        }
        if (full < cols) {
            VectorMask<Double> tail = S.indexInRange(full, cols);
            c = DoubleVector.fromMemorySegment(S, a, o + (long) full * Double.BYTES, LE, tail)
                    .fma(DoubleVector.fromArray(S, x, full, tail), c);
        }
        out[i] = sumLanes(c);
    }

    /**
     * The reduction of {@code count} elements of {@code v} with {@code init}: one loop per reduction, its operator a
     * constant (an operator passed as a value stops the JIT from compiling the vector operations to instructions once
     * a second reduction has run through the same loop: they then run boxed, a hundred times slower).
     */
    static double reduce(Reduction r, MemorySegment v, int count, double init) {
        return switch (r) {
            case SUM -> sum(v, count, init);
            case MIN -> min(v, count, init);
            case MAX -> max(v, count, init);
        };
    }

    /** Vectors one call of {@link #addVectors}, {@link #minVectors} or {@link #maxVectors} takes. */
    private static final int REDUCE_VECTORS = 16;

    // The reductions' loops call a small method a few vectors at a time, which the JIT compiles within the first
    // reduction of a large array (as rowDots' dotsBlock); the accumulator goes through a lane array between calls,
    // the same additions in the same order.

    private static double sum(MemorySegment v, int count, double init) {
        double[] acc = new double[L];
        int i = 0;
        for (; i + REDUCE_VECTORS * L <= count; i += REDUCE_VECTORS * L) {
            addVectors(v, i, REDUCE_VECTORS, acc);
        }
        int rest = (count - i) / L;
        addVectors(v, i, rest, acc);
        i += rest * L;
        double s = init;
        for (double lane : acc) {
            s += lane;
        }
        for (; i < count; i++) {
            s += v.getAtIndex(CpuKernels.F64, i);
        }
        return s;
    }

    private static void addVectors(MemorySegment v, int first, int vectors, double[] acc) {
        DoubleVector a = DoubleVector.fromArray(S, acc, 0);
        for (int k = 0; k < vectors; k++) {
            a = a.add(DoubleVector.fromMemorySegment(S, v, (long) (first + k * L) * Double.BYTES, LE));
        }
        a.intoArray(acc, 0);
    }

    private static double min(MemorySegment v, int count, double init) {
        double[] acc = new double[L];
        Arrays.fill(acc, Double.POSITIVE_INFINITY);
        int i = 0;
        for (; i + REDUCE_VECTORS * L <= count; i += REDUCE_VECTORS * L) {
            minVectors(v, i, REDUCE_VECTORS, acc);
        }
        int rest = (count - i) / L;
        minVectors(v, i, rest, acc);
        i += rest * L;
        double s = init;
        for (double lane : acc) {
            s = Math.min(s, lane);
        }
        for (; i < count; i++) {
            s = Math.min(s, v.getAtIndex(CpuKernels.F64, i));
        }
        return s;
    }

    private static void minVectors(MemorySegment v, int first, int vectors, double[] acc) {
        DoubleVector a = DoubleVector.fromArray(S, acc, 0);
        for (int k = 0; k < vectors; k++) {
            a = a.min(DoubleVector.fromMemorySegment(S, v, (long) (first + k * L) * Double.BYTES, LE));
        }
        a.intoArray(acc, 0);
    }

    private static double max(MemorySegment v, int count, double init) {
        double[] acc = new double[L];
        Arrays.fill(acc, Double.NEGATIVE_INFINITY);
        int i = 0;
        for (; i + REDUCE_VECTORS * L <= count; i += REDUCE_VECTORS * L) {
            maxVectors(v, i, REDUCE_VECTORS, acc);
        }
        int rest = (count - i) / L;
        maxVectors(v, i, rest, acc);
        i += rest * L;
        double s = init;
        for (double lane : acc) {
            s = Math.max(s, lane);
        }
        for (; i < count; i++) {
            s = Math.max(s, v.getAtIndex(CpuKernels.F64, i));
        }
        return s;
    }

    private static void maxVectors(MemorySegment v, int first, int vectors, double[] acc) {
        DoubleVector a = DoubleVector.fromArray(S, acc, 0);
        for (int k = 0; k < vectors; k++) {
            a = a.max(DoubleVector.fromMemorySegment(S, v, (long) (first + k * L) * Double.BYTES, LE));
        }
        a.intoArray(acc, 0);
    }
}
