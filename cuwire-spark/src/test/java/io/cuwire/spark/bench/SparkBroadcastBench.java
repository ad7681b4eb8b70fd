package io.cuwire.spark.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.cuwire.memory.CopyDirection;
import io.cuwire.memory.NdArray;
import io.cuwire.spark.CuwireSpark;
import io.cuwire.spark.ModelBroadcast;
import io.cuwire.spark.ModelRef;
import io.cuwire.spark.NodeStats;
import io.cuwire.spark.SparkCluster;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.spark.SparkEnv;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.broadcast.Broadcast;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Time to make one model of {@code cuwire.spark.bench} MiB available on both executors: the cuwire handle (frames
 * fetched over cuwire's TCP transport, the second executor from the first) against {@code sc.broadcast} of the same
 * values as a {@code double[]} with Kryo, in the same application, three rounds each, alternating. Each round ends
 * when a job of 8 tasks has read the model's size on the executors; each round asserts that one executor fetched
 * from the driver and the other from that executor. Runs only when asked:
 * <pre>
 * mvn -pl cuwire-spark -am verify -Dtest=SparkBroadcastBench -Dsurefire.failIfNoSpecifiedTests=false \
 *     -Dcuwire.spark.bench=512 -Dcuwire.spark.executorMemoryMb=3072
 * </pre>
 * Prints one line per round and the executors' copy counters.
 */
@ExtendWith(SparkCluster.class)
@EnabledIfSystemProperty(named = "cuwire.spark.bench", matches = "[0-9]+")
@Timeout(value = 20, unit = TimeUnit.MINUTES)
class SparkBroadcastBench {
    private static final int TASKS = 8;

    @Test
    void shouldTimeACuwireHandleAgainstASparkBroadcast() {
        long mib = Long.getLong("cuwire.spark.bench");
        int n = (int) (mib * 1024 * 1024 / 8);
        JavaSparkContext jsc =
                JavaSparkContext.fromSparkContext(SparkCluster.session().sparkContext());
        double[] values = new double[n];
        for (int i = 0; i < n; i++) {
            values[i] = i;
        }
        List<Integer> tasks = new ArrayList<>();
        for (int i = 0; i < TASKS; i++) {
            tasks.add(i);
        }
        System.out.printf("model: %d MiB (%d float64); executors: %s%n", mib, n, CuwireSpark.executors());
        try (NdArray model = NdArray.fromArray(CuwireSpark.deviceMemory(), values, n)) {
            for (int round = 1; round <= 3; round++) {
                CuwireSpark.executorStats(true);
                long t0 = System.nanoTime();
                try (ModelBroadcast<NdArray> b = CuwireSpark.broadcast(model)) {
                    ModelRef<NdArray> ref = b.ref();
                    List<String> seen = jsc.parallelize(tasks, TASKS)
                            .map(i -> SparkEnv.get().executorId() + "=" + ref.apply(NdArray::byteSize))
                            .collect();
                    double s = (System.nanoTime() - t0) / 1e9;
                    long fetched = 0;
                    long fromDriver = 0;
                    StringBuilder copies = new StringBuilder();
                    for (NodeStats st : CuwireSpark.executorStats(true)) {
                        fetched += st.fetched();
                        fromDriver += st.fetchedFromDriver();
                        copies.append(String.format(
                                " | exec %s: from driver %d, from peers %d, H2D %.0f MiB, "
                                        + "D2H %.0f MiB, H2H %.0f MiB",
                                st.executorId(),
                                st.fetchedFromDriver(),
                                st.fetchedFromPeers(),
                                st.copied(CopyDirection.H2D) / 1048576.0,
                                st.copied(CopyDirection.D2H) / 1048576.0,
                                st.copied(CopyDirection.H2H) / 1048576.0));
                    }
                    assertEquals(2, fetched, "each executor fetched once: " + seen);
                    assertEquals(1, fromDriver, "one executor fetched from the driver, the other from it: " + copies);
                    System.out.printf(
                            "round %d cuwire handle: %.3f s (%.2f GB/s per executor)%s%n",
                            round, s, mib * 1048576.0 / s / 1e9, copies);
                }
                long t1 = System.nanoTime();
                Broadcast<double[]> bc = jsc.broadcast(values);
                List<String> seen = jsc.parallelize(tasks, TASKS)
                        .map(i -> SparkEnv.get().executorId() + "=" + bc.value().length)
                        .collect();
                double s = (System.nanoTime() - t1) / 1e9;
                bc.destroy();
                System.out.printf(
                        "round %d sc.broadcast (Kryo): %.3f s (%.2f GB/s per executor) %s%n",
                        round, s, mib * 1048576.0 / s / 1e9, seen);
            }
        }
    }
}
