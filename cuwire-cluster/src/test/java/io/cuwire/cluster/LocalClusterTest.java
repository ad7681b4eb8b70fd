package io.cuwire.cluster;

import static io.cuwire.ml.MlTesting.gaussian;
import static io.cuwire.ml.MlTesting.maxAbsDiff;
import static io.cuwire.ml.MlTesting.values;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DType;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.NdArray;
import io.cuwire.ml.Classifier;
import io.cuwire.ml.Estimator;
import io.cuwire.ml.MlTesting;
import io.cuwire.ml.Regressor;
import io.cuwire.ml.cluster.KMeans;
import io.cuwire.ml.decomposition.PCA;
import io.cuwire.ml.ensemble.RandomForestClassifier;
import io.cuwire.ml.linear.LinearRegression;
import io.cuwire.ml.linear.LogisticRegression;
import io.cuwire.ml.linear.Ridge;
import io.cuwire.ml.naivebayes.MultinomialNB;
import io.cuwire.ml.neighbors.KNeighborsClassifier;
import io.cuwire.serialize.Family;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * One cluster of two worker JVMs (on the emulated device, or on the GPUs of a GPU run: one each, or both on device 0
 * of a one-GPU host), shared by the tests that do not break it.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class LocalClusterTest {
    private static LocalCluster cluster;
    private static Client client;
    private static BufferAllocator<DeviceBuffer> mem;

    @BeforeAll
    @Timeout(value = 90, unit = TimeUnit.SECONDS)
    static void start() {
        cluster = LocalCluster.builder().workers(2).start();
        client = cluster.client();
        mem = client.memory();
    }

    @AfterAll
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    static void stop() throws Exception {
        List<ProcessHandle> processes = List.of(cluster.processOf(0), cluster.processOf(1));
        cluster.close();
        for (ProcessHandle p : processes) {
            assertTrue(!p.isAlive(), "worker process " + p.pid() + " still runs after close");
        }
        cluster.close();
    }

    private static NdArray matrix(SplittableRandom r, int rows, int cols) {
        return MlTesting.array(mem, DType.FLOAT64, gaussian(r, rows * cols), rows, cols);
    }

    @Test
    void shouldStartTwoWorkersOnDevicesRoundRobinSharingDeviceZeroOnAOneDeviceHost() {
        assertEquals(2, cluster.size());
        assertEquals("tcp", cluster.transport());
        int devices = Devices.all().size();
        for (int w = 0; w < 2; w++) {
            assertTrue(client.isAlive(w));
            long expected = w % devices;
            assertEquals(
                    expected,
                    client.call(w, TestTasks.DEVICE).join(),
                    "worker " + w + " binds device " + w + " mod " + devices);
            assertEquals(expected, cluster.deviceOf(w));
        }
    }

    @Test
    void shouldScatterSubmitAndGatherAndFetchBetweenWorkers() {
        SplittableRandom r = new SplittableRandom(1);
        try (NdArray a = matrix(r, 50, 3);
                NdArray b = matrix(r, 70, 3)) {
            List<ObjectRef> parts = client.scatter(List.of(a, b));
            assertEquals(0, parts.get(0).worker());
            assertEquals(1, parts.get(1).worker());
            List<ObjectRef> doubled = new ArrayList<>();
            for (ObjectRef p : parts) {
                doubled.add(client.submit(p.worker(), TestTasks.SCALE, p, 2.0).join());
            }
            // worker 1 scales a partition held by worker 0: fetched worker to worker
            ObjectRef crossed =
                    client.submit(1, TestTasks.SCALE, parts.get(0), 3.0).join();
            assertEquals(1, crossed.worker());
            List<NdArray> back = client.gather(List.of(doubled.get(0), doubled.get(1), crossed), NdArray.class);
            try {
                double[] av = values(a);
                double[] bv = values(b);
                double[] d0 = values(back.get(0));
                double[] d1 = values(back.get(1));
                double[] c0 = values(back.get(2));
                for (int i = 0; i < av.length; i++) {
                    assertEquals(2 * av[i], d0[i], 0);
                    assertEquals(3 * av[i], c0[i], 0);
                }
                for (int i = 0; i < bv.length; i++) {
                    assertEquals(2 * bv[i], d1[i], 0);
                }
                assertEquals(DType.FLOAT64, back.get(0).dtype());
            } finally {
                MlTesting.closeAll(back);
            }
            List<ObjectRef> all = new ArrayList<>(parts);
            all.addAll(doubled);
            all.add(crossed);
            client.free(all);
            CompletionException e = assertThrows(
                    CompletionException.class, () -> client.fetch(parts.get(0)).join());
            assertInstanceOf(RemoteTaskException.class, e.getCause());
        }
    }

    @Test
    void shouldRefuseAnUnknownTaskNameAtTheWorker() {
        CompletionException e = assertThrows(
                CompletionException.class,
                () -> client.call(0, TaskType.of("java.lang.Runtime.exec", Object.class), "rm -rf /")
                        .join());
        UnknownTaskException u = assertInstanceOf(UnknownTaskException.class, e.getCause());
        assertTrue(u.getMessage().contains("no task named 'java.lang.Runtime.exec'"), u.getMessage());
        assertTrue(client.isAlive(0));
    }

    /**
     * With a recording that enables them, a broadcast commits one {@code io.cuwire.cluster.Broadcast} event with its
     * phases, and the client's endpoints one {@code io.cuwire.cluster.Dispatch} event per acknowledgement they handle.
     */
    @Test
    void shouldRecordTheBroadcastAndItsAcknowledgementsInJfr() throws Exception {
        Path file = Files.createTempFile("cuwire-cluster", ".jfr");
        SplittableRandom r = new SplittableRandom(5);
        try (NdArray x = matrix(r, 100, 4);
                NdArray y = MlTesting.array(mem, DType.FLOAT64, gaussian(r, 100), 100);
                LinearRegression model = new LinearRegression().fit(x, y);
                Recording recording = new Recording()) {
            recording.enable("io.cuwire.cluster.Broadcast");
            recording.enable("io.cuwire.cluster.Dispatch");
            recording.start();
            BroadcastResult b = client.broadcast(model, BroadcastOptions.DEFAULT);
            // A reader commits its event after handing the acknowledgement over: one more round trip on each
            // endpoint lets it get past that before the recording stops.
            for (int w = 0; w < client.workers(); w++) {
                client.workerStats(w).get(30, TimeUnit.SECONDS);
            }
            recording.stop();
            recording.dump(file);
            List<RecordedEvent> events = RecordingFile.readAllEvents(file);
            List<RecordedEvent> broadcasts = events.stream()
                    .filter(e -> e.getEventType().getName().equals("io.cuwire.cluster.Broadcast"))
                    .toList();
            assertEquals(1, broadcasts.size(), broadcasts.toString());
            RecordedEvent e = broadcasts.getFirst();
            assertEquals(b.handle().id(), e.getLong("model"));
            assertEquals(b.handle().version(), e.getLong("version"));
            assertEquals(2, e.getInt("sent"));
            assertEquals("EACH_IN_TURN", e.getString("strategy"));
            long phases = e.getDuration("trackNanos").toNanos()
                    + e.getDuration("checkNanos").toNanos()
                    + e.getDuration("sendNanos").toNanos()
                    + e.getDuration("settleNanos").toNanos();
            // The four phases are the broadcast, end to end, as its result times it.
            assertEquals(b.nanos(), phases, e + " vs " + b);
            assertTrue(e.getDuration("sendNanos").toNanos() > 0, e.toString());
            List<String> acks = events.stream()
                    .filter(d -> d.getEventType().getName().equals("io.cuwire.cluster.Dispatch")
                            && d.getString("op").equals("cuwire.rpc.Ok"))
                    .map(d -> d.getString("endpoint"))
                    .toList();
            // Both acknowledgements (a heartbeat's reply may come in the same window too).
            assertTrue(acks.containsAll(List.of("client-to-0", "client-to-1")), acks.toString());
        } finally {
            Files.deleteIfExists(file);
        }
    }

    @Test
    void shouldSendAnUnchangedModelOnlyByIdentityAndANewVersionAfterARefit() {
        SplittableRandom r = new SplittableRandom(2);
        try (NdArray x = matrix(r, 200, 8);
                NdArray y = MlTesting.array(mem, DType.FLOAT64, gaussian(r, 200), 200);
                LinearRegression model = new LinearRegression().fit(x, y)) {
            BroadcastResult first = client.broadcast(model, BroadcastOptions.DEFAULT);
            assertEquals(2, first.sent());
            assertEquals(1, first.handle().version());
            WireStats before = client.wireStats();
            BroadcastResult again = client.broadcast(model, BroadcastOptions.DEFAULT);
            WireStats delta = client.wireStats().minus(before);
            assertEquals(first.handle(), again.handle());
            assertEquals(0, again.sent());
            assertEquals(2, again.cacheHits());
            assertEquals(0, delta.frames(), "no frame re-sent: " + delta);
            assertEquals(0, delta.frameBytes());
            assertTrue(delta.headerBytes() < 200 * 2, "identity only: " + delta);

            model.fit(x, y);
            BroadcastResult refit = client.broadcast(model, BroadcastOptions.DEFAULT);
            assertEquals(first.handle().id(), refit.handle().id());
            assertEquals(2, refit.handle().version());
            assertEquals(2, refit.sent());

            List<ObjectRef> parts = client.scatter(List.of(x, x));
            List<ObjectRef> predicted = Distributed.predict(client, refit.handle(), parts);
            List<NdArray> p = client.gather(predicted, NdArray.class);
            try (NdArray expected = model.predict(x)) {
                for (NdArray got : p) {
                    assertTrue(expected.contentEquals(got));
                }
            } finally {
                MlTesting.closeAll(p);
                client.free(parts);
                client.free(predicted);
            }
            CompletionException stale = assertThrows(
                    CompletionException.class,
                    () -> client.submit(0, MlTasks.PREDICT, first.handle(), parts.get(0))
                            .join());
            assertInstanceOf(RemoteTaskException.class, stale.getCause());
        }
    }

    @Test
    void shouldForwardABroadcastInChunksDownAChainOrTreeWithTheSameContentOnEveryWorker() {
        SplittableRandom r = new SplittableRandom(3);
        for (BroadcastOptions.Strategy strategy :
                List.of(BroadcastOptions.Strategy.CHAIN, BroadcastOptions.Strategy.TREE)) {
            for (Family family : new Family[] {Family.CUDA, Family.HOST}) {
                try (NdArray x = matrix(r, 400, 64);
                        KMeans model = new KMeans().nClusters(64).maxIter(2).seed(5)) {
                    model.fit(x);
                    BroadcastResult b = client.broadcast(
                            model,
                            BroadcastOptions.DEFAULT
                                    .family(family)
                                    .strategy(strategy)
                                    .chunkBytes(4096));
                    assertEquals(strategy, b.strategy());
                    assertEquals(2, b.sent());
                    for (int w = 0; w < 2; w++) {
                        try (NdArray centers =
                                client.call(w, TestTasks.CENTERS, b.handle()).join()) {
                            assertTrue(
                                    model.clusterCenters().contentEquals(centers),
                                    strategy + ", " + family + ", worker " + w);
                        }
                    }
                }
            }
        }
    }

    @Test
    void shouldBroadcastEstimatorsThroughJdkSerializationWithTheJavaFamily() {
        SplittableRandom r = new SplittableRandom(8);
        int n = 300;
        try (NdArray x = matrix(r, n, 4);
                NdArray y = MlTesting.array(mem, DType.FLOAT64, gaussian(r, n), n)) {
            int[] labels = new int[n];
            double[] xv = values(x);
            for (int i = 0; i < n; i++) {
                labels[i] = xv[4 * i] > 0 ? 1 : 0;
            }
            List<ObjectRef> parts = client.scatter(List.of(x, x));
            try (NdArray classes = MlTesting.labels(mem, labels)) {
                for (BroadcastOptions.Strategy s : BroadcastOptions.Strategy.values()) {
                    try (LinearRegression linear = new LinearRegression().fit(x, y);
                            KMeans kmeans = new KMeans().nClusters(3).seed(1).fit(x);
                            RandomForestClassifier forest = new RandomForestClassifier()
                                    .nEstimators(4)
                                    .seed(2)
                                    .fit(x, classes)) {
                        for (Estimator model : List.<Estimator>of(linear, kmeans, forest)) {
                            WireStats before = client.wireStats();
                            BroadcastResult b = client.broadcast(
                                    model,
                                    BroadcastOptions.DEFAULT.family(Family.JAVA).strategy(s));
                            assertEquals(2, b.sent());
                            assertTrue(
                                    s != BroadcastOptions.Strategy.EACH_IN_TURN
                                            || client.wireStats().minus(before).frames() <= 2,
                                    "one JDK stream per worker");
                            List<ObjectRef> predicted = Distributed.predict(client, b.handle(), parts);
                            List<NdArray> p = client.gather(predicted, NdArray.class);
                            try (NdArray expected = model instanceof Regressor reg
                                    ? reg.predict(x)
                                    : model instanceof Classifier c ? c.predict(x) : kmeans.predict(x)) {
                                for (NdArray got : p) {
                                    assertTrue(
                                            expected.contentEquals(got),
                                            model.getClass().getSimpleName() + ", " + s);
                                }
                            } finally {
                                MlTesting.closeAll(p);
                                client.free(predicted);
                            }
                        }
                    }
                }
            } finally {
                client.free(parts);
            }
        }
    }

    @Test
    void shouldFitDistributedLinearModelsEqualToTheSingleDeviceFit() {
        SplittableRandom r = new SplittableRandom(4);
        try (NdArray x = matrix(r, 600, 6);
                NdArray y = MlTesting.array(mem, DType.FLOAT64, gaussian(r, 600), 600)) {
            long[] cuts = MlTesting.cuts(600, 4, r);
            List<NdArray> xs = MlTesting.split(x, cuts);
            List<NdArray> ys = MlTesting.split(y, cuts);
            List<ObjectRef> xr = client.scatter(xs);
            List<ObjectRef> yr = client.scatter(ys);
            try (LinearRegression single = new LinearRegression().fit(x, y);
                    LinearRegression distributed = Distributed.fit(client, new LinearRegression(), xr, yr);
                    Ridge ridge = new Ridge().alpha(0.5).fit(x, y);
                    Ridge ridgeDistributed = Distributed.fit(client, new Ridge().alpha(0.5), xr, yr)) {
                assertTrue(maxAbsDiff(values(single.coef()), values(distributed.coef())) < 1e-10);
                assertEquals(single.intercept(), distributed.intercept(), 1e-10);
                assertTrue(maxAbsDiff(values(ridge.coef()), values(ridgeDistributed.coef())) < 1e-10);
                List<ObjectRef> predicted = Distributed.predict(client, client.broadcast(distributed), xr);
                List<NdArray> p = client.gather(predicted, NdArray.class);
                try {
                    for (int i = 0; i < xs.size(); i++) {
                        try (NdArray expected = single.predict(xs.get(i))) {
                            assertTrue(maxAbsDiff(values(expected), values(p.get(i))) < 1e-9);
                        }
                    }
                } finally {
                    MlTesting.closeAll(p);
                    client.free(predicted);
                }
            } finally {
                client.free(xr);
                client.free(yr);
                MlTesting.closeAll(xs);
                MlTesting.closeAll(ys);
            }
        }
    }

    @Test
    void shouldFitDistributedKMeansEqualToTheSingleDeviceFitFromTheSameStart() {
        SplittableRandom r = new SplittableRandom(5);
        try (NdArray x = matrix(r, 500, 4)) {
            long[] cuts = MlTesting.cuts(500, 3, r);
            List<NdArray> xs = MlTesting.split(x, cuts);
            List<ObjectRef> xr = client.scatter(xs);
            try (KMeans seeded = new KMeans().nClusters(5).seed(7).fit(x);
                    NdArray start = seeded.clusterCenters().copyTo(mem);
                    KMeans single = new KMeans().nClusters(5).tol(1e-8).fit(x, start);
                    KMeans distributed =
                            Distributed.fit(client, new KMeans().nClusters(5).tol(1e-8), xr, start);
                    KMeans full =
                            Distributed.fit(client, new KMeans().nClusters(5).seed(7), xr)) {
                assertEquals(single.nIter(), distributed.nIter());
                assertTrue(maxAbsDiff(values(single.clusterCenters()), values(distributed.clusterCenters())) < 1e-10);
                assertEquals(single.inertia(), distributed.inertia(), 1e-9 * single.inertia());
                assertTrue(full.inertia() <= 1.2 * seeded.inertia(), full.inertia() + " vs " + seeded.inertia());
            } finally {
                client.free(xr);
                MlTesting.closeAll(xs);
            }
        }
    }

    @Test
    void shouldFitDistributedLogisticRegressionAndPcaAsTheSingleDeviceFit() {
        SplittableRandom r = new SplittableRandom(6);
        int n = 400;
        try (NdArray x = matrix(r, n, 5)) {
            double[] xv = values(x);
            int[] labels = new int[n];
            for (int i = 0; i < n; i++) {
                labels[i] = xv[i * 5] + 0.5 * xv[i * 5 + 1] + 0.3 * gaussian(r) > 0 ? 1 : 0;
            }
            try (NdArray y = MlTesting.labels(mem, labels)) {
                long[] cuts = MlTesting.cuts(n, 3, r);
                List<NdArray> xs = MlTesting.split(x, cuts);
                List<NdArray> ys = MlTesting.split(y, cuts);
                List<ObjectRef> xr = client.scatter(xs);
                List<ObjectRef> yr = client.scatter(ys);
                try (LogisticRegression single = new LogisticRegression().fit(x, y);
                        LogisticRegression distributed = Distributed.fit(client, new LogisticRegression(), xr, yr);
                        PCA pca = new PCA().nComponents(3).fit(x);
                        PCA pcaDistributed = Distributed.fit(client, new PCA().nComponents(3), xr)) {
                    assertTrue(
                            maxAbsDiff(values(single.coef()), values(distributed.coef())) < 1e-4,
                            single.coef() + " vs " + distributed.coef());
                    assertTrue(maxAbsDiff(values(pca.explainedVariance()), values(pcaDistributed.explainedVariance()))
                            < 1e-9);
                } finally {
                    client.free(xr);
                    client.free(yr);
                    MlTesting.closeAll(xs);
                    MlTesting.closeAll(ys);
                }
            }
        }
    }

    @Test
    void shouldCountClassesAPartitionLacksAndFitDistributedNaiveBayesAndNeighborsEqualToTheSingleDeviceFit() {
        SplittableRandom r = new SplittableRandom(8);
        int n = 300;
        int[] labels = new int[n];
        double[] counts = new double[n * 4];
        for (int i = 0; i < n; i++) {
            labels[i] = i < 200 ? i % 2 : 2;
            for (int j = 0; j < 4; j++) {
                counts[i * 4 + j] = r.nextInt(5) + (j == labels[i] ? 4 : 0);
            }
        }
        long[] cuts = {0, 100, 200, n};
        try (NdArray x = MlTesting.array(mem, DType.FLOAT64, counts, n, 4);
                NdArray y = MlTesting.labels(mem, labels);
                MultinomialNB nb = new MultinomialNB().fit(x, y);
                KNeighborsClassifier knn =
                        new KNeighborsClassifier().nNeighbors(3).fit(x, y)) {
            List<NdArray> xs = MlTesting.split(x, cuts);
            List<NdArray> ys = MlTesting.split(y, cuts);
            List<ObjectRef> xr = client.scatter(xs);
            List<ObjectRef> yr = client.scatter(ys);
            try (MultinomialNB nbDistributed = Distributed.fit(client, new MultinomialNB(), xr, yr);
                    KNeighborsClassifier knnDistributed =
                            Distributed.fit(client, new KNeighborsClassifier().nNeighbors(3), xr, yr);
                    NdArray nbWant = nb.predict(x);
                    NdArray nbGot = nbDistributed.predict(x);
                    NdArray knnWant = knn.predict(x);
                    NdArray knnGot = knnDistributed.predict(x)) {
                assertEquals(3, nbDistributed.classes(), "class 2 only in the last partition");
                assertTrue(maxAbsDiff(values(nb.featureLogProb()), values(nbDistributed.featureLogProb())) < 1e-12);
                assertArrayEquals(nbWant.toIntArray(), nbGot.toIntArray());
                assertEquals(3, knnDistributed.classes());
                assertTrue(knn.fitX().contentEquals(knnDistributed.fitX()));
                assertArrayEquals(knnWant.toIntArray(), knnGot.toIntArray());
            } finally {
                client.free(xr);
                client.free(yr);
                MlTesting.closeAll(xs);
                MlTesting.closeAll(ys);
            }
        }
    }
}
