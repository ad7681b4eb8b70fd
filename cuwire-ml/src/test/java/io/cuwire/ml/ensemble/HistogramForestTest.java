package io.cuwire.ml.ensemble;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.DType;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.NdArray;
import io.cuwire.ml.ForestLayout;
import io.cuwire.ml.MlTesting;
import io.cuwire.serialize.OpaqueBlob;
import io.cuwire.test.TestRandom;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ForkJoinPool;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/** Histogram split finding ({@link ForestBins}, {@code Cart}'s binned scan) against exact splits and itself. */
class HistogramForestTest {
    private BufferAllocator<HostBuffer> host;

    @BeforeEach
    void open() {
        host = MlTesting.host("histogram-forest");
    }

    @AfterEach
    void close() {
        assertEquals(0, host.allocatedBytes(), "allocator balance after closing everything");
        host.close();
    }

    @Test
    void shouldGiveFeaturesOfFewValuesAnEdgeBetweenEachPairOfValues() {
        double[] sorted = {1, 1, 2, 2, 2, 5, 9, 9};
        assertArrayEquals(new double[] {1.5, 3.5, 7}, ForestBins.edgesOfSorted(sorted, 256));
        assertArrayEquals(new double[0], ForestBins.edgesOfSorted(new double[] {4, 4, 4}, 256), "a constant");
    }

    @Test
    void shouldGiveFeaturesOfManyValuesStrictlyAscendingQuantileEdges(TestInfo info) {
        SplittableRandom r = TestRandom.create(info);
        double[] v = new double[10_000];
        for (int i = 0; i < v.length; i++) {
            v[i] = i < 3000 ? 0 : r.nextGaussian();
        }
        Arrays.sort(v);
        double[] edges = ForestBins.edgesOfSorted(v, 64);
        assertTrue(edges.length <= 63 && edges.length > 40, edges.length + " edges");
        for (int b = 1; b < edges.length; b++) {
            assertTrue(edges[b] > edges[b - 1], "edges ascend at " + b);
        }
        int zeros = 0;
        for (double x : v) {
            int code = ForestBins.code(edges, x);
            assertTrue(code == edges.length || x <= edges[code], "x <= its bin's edge");
            assertTrue(code == 0 || x > edges[code - 1], "x > the edge below its bin");
            zeros += x == 0 ? 1 : 0;
        }
        assertEquals(3000, zeros);
        int b0 = ForestBins.code(edges, 0);
        assertTrue(
                b0 > 0 && b0 < edges.length && edges[b0 - 1] < 0 && edges[b0] > 0,
                "the 3000 zeros share a bin between a negative and a positive edge: bin " + b0);
    }

    @Test
    void shouldRefuseMaxBinsOutOfRangeNamingIt() {
        try (NdArray x = MlTesting.array(host, DType.FLOAT64, new double[] {0, 1, 2, 3}, 4, 1);
                NdArray y = MlTesting.labels(host, new int[] {0, 0, 1, 1})) {
            IllegalArgumentException e = assertThrows(
                    IllegalArgumentException.class,
                    () -> new RandomForestClassifier().maxBins(257).fit(x, y));
            assertEquals("RandomForestClassifier.partial: maxBins 257 (expected: 2 .. 256)", e.getMessage());
        }
    }

