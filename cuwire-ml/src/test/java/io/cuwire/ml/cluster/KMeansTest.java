package io.cuwire.ml.cluster;

import static io.cuwire.ml.MlTesting.array;
import static io.cuwire.ml.MlTesting.gaussian;
import static io.cuwire.ml.MlTesting.maxAbsDiff;
import static io.cuwire.ml.MlTesting.values;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DType;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.MemoryKind;
import io.cuwire.memory.NdArray;
import io.cuwire.ml.MlTesting;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.TypeRegistry;
import io.cuwire.test.TestRandom;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class KMeansTest {
    private BufferAllocator<DeviceBuffer> device;
    private BufferAllocator<HostBuffer> host;

    @BeforeEach
    void open() {
        device = MlTesting.device("kmeans-device");
        host = MlTesting.host("kmeans-host");
    }

    @AfterEach
    void close() {
        device.close();
        host.close();
    }

    /** {@code k} well-separated Gaussian blobs in {@code d} dimensions. */
    record Blobs(double[] x, int[] truth, double[] centers, int n, int d, int k) {
        static Blobs make(SplittableRandom r, int n, int d, int k) {
            double[] centers = new double[k * d];
            for (int c = 0; c < k; c++) {
                for (int j = 0; j < d; j++) {
                    centers[c * d + j] = (j == c % d ? 20.0 * (1 + c / d) : 0) + r.nextDouble(-1, 1);
                }
            }
            double[] x = new double[n * d];
            int[] truth = new int[n];
            for (int i = 0; i < n; i++) {
                truth[i] = r.nextInt(k);
                for (int j = 0; j < d; j++) {
                    x[i * d + j] = centers[truth[i] * d + j] + 0.5 * gaussian(r);
                }
            }
            return new Blobs(x, truth, centers, n, d, k);
        }
    }

    /** Asserts that {@code labels} partition the samples exactly as {@code truth} does, up to renaming. */
    static void assertSameClusters(int[] truth, int[] labels) {
        Map<Integer, Integer> labelOf = new HashMap<>();
        Map<Integer, Integer> truthOf = new HashMap<>();
        for (int i = 0; i < truth.length; i++) {
            int t = truth[i];
            int l = labels[i];
            assertEquals(labelOf.computeIfAbsent(t, any -> l), l, "sample " + i);
            assertEquals(truthOf.computeIfAbsent(l, any -> t), t, "sample " + i);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"float32", "float64"})
    void shouldFindSeparableBlobs(String type, TestInfo info) {
        DType dt = DType.byName(type);
        SplittableRandom r = TestRandom.create(info);
        Blobs b = Blobs.make(r, 600, 3, 5);
        try (NdArray x = array(device, dt, b.x(), b.n(), b.d());
                KMeans km = new KMeans().nClusters(5).seed(r.nextLong()).fit(x);
                NdArray labels = km.predict(x)) {
            assertSameClusters(b.truth(), labels.toIntArray());
            assertEquals(MemoryKind.DEVICE, km.clusterCenters().kind(), "centers stay on the device");
            assertEquals(dt, km.clusterCenters().dtype());
            assertEquals(-km.inertia(), km.score(x), 1e-9 * km.inertia() + (dt == DType.FLOAT32 ? 1e-2 : 0));
            assertTrue(km.inertia() / b.n() < 3 * 0.25 * 1.5, "mean squared distance near d * sigma^2");
            try (NdArray dist = km.transform(x)) {
                double[] dv = values(dist);
                int[] lv = labels.toIntArray();
                for (int i = 0; i < b.n(); i++) {
                    for (int c = 0; c < 5; c++) {
                        assertTrue(dv[i * 5 + lv[i]] <= dv[i * 5 + c] + 1e-4, "the label is the nearest center");
                    }
                }
            }
        }
    }

    @Test
    void shouldMergeStepsFromTheSameStartIntoTheSingleDeviceFit(TestInfo info) {
        SplittableRandom r = TestRandom.create(info);
        Blobs b = Blobs.make(r, 900, 4, 6);
        double[] start = new double[6 * 4];
        for (int i = 0; i < start.length; i++) {
            start[i] = b.x()[r.nextInt(b.x().length)];
        }
        try (NdArray x = array(device, DType.FLOAT64, b.x(), b.n(), b.d());
                NdArray init = array(device, DType.FLOAT64, start, 6, 4);
                KMeans single = new KMeans().nClusters(6).tol(1e-8).fit(x, init);
                KMeans merged = new KMeans().nClusters(6).tol(1e-8)) {
            int parts = 2 + r.nextInt(4);
            List<NdArray> xs = MlTesting.split(x, MlTesting.cuts(b.n(), parts, r));
            try (KMeans.Lloyd lloyd = merged.lloyd(init)) {
                while (!lloyd.done()) {
                    List<KMeans.Step> steps = new ArrayList<>();
                    for (NdArray xp : xs) {
                        steps.add(merged.partialStep(xp, lloyd.centers()));
                    }
                    lloyd.update(steps);
                    MlTesting.closeAll(steps);
                }
                lloyd.finish();
            }
            MlTesting.closeAll(xs);
            assertEquals(single.nIter(), merged.nIter(), "the same Lloyd steps");
            assertTrue(maxAbsDiff(values(single.clusterCenters()), values(merged.clusterCenters())) < 1e-10);
            assertEquals(single.inertia(), merged.inertia(), 1e-9 * single.inertia());
        }
    }

    @Test
    void shouldFindTheBlobsWithADistributedInit(TestInfo info) {
        SplittableRandom r = TestRandom.create(info);
        Blobs b = Blobs.make(r, 800, 3, 4);
        try (NdArray x = array(device, DType.FLOAT64, b.x(), b.n(), b.d());
                KMeans km = new KMeans().nClusters(4)) {
            List<NdArray> xs = MlTesting.split(x, MlTesting.cuts(b.n(), 3, r));
            List<KMeans.Candidates> candidates = new ArrayList<>();
            for (int p = 0; p < xs.size(); p++) {
                candidates.add(km.partialInit(xs.get(p), 1000L * p + r.nextLong()));
            }
            try (NdArray start = km.initialCenters(candidates);
                    KMeans.Lloyd lloyd = km.lloyd(start)) {
                MlTesting.closeAll(candidates);
                while (!lloyd.done()) {
                    List<KMeans.Step> steps = new ArrayList<>();
                    for (NdArray xp : xs) {
                        steps.add(km.partialStep(xp, lloyd.centers()));
                    }
                    lloyd.update(steps);
                    MlTesting.closeAll(steps);
                }
                lloyd.finish();
            }
            MlTesting.closeAll(xs);
            try (NdArray labels = km.predict(x)) {
                assertSameClusters(b.truth(), labels.toIntArray());
            }
        }
    }

    @Test
    void shouldRoundTripThroughTheRegistryAndPredictTheSame(TestInfo info) {
        SplittableRandom r = TestRandom.create(info);
        Blobs b = Blobs.make(r, 200, 2, 3);
        TypeRegistry registry = MlTesting.registry();
        try (NdArray x = array(device, DType.FLOAT32, b.x(), b.n(), b.d());
                KMeans km = new KMeans()
                        .nClusters(3)
                        .init(KMeans.Init.RANDOM)
                        .seed(7)
                        .fit(x);
                NdArray before = km.predict(x)) {
            for (Family family : List.of(Family.CUDA, Family.HOST)) {
                try (KMeans back = MlTesting.roundTrip(registry, km, family, device, host);
                        NdArray after = back.predict(x)) {
                    assertEquals(MemoryKind.DEVICE, back.clusterCenters().kind());
                    assertEquals(km.params(), back.params());
                    assertEquals(km.inertia(), back.inertia());
                    assertEquals(km.nIter(), back.nIter());
                    assertArrayEquals(before.toIntArray(), after.toIntArray());
                }
            }
        }
    }
}
