package io.cuwire.ml.cuda.internal;

import static io.cuwire.ml.MlTesting.array;
import static io.cuwire.ml.MlTesting.values;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.cuda.Cuda;
import io.cuwire.cuda.CudaTestSupport;
import io.cuwire.cuda.KernelModule;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DType;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.DeviceStream;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import io.cuwire.ml.ComputeBackend;
import io.cuwire.ml.ComputeBackends;
import io.cuwire.ml.MlTesting;
import io.cuwire.ml.internal.CpuBackend;
import io.cuwire.ml.internal.HostArrays;
import io.cuwire.ml.neighbors.NearestNeighbors;
import io.cuwire.ml.neighbors.Neighbors;
import io.cuwire.test.TestRandom;
import java.util.Arrays;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeSet;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Every path of the CUDA selection and nearest-rows kernels against the CPU backend on the same values: the shapes
 * are picked so that each kernel, and each bound between kernels, is crossed (the tests check that they were, by the
 * plans and kernel names {@link MlKernels} reports for them). Selections must agree exactly, ids and values bit for bit
 * (ties broken by column, NaN above everything, -0.0 below 0.0); nearest rows where the CPU's choice is not within
 * float rounding of another center.
 */
@Tag("gpu")
class CudaKernelPathsTest {
    private static final long ID_OFFSET = 1_000_000_007L;

    private BufferAllocator<DeviceBuffer> gpu;
    private BufferAllocator<HostBuffer> host;
    private DeviceStream stream;
    private ComputeBackend cuda;
    private final CpuBackend cpu = CpuBackend.instance();

    @BeforeEach
    void open() {
        CudaTestSupport.assumeCuda();
        gpu = Cuda.device(0).newAllocator("cuda-kernel-paths", BufferAllocator.UNLIMITED);
        host = MlTesting.host("cpu-kernel-paths");
        stream = Cuda.device(0).newStream();
        cuda = ComputeBackends.forDevice(Cuda.device(0));
    }

    @AfterEach
    void close() {
        if (gpu != null) {
            stream.close();
            gpu.close();
            host.close();
        }
    }

    /** How the values of a selection test are made. */
    private enum Fill {
        /** Uniform in [-1, 1): distinct. */
        UNIFORM,
        /** Integers 0 to 3: every k smallest cut through a run of equal values. */
        TIES,
        /** NaN (both signs), -0.0, 0.0, infinities and small integers. */
        SPECIAL,
        /** One value everywhere: the ids are the first k columns. */
        EQUAL,
        /** Decreasing along the row: every element enters every thread's list. */
        DESCENDING
    }

    private static double[] fill(SplittableRandom r, Fill fill, int rows, int cols) {
        double[] v = new double[rows * cols];
        double[] specials = {Double.NaN, -Double.NaN, -0.0, 0.0, Double.POSITIVE_INFINITY, Double.NEGATIVE_INFINITY};
        for (int i = 0; i < v.length; i++) {
            v[i] = switch (fill) {
                case UNIFORM -> r.nextDouble(-1, 1);
                case TIES -> r.nextInt(4);
                case SPECIAL -> r.nextInt(3) == 0 ? specials[r.nextInt(specials.length)] : r.nextInt(5) - 2;
                case EQUAL -> 1.5;
                case DESCENDING -> cols - i % cols;
            };
        }
        return v;
    }

    /** The path a plan takes, for the coverage check. */
    private static String path(MlKernels.SelectPlan plan) {
        if (plan.group() == 1) {
            return "one thread a row";
        }
        if (plan.kernel().name().startsWith("ml_select_radix_")) {
            return plan.parts() > 1 ? "parts radix" : "radix";
        }
        String keys = plan.kernel().name().contains("_k8_") ? "k8" : "k32";
        return (plan.parts() > 1 ? "parts " : plan.group() == 32 ? "warp " : "block ") + keys;
    }

