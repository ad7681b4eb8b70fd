package io.cuwire.ml.cuda.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.cuda.Cuda;
import io.cuwire.cuda.CudaTestSupport;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.DType;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.MemoryKind;
import io.cuwire.memory.NdArray;
import io.cuwire.ml.ComputeBackends;
import io.cuwire.ml.HistogramTrees;
import io.cuwire.ml.Metrics;
import io.cuwire.ml.MlTesting;
import io.cuwire.ml.ensemble.RandomForestClassifier;
import io.cuwire.ml.ensemble.RandomForestRegressor;
import io.cuwire.serialize.OpaqueBlob;
import io.cuwire.test.TestRandom;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * Forests grown on the GPU ({@link CudaForestGrower}, through {@code ComputeBackend.histogramTrees}) against the CPU
 * backend's histogram splits on the same float64 data, seeds and bins. A classifier's trees are the same, byte for
 * byte: class counts are exact in any order and the scores are computed alike. A regressor's histogram sums follow the
 * order of the device's atomic additions, so two near-equal scores may order otherwise: its held-out R² must be
 * within 0.01 of the CPU's.
 */
@Tag("gpu")
class CudaForestFitTest {
    private BufferAllocator<DeviceBuffer> gpu;
    private BufferAllocator<HostBuffer> host;

    @BeforeEach
    void open() {
        CudaTestSupport.assumeCuda();
        gpu = Cuda.device(0).newAllocator("cuda-forest-fit", BufferAllocator.UNLIMITED);
        host = MlTesting.host("cpu-forest-fit");
    }

    @AfterEach
    void close() {
        if (gpu != null) {
            assertEquals(0, gpu.allocatedBytes(), "device allocator balance");
            assertEquals(0, host.allocatedBytes(), "host allocator balance");
            gpu.close();
            host.close();
        }
    }

    private static byte[] bytes(OpaqueBlob blob) {
        byte[] out = new byte[Math.toIntExact(blob.byteSize())];
        CopyEngine.copyToSegment(blob.buffer(), 0, MemorySegment.ofArray(out));
        return out;
    }

    private static double[] data(SplittableRandom r, int n, int d, int[] labels, double[] values) {
        double[] x = new double[n * d];
        for (int i = 0; i < x.length; i++) {
            x[i] = i % d == 2 ? r.nextInt(12) : r.nextGaussian();
        }
        for (int i = 0; i < n; i++) {
            int o = i * d;
            double f = Math.sin(2 * x[o]) + x[o + 1] * x[o + 3] + 0.2 * x[o + 2];
            values[i] = f + 0.1 * r.nextGaussian();
            double z = f + 0.3 * r.nextGaussian();
            labels[i] = z < 0 ? 0 : z < 1.2 ? 1 : 2;
        }
        return x;
    }

    @Test
    void shouldGrowTheCpusClassifierTreesByteForByte(TestInfo info) {
        SplittableRandom r = TestRandom.create(info);
        int n = 20_000;
        int d = 7;
        int[] labels = new int[n];
        double[] values = new double[n];
        double[] xv = data(r, n, d, labels, values);
        long seed = r.nextLong();
        try (NdArray xg = MlTesting.array(gpu, DType.FLOAT64, xv, n, d);
                NdArray yg = MlTesting.labels(gpu, labels);
                NdArray xh = MlTesting.array(host, DType.FLOAT64, xv, n, d);
                NdArray yh = MlTesting.labels(host, labels)) {
            assertEquals("cuda", ComputeBackends.forArray(xg).name());
            try (HistogramTrees own = ComputeBackends.forArray(xg)
                    .histogramTrees(xg, new double[n], 2, new double[d][0])
                    .orElseThrow()) {
                assertTrue(own instanceof CudaForestGrower, "the CUDA backend grows trees itself: " + own);
            }
            for (int depth : new int[] {1, 6, 14}) {
                try (RandomForestClassifier g = new RandomForestClassifier()
                                .nEstimators(4)
                                .maxDepth(depth)
                                .seed(seed)
                                .fit(xg, yg);
                        RandomForestClassifier h = new RandomForestClassifier()
                                .nEstimators(4)
                                .maxDepth(depth)
                                .seed(seed)
                                .fit(xh, yh)) {
                    assertEquals(MemoryKind.DEVICE, g.forest().kind());
                    assertEquals(h.info(), g.info(), "depth " + depth);
                    assertArrayEquals(bytes(h.forest()), bytes(g.forest()), "depth " + depth + ": the same trees");
                }
            }
        }
    }

