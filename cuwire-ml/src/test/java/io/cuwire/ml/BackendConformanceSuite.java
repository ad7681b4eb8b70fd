package io.cuwire.ml;

import static io.cuwire.ml.MlTesting.array;
import static io.cuwire.ml.MlTesting.uniform;
import static io.cuwire.ml.MlTesting.values;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.Buffer;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.DType;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import io.cuwire.ml.internal.CpuBackend;
import io.cuwire.serialize.OpaqueBlob;
import io.cuwire.test.TestRandom;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * What every {@link ComputeBackend} must do, checked against plain double-precision loops on random inputs. A backend
 * passes when, for every output element, {@code |got - want| <= tol * (terms + |want|)}, where {@code terms} is the
 * number of products summed into the element (1 for element-wise results) and {@code tol} is
 * {@value #TOL_FLOAT64} for float64 and {@value #TOL_FLOAT32} for float32 — inputs are uniform in [-1, 1), so this
 * allows float32 accumulation on a GPU while catching any wrong element. Indices, counts and selections must agree
 * exactly. Subclasses name the backend and the memory its operands live in.
 */
public abstract class BackendConformanceSuite {
    /** Tolerance factor for float64 results. */
    public static final double TOL_FLOAT64 = 1e-12;
    /** Tolerance factor for float32 results. */
    public static final double TOL_FLOAT32 = 1e-5;

    private BufferAllocator<?> mem;
    private ComputeBackend backend;

    /** The backend under test. */
    protected abstract ComputeBackend backend();

    /** A new allocator of the memory the backend computes on; closed after each test. */
    protected abstract BufferAllocator<?> openMemory();

    @BeforeEach
    void openAll() {
        mem = openMemory();
        backend = backend();
    }

    @AfterEach
    void closeAll() {
        if (mem != null) {
            mem.close();
        }
    }

    private NdArray rand(SplittableRandom r, DType dtype, long... shape) {
        long n = 1;
        for (long s : shape) {
            n *= s;
        }
        return array(mem, dtype, uniform(r, (int) n), shape);
    }

    private NdArray zeros(DType dtype, long... shape) {
        return NdArray.zeros(mem, dtype, Order.C, shape);
    }

    private static double tol(DType dtype) {
        return dtype == DType.FLOAT64 ? TOL_FLOAT64 : TOL_FLOAT32;
    }

    private static void assertClose(String what, DType dtype, double terms, double[] want, double[] got) {
        assertEquals(want.length, got.length, what + ": length");
        for (int i = 0; i < want.length; i++) {
            double bound = tol(dtype) * (terms + Math.abs(want[i]));
            if (!(Math.abs(got[i] - want[i]) <= bound)) {
                throw new AssertionError(what + " [" + dtype.wireName() + "] element " + i + ": got " + got[i]
                        + ", want " + want[i] + " (tolerance " + bound + ")");
            }
        }
    }

    private static double[] ref(double[] a, int rows, int cols, boolean trans) {
        if (!trans) {
            return a;
        }
        double[] t = new double[a.length];
        for (int i = 0; i < rows; i++) {
            for (int j = 0; j < cols; j++) {
                t[j * rows + i] = a[i * cols + j];
            }
        }
        return t;
    }

    @ParameterizedTest
    @ValueSource(strings = {"float32", "float64"})
    void shouldComputeGemmAsTheReferenceForEveryTransposeAndScalar(String type, TestInfo info) {
        DType dt = DType.byName(type);
        SplittableRandom r = TestRandom.create(info);
        for (int trial = 0; trial < 8; trial++) {
            boolean ta = (trial & 1) != 0;
            boolean tb = (trial & 2) != 0;
            int m = 1 + r.nextInt(30);
            int n = 1 + r.nextInt(30);
            int k = 1 + r.nextInt(40);
            double alpha = r.nextDouble(-2, 2);
            double beta = trial >= 4 ? r.nextDouble(-1, 1) : 0;
            try (NdArray a = ta ? rand(r, dt, k, m) : rand(r, dt, m, k);
                    NdArray b = tb ? rand(r, dt, n, k) : rand(r, dt, k, n);
                    NdArray c = rand(r, dt, m, n)) {
                double[] av = ref(values(a), (int) a.dim(0), (int) a.dim(1), ta);
                double[] bv = ref(values(b), (int) b.dim(0), (int) b.dim(1), tb);
                double[] cv = values(c);
                double[] want = new double[m * n];
                for (int i = 0; i < m; i++) {
                    for (int j = 0; j < n; j++) {
                        double s = 0;
                        for (int p = 0; p < k; p++) {
                            s += av[i * k + p] * bv[p * n + j];
                        }
                        want[i * n + j] = alpha * s + beta * cv[i * n + j];
                    }
                }
                backend.gemm(ta, tb, alpha, a, b, beta, c);
                assertClose("gemm ta=" + ta + " tb=" + tb, dt, 2 * k + 1, want, values(c));
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"float32", "float64"})
    void shouldComputeCenteredCrossProductsOverManyChunksLeavingXUnchanged(String type, TestInfo info) {
        DType dt = DType.byName(type);
        SplittableRandom r = TestRandom.create(info);
        // columns far from 0 against their spread (float64), so that an uncentered product would lose digits
        double offset = dt == DType.FLOAT64 ? 1e3 : 2;
        for (int trial = 0; trial < 3; trial++) {
            int rows = trial == 0 ? 1 : 1 + r.nextInt(3000);
            int cols = 1 + r.nextInt(40);
            double[] xv = uniform(r, rows * cols);
            for (int i = 0; i < xv.length; i++) {
                xv[i] += offset * (1 + i % cols);
            }
            try (NdArray x = array(mem, dt, xv, rows, cols);
                    NdArray mean = zeros(dt, cols);
                    NdArray y = rand(r, dt, rows);
                    NdArray gram = rand(r, dt, cols, cols);
                    NdArray xty = rand(r, dt, cols);
                    NdArray gramOnly = rand(r, dt, cols, cols)) {
                double[] xs = values(x);
                backend.columnSums(x, mean);
                backend.scale(1.0 / rows, mean);
                double[] mu = values(mean);
                double[] yv = values(y);
                double[] wantGram = new double[cols * cols];
                double[] wantXty = new double[cols];
                for (int i = 0; i < rows; i++) {
                    for (int a = 0; a < cols; a++) {
                        double ca = xs[i * cols + a] - mu[a];
                        wantXty[a] += ca * yv[i];
                        for (int b = 0; b < cols; b++) {
                            wantGram[a * cols + b] += ca * (xs[i * cols + b] - mu[b]);
                        }
                    }
                }
                backend.centeredCross(x, mean, y, gram, xty, mem);
                backend.centeredCross(x, mean, null, gramOnly, null, mem);
                assertClose("centeredCross gram " + rows + " x " + cols, dt, 2 * rows + 1, wantGram, values(gram));
                assertClose("centeredCross xty " + rows + " x " + cols, dt, 2 * rows + 1, wantXty, values(xty));
                assertArrayEquals(values(gram), values(gramOnly), "the Gram matrix without y");
                assertArrayEquals(xs, values(x), "x unchanged");
                IllegalArgumentException e = assertThrows(
                        IllegalArgumentException.class, () -> backend.centeredCross(x, mean, y, gram, null, mem));
                assertTrue(e.getMessage().contains("y is given but xty is null"), e.getMessage());
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"float32", "float64"})
    void shouldComputeGemvAxpyScaleAndDotAsTheReference(String type, TestInfo info) {
        DType dt = DType.byName(type);
        SplittableRandom r = TestRandom.create(info);
        int rows = 1 + r.nextInt(50);
        int cols = 1 + r.nextInt(50);
        for (boolean trans : new boolean[] {false, true}) {
            try (NdArray a = rand(r, dt, rows, cols);
                    NdArray x = rand(r, dt, trans ? rows : cols);
                    NdArray y = rand(r, dt, trans ? cols : rows)) {
                double[] av = values(a);
                double[] xv = values(x);
                double[] yv = values(y);
                double[] want = new double[yv.length];
                for (int i = 0; i < want.length; i++) {
                    double s = 0;
                    for (int j = 0; j < xv.length; j++) {
                        s += (trans ? av[j * cols + i] : av[i * cols + j]) * xv[j];
                    }
                    want[i] = 1.5 * s - 0.5 * yv[i];
                }
                backend.gemv(trans, 1.5, a, x, -0.5, y);
                assertClose("gemv trans=" + trans, dt, 2 * xv.length, want, values(y));
            }
        }
        try (NdArray x = rand(r, dt, rows, cols);
                NdArray y = rand(r, dt, rows, cols)) {
            double[] xv = values(x);
            double[] yv = values(y);
            double dot = 0;
            for (int i = 0; i < xv.length; i++) {
                dot += xv[i] * yv[i];
            }
            assertClose("dot", dt, xv.length, new double[] {dot}, new double[] {backend.dot(x, y)});
            double[] want = yv.clone();
            for (int i = 0; i < want.length; i++) {
                want[i] = (want[i] + 0.25 * xv[i]) * -3;
            }
            backend.axpy(0.25, x, y);
            backend.scale(-3, y);
            assertClose("axpy, scale", dt, 4, want, values(y));
        }
    }

    /**
     * Row-major products over many rows and widths: every thread count per row of a row-group kernel (1 to 32), a
     * row count that leaves a warp partly past the end, and rows wider than a device backend's kernel takes.
     */
    @ParameterizedTest
    @ValueSource(strings = {"float32", "float64"})
    void shouldComputeGemvAsTheReferenceOverManyRowsAndWidths(String type, TestInfo info) {
        DType dt = DType.byName(type);
        SplittableRandom r = TestRandom.create(info);
        int[][] shapes = {{1000, 1}, {1001, 5}, {999, 9}, {1003, 64}, {517, 100}, {260, 257}, {33, 4100}};
        for (int[] shape : shapes) {
            int rows = shape[0];
            int cols = shape[1];
            double alpha = r.nextDouble(-2, 2);
            double beta = rows % 2 == 0 ? 0 : r.nextDouble(-1, 1);
            try (NdArray a = rand(r, dt, rows, cols);
                    NdArray x = rand(r, dt, cols);
                    NdArray y = beta == 0 ? array(mem, dt, nans(rows), rows) : rand(r, dt, rows)) {
                double[] av = values(a);
                double[] xv = values(x);
                double[] yv = values(y);
                double[] want = new double[rows];
                for (int i = 0; i < rows; i++) {
                    double s = 0;
                    for (int j = 0; j < cols; j++) {
                        s += av[i * cols + j] * xv[j];
                    }
                    want[i] = alpha * s + (beta == 0 ? 0 : beta * yv[i]);
                }
                backend.gemv(false, alpha, a, x, beta, y);
                assertClose("gemv " + rows + " x " + cols + " beta=" + beta, dt, 2 * cols + 1, want, values(y));
            }
        }
    }

    private static double[] nans(int n) {
        double[] v = new double[n];
        Arrays.fill(v, Double.NaN);
        return v;
    }

    /**
     * Nearest rows against the direct double-precision distances, over the widths and center counts a device
     * backend fuses (up to 32 centers of at most 4096 elements) and beyond them: the chosen row's distance is the
     * smallest within the tolerance (rounding may pick either of two nearly equal distances), the reported minimum
     * matches it, and of two identical centers the first is chosen (checked where the fused path computes the
     * distances directly: a product through GEMM may round two identical columns differently).
     */
    @ParameterizedTest
    @ValueSource(strings = {"float32", "float64"})
    void shouldPickTheNearestRowWithItsDistance(String type, TestInfo info) {
        DType dt = DType.byName(type);
        SplittableRandom r = TestRandom.create(info);
        int[][] cases = {
            {1001, 1, 1},
            {1000, 3, 2},
            {999, 17, 8},
            {1003, 64, 8},
            {517, 100, 9},
            {300, 40, 32},
            {301, 5, 40},
            {200, 130, 32},
            {777, 12, 3},
            {513, 4, 5}
        };
        for (int[] c : cases) {
            int n = c[0];
            int d = c[1];
            int k = c[2];
            double[] yv = uniform(r, k * d);
            boolean twin = k >= 4 && k <= 32 && k * d <= 4096;
            if (twin) {
                System.arraycopy(yv, d, yv, 3 * d, d);
            }
            try (NdArray x = rand(r, dt, n, d);
                    NdArray y = array(mem, dt, yv, k, d);
                    NdArray index = NdArray.zeros(mem, DType.INT32, Order.C, n);
                    NdArray min = zeros(dt, n)) {
                double[] xv = values(x);
                double[] ys = values(y);
                backend.nearestRows(x, y, index, min);
                int[] got = index.toIntArray();
                double[] gotMin = values(min);
                double[] want = new double[n];
                double[] chosen = new double[n];
                for (int i = 0; i < n; i++) {
                    want[i] = Double.POSITIVE_INFINITY;
                    for (int q = 0; q < k; q++) {
                        double s = 0;
                        for (int j = 0; j < d; j++) {
                            double diff = xv[i * d + j] - ys[q * d + j];
                            s += diff * diff;
                        }
                        want[i] = Math.min(want[i], s);
                        if (q == got[i]) {
                            chosen[i] = s;
                        }
                    }
                    assertTrue(
                            got[i] >= 0 && got[i] < k && !(twin && got[i] == 3),
                            "nearestRows " + n + " x " + d + ", " + k + " centers: row " + i + " chose " + got[i]);
                }
                String what = "nearestRows " + n + " x " + d + ", " + k + " centers";
                assertClose(what + ": distance of the chosen row", dt, 4 * d, want, chosen);
                assertClose(what + ": min", dt, 4 * d, want, gotMin);
            }
        }
        try (NdArray x = rand(r, dt, 5, 3);
                NdArray y = rand(r, dt, 2, 3);
                NdArray index = NdArray.zeros(mem, DType.INT32, Order.C, 5);
                NdArray withMin = NdArray.zeros(mem, DType.INT32, Order.C, 5);
                NdArray min = zeros(dt, 5)) {
            backend.nearestRows(x, y, index, null);
            for (int i : index.toIntArray()) {
                assertTrue(i == 0 || i == 1, "nearestRows without min: " + i);
            }
            backend.nearestRows(x, y, withMin, min);
            assertArrayEquals(withMin.toIntArray(), index.toIntArray(), "nearestRows without min picks the same rows");
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"float32", "float64"})
    void shouldComputeElementWiseOperationsAsTheReference(String type, TestInfo info) {
        DType dt = DType.byName(type);
        SplittableRandom r = TestRandom.create(info);
        int rows = 1 + r.nextInt(20);
        int cols = 1 + r.nextInt(20);
        for (UnaryOp f : UnaryOp.values()) {
            try (NdArray a = rand(r, dt, rows, cols);
                    NdArray out = zeros(dt, rows, cols)) {
                if (f == UnaryOp.LOG || f == UnaryOp.SQRT) {
                    backend.map(UnaryOp.EXP, a, a);
                }
                double[] want = values(a);
                for (int i = 0; i < want.length; i++) {
                    want[i] = CpuBackend.apply(f, want[i]);
                }
                backend.map(f, a, out);
                assertClose("map " + f, dt, 1, want, values(out));
            }
        }
        for (BinaryOp f : BinaryOp.values()) {
            try (NdArray a = rand(r, dt, rows, cols);
                    NdArray v = rand(r, dt, cols)) {
                if (f == BinaryOp.DIV) {
                    backend.map(UnaryOp.EXP, v, v);
                }
                double[] av = values(a);
                double[] vv = values(v);
                for (int i = 0; i < av.length; i++) {
                    av[i] = CpuBackend.apply(f, av[i], vv[i % cols]);
                }
                backend.broadcastRows(f, a, v);
                assertClose("broadcastRows " + f, dt, 1, av, values(a));
            }
        }
        try (NdArray a = rand(r, dt, rows, cols);
                NdArray out = zeros(dt, rows, cols)) {
            double[] av = values(a);
            for (int i = 0; i < rows; i++) {
                double max = Double.NEGATIVE_INFINITY;
                for (int j = 0; j < cols; j++) {
                    max = Math.max(max, av[i * cols + j]);
                }
                double s = 0;
                for (int j = 0; j < cols; j++) {
                    s += Math.exp(av[i * cols + j] - max);
                }
                for (int j = 0; j < cols; j++) {
                    av[i * cols + j] = Math.exp(av[i * cols + j] - max) / s;
                }
            }
            backend.softmaxRows(a, out);
            assertClose("softmaxRows", dt, cols, av, values(out));
            backend.fill(out, 2.5);
            double[] filled = new double[rows * cols];
            Arrays.fill(filled, 2.5);
            assertArrayEquals(filled, values(out));
        }
        try (NdArray ints = NdArray.zeros(mem, DType.INT32, Order.C, 7)) {
            backend.fill(ints, -3);
            assertArrayEquals(new int[] {-3, -3, -3, -3, -3, -3, -3}, ints.toIntArray());
            assertThrows(IllegalArgumentException.class, () -> backend.fill(ints, 0.5));
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"float32", "float64"})
    void shouldComputeReductionsAsTheReference(String type, TestInfo info) {
        DType dt = DType.byName(type);
        SplittableRandom r = TestRandom.create(info);
        int rows = 1 + r.nextInt(40);
        int cols = 1 + r.nextInt(15);
        try (NdArray a = rand(r, dt, rows, cols);
                NdArray sums = zeros(dt, cols);
                NdArray idx = NdArray.zeros(mem, DType.INT32, Order.C, rows);
                NdArray min = zeros(dt, rows)) {
            double[] av = values(a);
            double sum = 0;
            double lo = Double.POSITIVE_INFINITY;
            double hi = Double.NEGATIVE_INFINITY;
            double[] col = new double[cols];
            int[] argmin = new int[rows];
            int[] argmax = new int[rows];
            double[] rowMin = new double[rows];
            for (int i = 0; i < rows; i++) {
                for (int j = 0; j < cols; j++) {
                    double v = av[i * cols + j];
                    sum += v;
                    lo = Math.min(lo, v);
                    hi = Math.max(hi, v);
                    col[j] += v;
                    if (v < av[i * cols + argmin[i]]) {
                        argmin[i] = j;
                    }
                    if (v > av[i * cols + argmax[i]]) {
                        argmax[i] = j;
                    }
                }
                rowMin[i] = av[i * cols + argmin[i]];
            }
            assertClose(
                    "reduce SUM", dt, av.length, new double[] {sum}, new double[] {backend.reduce(Reduction.SUM, a)});
            assertEquals(lo, backend.reduce(Reduction.MIN, a));
            assertEquals(hi, backend.reduce(Reduction.MAX, a));
            backend.columnSums(a, sums);
            assertClose("columnSums", dt, rows, col, values(sums));
            backend.argminRows(a, idx, min);
            assertArrayEquals(argmin, idx.toIntArray(), "argminRows");
            assertArrayEquals(rowMin, values(min), "argminRows values");
            backend.argmaxRows(a, idx);
            assertArrayEquals(argmax, idx.toIntArray(), "argmaxRows");
        }
        try (NdArray x = NdArray.fromArray(mem, new int[] {3, -1, 4, 1, 5}, 5);
                NdArray y = NdArray.fromArray(mem, new int[] {3, 1, 4, 1, 6}, 5)) {
            assertEquals(12, backend.reduce(Reduction.SUM, x));
            assertEquals(-1, backend.reduce(Reduction.MIN, x));
            assertEquals(5, backend.reduce(Reduction.MAX, x));
            assertEquals(3, backend.countEqual(x, y));
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"float32", "float64"})
    void shouldCopyAndSumInOnePassAsReduceSums(String type, TestInfo info) {
        DType dt = DType.byName(type);
        SplittableRandom r = TestRandom.create(info);
        // a few rows, and more than one chunk of the CPU backend (32,768 elements)
        for (int rows : new int[] {1 + r.nextInt(40), 3000 + r.nextInt(100)}) {
            int cols = 1 + r.nextInt(40);
            try (NdArray a = rand(r, dt, rows, cols);
                    NdArray copy = zeros(dt, rows, cols)) {
                double sum = backend.copySum(a, copy);
                assertTrue(copy.contentEquals(a), "copySum copies every element");
                assertClose(
                        "copySum's sum", dt, a.size(), new double[] {backend.reduce(Reduction.SUM, a)}, new double[] {
                            sum
                        });
            }
        }
        try (NdArray a = array(mem, dt, new double[] {1, 2, Double.NaN, 4}, 2, 2);
                NdArray copy = zeros(dt, 2, 2);
                NdArray wrong = zeros(dt, 4)) {
            assertTrue(Double.isNaN(backend.copySum(a, copy)), "a NaN makes the sum NaN");
            assertTrue(copy.contentEquals(a), "copySum copies a NaN too");
            assertThrows(IllegalArgumentException.class, () -> backend.copySum(a, wrong));
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"float32", "float64"})
    void shouldGiveTheCrossEntropyLossAndItsGradientInTheLogits(String type, TestInfo info) {
        DType dt = DType.byName(type);
        SplittableRandom r = TestRandom.create(info);
        int rows = 1 + r.nextInt(40);
        for (int k : new int[] {1, 2, 5}) {
            int classes = Math.max(k, 2);
            int[] y = new int[rows];
            for (int i = 0; i < rows; i++) {
                y[i] = r.nextInt(classes);
            }
            try (NdArray z = rand(r, dt, rows, k);
                    NdArray labels = NdArray.fromArray(mem, y, rows);
                    NdArray grad = zeros(dt, rows, k)) {
                backend.scale(4, z);
                double[] zv = values(z);
                double loss = 0;
                double[] g = new double[rows * k];
                for (int i = 0; i < rows; i++) {
                    if (k == 1) {
                        double p = 1 / (1 + Math.exp(-zv[i]));
                        loss += -(y[i] * Math.log(p) + (1 - y[i]) * Math.log(1 - p));
                        g[i] = p - y[i];
                    } else {
                        double s = 0;
                        for (int j = 0; j < k; j++) {
                            s += Math.exp(zv[i * k + j]);
                        }
                        loss += Math.log(s) - zv[i * k + y[i]];
                        for (int j = 0; j < k; j++) {
                            g[i * k + j] = Math.exp(zv[i * k + j]) / s - (j == y[i] ? 1 : 0);
                        }
                    }
                }
                double got = backend.crossEntropy(z, labels, grad);
                assertClose("crossEntropy loss k=" + k, dt, 10 * rows, new double[] {loss}, new double[] {got});
                assertClose("crossEntropy grad k=" + k, dt, 10, g, values(grad));
            }
        }
        try (NdArray z = zeros(dt, 2, 3);
                NdArray labels = NdArray.fromArray(mem, new int[] {0, 3}, 2);
                NdArray grad = zeros(dt, 2, 3)) {
            IllegalArgumentException e =
                    assertThrows(IllegalArgumentException.class, () -> backend.crossEntropy(z, labels, grad));
            assertTrue(e.getMessage().contains("labels[1] = 3 (expected: 0 <= label < 3)"), e.getMessage());
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"float32", "float64"})
    void shouldComputeSquaredDistancesAsTheDirectSum(String type, TestInfo info) {
        DType dt = DType.byName(type);
        SplittableRandom r = TestRandom.create(info);
        int n = 1 + r.nextInt(30);
        int m = 1 + r.nextInt(30);
        int d = 1 + r.nextInt(20);
        try (NdArray x = rand(r, dt, n, d);
                NdArray y = rand(r, dt, m, d);
                NdArray out = zeros(dt, n, m)) {
            double[] xv = values(x);
            double[] yv = values(y);
            double[] want = new double[n * m];
            for (int i = 0; i < n; i++) {
                for (int j = 0; j < m; j++) {
                    double s = 0;
                    for (int p = 0; p < d; p++) {
                        double diff = xv[i * d + p] - yv[j * d + p];
                        s += diff * diff;
                    }
                    want[i * m + j] = s;
                }
            }
            backend.squaredDistances(x, y, out);
            assertClose("squaredDistances", dt, 4 * d, want, values(out));
            for (double v : values(out)) {
                assertTrue(v >= 0, "clamped at 0");
            }
        }
    }

    /** {@code n} labels in {@code [0, k)}. */
    private static int[] labels(SplittableRandom r, int n, int k) {
        int[] idx = new int[n];
        for (int i = 0; i < n; i++) {
            idx[i] = r.nextInt(k);
        }
        return idx;
    }

    /** scatterAddRows of {@code src} (n x d) by labels {@code idx} into {@code sums}, bincount into {@code counts}. */
    private void assertScatters(DType dt, NdArray src, NdArray index, int[] idx, NdArray sums, NdArray counts) {
        int n = idx.length;
        int d = (int) src.dim(1);
        double[] sv = values(src);
        double[] want = values(sums);
        double[] wantCounts = values(counts);
        for (int i = 0; i < n; i++) {
            wantCounts[idx[i]] += 1;
            for (int j = 0; j < d; j++) {
                want[idx[i] * d + j] += sv[i * d + j];
            }
        }
        backend.scatterAddRows(src, index, sums);
        assertClose("scatterAddRows of " + n + " rows", dt, n, want, values(sums));
        backend.bincount(index, counts);
        assertClose("bincount of " + n + " labels", dt, 1, wantCounts, values(counts));
    }

    /** A label past the first chunks of the CPU backend fails scatterAddRows and bincount, and is named. */
    private void assertBadLabelNamed(SplittableRandom r, NdArray src, int[] labels, NdArray sums, NdArray counts) {
        int n = labels.length;
        int k = (int) counts.dim(0);
        int[] idx = labels.clone();
        int at = n - 1 - r.nextInt(1_000);
        idx[at] = k;
        try (NdArray wrong = NdArray.fromArray(mem, idx, n)) {
            String prefix = "index[" + at + "] = " + k + " (expected: 0 <= index < " + k;
            IllegalArgumentException e =
                    assertThrows(IllegalArgumentException.class, () -> backend.scatterAddRows(src, wrong, sums));
            assertTrue(e.getMessage().startsWith("scatterAddRows: " + prefix), e.getMessage());
            e = assertThrows(IllegalArgumentException.class, () -> backend.bincount(wrong, counts));
            assertTrue(e.getMessage().startsWith("bincount: " + prefix), e.getMessage());
        }
    }

    /** scatterAddRows, bincount and gatherRows over {@code n} rows as the reference. */
    private void indexRows(DType dt, SplittableRandom r, int n) {
        int d = 1 + r.nextInt(10);
        int k = 1 + r.nextInt(6);
        int[] idx = labels(r, n, k);
        try (NdArray src = rand(r, dt, n, d);
                NdArray index = NdArray.fromArray(mem, idx, n);
                NdArray sums = rand(r, dt, k, d);
                NdArray counts = rand(r, dt, k)) {
            assertScatters(dt, src, index, idx, sums, counts);
            if (n > 1_000) {
                assertBadLabelNamed(r, src, idx, sums, counts);
            }
            double[] sv = values(src);
            long[] picks = new long[k + 3];
            for (int i = 0; i < picks.length; i++) {
                picks[i] = r.nextInt(n);
            }
            try (NdArray p = NdArray.fromArray(mem, picks, picks.length);
                    NdArray rows = zeros(dt, picks.length, d);
                    NdArray labels = NdArray.zeros(mem, DType.INT32, Order.C, picks.length)) {
                backend.gatherRows(src, p, rows);
                double[] got = values(rows);
                for (int i = 0; i < picks.length; i++) {
                    for (int j = 0; j < d; j++) {
                        assertEquals(sv[(int) picks[i] * d + j], got[i * d + j], "gatherRows");
                    }
                }
                backend.gatherRows(index, p, labels);
                int[] l = labels.toIntArray();
                for (int i = 0; i < picks.length; i++) {
                    assertEquals(idx[(int) picks[i]], l[i], "gatherRows of int32 labels");
                }
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"float32", "float64"})
    void shouldComputeIndexingOperationsAsTheReference(String type, TestInfo info) {
        DType dt = DType.byName(type);
        SplittableRandom r = TestRandom.create(info);
        // a few rows, and enough for many chunks of the CPU backend (each sums into partials of its own)
        for (int rows : new int[] {1 + r.nextInt(40), 20_000 + r.nextInt(5_000)}) {
            indexRows(dt, r, rows);
        }
        int n = 1 + r.nextInt(40);
        int k = 1 + r.nextInt(6);
        int[] votes = new int[n * 3];
        for (int i = 0; i < votes.length; i++) {
            votes[i] = r.nextInt(k);
        }
        try (NdArray labels = NdArray.fromArray(mem, votes, n, 3);
                NdArray out = rand(r, dt, n, k)) {
            backend.countRows(labels, out);
            double[] want = new double[n * k];
            for (int i = 0; i < n; i++) {
                for (int j = 0; j < 3; j++) {
                    want[i * k + votes[i * 3 + j]] += 1;
                }
            }
            assertArrayEquals(want, values(out), "countRows");
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"float32", "float64"})
    void shouldSelectTheSmallestKAndMergeNeighborsExactly(String type, TestInfo info) {
        DType dt = DType.byName(type);
        SplittableRandom r = TestRandom.create(info);
        int n = 1 + r.nextInt(20);
        int ma = 5 + r.nextInt(30);
        int mb = 5 + r.nextInt(30);
        int k = 1 + r.nextInt(5);
        try (NdArray a = rand(r, dt, n, ma);
                NdArray b = rand(r, dt, n, mb);
                NdArray da = zeros(dt, n, k);
                NdArray ia = NdArray.zeros(mem, DType.INT64, Order.C, n, k);
                NdArray db = zeros(dt, n, k);
                NdArray ib = NdArray.zeros(mem, DType.INT64, Order.C, n, k);
                NdArray dm = zeros(dt, n, k);
                NdArray im = NdArray.zeros(mem, DType.INT64, Order.C, n, k)) {
            backend.smallestK(a, 0, da, ia);
            backend.smallestK(b, ma, db, ib);
            backend.mergeNeighbors(da, ia, db, ib, dm, im);
            double[] av = values(a);
            double[] bv = values(b);
            double[] gotD = values(dm);
            long[] gotI = im.toLongArray();
            double[] gotDa = values(da);
            long[] gotIa = ia.toLongArray();
            for (int i = 0; i < n; i++) {
                Integer[] order = new Integer[ma + mb];
                double[] row = new double[ma + mb];
                for (int j = 0; j < ma + mb; j++) {
                    order[j] = j;
                    row[j] = j < ma ? av[i * ma + j] : bv[i * mb + j - ma];
                }
                Arrays.sort(order, (p, q) -> Double.compare(row[p], row[q]));
                Integer[] orderA = Arrays.copyOf(order, ma + mb);
                Arrays.sort(
                        orderA,
                        (p, q) ->
                                Double.compare(p < ma ? row[p] : Double.MAX_VALUE, q < ma ? row[q] : Double.MAX_VALUE));
                for (int q = 0; q < k; q++) {
                    assertEquals(orderA[q], (int) gotIa[i * k + q], "smallestK id");
                    assertEquals(row[orderA[q]], gotDa[i * k + q], "smallestK value");
                    assertEquals(order[q], (int) gotI[i * k + q], "merged id, row " + i);
                    assertEquals(row[order[q]], gotD[i * k + q], "merged value");
                }
            }
        }
    }

    /**
     * Rows far from the origin (so that {@code ||q||² - 2 q·x + ||x||²} cancels badly), half the queries copies of
     * rows, two rows equal: the distances must be the sums of squared differences to the last bit (each term added by
     * a fused multiply-add in column order, rounded once to the dtype) — 0 for a query's own row — ascending with
     * equal distances by row. Float64 ids must be the reference's; float32 ones may differ at near-ties (a backend may
     * rank on float32 products), so there the distances must be the reference's k smallest to float32 tolerance.
     */
    @ParameterizedTest
    @ValueSource(strings = {"float32", "float64"})
    void shouldGiveTheExactKNearestRowsAndTheirSumsOfSquaredDifferences(String type, TestInfo info) {
        DType dt = DType.byName(type);
        SplittableRandom r = TestRandom.create(info);
        int n = 50 + r.nextInt(200);
        int d = 1 + r.nextInt(40);
        int m = 2 + r.nextInt(100);
        long offset = 1000;
        double[] xs = uniform(r, n * d);
        for (int i = 0; i < xs.length; i++) {
            xs[i] += 10;
        }
        System.arraycopy(xs, 0, xs, d, d);
        double[] qs = uniform(r, m * d);
        for (int i = 0; i < m / 2; i++) {
            System.arraycopy(xs, r.nextInt(n) * d, qs, i * d, d);
        }
        for (int i = m / 2; i < m; i++) {
            for (int p = 0; p < d; p++) {
                qs[i * d + p] += 10;
            }
        }
        try (NdArray x = array(mem, dt, xs, n, d);
                NdArray q = array(mem, dt, qs, m, d)) {
            double[] xv = values(x);
            double[] qv = values(q);
            for (int k : new int[] {1 + r.nextInt(Math.min(n, 12)), n}) {
                try (NdArray dist = zeros(dt, m, k);
                        NdArray ids = NdArray.zeros(mem, DType.INT64, Order.C, m, k)) {
                    backend.kNearestRows(q, x, offset, dist, ids);
                    double[] gotD = values(dist);
                    long[] gotI = ids.toLongArray();
                    for (int i = 0; i < m; i++) {
                        double[] s = sumsOfSquaredDifferences(dt, qv, i, xv, n, d);
                        Integer[] order = byDistanceThenRow(s);
                        for (int c = 0; c < k; c++) {
                            String what = "kNearestRows [" + type + "] query " + i + " of " + m + ", neighbor " + c
                                    + " of k = " + k + " (n " + n + ", d " + d + ")";
                            long id = gotI[i * k + c] - offset;
                            assertTrue(id >= 0 && id < n, what + ": id " + gotI[i * k + c]);
                            assertEquals(s[(int) id], gotD[i * k + c], 0, what + ": the distance of row " + id);
                            if (c > 0) {
                                assertTrue(
                                        gotD[i * k + c - 1] < gotD[i * k + c]
                                                || (gotD[i * k + c - 1] == gotD[i * k + c]
                                                        && gotI[i * k + c - 1] < gotI[i * k + c]),
                                        what + ": ascending by (distance, row)");
                            }
                            if (dt == DType.FLOAT64) {
                                assertEquals(order[c], (int) id, what);
                            } else {
                                assertEquals(s[order[c]], gotD[i * k + c], TOL_FLOAT32 * (d + s[order[c]]), what);
                            }
                        }
                    }
                }
            }
        }
    }

    /**
     * The reference distances of query {@code i} of {@code qv} to the {@code n} rows of {@code xv} ({@code d} columns):
     * each the sum of the squared differences, a fused multiply-add a term in column order, rounded once to
     * {@code dt}.
     */
    private static double[] sumsOfSquaredDifferences(DType dt, double[] qv, int i, double[] xv, int n, int d) {
        double[] s = new double[n];
        for (int j = 0; j < n; j++) {
            for (int p = 0; p < d; p++) {
                double e = qv[i * d + p] - xv[j * d + p];
                s[j] = Math.fma(e, e, s[j]);
            }
            s[j] = dt == DType.FLOAT32 ? (float) s[j] : s[j];
        }
        return s;
    }

    /** The rows ranked by (distance {@code s[row]} as {@link Double#compare} orders it, row). */
    private static Integer[] byDistanceThenRow(double[] s) {
        Integer[] order = new Integer[s.length];
        for (int j = 0; j < s.length; j++) {
            order[j] = j;
        }
        Arrays.sort(order, (a, b) -> Double.compare(s[a], s[b]));
        return order;
    }

    /**
     * kNearestRows over shapes that cross every tile of a blocked kernel (CUDA's fused kernel: 32 queries and 128 rows
     * a tile, 8 or 16 columns at a time, lists of 8 or 32 keys a query, the rows cut into slices of 4,096 or more when
     * few queries leave SMs idle): 33 to 70 queries, 9,000 to 13,000 rows, 1 to 40 columns, k of 1, 8, 9, 32, 33 and
     * one at random. Integer coordinates (every squared distance exact in either dtype, many equal, so that ties by
     * row decide), and for float64 also uniform ones (the sums' bits): the ids and the distances must be the
     * reference's exactly, the reference being each row's sum of squared differences, a fused multiply-add a term in
     * column order, ranked by (distance, row).
     */
    @ParameterizedTest
    @ValueSource(strings = {"float32", "float64"})
    void shouldGiveTheExactKNearestRowsAcrossTilesAndSlicesOfTheRows(String type, TestInfo info) {
        DType dt = DType.byName(type);
        SplittableRandom r = TestRandom.create(info);
        int n = 9_000 + r.nextInt(4_001);
        int d = 1 + r.nextInt(40);
        int m = 33 + r.nextInt(38);
        boolean[] integer = dt == DType.FLOAT64 ? new boolean[] {true, false} : new boolean[] {true};
        for (boolean ints : integer) {
            double[] xs = new double[n * d];
            double[] qs = new double[m * d];
            for (int i = 0; i < xs.length; i++) {
                xs[i] = ints ? r.nextInt(4) : r.nextDouble(-1, 1);
            }
            for (int i = 0; i < qs.length; i++) {
                qs[i] = ints ? r.nextInt(4) : r.nextDouble(-1, 1);
            }
            try (NdArray x = array(mem, dt, xs, n, d);
                    NdArray q = array(mem, dt, qs, m, d)) {
                double[] xv = values(x);
                double[] qv = values(q);
                double[][] s = new double[m][];
                Integer[][] order = new Integer[m][];
                for (int i = 0; i < m; i++) {
                    s[i] = sumsOfSquaredDifferences(dt, qv, i, xv, n, d);
                    order[i] = byDistanceThenRow(s[i]);
                }
                for (int k : new int[] {1, 8, 9, 32, 33, 2 + r.nextInt(31)}) {
                    try (NdArray dist = zeros(dt, m, k);
                            NdArray ids = NdArray.zeros(mem, DType.INT64, Order.C, m, k)) {
                        backend.kNearestRows(q, x, 7, dist, ids);
                        double[] gotD = values(dist);
                        long[] gotI = ids.toLongArray();
                        for (int i = 0; i < m; i++) {
                            for (int c = 0; c < k; c++) {
                                String what = "kNearestRows [" + type + (ints ? ", integers" : ", uniform") + "] query "
                                        + i + " of " + m + ", neighbor " + c + " of k = " + k + " (n " + n + ", d " + d
                                        + ")";
                                assertEquals(order[i][c] + 7L, gotI[i * k + c], what + ": id");
                                assertEquals(s[i][order[i][c]], gotD[i * k + c], 0, what + ": distance");
                            }
                        }
                    }
                }
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"float32", "float64"})
    void shouldWalkTheLayoutToPredictAForest(String type) {
        DType dt = DType.byName(type);
        ForestLayout.Tree stump = new ForestLayout.Tree(
                new int[] {1, -1, -1}, new int[] {1, 0, 1}, new double[] {0.5, 0, 0}, new double[] {0.25, 0.75, 1, 0});
        ForestLayout.Tree deeper = new ForestLayout.Tree(
                new int[] {0, -1, 2, -1, -1},
                new int[] {1, 0, 3, 1, 2},
                new double[] {-0.25, 0, 0.1, 0, 0},
                new double[] {0, 1, 0.5, 0.5, 1, 0});
        for (int classes : new int[] {2, 0}) {
            List<ForestLayout.Tree> trees = classes == 2
                    ? List.of(stump, deeper)
                    : List.of(
                            new ForestLayout.Tree(
                                    stump.feature(), stump.child(), stump.threshold(), new double[] {3, -1}),
                            new ForestLayout.Tree(
                                    deeper.feature(), deeper.child(), deeper.threshold(), new double[] {10, 20, 30}));
            byte[] bytes = ForestLayout.encode(trees, 3, classes);
            ForestLayout.Info info = ForestLayout.infoOf(trees, 3, classes);
            double[] rows = {0, 0.4, 0, -1, 0.6, 0, 0, 0.6, 0.2};
            Buffer buffer = mem.allocate(bytes.length);
            CopyEngine.copyFromSegment(MemorySegment.ofArray(bytes), buffer, 0);
            try (OpaqueBlob forest = OpaqueBlob.adopt(ForestLayout.FORMAT, ForestLayout.metadata(info), buffer);
                    NdArray x = array(mem, dt, rows, 3, 3);
                    NdArray out = classes == 2 ? zeros(dt, 3, 2) : zeros(dt, 3)) {
                backend.predictForest(forest, x, out);
                double[] want = classes == 2
                        ? new double[] {0.375, 0.625, 0.5, 0.5, 1, 0}
                        : new double[] {(3 + 20) / 2.0, (-1 + 10) / 2.0, (-1 + 30) / 2.0};
                assertClose("predictForest classes=" + classes, dt, 1, want, values(out));
            }
        }
    }

    @Test
    void shouldRefuseBadOperandsWithExactMessages() {
        try (NdArray a = zeros(DType.FLOAT64, 3, 4);
                NdArray b = zeros(DType.FLOAT64, 5, 2);
                NdArray bt = zeros(DType.FLOAT64, 5, 4);
                NdArray c = zeros(DType.FLOAT64, 3, 2);
                NdArray f = zeros(DType.FLOAT32, 4, 2);
                NdArray v = zeros(DType.FLOAT64, 3)) {
            assertEquals(
                    "gemm: op(a) is 3 x 4 but op(b) is 5 x 2 (expected: the inner dimensions to agree)",
                    assertThrows(IllegalArgumentException.class, () -> backend.gemm(false, false, 1, a, b, 0, c))
                            .getMessage());
            assertTrue(assertThrows(IllegalArgumentException.class, () -> backend.gemm(false, false, 1, a, f, 0, c))
                    .getMessage()
                    .startsWith("gemm: b has dtype float32 (expected: float64, the dtype of a)"));
            assertEquals(
                    "gemm: c has shape (3, 2) (expected: (3, 5), op(a) rows x op(b) columns)",
                    assertThrows(IllegalArgumentException.class, () -> backend.gemm(false, true, 1, a, bt, 0, c))
                            .getMessage());
            assertEquals(
                    "broadcastRows: v has shape (3,) (expected: (4,), the columns of a)",
                    assertThrows(IllegalArgumentException.class, () -> backend.broadcastRows(BinaryOp.ADD, a, v))
                            .getMessage());
            assertTrue(assertThrows(IllegalArgumentException.class, () -> backend.columnSums(v, v))
                    .getMessage()
                    .startsWith("columnSums: a has rank 1 (expected: 2) in NdArray[float64, (3,), C, "));
        }
    }
}
