package io.cuwire.ml.neighbors;

import static io.cuwire.ml.MlTesting.array;
import static io.cuwire.ml.MlTesting.gaussian;
import static io.cuwire.ml.MlTesting.uniform;
import static io.cuwire.ml.MlTesting.values;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
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
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

class NeighborsTest {
    private BufferAllocator<DeviceBuffer> device;
    private BufferAllocator<HostBuffer> host;

    @BeforeEach
    void open() {
        device = MlTesting.device("neighbors-device");
        host = MlTesting.host("neighbors-host");
    }

    @AfterEach
    void close() {
        device.close();
        host.close();
    }

    @Test
    void shouldFindExactlyTheNeighborsABruteForceSortFinds(TestInfo info) {
        SplittableRandom r = TestRandom.create(info);
        int n = 300;
        int m = 40;
        int d = 4;
        int k = 7;
        double[] train = uniform(r, n * d);
        double[] queries = uniform(r, m * d);
        try (NdArray x = array(device, DType.FLOAT64, train, n, d);
                NdArray q = array(device, DType.FLOAT64, queries, m, d);
                NearestNeighbors nn = new NearestNeighbors().nNeighbors(k).fit(x);
                Neighbors found = nn.kneighbors(q)) {
            assertEquals(MemoryKind.DEVICE, found.ids().kind());
            long[] ids = found.ids().toLongArray();
            double[] dist = values(found.distances());
            for (int i = 0; i < m; i++) {
                double[] all = new double[n];
                Integer[] order = new Integer[n];
                for (int j = 0; j < n; j++) {
                    double s = 0;
                    for (int p = 0; p < d; p++) {
                        double diff = queries[i * d + p] - train[j * d + p];
                        s += diff * diff;
                    }
                    all[j] = Math.sqrt(s);
                    order[j] = j;
                }
                Arrays.sort(order, (a, b) -> Double.compare(all[a], all[b]));
                for (int c = 0; c < k; c++) {
                    assertEquals(order[c], (int) ids[i * k + c], "query " + i + " neighbor " + c);
                    assertEquals(all[order[c]], dist[i * k + c], 1e-12);
                }
            }
        }
    }

    /**
     * The benchmark's case: queries that are training rows, 32 Gaussian features. The squared distances of the
     * selection ({@code ||x||² - 2 x·q + ||q||²}) leave a rounding residue where the distance is 0 (the query's own
     * row: ~1e-7 after the root, in float64); the distances must be the sums of squared differences, as a float64
     * reference computes them, and the neighbors the reference's.
     */
    @Test
    void shouldGiveDistancesThatAreTheFloat64SumsOfSquaredDifferencesWhenQueriesAreTrainingRows(TestInfo info) {
        SplittableRandom r = TestRandom.create(info);
        int n = 3000;
        int m = 64;
        int d = 32;
        int k = 5;
        double[] train = gaussian(r, n * d);
        for (DType dtype : List.of(DType.FLOAT64, DType.FLOAT32)) {
            for (BufferAllocator<?> mem : List.of(host, device)) {
                try (NdArray x = array(mem, dtype, train, n, d);
                        NdArray q = array(mem, dtype, Arrays.copyOf(train, m * d), m, d);
                        NearestNeighbors nn =
                                new NearestNeighbors().nNeighbors(k).fit(x);
                        Neighbors found = nn.kneighbors(q)) {
                    double[] xv = values(x);
                    long[] ids = found.ids().toLongArray();
                    double[] dist = values(found.distances());
                    // float64: the sums to rounding; float32: the float64 sums of the float32 values, rounded once
                    double tol = dtype == DType.FLOAT64 ? 1e-13 : 1e-6;
                    for (int i = 0; i < m; i++) {
                        double[] all = new double[n];
                        Integer[] order = new Integer[n];
                        for (int j = 0; j < n; j++) {
                            double s = 0;
                            for (int p = 0; p < d; p++) {
                                double diff = xv[i * d + p] - xv[j * d + p];
                                s += diff * diff;
                            }
                            all[j] = Math.sqrt(s);
                            order[j] = j;
                        }
                        Arrays.sort(order, (a, b) -> Double.compare(all[a], all[b]));
                        String where = dtype + " " + mem.name() + " query " + i;
                        assertEquals(i, order[0], where);
                        for (int c = 0; c < k; c++) {
                            assertEquals(order[c], (int) ids[i * k + c], where + " neighbor " + c);
                            assertEquals(
                                    all[order[c]],
                                    dist[i * k + c],
                                    tol * Math.max(1, all[order[c]]),
                                    where + " neighbor " + c);
                        }
                    }
                }
            }
        }
    }

