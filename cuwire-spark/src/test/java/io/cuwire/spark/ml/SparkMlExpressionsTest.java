package io.cuwire.spark.ml;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.spark.CuwireSpark;
import io.cuwire.spark.NodeStats;
import io.cuwire.spark.SparkCluster;
import io.cuwire.spark.internal.TaskCores;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.IntStream;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryException;
import org.apache.spark.sql.streaming.Trigger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Transform as an expression: a function of the features column that Catalyst prunes when no column of the model is
 * read (the executors then never fetch the model), that works on a streaming {@code DataFrame}; and the CPU work of
 * a fit's tasks on the task's own cores.
 */
@ExtendWith(SparkCluster.class)
@Timeout(value = 4, unit = TimeUnit.MINUTES)
class SparkMlExpressionsTest {
    private static long fetched() {
        long n = 0;
        for (NodeStats s : CuwireSpark.executorStats(false)) {
            n += s.fetched();
        }
        return n;
    }

    @Test
    void shouldNotRunTheModelForAQueryThatReadsNoModelColumn() {
        SparkMlTest.Data d = SparkMlTest.data(SparkCluster.session(), 2, 51);
        CuwireLogisticRegressionModel model =
                new CuwireLogisticRegression().setMaxIter(10).fit(d.frame());
        CuwireSpark.executorStats(true);
        Dataset<Row> out = model.transform(d.frame());
        Dataset<Row> labels = out.select("label");
        assertFalse(
                labels.queryExecution().optimizedPlan().toString().contains("cuwire_"),
                "pruned: " + labels.queryExecution().optimizedPlan());
        assertEquals(SparkMlTest.ROWS, labels.count());
        assertEquals(0, fetched(), "no executor fetched the model for a query without its columns");
        Dataset<Row> predictions = out.select("prediction");
        assertTrue(
                predictions
                        .queryExecution()
                        .optimizedPlan()
                        .toString()
                        .contains("cuwire_" + "CuwireLogisticRegressionModel"),
                predictions.queryExecution().optimizedPlan().toString());
        assertEquals(SparkMlTest.ROWS, predictions.collectAsList().size());
        assertTrue(fetched() >= 1, "the executors fetched the model to compute its column");
    }

    @Test
    void shouldTransformAStreamingDataFrame(@TempDir Path dir) throws TimeoutException, StreamingQueryException {
        SparkMlTest.Data d = SparkMlTest.data(SparkCluster.session(), 0, 52);
        Dataset<Row> arrays = d.frame().selectExpr("id", "array(f0, f1, f2, f3) as features", "label");
        CuwireLinearRegressionModel model = new CuwireLinearRegression().fit(arrays);
        String input = dir.resolve("in").toString();
        arrays.write().json(input);
        Dataset<Row> stream =
                SparkCluster.session().readStream().schema(arrays.schema()).json(input);
        Dataset<Row> scored = model.transform(stream);
        assertTrue(scored.isStreaming());
        StreamingQuery q = scored.select("id", "prediction")
                .writeStream()
                .format("memory")
                .queryName("cuwire_stream_predictions")
                .trigger(Trigger.AvailableNow())
                .start();
        q.awaitTermination();
        List<Row> streamed = SparkCluster.session()
                .table("cuwire_stream_predictions")
                .orderBy("id")
                .collectAsList();
        List<Row> batch =
                model.transform(arrays).select("id", "prediction").orderBy("id").collectAsList();
        assertEquals(SparkMlTest.ROWS, streamed.size());
        double[] a = new double[batch.size()];
        double[] b = new double[batch.size()];
        for (int i = 0; i < a.length; i++) {
            assertEquals(batch.get(i).getLong(0), streamed.get(i).getLong(0));
            a[i] = batch.get(i).getDouble(1);
            b[i] = streamed.get(i).getDouble(1);
        }
        assertArrayEquals(a, b, 0.0);
    }

    @Test
    void shouldKeepATasksCpuWorkOnTheCoresSparkGaveIt() {
        JavaSparkContext jsc =
                JavaSparkContext.fromSparkContext(SparkCluster.session().sparkContext());
        List<String> seen = jsc.parallelize(List.of(1, 2, 3, 4), 4)
                .map(i -> {
                    Set<String> threads = ConcurrentHashMap.newKeySet();
                    long sum = TaskCores.run(() -> IntStream.range(0, 200_000)
                            .parallel()
                            .peek(v -> threads.add(Thread.currentThread().getName()))
                            .asLongStream()
                            .sum());
                    return TaskCores.cores() + " " + sum + " " + new TreeSet<>(threads);
                })
                .collect();
        int cores = SparkCluster.session().sparkContext().getConf().getInt("spark.task.cpus", 1);
        for (String s : seen) {
            String[] parts = s.split(" ", 3);
            assertEquals(cores, Integer.parseInt(parts[0]), s);
            assertEquals(200_000L * 199_999 / 2, Long.parseLong(parts[1]), s);
            String[] names = parts[2].substring(1, parts[2].length() - 1).split(", ");
            assertTrue(names.length <= cores, "at most " + cores + " thread(s): " + s);
            for (String n : names) {
                assertTrue(n.startsWith("cuwire-task-cores-" + cores + "-"), s);
            }
        }
    }
}
