package io.cuwire.ml.cuda.internal;

import static io.cuwire.ml.MlTesting.array;
import static io.cuwire.ml.MlTesting.labels;
import static io.cuwire.ml.MlTesting.values;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.cuda.Cuda;
import io.cuwire.cuda.CudaTestSupport;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DType;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import io.cuwire.ml.ComputeBackend;
import io.cuwire.ml.ComputeBackends;
import io.cuwire.ml.MlTesting;
import io.cuwire.ml.cluster.KMeans;
import io.cuwire.ml.internal.CpuBackend;
import io.cuwire.ml.internal.HostArrays;
import io.cuwire.test.TestRandom;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.TreeSet;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * KMeans's per-step sums on the GPU ({@code scatterAddRows}, {@code bincount}) against the CPU backend on shapes that
 * cross every bound of their kernels (one center, {@link MlKernels#SCATTER_MAX_K} and one more, {@link
 * MlKernels#BINCOUNT_BLOCK_MAX_K} and one more, widths that are not multiples of 32, fewer rows than a block, many
 * rows), bad labels reported with the CPU's message, the same bits from run to run, and whole KMeans fits that stop
 * after as many steps as on the CPU.
 */
@Tag("gpu")
class CudaClusterSumsTest {
    private BufferAllocator<DeviceBuffer> gpu;
    private BufferAllocator<HostBuffer> host;
    private ComputeBackend cuda;
    private final CpuBackend cpu = CpuBackend.instance();

    @BeforeEach
    void open() {
        CudaTestSupport.assumeCuda();
        gpu = Cuda.device(0).newAllocator("cuda-cluster-sums", BufferAllocator.UNLIMITED);
        host = MlTesting.host("cpu-cluster-sums");
        cuda = ComputeBackends.forDevice(Cuda.device(0));
    }

    @AfterEach
    void close() {
        if (gpu != null) {
            gpu.close();
            host.close();
        }
    }

    private static int[] randomLabels(SplittableRandom r, int n, int k) {
        int[] l = new int[n];
        for (int i = 0; i < n; i++) {
            l[i] = r.nextInt(k);
        }
        return l;
    }

    /**
     * scatterAddRows into a non-zero {@code out} on the GPU twice and on the CPU: the GPU's two results are the same
     * bits on the deterministic path, and within float rounding of the CPU's sequential sums (float64: 1e-12 of the
     * summed magnitudes; float32: one rounding of the float64 sum, or, with float32 atomics beyond 192 rows, 1e-5).
     */
    @ParameterizedTest
    @ValueSource(strings = {"float32", "float64"})
    void shouldScatterAddRowsAsTheCpuOnEveryPath(String type, TestInfo info) {
        DType dt = DType.byName(type);
        SplittableRandom r = TestRandom.create(info);
        int[][] shapes = {
            {1, 1, 1},
            {100, 32, 1},
            {255, 5, 8},
            {3000, 33, 8},
            {2000, 70, 24},
            {2000, 40, 25},
            {1500, 31, 192},
            {1500, 31, 193},
            {100_000, 32, 8},
            {20_000, 100, 3},
            {700, 1100, 2},
            {513, 64, 16},
        };
        TreeSet<String> paths = new TreeSet<>();
        for (int[] s : shapes) {
            int n = s[0];
            int cols = s[1];
            int k = s[2];
            boolean planned = MlKernels.scatterPlan(n, cols, k).parts() > 0;
            paths.add(planned ? "fixed order" : "atomic");
            double[] x = MlTesting.uniform(r, n * cols);
            int[] l = randomLabels(r, n, k);
            double[] start = MlTesting.uniform(r, k * cols);
            double[] magnitude = new double[k * cols];
            for (int i = 0; i < n; i++) {
                for (int j = 0; j < cols; j++) {
                    magnitude[l[i] * cols + j] += Math.abs(x[i * cols + j]);
                }
            }
            String what = "scatterAddRows " + n + " x " + cols + " into " + k + ", " + dt.wireName();
            try (NdArray dx = array(gpu, dt, x, n, cols);
                    NdArray hx = array(host, dt, x, n, cols);
                    NdArray dl = labels(gpu, l);
                    NdArray hl = labels(host, l);
                    NdArray d1 = array(gpu, dt, start, k, cols);
                    NdArray d2 = array(gpu, dt, start, k, cols);
                    NdArray h = array(host, dt, start, k, cols)) {
                cuda.scatterAddRows(dx, dl, d1);
                cuda.scatterAddRows(dx, dl, d2);
                cpu.scatterAddRows(hx, hl, h);
                double[] got = values(d1);
                double[] want = values(h);
                if (planned) {
                    assertArrayEquals(got, values(d2), what + ": the same bits from run to run");
                }
                double eps = dt == DType.FLOAT32 ? 0x1p-23 : 0x1p-52;
                for (int e = 0; e < got.length; e++) {
                    double bound = dt == DType.FLOAT64
                            ? 1e-12 * (magnitude[e] + 1)
                            : planned
                                    ? 2 * eps * Math.abs(want[e]) + 1e-12 * (magnitude[e] + 1)
                                    : 1e-5 * (magnitude[e] + 1);
                    assertTrue(
                            Math.abs(got[e] - want[e]) <= bound,
                            what + " element " + e + ": " + got[e] + " (expected: " + want[e] + " within " + bound
                                    + ")");
                }
            }
        }
        assertEquals(new TreeSet<>(Arrays.asList("atomic", "fixed order")), paths, "paths crossed");
    }

    /** A label out of range on each path: the CPU's exception and message, naming the first bad position. */
    @ParameterizedTest
    @ValueSource(strings = {"float32", "float64"})
    void shouldReportTheFirstBadLabelOfAScatterAddAsTheCpu(String type, TestInfo info) {
        DType dt = DType.byName(type);
        SplittableRandom r = TestRandom.create(info);
        int[][] shapes = {{100, 32, 1, 99}, {3000, 33, 8, 1234}, {100_000, 32, 8, 0}, {1500, 31, 193, 700}};
        for (int[] s : shapes) {
            int n = s[0];
            int cols = s[1];
            int k = s[2];
            int bad = s[3];
            double[] x = MlTesting.uniform(r, n * cols);
            int[] l = randomLabels(r, n, k);
            l[bad] = k;
            if (bad + 5 < n) {
                l[bad + 5] = -1;
            }
            try (NdArray dx = array(gpu, dt, x, n, cols);
                    NdArray hx = array(host, dt, x, n, cols);
                    NdArray dl = labels(gpu, l);
                    NdArray hl = labels(host, l);
                    NdArray d = NdArray.zeros(gpu, dt, Order.C, k, cols);
                    NdArray h = NdArray.zeros(host, dt, Order.C, k, cols)) {
                IllegalArgumentException want =
                        assertThrows(IllegalArgumentException.class, () -> cpu.scatterAddRows(hx, hl, h));
                IllegalArgumentException got =
                        assertThrows(IllegalArgumentException.class, () -> cuda.scatterAddRows(dx, dl, d));
                assertEquals(want.getMessage(), got.getMessage());
                assertTrue(got.getMessage().startsWith("scatterAddRows: index[" + bad + "] = " + k), got.getMessage());
            }
        }
    }

    /** bincount counts exactly as the CPU on both paths, and reports a bad label with the CPU's message. */
    @ParameterizedTest
    @ValueSource(strings = {"float32", "float64"})
    void shouldBincountExactlyAsTheCpuOnEveryPath(String type, TestInfo info) {
        DType dt = DType.byName(type);
        SplittableRandom r = TestRandom.create(info);
        int[][] shapes = {{1, 1}, {100, 1}, {255, 8}, {100_000, 8}, {300_000, 4096}, {20_000, 4097}};
        for (int[] s : shapes) {
            int n = s[0];
            int k = s[1];
            int[] l = randomLabels(r, n, k);
            double[] start = new double[k];
            Arrays.fill(start, 3);
            String what = "bincount " + n + " into " + k + ", " + dt.wireName();
            try (NdArray dl = labels(gpu, l);
                    NdArray hl = labels(host, l);
                    NdArray d = array(gpu, dt, start, k);
                    NdArray h = array(host, dt, start, k)) {
                cuda.bincount(dl, d);
                cpu.bincount(hl, h);
                assertArrayEquals(values(h), values(d), what);
            }
            l[n / 2] = -3;
            try (NdArray dl = labels(gpu, l);
                    NdArray hl = labels(host, l);
                    NdArray d = array(gpu, dt, start, k);
                    NdArray h = array(host, dt, start, k)) {
                IllegalArgumentException want = assertThrows(IllegalArgumentException.class, () -> cpu.bincount(hl, h));
                IllegalArgumentException got = assertThrows(IllegalArgumentException.class, () -> cuda.bincount(dl, d));
                assertEquals(want.getMessage(), got.getMessage(), what);
            }
        }
    }

    /**
     * KMeans on the bench's blobs (tol 0: stop only when a step leaves every center where it was) from the same first
     * centers: the same labels, centers within relative 1e-9 (float64) and, since the GPU's sums no longer change
     * with the order of atomic additions, the same number of steps as the CPU.
     */
    @ParameterizedTest
    @ValueSource(ints = {1, 8, 30})
    void shouldStopAKMeansFitAfterAsManyStepsAsOnTheCpu(int k, TestInfo info) {
        SplittableRandom r = TestRandom.create(info);
        int n = 50_000;
        int d = 33;
        double[] centers = new double[k * d];
        for (int i = 0; i < centers.length; i++) {
            centers[i] = r.nextDouble(-10, 10);
        }
        double[] x = new double[n * d];
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < d; j++) {
                x[i * d + j] = centers[(i % k) * d + j] + MlTesting.gaussian(r);
            }
        }
        double[] init = new double[k * d];
        for (int i = 0; i < init.length; i++) {
            init[i] = x[i] + 0.5 * MlTesting.gaussian(r);
        }
        try (NdArray dx = array(gpu, DType.FLOAT64, x, n, d);
                NdArray hx = array(host, DType.FLOAT64, x, n, d);
                NdArray di = array(gpu, DType.FLOAT64, init, k, d);
                NdArray hi = array(host, DType.FLOAT64, init, k, d);
                KMeans onGpu = new KMeans().nClusters(k).tol(0).maxIter(100);
                KMeans onCpu = new KMeans().nClusters(k).tol(0).maxIter(100)) {
            onGpu.fit(dx, di);
            onCpu.fit(hx, hi);
            assertTrue(onCpu.nIter() < 100, "the CPU fit converged (" + onCpu.nIter() + " steps)");
            assertEquals(onCpu.nIter(), onGpu.nIter(), "steps");
            try (NdArray gl = onGpu.predict(dx);
                    NdArray hl = onCpu.predict(hx)) {
                assertArrayEquals(HostArrays.ints(hl), HostArrays.ints(gl), "labels");
            }
            double[] got = values(onGpu.clusterCenters());
            double[] want = values(onCpu.clusterCenters());
            double scale = Arrays.stream(want).map(Math::abs).max().orElse(1);
            assertTrue(MlTesting.maxAbsDiff(got, want) <= 1e-9 * scale, "centers: " + MlTesting.maxAbsDiff(got, want));
            assertEquals(onCpu.inertia(), onGpu.inertia(), 1e-9 * onCpu.inertia(), "inertia");
        }
    }
}