    /**
     * smallestK on the GPU and on the CPU over shapes that take every path: a warp a row (up to 2048 columns), a
     * block a row (more columns, rows enough for every SM), rows cut into parts and merged (few long rows), the
     * radix select (k above 32 up to 1024: a block a row, or rows cut into parts), one thread a row (k above 1024);
     * k = 1, k = cols, k = 8 / 9 (the 8-key and 32-key kernels), 32 / 33, 1024 / 1025; widths that are not multiples
     * of 32 or 256, and 256 / 257 and 65,536 / 65,537 columns (the radix select's column digits: one, two, three);
     * one row and many.
     */
    @ParameterizedTest
    @ValueSource(strings = {"float32", "float64"})
    void shouldSelectTheSmallestKExactlyAsTheCpuOnEveryPath(String type, TestInfo info) {
        DType dt = DType.byName(type);
        SplittableRandom r = TestRandom.create(info);
        int[][] shapes = {
            {1, 1, 1},
            {7, 5, 5},
            {1000, 100, 5},
            {333, 2048, 8},
            {100, 2047, 9},
            {64, 32, 32},
            {65, 33, 32},
            {50, 40, 33},
            {37, 37, 37},
            {1100, 2049, 1},
            {1100, 3001, 8},
            {1100, 2100, 9},
            {1100, 2500, 32},
            {1, 100_003, 5},
            {41, 100_000, 8},
            {41, 100_000, 9},
            {3, 20_000, 32},
            {2, 50_000, 31},
            {1, 8193, 1},
            {5, 9000, 2},
            {1, 16_385, 16},
            {3, 33, 33},
            {1100, 300, 50},
            {5, 256, 100},
            {4, 257, 256},
            {2, 1024, 1024},
            {1, 1025, 1024},
            {2, 3000, 1000},
            {1, 65_536, 500},
            {2, 65_537, 100},
            {1, 100_003, 1024},
            {600, 8193, 40},
            {1, 8193, 1024},
            {3, 1100, 1025},
            {1, 1025, 1025},
        };
        Set<String> paths = new TreeSet<>();
        int shape = 0;
        for (int[] s : shapes) {
            int rows = s[0];
            int cols = s[1];
            int k = s[2];
            long offset = shape % 2 == 0 ? 0 : ID_OFFSET;
            Fill[] fills = rows * (long) cols <= 500_000
                    ? Fill.values()
                    : new Fill[] {Fill.values()[shape % Fill.values().length]};
            for (Fill f : fills) {
                double[] v = fill(r, f, rows, cols);
                String what = "smallestK " + rows + " x " + cols + ", k " + k + ", " + f + ", " + dt.wireName();
                try (NdArray dv = array(gpu, dt, v, rows, cols);
                        NdArray hv = array(host, dt, v, rows, cols);
                        NdArray gotV = NdArray.zeros(gpu, dt, Order.C, rows, k);
                        NdArray gotI = NdArray.zeros(gpu, DType.INT64, Order.C, rows, k);
                        NdArray wantV = NdArray.zeros(host, dt, Order.C, rows, k);
                        NdArray wantI = NdArray.zeros(host, DType.INT64, Order.C, rows, k)) {
                    cuda.smallestK(dv, offset, gotV, gotI);
                    cpu.smallestK(hv, offset, wantV, wantI);
                    assertArrayEquals(wantI.toLongArray(), gotI.toLongArray(), what + ": ids");
                    assertArrayEquals(values(wantV), values(gotV), what + ": values");
                }
            }
            paths.add(path(MlKernels.smallestKPlan(stream, dt, rows, cols, k)));
            shape++;
        }
        assertEquals(
                new TreeSet<>(Set.of(
                        "warp k8",
                        "warp k32",
                        "block k8",
                        "block k32",
                        "parts k8",
                        "parts k32",
                        "radix",
                        "parts radix",
                        "one thread a row")),
                paths,
                "the paths the shapes took");
    }