    /**
     * The CUDA backend's tree builder owns device memory (of the backend's scratch allocator): a second close, or a
     * tree asked of it after the first, throws, as every owner does (docs/architecture.md, "Close policy").
     */
    @Test
    void shouldThrowOnASecondCloseOfTheTreeBuilderOrAGrowAfterIt() {
        int n = 64;
        int d = 3;
        double[] xv = new double[n * d];
        for (int i = 0; i < xv.length; i++) {
            xv[i] = i % 7;
        }
        try (NdArray xg = MlTesting.array(gpu, DType.FLOAT64, xv, n, d)) {
            HistogramTrees trees = ComputeBackends.forArray(xg)
                    .histogramTrees(xg, new double[n], 2, new double[][] {{1, 3}, {2}, {4}})
                    .orElseThrow();
            assertTrue(trees instanceof CudaForestGrower, "the CUDA backend grows trees itself: " + trees);
            trees.close();
            IllegalStateException twice =
                    assertThrows(IllegalStateException.class, trees::close, "a second close of the CUDA tree builder");
            assertTrue(twice.getMessage().contains("already closed"), twice.getMessage());
            assertThrows(
                    IllegalStateException.class,
                    () -> trees.grow(new int[] {0, 1, 2}, () -> new int[] {0}, new HistogramTrees.Params(2, 2, 1)),
                    "a tree asked after close");
        }
    }

    @Test
    void shouldScoreTheRegressorWithinOneHundredthOfTheCpus(TestInfo info) {
        SplittableRandom r = TestRandom.create(info);
        int n = 20_000;
        int d = 7;
        int[] labels = new int[n];
        double[] values = new double[n];
        double[] xv = data(r, n, d, labels, values);
        int train = 15_000;
        long seed = r.nextLong();
        double[] xt = Arrays.copyOf(xv, train * d);
        double[] yt = Arrays.copyOf(values, train);
        double[] xq = Arrays.copyOfRange(xv, train * d, n * d);
        double[] yq = Arrays.copyOfRange(values, train, n);
        try (NdArray xg = MlTesting.array(gpu, DType.FLOAT64, xt, train, d);
                NdArray yg = MlTesting.array(gpu, DType.FLOAT64, yt, train);
                NdArray qg = MlTesting.array(gpu, DType.FLOAT64, xq, n - train, d);
                NdArray ag = MlTesting.array(gpu, DType.FLOAT64, yq, n - train);
                NdArray xh = MlTesting.array(host, DType.FLOAT64, xt, train, d);
                NdArray yh = MlTesting.array(host, DType.FLOAT64, yt, train);
                NdArray qh = MlTesting.array(host, DType.FLOAT64, xq, n - train, d);
                NdArray ah = MlTesting.array(host, DType.FLOAT64, yq, n - train);
                RandomForestRegressor g = new RandomForestRegressor()
                        .nEstimators(10)
                        .maxDepth(10)
                        .seed(seed)
                        .fit(xg, yg);
                RandomForestRegressor h = new RandomForestRegressor()
                        .nEstimators(10)
                        .maxDepth(10)
                        .seed(seed)
                        .fit(xh, yh);
                NdArray pg = g.predict(qg);
                NdArray ph = h.predict(qh)) {
            double r2g = Metrics.r2(ag, pg);
            double r2h = Metrics.r2(ah, ph);
            assertTrue(Math.abs(r2g - r2h) <= 0.01, "held-out R² on the GPU " + r2g + ", on the CPU " + r2h);
            assertTrue(r2h > 0.5, "a forest that learned something: R² " + r2h);
        }
    }
}