    @Test
    void shouldMergePartitionNeighborsIntoTheSingleDeviceSearch(TestInfo info) {
        SplittableRandom r = TestRandom.create(info);
        int n = 500;
        int d = 3;
        int k = 6;
        try (NdArray x = array(device, DType.FLOAT32, uniform(r, n * d), n, d);
                NdArray q = array(device, DType.FLOAT32, uniform(r, 30 * d), 30, d);
                NearestNeighbors single = new NearestNeighbors().fit(x);
                Neighbors want = single.kneighbors(q, k)) {
            long[] cuts = MlTesting.cuts(n, 2 + r.nextInt(5), r);
            List<NdArray> xs = MlTesting.split(x, cuts);
            List<Neighbors> parts = new ArrayList<>();
            for (int p = 0; p < xs.size(); p++) {
                try (NearestNeighbors local = new NearestNeighbors().fit(xs.get(p))) {
                    parts.add(local.partialKneighbors(q, k, cuts[p]));
                }
            }
            try (Neighbors got = Neighbors.merge(parts, k)) {
                assertArrayEquals(want.ids().toLongArray(), got.ids().toLongArray());
                assertArrayEquals(values(want.distances()), values(got.distances()));
            }
            MlTesting.closeAll(parts);
            MlTesting.closeAll(xs);
        }
    }

    /** Three Gaussian classes. */
    private static double[] classes(SplittableRandom r, int n, int d, int[] y) {
        double[] x = new double[n * d];
        for (int i = 0; i < n; i++) {
            y[i] = r.nextInt(3);
            for (int j = 0; j < d; j++) {
                x[i * d + j] = (j == y[i] ? 4 : 0) + gaussian(r);
            }
        }
        return x;
    }

    @Test
    void shouldVoteWellAsAClassifierAndGiveTheSingleVoteDistributed(TestInfo info) {
        SplittableRandom r = TestRandom.create(info);
        int n = 600;
        int d = 3;
        int[] y = new int[n];
        int[] yt = new int[200];
        double[] train = classes(r, n, d, y);
        double[] test = classes(r, 200, d, yt);
        try (NdArray x = array(device, DType.FLOAT64, train, n, d);
                NdArray labels = MlTesting.labels(device, y);
                NdArray xt = array(device, DType.FLOAT64, test, 200, d);
                NdArray labelsT = MlTesting.labels(device, yt);
                KNeighborsClassifier knn =
                        new KNeighborsClassifier().nNeighbors(9).fit(x, labels);
                NdArray want = knn.predict(xt);
                NdArray proba = knn.predictProba(xt)) {
            assertTrue(knn.score(xt, labelsT) > 0.9, "held-out accuracy " + knn.score(xt, labelsT));
            double[] pv = values(proba);
            for (int i = 0; i < 200; i++) {
                assertEquals(1, pv[i * 3] + pv[i * 3 + 1] + pv[i * 3 + 2], 1e-12);
            }
            long[] cuts = MlTesting.cuts(n, 3, r);
            List<NdArray> xs = MlTesting.split(x, cuts);
            List<NdArray> ys = MlTesting.split(labels, cuts);
            List<Neighbors> parts = new ArrayList<>();
            for (int p = 0; p < xs.size(); p++) {
                try (KNeighborsClassifier local =
                        new KNeighborsClassifier().nClasses(3).fit(xs.get(p), ys.get(p))) {
                    parts.add(local.partialNeighbors(xt, 9));
                }
            }
            try (Neighbors merged = Neighbors.merge(parts, 9);
                    NdArray got = knn.predictFromNeighbors(merged)) {
                assertArrayEquals(want.toIntArray(), got.toIntArray());
            }
            MlTesting.closeAll(parts);
            MlTesting.closeAll(xs);
            MlTesting.closeAll(ys);
        }
    }