    /** The merge of two ascending lists per row, with equal distances across the lists: a first, ids along. */
    @ParameterizedTest
    @ValueSource(strings = {"float32", "float64"})
    void shouldMergeNeighborsAsTheCpu(String type, TestInfo info) {
        DType dt = DType.byName(type);
        SplittableRandom r = TestRandom.create(info);
        int rows = 513;
        int[][] sizes = {{5, 5, 5}, {5, 5, 10}, {1, 7, 3}, {8, 1, 9}, {1, 3, 2}, {32, 32, 32}};
        for (DType ids : new DType[] {DType.INT32, DType.INT64}) {
            for (int[] s : sizes) {
                int ka = s[0];
                int kb = s[1];
                int k = s[2];
                double[] a = sortedRows(r, rows, ka);
                double[] b = sortedRows(r, rows, kb);
                long[] ia = new long[rows * ka];
                long[] ib = new long[rows * kb];
                for (int i = 0; i < ia.length; i++) {
                    ia[i] = i;
                }
                for (int i = 0; i < ib.length; i++) {
                    ib[i] = 1_000_000 + i;
                }
                String what = "mergeNeighbors " + ka + " + " + kb + " -> " + k + ", ids " + ids.wireName();
                try (NdArray ga = array(gpu, dt, a, rows, ka);
                        NdArray gb = array(gpu, dt, b, rows, kb);
                        NdArray gia = ids(gpu, ids, ia, rows, ka);
                        NdArray gib = ids(gpu, ids, ib, rows, kb);
                        NdArray ha = array(host, dt, a, rows, ka);
                        NdArray hb = array(host, dt, b, rows, kb);
                        NdArray hia = ids(host, ids, ia, rows, ka);
                        NdArray hib = ids(host, ids, ib, rows, kb);
                        NdArray gd = NdArray.zeros(gpu, dt, Order.C, rows, k);
                        NdArray gi = NdArray.zeros(gpu, ids, Order.C, rows, k);
                        NdArray hd = NdArray.zeros(host, dt, Order.C, rows, k);
                        NdArray hi = NdArray.zeros(host, ids, Order.C, rows, k)) {
                    cuda.mergeNeighbors(ga, gia, gb, gib, gd, gi);
                    cpu.mergeNeighbors(ha, hia, hb, hib, hd, hi);
                    assertArrayEquals(values(hi), values(gi), what + ": ids");
                    assertArrayEquals(values(hd), values(gd), what + ": distances");
                }
            }
        }
    }

    private static NdArray ids(BufferAllocator<?> mem, DType dtype, long[] v, long rows, long k) {
        NdArray a = NdArray.empty(mem, dtype, Order.C, rows, k);
        HostArrays.write(a, v);
        return a;
    }

    /** Rows of small integers, ascending: equal values within and across lists. */
    private static double[] sortedRows(SplittableRandom r, int rows, int k) {
        double[] v = new double[rows * k];
        for (int i = 0; i < rows; i++) {
            double x = 0;
            for (int j = 0; j < k; j++) {
                x += r.nextInt(2);
                v[i * k + j] = x;
            }
        }
        return v;
    }

