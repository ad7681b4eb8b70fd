package io.cuwire.cuda;

import static io.cuwire.cuda.CudaTestSupport.assumeCuda;
import static io.cuwire.cuda.CudaTestSupport.downloadDoubles;
import static io.cuwire.cuda.CudaTestSupport.downloadFloats;
import static io.cuwire.cuda.CudaTestSupport.upload;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.DeviceStream;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/** cuBLAS GEMM and GEMV against column-major CPU references, by relative error. */
@Tag("gpu")
class CuBlasTest {
    private BufferAllocator<DeviceBuffer> memory;
    private DeviceStream stream;
    private CuBlas blas;
    private Random random;

    @BeforeEach
    void setUp(TestInfo test) {
        assumeCuda();
        memory = Cuda.device(0).newAllocator("test/cublas", BufferAllocator.UNLIMITED);
        stream = Cuda.device(0).newStream();
        try {
            blas = CuBlas.create(stream);
        } catch (CudaException e) {
            assumeTrue(!e.getMessage().startsWith("cuBLAS not found"), e.getMessage());
            throw e;
        }
        System.out.println("cuBLAS from " + blas.libraryLocation());
        random = CudaTestSupport.random(test.getDisplayName());
    }

    @AfterEach
    void tearDown() {
        if (blas != null) {
            blas.close();
            assertThrows(IllegalStateException.class, blas::close, "a second close of a cuBLAS handle");
        }
        if (stream != null) {
            stream.close();
            memory.close();
        }
    }

    @Test
    void shouldTieEachHandleToItsOwnStream() {
        long mine = CudaStream.of(stream).handle().address();
        assertEquals(mine, blas.boundStreamAddress(), "the stream cuBLAS reports for the handle");
        try (DeviceStream other = Cuda.device(0).newStream();
                CuBlas second = CuBlas.create(other)) {
            long theirs = CudaStream.of(other).handle().address();
            assertNotEquals(mine, theirs);
            assertEquals(theirs, second.boundStreamAddress());
            assertEquals(mine, blas.boundStreamAddress(), "creating a second handle changed the first's stream");
        }
    }

    private double[] values(int n) {
        double[] v = new double[n];
        for (int i = 0; i < n; i++) {
            v[i] = random.nextDouble() * 2 - 1;
        }
        return v;
    }

    private static float[] toFloats(double[] v) {
        float[] f = new float[v.length];
        for (int i = 0; i < v.length; i++) {
            f[i] = (float) v[i];
        }
        return f;
    }

    /** op(A)(i, l) of a column-major matrix stored at offset with leading dimension ld. */
    private static double op(double[] a, int offset, int ld, Transpose t, int i, int l) {
        return t == Transpose.NONE ? a[offset + i + l * ld] : a[offset + l + i * ld];
    }

    private static double[] gemmReference(
            Transpose ta,
            Transpose tb,
            int m,
            int n,
            int k,
            double alpha,
            double[] a,
            int aOff,
            int lda,
            double[] b,
            int bOff,
            int ldb,
            double beta,
            double[] c,
            int cOff,
            int ldc) {
        double[] out = c.clone();
        for (int i = 0; i < m; i++) {
            for (int j = 0; j < n; j++) {
                double sum = 0;
                for (int l = 0; l < k; l++) {
                    sum += op(a, aOff, lda, ta, i, l) * op(b, bOff, ldb, tb, l, j);
                }
                out[cOff + i + j * ldc] = alpha * sum + beta * c[cOff + i + j * ldc];
            }
        }
        return out;
    }

    private static void assertClose(double[] expected, double[] actual, double tolerance) {
        double scale = 1;
        double worst = 0;
        for (int i = 0; i < expected.length; i++) {
            scale = Math.max(scale, Math.abs(expected[i]));
            worst = Math.max(worst, Math.abs(expected[i] - actual[i]));
        }
        assertTrue(worst / scale <= tolerance, "relative error " + worst / scale + " > " + tolerance);
    }

    private static double[] toDoubles(float[] f) {
        double[] d = new double[f.length];
        for (int i = 0; i < f.length; i++) {
            d[i] = f[i];
        }
        return d;
    }

