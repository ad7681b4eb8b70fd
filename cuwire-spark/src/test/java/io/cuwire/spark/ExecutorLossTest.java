package io.cuwire.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.NdArray;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * An executor JVM killed while a task uses a broadcast model: Spark retries the task in another JVM, which fetches
 * the model again (the driver skips the dead holder), and releasing the model afterwards does not fail on the
 * lost executor.
 */
@ExtendWith(SparkCluster.class)
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class ExecutorLossTest {
    @Test
    void shouldFetchTheModelAgainForATaskRetriedAfterItsExecutorDied() {
        JavaSparkContext jsc =
                JavaSparkContext.fromSparkContext(SparkCluster.session().sparkContext());
        Map<String, String> before = CuwireSpark.awaitExecutors(SparkCluster.EXECUTORS, Duration.ofMinutes(2));
        try (NdArray model = NdArray.fromArray(CuwireSpark.deviceMemory(), new double[] {1, 2, 3, 4}, 4)) {
            ModelBroadcast<NdArray> b = CuwireSpark.broadcast(model);
            ModelRef<NdArray> ref = b.ref();
            long served = CuwireSpark.driverStats().servedToPeers();
            // One partition: one executor fetches; its first attempt dies after using the model.
            List<String> ran = jsc.parallelize(List.of(1), 1)
                    .map(i -> {
                        double sum = ref.apply(a -> {
                            double s = 0;
                            for (double v : a.toDoubleArray()) {
                                s += v;
                            }
                            return s;
                        });
                        if (TaskContext.get().attemptNumber() == 0) {
                            Runtime.getRuntime().halt(17);
                        }
                        return SparkEnv.get().executorId() + ":" + sum + ":"
                                + TaskContext.get().attemptNumber();
                    })
                    .collect();
            assertEquals(1, ran.size());
            String[] parts = ran.getFirst().split(":");
            assertEquals("10.0", parts[1], "the retried task used the model: " + ran);
            assertTrue(Integer.parseInt(parts[2]) >= 1, "the task was retried: " + ran);
            assertEquals(
                    2,
                    CuwireSpark.driverStats().servedToPeers() - served,
                    "the driver sent the frames to the first attempt's executor and again for the retry");
            b.close();
            assertTrue(b.isReleased());
            // The replacement executor registers; the dead one is gone from the driver's list.
            Map<String, String> after = CuwireSpark.awaitExecutors(SparkCluster.EXECUTORS, Duration.ofMinutes(2));
            assertFalse(after.equals(before), "a new executor replaced the dead one: " + before + " -> " + after);
        }
    }
}