    /**
     * kNearestRows on the fused kernel (tiles of 32 queries and 128 rows, 16 float32 or 8 float64 columns at a time,
     * lists of 8 or 32 keys a query, the rows cut into slices when few queries leave SMs idle) against the CPU backend
     * on the same values, over shapes at and across each bound: 1, 31, 32, 33 and 100 queries; rows from k to
     * 20,000 (one tile, 127 / 128 / 129, one slice and several); 1 to 33 columns (one chunk or several, a part of
     * one); k 1, 8, 9 and 32 (both lists), and 33 (the GEMM path beside it). float64 uniform values, NaN in some
     * queries (ranked last, by row): the ids and the distances bit for bit (the fused kernel sums as the CPU does);
     * float32 small integers (every distance exact in float, many equal): the ids and distances too. Each path and
     * the cut into slices must have been taken.
     */
    @ParameterizedTest
    @ValueSource(strings = {"float32", "float64"})
    void shouldFindTheCpusKNearestRowsOnTheFusedKernelAcrossItsTiles(String type, TestInfo info) {
        DType dt = DType.byName(type);
        SplittableRandom r = TestRandom.create(info);
        int[][] shapes = { // queries, rows, columns, k
            {1, 1, 1, 1},
            {31, 127, 7, 8},
            {32, 128, 8, 9},
            {33, 129, 9, 32},
            {100, 300, 16, 5},
            {100, 300, 17, 32},
            {1, 20_000, 3, 8},
            {33, 20_000, 33, 32},
            {5, 9_000, 12, 9},
            {64, 5_000, 2, 1},
            {40, 5_000, 5, 33},
        };
        Set<String> paths = new TreeSet<>();
        boolean sliced = false;
        for (int[] s : shapes) {
            int m = s[0];
            int n = s[1];
            int d = s[2];
            int k = s[3];
            double[] xs = new double[n * d];
            double[] qs = new double[m * d];
            for (int i = 0; i < xs.length; i++) {
                xs[i] = dt == DType.FLOAT32 ? r.nextInt(5) : r.nextDouble(-1, 1);
            }
            for (int i = 0; i < qs.length; i++) {
                qs[i] = dt == DType.FLOAT32 ? r.nextInt(5) : (i % 97 == 3 ? Double.NaN : r.nextDouble(-1, 1));
            }
            String what = "kNearestRows " + m + " queries, " + n + " x " + d + ", k " + k + ", " + dt.wireName();
            try (NdArray xg = array(gpu, dt, xs, n, d);
                    NdArray xh = array(host, dt, xs, n, d);
                    NdArray qg = array(gpu, dt, qs, m, d);
                    NdArray qh = array(host, dt, qs, m, d);
                    NdArray gotD = NdArray.zeros(gpu, dt, Order.C, m, k);
                    NdArray gotI = NdArray.zeros(gpu, DType.INT64, Order.C, m, k);
                    NdArray wantD = NdArray.zeros(host, dt, Order.C, m, k);
                    NdArray wantI = NdArray.zeros(host, DType.INT64, Order.C, m, k)) {
                cuda.kNearestRows(qg, xg, ID_OFFSET, gotD, gotI);
                cpu.kNearestRows(qh, xh, ID_OFFSET, wantD, wantI);
                assertArrayEquals(wantI.toLongArray(), gotI.toLongArray(), what + ": ids");
                assertArrayEquals(values(wantD), values(gotD), what + ": distances");
                paths.add(cuda.kNearestRowsPath(qg, xg, k));
            }
            if (MlKernels.kNearestFusedFits(n, k)) {
                MlKernels.KnnPlan plan = MlKernels.knnPlan(stream, dt, m, n, k);
                sliced |= plan.parts() > 1;
                assertEquals(plan.parts() > 1, plan.merge() != null, what + ": a merge exactly when sliced");
            }
        }
        assertEquals(Set.of("fused_k8", "fused_k32", "gemm_select"), paths, "the paths the shapes took");
        assertTrue(sliced, "some shape cut the rows into slices");
    }