    private void checkSgemm(Transpose ta, Transpose tb) {
        int m = 67;
        int n = 45;
        int k = 33;
        int lda = (ta == Transpose.NONE ? m : k) + 3;
        int ldb = (tb == Transpose.NONE ? k : n) + 1;
        int ldc = m + 2;
        int aOff = 5;
        int bOff = 1;
        int cOff = 7;
        double[] a = values(aOff + lda * (ta == Transpose.NONE ? k : m));
        double[] b = values(bOff + ldb * (tb == Transpose.NONE ? n : k));
        double[] c = values(cOff + ldc * n);
        a = toDoubles(toFloats(a));
        b = toDoubles(toFloats(b));
        c = toDoubles(toFloats(c));
        double[] expected = gemmReference(ta, tb, m, n, k, 1.5, a, aOff, lda, b, bOff, ldb, -0.5, c, cOff, ldc);
        try (DeviceBuffer da = upload(memory.resource(), toFloats(a));
                DeviceBuffer db = upload(memory.resource(), toFloats(b));
                DeviceBuffer dc = upload(memory.resource(), toFloats(c))) {
            blas.sgemm(ta, tb, m, n, k, 1.5f, da, aOff, lda, db, bOff, ldb, -0.5f, dc, cOff, ldc);
            stream.synchronize();

            assertClose(expected, toDoubles(downloadFloats(dc, c.length)), 1e-5);
        }
    }

    @Test
    void shouldMultiplyInFloat32() {
        checkSgemm(Transpose.NONE, Transpose.NONE);
    }

    @Test
    void shouldMultiplyTransposedOperandsInFloat32() {
        checkSgemm(Transpose.TRANSPOSE, Transpose.NONE);
        checkSgemm(Transpose.NONE, Transpose.TRANSPOSE);
        checkSgemm(Transpose.TRANSPOSE, Transpose.TRANSPOSE);
    }

    @Test
    void shouldMultiplyInFloat64() {
        int m = 31;
        int n = 17;
        int k = 64;
        double[] a = values(m * k);
        double[] b = values(n * k);
        double[] c = values(m * n);
        double[] expected =
                gemmReference(Transpose.NONE, Transpose.TRANSPOSE, m, n, k, 2, a, 0, m, b, 0, n, 1, c, 0, m);
        try (DeviceBuffer da = upload(memory.resource(), a);
                DeviceBuffer db = upload(memory.resource(), b);
                DeviceBuffer dc = upload(memory.resource(), c)) {
            blas.dgemm(Transpose.NONE, Transpose.TRANSPOSE, m, n, k, 2, da, 0, m, db, 0, n, 1, dc, 0, m);
            stream.synchronize();

            assertClose(expected, downloadDoubles(dc, c.length), 1e-12);
        }
    }

    @Test
    void shouldMultiplyMatrixByVectorInBothPrecisions() {
        int m = 50;
        int n = 29;
        int lda = m + 4;
        double[] a = toDoubles(toFloats(values(lda * n)));
        for (Transpose t : Transpose.values()) {
            int xLen = t == Transpose.NONE ? n : m;
            int yLen = t == Transpose.NONE ? m : n;
            double[] x = toDoubles(toFloats(values(2 * xLen)));
            double[] y = toDoubles(toFloats(values(3 * yLen)));
            double[] expected = y.clone();
            for (int i = 0; i < yLen; i++) {
                double sum = 0;
                for (int j = 0; j < xLen; j++) {
                    sum += (t == Transpose.NONE ? a[i + j * lda] : a[j + i * lda]) * x[2 * j];
                }
                expected[3 * i] = 0.5 * sum + 2 * y[3 * i];
            }
            try (DeviceBuffer da = upload(memory.resource(), toFloats(a));
                    DeviceBuffer dx = upload(memory.resource(), toFloats(x));
                    DeviceBuffer dy = upload(memory.resource(), toFloats(y));
                    DeviceBuffer ea = upload(memory.resource(), a);
                    DeviceBuffer ex = upload(memory.resource(), x);
                    DeviceBuffer ey = upload(memory.resource(), y)) {
                blas.sgemv(t, m, n, 0.5f, da, 0, lda, dx, 0, 2, 2f, dy, 0, 3);
                blas.dgemv(t, m, n, 0.5, ea, 0, lda, ex, 0, 2, 2, ey, 0, 3);
                stream.synchronize();

                assertClose(expected, toDoubles(downloadFloats(dy, y.length)), 1e-5);
                assertClose(expected, downloadDoubles(ey, y.length), 1e-12);
            }
        }
    }

    @Test
    void shouldRefuseOperandsThatDoNotFitBeforeEnqueueing() {
        try (DeviceBuffer small = memory.allocate(16 * Float.BYTES);
                DeviceBuffer big = memory.allocate(4096)) {
            assertThrows(
                    IllegalArgumentException.class,
                    () -> blas.sgemm(Transpose.NONE, Transpose.NONE, 4, 4, 4, 1f, big, 0, 3, big, 0, 4, 0f, big, 0, 4));
            assertThrows(
                    IndexOutOfBoundsException.class,
                    () -> blas.sgemm(
                            Transpose.NONE, Transpose.NONE, 4, 4, 4, 1f, small, 1, 4, big, 0, 4, 0f, big, 0, 4));
            assertThrows(
                    IllegalArgumentException.class,
                    () -> blas.sgemv(Transpose.NONE, 4, 4, 1f, small, 0, 4, big, 0, 0, 0f, big, 0, 1));
        }
    }
}
