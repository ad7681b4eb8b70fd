package io.cuwire.ml.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.cuwire.ml.Reduction;
import io.cuwire.test.TestRandom;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * The CPU backend's kernels: the ones this run asked for, and the Vector API kernels equal to the plain loops to
 * rounding on every edge of their blocks.
 */
class CpuKernelsTest {
    @Test
    void shouldRunTheKernelsThisJvmAskedFor() {
        boolean scalar = "scalar".equals(System.getProperty(CpuKernels.KERNELS_PROPERTY));
        boolean module = ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent();
        // cuwire-ml's surefire runs add the module (and one run asks for the plain loops): both paths are tested
        assertEquals(!scalar, module && !scalar, "jdk.incubator.vector present: " + module);
        assertEquals(!scalar, CpuKernels.VECTOR, CpuKernels.name());
    }

    @Test
    void shouldComputeVectorProductsAsThePlainLoopsAtEveryEdgeOfTheirBlocks(TestInfo info) {
        if (!CpuKernels.VECTOR) {
            return; // the plain-loop run: nothing to compare with
        }
        SplittableRandom r = TestRandom.create(info);
        int[] sizes = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33};
        for (int m : sizes) {
            for (int n : sizes) {
                int k = 1 + r.nextInt(40);
                boolean transposed = r.nextBoolean();
                double[] a = random(r, m * k + 3);
                double[] b = random(r, k * (n + 2) + 1);
                double[] c0 = random(r, m * (n + 1) + 2);
                double[] c1 = c0.clone();
                int ai = transposed ? 1 : k;
                int ap = transposed ? m : 1;
                VectorKernels.multiplyAdd(a, 3, ai, ap, b, 1, n + 2, c0, 2, n + 1, m, n, k);
                CpuKernels.scalarMultiplyAdd(a, 3, ai, ap, b, 1, n + 2, c1, 2, n + 1, m, n, k);
                for (int i = 0; i < c0.length; i++) {
                    assertEquals(
                            c1[i],
                            c0[i],
                            1e-12 * (1 + Math.abs(c1[i])),
                            "m=" + m + " n=" + n + " k=" + k + " transposed=" + transposed + " element " + i);
                }
            }
        }
    }

    @Test
    void shouldGiveThePlainLoopsBitsForVectorSquaredDifferencesAtEveryEdgeOfTheirBlocks(TestInfo info) {
        if (!CpuKernels.VECTOR) {
            return; // the plain-loop run: nothing to compare with
        }
        SplittableRandom r = TestRandom.create(info);
        int[] sizes = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33};
        for (int rows : sizes) {
            for (int width : sizes) {
                int d = 1 + r.nextInt(40);
                double[] x = random(r, rows * d + 3);
                double[] qt = random(r, d * (width + 2));
                double[] got = new double[rows * (width + 1) + 2];
                double[] want = got.clone();
                VectorKernels.squaredDifferences(x, 3, rows, d, qt, width + 2, width, got, width + 1);
                CpuKernels.scalarSquaredDifferences(x, 3, rows, d, qt, width + 2, width, want, width + 1);
                assertArrayEquals(want, got, "rows=" + rows + " width=" + width + " d=" + d);
            }
        }
    }

    @Test
    void shouldComputeTheVectorDotAsThePlainLoopWithTheSameBitsEveryCall(TestInfo info) {
        SplittableRandom r = TestRandom.create(info);
        for (int len = 0; len < 70; len++) {
            double[] x = random(r, len + 1);
            double[] y = random(r, len + 2);
            double want = CpuKernels.scalarDot(x, 1, y, 2, len);
            double got = CpuKernels.dot(x, 1, y, 2, len);
            assertEquals(want, got, 1e-12 * (1 + Math.abs(want)), "len=" + len);
            double[] again = new double[1000];
            for (int i = 0; i < again.length; i++) {
                again[i] = CpuKernels.dot(x, 1, y, 2, len);
            }
            double[] same = new double[again.length];
            Arrays.fill(same, got);
            assertArrayEquals(same, again, "len=" + len);
        }
    }

    @Test
    void shouldComputeVectorRowDotsAsThePlainLoopsAtEveryEdgeOfTheirBlocks(TestInfo info) {
        SplittableRandom r = TestRandom.create(info);
        int[] sizes = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33};
        for (int rows : sizes) {
            for (int cols : sizes) {
                MemorySegment a = MemorySegment.ofArray(random(r, rows * cols));
                double[] x = random(r, cols);
                double[] got = new double[rows];
                double[] want = new double[rows];
                CpuKernels.rowDots(a, rows, cols, x, got);
                CpuKernels.scalarRowDots(a, rows, cols, x, want);
                for (int i = 0; i < rows; i++) {
                    assertEquals(
                            want[i],
                            got[i],
                            1e-12 * (1 + Math.abs(want[i])),
                            "rows=" + rows + " cols=" + cols + " row " + i);
                }
            }
        }
    }

    @Test
    void shouldCombineEveryElementWithTheStartInReductions(TestInfo info) {
        SplittableRandom r = TestRandom.create(info);
        for (int n = 0; n < 40; n++) {
            double[] v = random(r, n);
            MemorySegment s = MemorySegment.ofArray(v);
            double sum = 0.5;
            double min = Double.POSITIVE_INFINITY;
            double max = Double.NEGATIVE_INFINITY;
            for (double x : v) {
                sum += x;
                min = Math.min(min, x);
                max = Math.max(max, x);
            }
            assertEquals(sum, CpuKernels.reduce(Reduction.SUM, s, n, 0.5), 1e-12, "n=" + n);
            assertEquals(min, CpuKernels.reduce(Reduction.MIN, s, n, Double.POSITIVE_INFINITY), "n=" + n);
            assertEquals(max, CpuKernels.reduce(Reduction.MAX, s, n, Double.NEGATIVE_INFINITY), "n=" + n);
            if (n > 0) {
                v[r.nextInt(n)] = Double.NaN;
                assertEquals(Double.NaN, CpuKernels.reduce(Reduction.MIN, s, n, Double.POSITIVE_INFINITY), "n=" + n);
                assertEquals(Double.NaN, CpuKernels.reduce(Reduction.SUM, s, n, 0), "n=" + n);
            }
        }
    }

    private static double[] random(SplittableRandom r, int n) {
        double[] v = new double[n];
        for (int i = 0; i < n; i++) {
            v[i] = r.nextDouble(-1, 1);
        }
        return v;
    }
}