    /**
     * NearestNeighbors end to end over a training set wide enough for the selection to cut rows into parts: the fused
     * kernel's slices up to 32 neighbors, the GEMM path's (queries in blocks of 2^22 / 20,000 rows) above; on integer
     * coordinates: every squared distance is exact on both backends, and many are equal, so the neighbors (ties by
     * row) and distances must be identical.
     */
    @ParameterizedTest
    @ValueSource(strings = {"float32", "float64"})
    void shouldFindTheCpusKNeighborsWhenRowsAreCutIntoParts(String type, TestInfo info) {
        DType dt = DType.byName(type);
        SplittableRandom r = TestRandom.create(info);
        int n = 20_000;
        int q = 30;
        int d = 3;
        double[] x = new double[n * d];
        double[] qx = new double[q * d];
        for (int i = 0; i < x.length; i++) {
            x[i] = r.nextInt(10);
        }
        for (int i = 0; i < qx.length; i++) {
            qx[i] = r.nextInt(10);
        }
        for (int k : new int[] {1, 8, 9, 32, 40, 100}) {
            try (NdArray xg = array(gpu, dt, x, n, d);
                    NdArray xh = array(host, dt, x, n, d);
                    NdArray qg = array(gpu, dt, qx, q, d);
                    NdArray qh = array(host, dt, qx, q, d);
                    NearestNeighbors onGpu =
                            new NearestNeighbors().nNeighbors(k).fit(xg);
                    NearestNeighbors onCpu =
                            new NearestNeighbors().nNeighbors(k).fit(xh);
                    Neighbors got = onGpu.kneighbors(qg);
                    Neighbors want = onCpu.kneighbors(qh)) {
                assertArrayEquals(want.ids().toLongArray(), got.ids().toLongArray(), "ids, k " + k);
                assertArrayEquals(values(want.distances()), values(got.distances()), "distances, k " + k);
            }
            MlKernels.SelectPlan plan = MlKernels.smallestKPlan(stream, dt, q, n, k);
            assertTrue(plan.parts() > 1, "k " + k + ": rows cut into parts");
            if (k <= MlKernels.KNN_FUSED_MAX_K) {
                assertTrue(
                        MlKernels.knnPlan(stream, dt, q, n, k).parts() > 1, "k " + k + ": the fused kernel's slices");
            }
            assertEquals(
                    k > MlKernels.SELECT_MAX_K,
                    plan.kernel().name().startsWith("ml_select_radix_"),
                    "k " + k + ": the radix select above " + MlKernels.SELECT_MAX_K + " neighbors");
        }
    }

    /**
     * nearestRows by each kernel setting against the CPU: widths 1 to 513 (odd, not multiples of 4 or 8, one and two
     * chunks a lane, past the registers kernels), 1 to 32 centers (8 and 9, 4 and 5 at the registers kernels' bounds),
     * rows starting 16-byte aligned or not, one row and rows that leave a warp partly past the end; center 2 a twin
     * of center 1 (the first must win), some rows exactly on their center. The CPU's label must be chosen unless the
     * chosen center is within the float32 (or float64) tolerance of the conformance suite; the reported minimum
     * within it too.
     */
    @ParameterizedTest
    @ValueSource(strings = {"float32", "float64"})
    void shouldLabelNearestRowsAsTheCpuWithEveryKernel(String type, TestInfo info) {
        DType dt = DType.byName(type);
        SplittableRandom r = TestRandom.create(info);
        int[] widths = {1, 3, 4, 7, 8, 12, 31, 33, 64, 65, 100, 256, 257, 300, 508, 511, 512, 513};
        int[] centers = {1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 31, 32};
        Set<String> kernels = new TreeSet<>();
        int shape = 0;
        for (int d : widths) {
            for (int k : centers) {
                if ((long) k * d > MlKernels.NEAREST_MAX_ELEMENTS) {
                    continue;
                }
                int n = new int[] {1, 33, 2001}[shape++ % 3];
                for (boolean aligned :
                        dt == DType.FLOAT32 && d % 4 == 0 ? new boolean[] {true, false} : new boolean[] {true}) {
                    for (MlKernels.NearestKernel choice : MlKernels.NearestKernel.values()) {
                        kernels.add(nearestRows(dt, r, n, d, k, aligned, choice));
                    }
                }
            }
        }
        Set<String> expected = new TreeSet<>();
        if (dt == DType.FLOAT32) {
            for (String regs : new String[] {"k8x1", "k4x2"}) {
                expected.add("ml_nearest_rows_regs_" + regs + "_f32");
                expected.add("ml_nearest_rows_regs_v4_" + regs + "_f32");
            }
            expected.add("ml_nearest_rows_v4_k8_f32");
            expected.add("ml_nearest_rows_v4_k32_f32");
        }
        expected.add("ml_nearest_rows_k8_" + (dt == DType.FLOAT32 ? "f32" : "f64"));
        expected.add("ml_nearest_rows_k32_" + (dt == DType.FLOAT32 ? "f32" : "f64"));
        assertEquals(expected, kernels, "the kernels the shapes took");
    }

