package io.cuwire.cluster;

import static io.cuwire.ml.MlTesting.gaussian;
import static io.cuwire.ml.MlTesting.values;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.CopyDirection;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.DType;
import io.cuwire.memory.NdArray;
import io.cuwire.ml.MlTesting;
import io.cuwire.ml.cluster.KMeans;
import io.cuwire.ml.linear.LogisticRegression;
import io.cuwire.ml.neighbors.NearestNeighbors;
import java.io.IOException;
import java.time.Duration;
import java.util.AbstractList;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Workers killed mid-call, mid-fit and mid-broadcast, in real worker processes. No test depends on timing: a fit is
 * interrupted from inside its own loop, and a broadcast's victim is first stopped ({@code SIGSTOP}) so that the
 * transfer to it cannot finish before it is killed ({@code SIGKILL}).
 */
class WorkerLossTest {
    /** The broadcast model's training rows: 64 MiB of float32, 256 rows per MiB. */
    private static final int ROWS = 64 * 1024;

    private static final int COLS = 64;
    private static final long MODEL_BYTES = (long) ROWS * COLS * 4;

    @Test
    @Timeout(value = 90, unit = TimeUnit.SECONDS)
    void shouldFailPendingAndLaterCallsOfAKilledWorkerWithWorkerLostWhileTheOthersGoOn() throws Exception {
        try (LocalCluster cluster = LocalCluster.builder()
                .workers(2)
                .heartbeat(Duration.ofMillis(500), Duration.ofSeconds(5))
                .start()) {
            Client client = cluster.client();
            CompletableFuture<Object> pending = client.call(1, TestTasks.SLEEP, 60_000L);
            Thread.sleep(200);
            long killed = System.nanoTime();
            cluster.processOf(1).destroyForcibly();
            ExecutionException e = assertThrows(ExecutionException.class, () -> pending.get(10, TimeUnit.SECONDS));
            WorkerLostException lost = assertInstanceOf(WorkerLostException.class, e.getCause());
            assertEquals(1, lost.worker());
            assertTrue(System.nanoTime() - killed < Duration.ofSeconds(10).toNanos());
            assertTrue(!client.isAlive(1));

            ExecutionException later = assertThrows(
                    ExecutionException.class,
                    () -> client.call(1, TestTasks.DEVICE).get(1, TimeUnit.SECONDS));
            assertInstanceOf(WorkerLostException.class, later.getCause());
            assertEquals(0L, client.call(0, TestTasks.DEVICE).get(10, TimeUnit.SECONDS));
            assertEquals(
                    1,
                    client.broadcast(new io.cuwire.ml.linear.LinearRegression(), BroadcastOptions.DEFAULT)
                            .sent(),
                    "the broadcast goes to the live worker");
        }
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void shouldFailADistributedFitWhoseWorkerIsKilledWithWorkerLostAndLeakNothing() throws Exception {
        try (LocalCluster cluster = LocalCluster.builder()
                .workers(2)
                .heartbeat(Duration.ofMillis(500), Duration.ofSeconds(30))
                .start()) {
            Client client = cluster.client();
            SplittableRandom r = new SplittableRandom(11);
            int n = 4000;
            int d = 8;
            long clientDevice = client.memory().allocatedBytes();
            long clientHost = client.hostBytes();
            try (NdArray x = MlTesting.array(client.memory(), DType.FLOAT64, gaussian(r, n * d), n, d)) {
                double[] xv = values(x);
                int[] labels = new int[n];
                for (int i = 0; i < n; i++) {
                    labels[i] = xv[i * d] - 0.5 * xv[i * d + 1] + gaussian(r) > 0 ? 1 : 0;
                }
                try (NdArray y = MlTesting.labels(client.memory(), labels)) {
                    long[] cuts = MlTesting.cuts(n, 4, r);
                    List<NdArray> xs = MlTesting.split(x, cuts);
                    List<NdArray> ys = MlTesting.split(y, cuts);
                    List<ObjectRef> xr = client.scatter(xs);
                    List<ObjectRef> yr = client.scatter(ys);
                    WorkerStats survivor = client.workerStats(0).get(30, TimeUnit.SECONDS);
                    long device = client.memory().allocatedBytes();
                    long host = client.hostBytes();
                    ProcessHandle victim = cluster.processOf(1);
                    // Every gradient round reads each partition's ref twice; the third read of partition 1 (on worker
                    // 1) is in the second round, after the first came back: the worker dies mid-fit.
                    AtomicInteger reads = new AtomicInteger();
                    List<ObjectRef> watched = new AbstractList<>() {
                        @Override
                        public ObjectRef get(int i) {
                            ObjectRef ref = xr.get(i);
                            if (i == 1 && reads.incrementAndGet() == 3) {
                                victim.destroyForcibly();
                                victim.onExit().join();
                            }
                            return ref;
                        }

                        @Override
                        public int size() {
                            return xr.size();
                        }
                    };
                    ClusterException e = assertThrows(
                            ClusterException.class,
                            () -> Distributed.fit(client, new LogisticRegression().nClasses(2), watched, yr));
                    WorkerLostException lost = e instanceof WorkerLostException l
                            ? l
                            : assertInstanceOf(WorkerLostException.class, e.getCause(), e.toString());
                    assertEquals(1, lost.worker());
                    assertTrue(reads.get() >= 3, "the fit ran into its second round: " + reads.get() + " reads");

                    assertEquals(device, client.memory().allocatedBytes(), "client device bytes after the fit");
                    assertEquals(host, client.hostBytes(), "client host bytes after the fit");
                    awaitMemory(client, 0, survivor.deviceBytes(), survivor.hostBytes());
                    client.free(xr);
                    client.free(yr);
                    MlTesting.closeAll(xs);
                    MlTesting.closeAll(ys);
                    assertEquals(
                            0, client.workerStats(0).get(30, TimeUnit.SECONDS).objects());
                }
            }
            assertEquals(clientDevice, client.memory().allocatedBytes());
            assertEquals(clientHost, client.hostBytes());
        }
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void shouldFailWithWorkerLostWhenAWorkerIsKilledAsABroadcastGoesToItInTurnWhileTheNextGetsTheModel()
            throws Exception {
        try (LocalCluster cluster = LocalCluster.builder()
                        .workers(2)
                        .heartbeat(Duration.ofMillis(500), Duration.ofSeconds(30))
                        .start();
                NearestNeighbors model = bigModel(cluster.client())) {
            Client client = cluster.client();
            BroadcastOptions options = BroadcastOptions.DEFAULT.strategy(BroadcastOptions.Strategy.EACH_IN_TURN);
            Baseline before = Baseline.of(client, 1);
            ProcessHandle victim = cluster.processOf(0);
            signal("STOP", victim);
            long staged = CopyEngine.totals().bytes(CopyDirection.D2H);
            CompletableFuture<BroadcastResult> broadcast =
                    CompletableFuture.supplyAsync(() -> client.broadcast(model, options));
            // Worker 0 comes first; it cannot read, so the client's send to it cannot finish. Once the client has
            // staged some of the model for the socket, the transfer to worker 0 is under way.
            while (CopyEngine.totals().bytes(CopyDirection.D2H) == staged && !broadcast.isDone()) {
                Thread.sleep(5);
            }
            victim.destroyForcibly();
            ExecutionException e = assertThrows(ExecutionException.class, () -> broadcast.get(60, TimeUnit.SECONDS));
            WorkerLostException lost = assertInstanceOf(WorkerLostException.class, e.getCause());
            assertEquals(0, lost.worker());
            assertTrue(lost.getMessage().contains("workers [1] hold it, [0] do not"), lost.getMessage());

            before.assertClientUnchanged(client);
            awaitMemory(client, 1, before.deviceBytes(1) + MODEL_BYTES, before.hostBytes(1));
            assertHolds(client, model, options, List.of(1));
        }
    }

    @Test
    @Timeout(value = 150, unit = TimeUnit.SECONDS)
    void shouldFailAChainedBroadcastWithWorkerLostWhenItsMiddleLinkIsKilledWithoutHangingOrLeaking() throws Exception {
        killMidForward(BroadcastOptions.Strategy.CHAIN, 3, List.of(0), List.of(2));
    }

    @Test
    @Timeout(value = 150, unit = TimeUnit.SECONDS)
    void shouldFailATreeBroadcastWithWorkerLostWhenAnInnerNodeIsKilledWhileItsSiblingGetsTheModel() throws Exception {
        killMidForward(BroadcastOptions.Strategy.TREE, 4, List.of(0, 2), List.of(3));
    }

    /**
     * Worker 1 — the second link of a chain, or the first child of a tree's root — is stopped, a model is broadcast,
     * and once worker 0 has taken the whole model (so it has forwarded every chunk towards worker 1, which cannot
     * read them) worker 1 is killed. The broadcast fails with worker 1 lost; {@code holders} have the model,
     * {@code without} hold nothing for it.
     */
    private static void killMidForward(
            BroadcastOptions.Strategy strategy, int workers, List<Integer> holders, List<Integer> without)
            throws Exception {
        try (LocalCluster cluster = LocalCluster.builder()
                        .workers(workers)
                        .heartbeat(Duration.ofMillis(500), Duration.ofSeconds(30))
                        .start();
                NearestNeighbors model = bigModel(cluster.client())) {
            Client client = cluster.client();
            BroadcastOptions options = BroadcastOptions.DEFAULT.strategy(strategy);
            checkSmallBroadcast(client, options); // every worker gets it right, and the links are connected
            List<Integer> survivors = new ArrayList<>(holders);
            survivors.addAll(without);
            Baseline before = Baseline.of(
                    client, survivors.stream().mapToInt(Integer::intValue).toArray());
            ProcessHandle victim = cluster.processOf(1);
            signal("STOP", victim);
            long staged = CopyEngine.totals().bytes(CopyDirection.D2H);
            CompletableFuture<BroadcastResult> broadcast =
                    CompletableFuture.supplyAsync(() -> client.broadcast(model, options));
            while (CopyEngine.totals().bytes(CopyDirection.D2H) - staged < MODEL_BYTES && !broadcast.isDone()) {
                Thread.sleep(5);
            }
            // Answered after worker 0 handled every chunk sent before it: each was forwarded as it came.
            client.workerStats(0).get(60, TimeUnit.SECONDS);
            victim.destroyForcibly();
            ExecutionException e = assertThrows(ExecutionException.class, () -> broadcast.get(60, TimeUnit.SECONDS));
            WorkerLostException lost = assertInstanceOf(WorkerLostException.class, e.getCause());
            assertEquals(1, lost.worker());
            List<Integer> missing = new ArrayList<>(without);
            missing.add(1);
            missing.sort(null);
            assertTrue(
                    lost.getMessage().contains("workers " + holders + " hold it, " + missing + " do not"),
                    lost.getMessage());

            before.assertClientUnchanged(client);
            for (int w : holders) {
                awaitMemory(client, w, before.deviceBytes(w) + MODEL_BYTES, before.hostBytes(w));
            }
            for (int w : without) {
                awaitMemory(client, w, before.deviceBytes(w), before.hostBytes(w));
            }
            assertHolds(client, model, options, holders);
        }
    }

    /** A small KMeans broadcast with {@code options}: every worker holds the same centers. */
    private static void checkSmallBroadcast(Client client, BroadcastOptions options) {
        SplittableRandom r = new SplittableRandom(3);
        try (NdArray x = MlTesting.array(client.memory(), DType.FLOAT64, gaussian(r, 300 * 16), 300, 16);
                KMeans small = new KMeans().nClusters(32).maxIter(2).seed(5).fit(x)) {
            BroadcastResult b = client.broadcast(small, options.chunkBytes(4096));
            assertEquals(options.strategy(), b.strategy());
            assertEquals(client.workers(), b.sent());
            for (int w = 0; w < client.workers(); w++) {
                try (NdArray centers =
                        client.call(w, TestTasks.CENTERS, b.handle()).join()) {
                    assertTrue(small.clusterCenters().contentEquals(centers), options.strategy() + ", worker " + w);
                }
            }
        }
    }

    /**
     * Broadcasting the model again sends nothing to {@code holders} (the client recorded them, and they answer that
     * they hold it) and their copies equal the client's; no other live worker got it before.
     */
    private static void assertHolds(
            Client client, NearestNeighbors model, BroadcastOptions options, List<Integer> holders) {
        BroadcastResult again = client.broadcast(model, options);
        assertEquals(holders.size(), again.cacheHits(), "cache hits: " + again);
        for (int w : holders) {
            try (NdArray rows = client.call(w, TestTasks.FIT_X, again.handle()).join()) {
                assertTrue(model.fitX().contentEquals(rows), "worker " + w + "'s copy");
            }
        }
    }

    /** A NearestNeighbors model holding {@link #MODEL_BYTES} of training rows on the client's device. */
    private static NearestNeighbors bigModel(Client client) {
        float[] v = new float[ROWS * COLS];
        for (int i = 0; i < v.length; i++) {
            v[i] = (i % 9973) * 0.25f;
        }
        try (NdArray x = NdArray.fromArray(client.memory(), v, ROWS, COLS)) {
            return new NearestNeighbors().fit(x);
        }
    }

    /** The client's memory and some workers' memory at one point. */
    private record Baseline(long clientDevice, long clientHost, List<WorkerStats> workers) {
        static Baseline of(Client client, int... workers) throws Exception {
            List<WorkerStats> stats = new ArrayList<>();
            for (int w : workers) {
                stats.add(client.workerStats(w).get(30, TimeUnit.SECONDS));
            }
            return new Baseline(client.memory().allocatedBytes(), client.hostBytes(), stats);
        }

        long deviceBytes(int worker) {
            return stats(worker).deviceBytes();
        }

        long hostBytes(int worker) {
            return stats(worker).hostBytes();
        }

        private WorkerStats stats(int worker) {
            return workers.stream()
                    .filter(s -> s.worker() == worker)
                    .findFirst()
                    .orElseThrow();
        }

        void assertClientUnchanged(Client client) {
            assertEquals(clientDevice, client.memory().allocatedBytes(), "client device bytes");
            assertEquals(clientHost, client.hostBytes(), "client host bytes");
        }
    }

    /**
     * Waits until worker {@code w} holds exactly these bytes: a worker frees a reply's value once the reply is sent,
     * and a dropped copy once its forwards settle, both just after it answered.
     */
    private static void awaitMemory(Client client, int w, long device, long host) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        WorkerStats s = client.workerStats(w).get(30, TimeUnit.SECONDS);
        while ((s.deviceBytes() != device || s.hostBytes() != host) && System.nanoTime() < deadline) {
            Thread.sleep(20);
            s = client.workerStats(w).get(30, TimeUnit.SECONDS);
        }
        assertEquals(device, s.deviceBytes(), "worker " + w + " device bytes");
        assertEquals(host, s.hostBytes(), "worker " + w + " host bytes");
    }

    private static void signal(String signal, ProcessHandle process) throws IOException, InterruptedException {
        Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(process.pid()))
                .inheritIO()
                .start();
        assertEquals(0, kill.waitFor(), "kill -" + signal + " " + process.pid());
    }

    @Test
    @Timeout(value = 30, unit = TimeUnit.SECONDS)
    void shouldRefuseATransportThisBuildDoesNotHave() {
        ClusterException e = assertThrows(
                ClusterException.class,
                () -> LocalCluster.builder()
                        .workers(1)
                        .transport("carrier-pigeon")
                        .start());
        assertTrue(e.getMessage().contains("carrier-pigeon"), e.getMessage());
    }
}