    @Test
    void shouldMergeAClassifierFromPartitionRowsIntoTheSingleFit(TestInfo info) {
        SplittableRandom r = TestRandom.create(info);
        int n = 300;
        int d = 3;
        int[] y = new int[n];
        double[] train = classes(r, n, d, y);
        try (NdArray x = array(device, DType.FLOAT64, train, n, d);
                NdArray labels = MlTesting.labels(device, y);
                KNeighborsClassifier single =
                        new KNeighborsClassifier().nNeighbors(7).fit(x, labels);
                NdArray want = single.predict(x)) {
            long[] cuts = MlTesting.cuts(n, 3, r);
            List<NdArray> xs = MlTesting.split(x, cuts);
            List<NdArray> ys = MlTesting.split(labels, cuts);
            KNeighborsClassifier template = new KNeighborsClassifier().nNeighbors(7);
            List<KNeighborsClassifier.Rows> parts = new ArrayList<>();
            for (int p = 0; p < xs.size(); p++) {
                parts.add(template.partial(xs.get(p), ys.get(p)));
            }
            try (KNeighborsClassifier merged =
                            new KNeighborsClassifier().nNeighbors(7).merge(parts);
                    NdArray got = merged.predict(x)) {
                assertEquals(3, merged.classes());
                assertTrue(single.fitX().contentEquals(merged.fitX()), "the rows, concatenated in partition order");
                assertArrayEquals(want.toIntArray(), got.toIntArray());
            }
            KNeighborsClassifier tooMany = new KNeighborsClassifier().nNeighbors(n + 1);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> tooMany.merge(parts));
            assertTrue(e.getMessage().contains("nNeighbors = " + (n + 1)), e.getMessage());
            MlTesting.closeAll(parts);
            MlTesting.closeAll(xs);
            MlTesting.closeAll(ys);
        }
    }

    @Test
    void shouldRoundTripThroughTheRegistryAndAnswerTheSame(TestInfo info) {
        SplittableRandom r = TestRandom.create(info);
        int[] y = new int[100];
        double[] train = classes(r, 100, 3, y);
        TypeRegistry registry = MlTesting.registry();
        try (NdArray x = array(device, DType.FLOAT64, train, 100, 3);
                NdArray labels = MlTesting.labels(device, y);
                KNeighborsClassifier knn = new KNeighborsClassifier().fit(x, labels);
                NearestNeighbors nn = new NearestNeighbors().fit(x);
                NdArray before = knn.predictProba(x);
                Neighbors nb = nn.kneighbors(x)) {
            for (Family family : List.of(Family.CUDA, Family.HOST)) {
                try (KNeighborsClassifier back = MlTesting.roundTrip(registry, knn, family, device, host);
                        NdArray after = back.predictProba(x);
                        NearestNeighbors nnBack = MlTesting.roundTrip(registry, nn, family, device, host);
                        Neighbors nbBack = nnBack.kneighbors(x)) {
                    assertEquals(knn.params(), back.params());
                    assertEquals(3, back.classes());
                    assertArrayEquals(values(before), values(after));
                    assertArrayEquals(nb.ids().toLongArray(), nbBack.ids().toLongArray());
                }
            }
        }
    }

    /**
     * fitView keeps the caller's rows (and labels) as views: no new memory, the same neighbors and votes as fit's
     * copies, the rows still checked; closing the estimator leaves the caller's arrays open, and once the caller
     * closes them a query fails instead of reading freed memory. Then a copying fit outlives the caller's arrays.
     */
    @Test
    void shouldKeepViewsOfTheCallersRowsWithoutACopyAndFailOnceTheyAreClosed(TestInfo info) {
        SplittableRandom r = TestRandom.create(info);
        int n = 400;
        int d = 5;
        int[] y = new int[n];
        double[] train = classes(r, n, d, y);
        double[] queries = uniform(r, 30 * d);
        for (BufferAllocator<?> mem : List.of(host, device)) {
            NdArray x = array(mem, DType.FLOAT64, train, n, d);
            NdArray labels = MlTesting.labels(mem, y);
            try (NdArray q = array(mem, DType.FLOAT64, queries, 30, d);
                    NearestNeighbors copied =
                            new NearestNeighbors().nNeighbors(6).fit(x);
                    KNeighborsClassifier votedOnCopies =
                            new KNeighborsClassifier().nNeighbors(6).fit(x, labels);
                    Neighbors want = copied.kneighbors(q);
                    NdArray wantVotes = votedOnCopies.predict(q);
                    KNeighborsClassifier voting = new KNeighborsClassifier().nNeighbors(6)) {
                long before = mem.allocatedBytes();
                NearestNeighbors viewing = new NearestNeighbors().nNeighbors(6).fitView(x);
                voting.fitView(x, labels);
                assertEquals(before, mem.allocatedBytes(), "fitView allocates nothing");
                assertTrue(!viewing.fitX().isOwner() && !voting.fitY().isOwner(), "views");
                try (Neighbors got = viewing.kneighbors(q);
                        NdArray votes = voting.predict(q)) {
                    assertArrayEquals(want.ids().toLongArray(), got.ids().toLongArray());
                    assertArrayEquals(values(want.distances()), values(got.distances()));
                    assertArrayEquals(wantVotes.toIntArray(), votes.toIntArray());
                }
                viewing.close();
                assertTrue(x.isOpen(), "closing the estimator ends its view only");
                viewing.fitView(x);
                x.close();
                labels.close();
                assertThrows(IllegalStateException.class, () -> viewing.kneighbors(q));
                assertThrows(IllegalStateException.class, () -> voting.predict(q));
                viewing.close();
                try (Neighbors still = copied.kneighbors(q)) {
                    assertArrayEquals(want.ids().toLongArray(), still.ids().toLongArray(), "a copy outlives x");
                }
            }
        }
        double[] bad = train.clone();
        bad[17] = Double.NaN;
        try (NdArray x = array(host, DType.FLOAT64, bad, n, d);
                NdArray labels = MlTesting.labels(host, y);
                NearestNeighbors nn = new NearestNeighbors();
                KNeighborsClassifier knn = new KNeighborsClassifier()) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> nn.fitView(x));
            assertTrue(e.getMessage().startsWith("NearestNeighbors.fitView: X"), e.getMessage());
            assertThrows(IllegalArgumentException.class, () -> knn.fitView(x, labels));
            assertTrue(!nn.isFitted() && !knn.isFitted());
        }
    }
}
