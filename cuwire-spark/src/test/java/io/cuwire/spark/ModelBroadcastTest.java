package io.cuwire.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.MemoryKind;
import io.cuwire.memory.NdArray;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import scala.Tuple2;

/** A model broadcast as a handle on a two-executor local cluster: fetched once per executor, then released. */
@ExtendWith(SparkCluster.class)
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class ModelBroadcastTest {
    /** What a task reports: the executor it ran on and the sum of the model's elements it read. */
    record Seen(String executor, double sum) {}

    /** Each task's {@link Seen} (a tuple on the way: Spark's Kryo does not take records). */
    static List<Seen> readEverywhere(JavaSparkContext jsc, ModelRef<NdArray> ref, int tasks) {
        List<Integer> parts = new ArrayList<>();
        for (int i = 0; i < tasks; i++) {
            parts.add(i);
        }
        return jsc
                .parallelize(parts, tasks)
                .map(i -> {
                    double sum = ref.apply(a -> {
                        double s = 0;
                        for (double v : a.toDoubleArray()) {
                            s += v;
                        }
                        return s;
                    });
                    return new Tuple2<>(
                            TaskContext.get() == null
                                    ? "driver"
                                    : org.apache.spark.SparkEnv.get().executorId(),
                            sum);
                })
                .collect()
                .stream()
                .map(t -> new Seen(t._1(), t._2()))
                .toList();
    }

    @Test
    void shouldFetchOncePerExecutorTheSecondFromAPeerAndEvictOnRelease() {
        JavaSparkContext jsc =
                JavaSparkContext.fromSparkContext(SparkCluster.session().sparkContext());
        // models other tests of the shared cluster left cached (released when their owners are collected)
        Map<String, Long> cachedBefore = new HashMap<>();
        for (NodeStats s : CuwireSpark.executorStats(true)) {
            cachedBefore.put(s.executorId(), s.cachedModels());
        }
        int n = 1 << 20;
        double[] data = new double[n];
        double expected = 0;
        for (int i = 0; i < n; i++) {
            data[i] = i % 1000;
            expected += data[i];
        }
        try (NdArray model = NdArray.fromArray(CuwireSpark.deviceMemory(), data, n)) {
            assertEquals(MemoryKind.DEVICE, model.kind());
            ModelBroadcast<NdArray> b = CuwireSpark.broadcast(model);
            ModelRef<NdArray> ref = b.ref();
            assertEquals(8L * n, ref.frameBytes());
            List<Seen> seen = readEverywhere(jsc, ref, 8);
            Set<String> executors = new HashSet<>();
            for (Seen s : seen) {
                assertEquals(expected, s.sum(), 0.0);
                executors.add(s.executor());
            }
            assertEquals(2, executors.size(), "both executors ran tasks: " + seen);
            // Again: every executor uses its cached copy, nothing is fetched.
            readEverywhere(jsc, ref, 8);
            List<NodeStats> stats = CuwireSpark.executorStats(false);
            assertEquals(2, stats.size());
            long fromDriver = 0;
            long fromPeers = 0;
            for (NodeStats s : stats) {
                assertEquals(1, s.fetched(), "each executor fetched the model once: " + s);
                assertEquals(8L * n, s.fetchedBytes(), s.toString());
                assertEquals(cachedBefore.getOrDefault(s.executorId(), 0L) + 1, s.cachedModels(), s.toString());
                // auto, executors on one host: over CUDA IPC, device to device, nothing staged through host memory
                assertEquals(1, s.fetchedOver("ipc"), "fetched over CUDA IPC: " + s);
                assertEquals(0, s.fetchStagedBytes(), "no device frame staged through host memory: " + s);
                fromDriver += s.fetchedFromDriver();
                fromPeers += s.fetchedFromPeers();
            }
            assertEquals(1, fromDriver, "only the first executor pulled from the driver: " + stats);
            assertEquals(1, fromPeers, "the second fetched from the first: " + stats);

            b.close();
            assertEquals(0, b.unanswered());
            for (NodeStats s : CuwireSpark.executorStats(true)) {
                assertTrue(s.cachedModels() <= cachedBefore.getOrDefault(s.executorId(), 0L), "released: " + s);
                assertEquals(1, s.evicted(), s.toString());
            }
            Exception e = assertThrows(Exception.class, () -> readEverywhere(jsc, ref, 2));
            assertTrue(String.valueOf(e.getMessage()).contains("was it released"), e.toString());
        }
    }

    @Test
    void shouldFetchOverTcpStagedWhenAJobAsksForTcp() {
        JavaSparkContext jsc =
                JavaSparkContext.fromSparkContext(SparkCluster.session().sparkContext());
        CuwireSpark.executorStats(true);
        int n = 1 << 16;
        double[] data = new double[n];
        java.util.Arrays.fill(data, 2.0);
        try (NdArray model = NdArray.fromArray(CuwireSpark.deviceMemory(), data, n);
                ModelBroadcast<NdArray> b = CuwireSpark.broadcast(model)) {
            assertTrue(b.ref().driverIpcAddress().isPresent(), "the driver advertises IPC: " + b.ref());
            jsc.setLocalProperty(CuwirePlugin.TRANSPORT, "tcp");
            try {
                for (Seen s : readEverywhere(jsc, b.ref(), 8)) {
                    assertEquals(2.0 * n, s.sum(), 0.0);
                }
            } finally {
                jsc.setLocalProperty(CuwirePlugin.TRANSPORT, null);
            }
            for (NodeStats s : CuwireSpark.executorStats(true)) {
                assertEquals(1, s.fetched(), s.toString());
                assertEquals(1, s.fetchedOver("tcp"), "fetched over tcp: " + s);
                assertEquals(0, s.fetchedOver("ipc"), s.toString());
                assertTrue(s.fetchStagedBytes() >= 8L * n, "device frames staged host to device: " + s);
            }
        }
    }

    @Test
    void shouldGiveTheSameValueBroadcastAgainTheNextVersion() {
        try (NdArray model = NdArray.fromArray(CuwireSpark.deviceMemory(), new double[] {1, 2, 3}, 3)) {
            ModelBroadcast<NdArray> first = CuwireSpark.broadcast(model);
            first.close();
            try (ModelBroadcast<NdArray> second = CuwireSpark.broadcast(model)) {
                assertEquals(first.ref().id(), second.ref().id());
                assertEquals(first.ref().version() + 1, second.ref().version());
                JavaSparkContext jsc =
                        JavaSparkContext.fromSparkContext(SparkCluster.session().sparkContext());
                for (Seen s : readEverywhere(jsc, second.ref(), 4)) {
                    assertEquals(6.0, s.sum(), 0.0);
                }
            }
        }
    }
}