    /** One nearestRows case; returns the kernel's name. */
    private String nearestRows(
            DType dt, SplittableRandom r, int n, int d, int k, boolean aligned, MlKernels.NearestKernel choice) {
        double[] c = new double[k * d];
        for (int i = 0; i < c.length; i++) {
            c[i] = r.nextDouble(-3, 3);
        }
        if (k >= 3) {
            System.arraycopy(c, d, c, 2 * d, d);
        }
        // the rows start the device buffer (256-byte aligned), or one element into it: not 16-byte aligned
        int pad = aligned ? 0 : 1;
        double[] x = new double[pad + n * d];
        for (int i = 0; i < n; i++) {
            int q = i % k;
            double noise = i % 5 == 0 ? 0 : 1.5;
            for (int j = 0; j < d; j++) {
                x[pad + i * d + j] = c[q * d + j] + noise * r.nextDouble(-1, 1);
            }
        }
        double[] xv = Arrays.copyOfRange(x, pad, pad + n * d);
        String what = "nearestRows " + n + " x " + d + ", " + k + " centers, " + dt.wireName() + ", "
                + choice.settingName() + (aligned ? "" : ", unaligned");
        try (NdArray xs = array(gpu, dt, x, x.length);
                NdArray cs = array(gpu, dt, c, k, d);
                NdArray index = NdArray.zeros(gpu, DType.INT32, Order.C, n);
                NdArray best = NdArray.zeros(gpu, dt, Order.C, n);
                NdArray xh = array(host, dt, xv, n, d);
                NdArray ch = array(host, dt, c, k, d);
                NdArray want = NdArray.zeros(host, DType.INT32, Order.C, n);
                NdArray wantMin = NdArray.zeros(host, dt, Order.C, n)) {
            DeviceBuffer rows =
                    ((DeviceBuffer) xs.buffer()).slice((long) pad * dt.byteSize(), (long) n * d * dt.byteSize());
            String kernel = MlKernels.nearestRowsKernel(choice, dt, rows, d, k);
            MlKernels.nearestRows(
                    stream,
                    dt,
                    rows,
                    n,
                    d,
                    (DeviceBuffer) cs.buffer(),
                    k,
                    (DeviceBuffer) index.buffer(),
                    (DeviceBuffer) best.buffer(),
                    choice);
            stream.synchronize();
            cpu.nearestRows(xh, ch, want, wantMin);
            int[] got = index.toIntArray();
            int[] cpuLabels = want.toIntArray();
            double[] gotMin = values(best);
            double[] rowsv = values(xh);
            double[] cv = values(ch);
            double tol = dt == DType.FLOAT64 ? 1e-12 : 1e-5;
            for (int i = 0; i < n; i++) {
                double[] dist = new double[k];
                for (int q = 0; q < k; q++) {
                    for (int j = 0; j < d; j++) {
                        double e = rowsv[i * d + j] - cv[q * d + j];
                        dist[q] += e * e;
                    }
                }
                double bound = tol * (4.0 * d + dist[cpuLabels[i]]);
                String row = what + " (" + kernel + "): row " + i + " chose " + got[i] + ", the CPU " + cpuLabels[i];
                assertTrue(got[i] >= 0 && got[i] < k, row);
                assertTrue(got[i] == cpuLabels[i] || Math.abs(dist[got[i]] - dist[cpuLabels[i]]) <= bound, row);
                assertTrue(!(k >= 3 && got[i] == 2), row + ": center 2 is the twin of center 1, the first wins");
                assertTrue(Math.abs(gotMin[i] - dist[cpuLabels[i]]) <= bound, row + ": min " + gotMin[i]);
            }
            return kernel;
        }
    }