    /** Integer features of at most 40 values, so every distinct value has its own bin. */
    private static double[] grid(SplittableRandom r, int n, int d, int[] labels, double[] values) {
        double[] x = new double[n * d];
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < d; j++) {
                x[i * d + j] = r.nextInt(40) - 20;
            }
            double s = x[i * d] * x[i * d + 1] + 3 * x[i * d + 2] + r.nextInt(30);
            labels[i] = s > 40 ? 2 : s > -10 ? 1 : 0;
            values[i] = Math.round(s);
        }
        return x;
    }

    private static List<ForestLayout.Tree> trees(OpaqueBlob forest) {
        byte[] bytes = new byte[Math.toIntExact(forest.byteSize())];
        CopyEngine.copyToSegment(forest.buffer(), 0, MemorySegment.ofArray(bytes));
        return ForestLayout.decode(bytes, ForestLayout.info(forest));
    }

    /** Same features, children and leaves; thresholds differ (the node's midpoints, the bins' edges). */
    private static void assertSameSplits(List<ForestLayout.Tree> exact, List<ForestLayout.Tree> binned) {
        assertEquals(exact.size(), binned.size(), "trees");
        for (int t = 0; t < exact.size(); t++) {
            assertArrayEquals(exact.get(t).feature(), binned.get(t).feature(), "tree " + t + " split features");
            assertArrayEquals(exact.get(t).child(), binned.get(t).child(), "tree " + t + " children");
            assertArrayEquals(exact.get(t).values(), binned.get(t).values(), "tree " + t + " leaf values");
        }
    }

    @Test
    void shouldGrowTheExactTreesFromBinnedSplitsWhenEveryValueHasItsBin(TestInfo info) {
        SplittableRandom r = TestRandom.create(info);
        int n = 1500;
        int d = 5;
        int[] labels = new int[n];
        double[] values = new double[n];
        double[] xv = grid(r, n, d, labels, values);
        long seed = r.nextLong();
        try (NdArray x = MlTesting.array(host, DType.FLOAT64, xv, n, d);
                NdArray y = MlTesting.labels(host, labels);
                NdArray v = MlTesting.array(host, DType.FLOAT64, values, n);
                RandomForestClassifier ce = new RandomForestClassifier()
                        .nEstimators(6)
                        .maxDepth(9)
                        .seed(seed)
                        .exactSplits(true)
                        .fit(x, y);
                RandomForestClassifier cb = new RandomForestClassifier()
                        .nEstimators(6)
                        .maxDepth(9)
                        .seed(seed)
                        .fit(x, y);
                RandomForestRegressor re = new RandomForestRegressor()
                        .nEstimators(4)
                        .maxDepth(7)
                        .seed(seed)
                        .exactSplits(true)
                        .fit(x, v);
                RandomForestRegressor rb = new RandomForestRegressor()
                        .nEstimators(4)
                        .maxDepth(7)
                        .seed(seed)
                        .fit(x, v)) {
            assertTrue(ce.info().nodes() > 6 * 50, "trees of some size: " + ce.info());
            assertSameSplits(trees(ce.forest()), trees(cb.forest()));
            // integer targets: every sum is exact in float64, so the regressor's scores agree bit for bit too
            assertSameSplits(trees(re.forest()), trees(rb.forest()));
            assertFalse(
                    Arrays.equals(
                            trees(ce.forest()).getFirst().threshold(),
                            trees(cb.forest()).getFirst().threshold()),
                    "the thresholds are the node's or the bins'");
        }
    }

    private static byte[] fitIn(int threads, Supplier<OpaqueBlob> fit) {
        ForkJoinPool pool = new ForkJoinPool(threads);
        try (OpaqueBlob forest = pool.submit(fit::get).join()) {
            byte[] bytes = new byte[Math.toIntExact(forest.byteSize())];
            CopyEngine.copyToSegment(forest.buffer(), 0, MemorySegment.ofArray(bytes));
            return bytes;
        } finally {
            pool.shutdown();
        }
    }

    @Test
    void shouldGrowAForestThatDoesNotDependOnTheThreadCount(TestInfo info) {
        SplittableRandom r = TestRandom.create(info);
        int n = 12_000;
        int d = 6;
        double[] xv = MlTesting.gaussian(r, n * d);
        int[] labels = new int[n];
        double[] values = new double[n];
        for (int i = 0; i < n; i++) {
            values[i] = Math.sin(xv[i * d]) + xv[i * d + 1] * xv[i * d + 2] + 0.1 * r.nextGaussian();
            labels[i] = values[i] > 0.3 ? 1 : 0;
        }
        long seed = r.nextLong();
        try (NdArray x = MlTesting.array(host, DType.FLOAT64, xv, n, d);
                NdArray y = MlTesting.labels(host, labels);
                NdArray v = MlTesting.array(host, DType.FLOAT64, values, n)) {
            for (boolean exact : new boolean[] {false, true}) {
                // 12,000 rows x 6 features: the root's features are scanned in parallel too
                RandomForestRegressor reg = new RandomForestRegressor()
                        .nEstimators(3)
                        .maxDepth(6)
                        .seed(seed)
                        .exactSplits(exact);
                RandomForestClassifier clf = new RandomForestClassifier()
                        .nEstimators(3)
                        .maxDepth(6)
                        .seed(seed)
                        .maxFeatures(0.5)
                        .exactSplits(exact);
                byte[] one = fitIn(1, () -> reg.partial(x, v, 0, 1));
                assertArrayEquals(one, fitIn(5, () -> reg.partial(x, v, 0, 1)), "regressor, exact " + exact);
                byte[] oneC = fitIn(1, () -> clf.partial(x, y, 0, 1));
                assertArrayEquals(oneC, fitIn(5, () -> clf.partial(x, y, 0, 1)), "classifier, exact " + exact);
            }
        }
    }
}