    /**
     * gemvRows with the float4 kernel allowed and not, against the products in double on the host: widths around
     * every lane count of both kernels (1 to 4,096 columns; multiples of 4 and not), rows starting 16-byte aligned or
     * not, one row and rows that leave a step of the float4 kernel partly past the end, beta 0 and not. Float32
     * within the conformance suite's tolerance, float64 within 1e-12; the shapes must take each kernel.
     */
    @ParameterizedTest
    @ValueSource(strings = {"float32", "float64"})
    void shouldMultiplyRowsAsTheHostWithEveryGemvKernel(String type, TestInfo info) {
        DType dt = DType.byName(type);
        SplittableRandom r = TestRandom.create(info);
        int[] widths = {1, 3, 4, 8, 12, 16, 60, 64, 65, 124, 128, 132, 256, 260, 1000, 4096};
        Set<String> kernels = new TreeSet<>();
        int shape = 0;
        for (int d : widths) {
            int n = new int[] {1, 37, 2001}[shape++ % 3];
            for (boolean aligned : d % 4 == 0 ? new boolean[] {true, false} : new boolean[] {true}) {
                for (boolean v4 : new boolean[] {true, false}) {
                    kernels.add(gemvRows(dt, r, n, d, aligned, v4, shape % 2 == 0 ? 0 : 0.5));
                }
            }
        }
        Set<String> expected = new TreeSet<>(Set.of("ml_gemv_rows_" + (dt == DType.FLOAT32 ? "f32" : "f64")));
        if (dt == DType.FLOAT32) {
            expected.add("ml_gemv_rows_v4_f32");
        }
        assertEquals(expected, kernels, "the kernels the shapes took");
    }

    /** One gemvRows case, {@code y = 1.5 a x + beta y}; returns the kernel's name. */
    private String gemvRows(DType dt, SplittableRandom r, int n, int d, boolean aligned, boolean v4, double beta) {
        int pad = aligned ? 0 : 1;
        double[] a = new double[pad + n * d];
        for (int i = 0; i < a.length; i++) {
            a[i] = r.nextDouble(-2, 2);
        }
        double[] x = new double[d];
        double[] y0 = new double[n];
        for (int j = 0; j < d; j++) {
            x[j] = r.nextDouble(-1, 1);
        }
        for (int i = 0; i < n; i++) {
            y0[i] = r.nextDouble(-1, 1);
        }
        String what = "gemvRows " + n + " x " + d + ", " + dt.wireName() + (v4 ? "" : ", scalar only")
                + (aligned ? "" : ", unaligned") + ", beta " + beta;
        try (NdArray as = array(gpu, dt, a, a.length);
                NdArray xs = array(gpu, dt, x, d);
                NdArray ys = array(gpu, dt, y0, n)) {
            DeviceBuffer rows =
                    ((DeviceBuffer) as.buffer()).slice((long) pad * dt.byteSize(), (long) n * d * dt.byteSize());
            String kernel = MlKernels.gemvKernel(v4, dt, d, KernelModule.aligned(rows, 16))
                    .name();
            MlKernels.gemvRows(
                    stream, dt, rows, n, d, (DeviceBuffer) xs.buffer(), 1.5, beta, (DeviceBuffer) ys.buffer(), v4);
            stream.synchronize();
            double[] got = values(ys);
            double[] av = stored(dt, a);
            double[] xv = stored(dt, x);
            double[] yv = stored(dt, y0);
            double tol = dt == DType.FLOAT64 ? 1e-12 : 1e-5;
            for (int i = 0; i < n; i++) {
                double dot = 0;
                double mag = 0;
                for (int j = 0; j < d; j++) {
                    dot += av[pad + i * d + j] * xv[j];
                    mag += Math.abs(av[pad + i * d + j] * xv[j]);
                }
                double want = 1.5 * dot + beta * yv[i];
                double bound = tol * (1 + 1.5 * mag + Math.abs(beta * yv[i]));
                assertTrue(
                        Math.abs(got[i] - want) <= bound,
                        what + " (" + kernel + "): row " + i + " gave " + got[i] + ", want " + want);
            }
            return kernel;
        }
    }

    /** The values as the device holds them: rounded to float32 for float32 arrays. */
    private static double[] stored(DType dt, double[] v) {
        return dt == DType.FLOAT32 ? Arrays.stream(v).map(e -> (float) e).toArray() : v;
    }
}
