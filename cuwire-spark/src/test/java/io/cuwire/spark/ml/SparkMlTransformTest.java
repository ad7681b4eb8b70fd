package io.cuwire.spark.ml;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.NdArray;
import io.cuwire.spark.CuwireSpark;
import io.cuwire.spark.NodeStats;
import io.cuwire.spark.SparkCluster;
import io.cuwire.spark.internal.TaskCores;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.IntStream;
import org.apache.spark.SparkException;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.ml.linalg.Vector;
import org.apache.spark.ml.linalg.VectorUDT;
import org.apache.spark.ml.linalg.Vectors;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryException;
import org.apache.spark.sql.streaming.Trigger;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Transform in blocks of rows: every row of partitions of several blocks, of none and of part of a block scored as
 * the single-process estimator scores them, and counted; nothing run before an action, a partition of no rows never
 * fetching the model, and every row read scored (Catalyst cannot prune a {@code mapPartitions}); the schema exactly
 * {@code transformSchema}'s; null features and null elements refused with their messages; a streaming
 * {@code DataFrame}; and the CPU work of a fit's tasks on the task's own cores.
 */
@ExtendWith(SparkCluster.class)
@Timeout(value = 4, unit = TimeUnit.MINUTES)
class SparkMlTransformTest {
    private static final int FEATURES = 4;

    private static long fetched() {
        long n = 0;
        for (NodeStats s : CuwireSpark.executorStats(false)) {
            n += s.fetched();
        }
        return n;
    }

    /** The features of row {@code id}: seeded by the id, so the driver and the executors make the same. */
    private static double[] x(long id) {
        Random r = new Random(id * 1_000_003 + 17);
        double[] x = new double[FEATURES];
        for (int j = 0; j < FEATURES; j++) {
            x[j] = r.nextGaussian() * 12;
        }
        return x;
    }

    /** The rows of partition {@code p} of partitions of {@code sizes} rows: {@code id} and {@code features}. */
    private static Iterator<Row> rowsOf(int[] sizes, int p) {
        long first = 0;
        for (int i = 0; i < p; i++) {
            first += sizes[i];
        }
        List<Row> rows = new ArrayList<>();
        for (long id = first; id < first + sizes[p]; id++) {
            rows.add(RowFactory.create(id, Vectors.dense(x(id))));
        }
        return rows.iterator();
    }

    /** A frame of {@code id} and {@code features} in partitions of {@code sizes} rows, made in the executors. */
    private static Dataset<Row> partitioned(int[] sizes) {
        JavaSparkContext jsc =
                JavaSparkContext.fromSparkContext(SparkCluster.session().sparkContext());
        List<Integer> parts = IntStream.range(0, sizes.length).boxed().toList();
        JavaRDD<Row> rows = jsc.parallelize(parts, sizes.length).flatMap(p -> rowsOf(sizes, p));
        StructType schema = new StructType(new StructField[] {
            new StructField("id", DataTypes.LongType, false, Metadata.empty()),
            new StructField("features", new VectorUDT(), false, Metadata.empty())
        });
        return SparkCluster.session().createDataFrame(rows, schema);
    }

    /** The rows of each partition of {@code frame}. */
    private static List<Integer> partitionSizes(Dataset<Row> frame) {
        return frame.javaRDD()
                .mapPartitions(it -> {
                    int n = 0;
                    for (; it.hasNext(); it.next()) {
                        n++;
                    }
                    return List.of(n).iterator();
                })
                .collect();
    }

    /** The rows of {@code frame}'s {@code column} by id (each id once), as doubles or vectors' elements. */
    private static Object[] byId(List<Row> rows, int column, int total) {
        Object[] out = new Object[total];
        for (Row r : rows) {
            int id = (int) r.getLong(0);
            assertNull(out[id], "row " + id + " once");
            out[id] = r.get(column);
        }
        return out;
    }

    @Test
    void shouldBoundABlockByRowsAndByTheBytesOfItsFeatures() {
        assertEquals(CuwireModel.BLOCK_ROWS, CuwireModel.blockRows(0));
        assertEquals(CuwireModel.BLOCK_ROWS, CuwireModel.blockRows(256), "4096 x 256 float64: 8 MiB");
        assertEquals(CuwireModel.BLOCK_ROWS / 2, CuwireModel.blockRows(512));
        assertEquals(1, CuwireModel.blockRows(1 << 20), "one row of 8 MiB");
        assertEquals(1, CuwireModel.blockRows(Integer.MAX_VALUE), "one row, however wide");
    }

    @Test
    void shouldScoreEveryRowOfPartitionsOfManyBlocksNoneAndPartOfOneAsTheSingleProcessEstimator() {
        int block = CuwireModel.blockRows(FEATURES);
        assertEquals(CuwireModel.BLOCK_ROWS, block, "rows of 4 features fill a block of BLOCK_ROWS");
        // two blocks and a part, none, one block exactly, a part of one
        int[] sizes = {2 * block + 17, 0, block, 5};
        int total = IntStream.of(sizes).sum();
        Dataset<Row> frame = partitioned(sizes).cache();
        assertEquals(IntStream.of(sizes).boxed().toList(), partitionSizes(frame));
        double[][] all = new double[total][];
        for (int i = 0; i < total; i++) {
            all[i] = x(i);
        }
        SparkMlTest.Data train = SparkMlTest.data(SparkCluster.session(), 3, 61);
        CuwireLogisticRegressionModel lr =
                new CuwireLogisticRegression().setMaxIter(20).fit(train.frame());
        CuwireKMeansModel kmeans =
                new CuwireKMeans().setNClusters(3).setSeed(3L).fit(train.frame());
        CuwireRandomForestClassificationModel forest = new CuwireRandomForestClassifier()
                .setNEstimators(4)
                .setMaxDepth(5)
                .setSeed(4)
                .fit(train.frame());
        try (lr;
                kmeans;
                forest;
                NdArray x = NdArray.fromMatrix(CuwireSpark.deviceMemory(), all);
                NdArray lrProba = lr.estimator().predictProba(x);
                NdArray lrPredict = lr.estimator().predict(x);
                NdArray clusters = kmeans.estimator().predict(x);
                NdArray forestPredict = forest.estimator().predict(x)) {
            CuwireSpark.executorStats(true);
            Dataset<Row> out = lr.transform(frame);
            assertEquals(lr.transformSchema(frame.schema()), out.schema(), "the schema with its metadata");
            List<Row> rows = out.select("id", "probability", "prediction").collectAsList();
            assertEquals(total, CuwireModelsTest.scoredInExecutors(), "every row scored once, counted");
            assertEquals(total, rows.size());
            Object[] proba = byId(rows, 1, total);
            Object[] predicted = byId(rows, 2, total);
            double[] wantProba = SparkMlTest.toDoubles(lrProba);
            double[] wantPredicted = SparkMlTest.toDoubles(lrPredict);
            int k = lr.numClasses();
            for (int i = 0; i < total; i++) {
                assertArrayEquals(
                        Arrays.copyOfRange(wantProba, i * k, (i + 1) * k),
                        ((Vector) proba[i]).toArray(),
                        1e-12,
                        "probabilities of row " + i);
                assertEquals(wantPredicted[i], (double) predicted[i], 0.0, "prediction of row " + i);
            }
            assertEquals(IntStream.of(sizes).boxed().toList(), partitionSizes(out), "each partition's rows kept");

            Object[] cluster =
                    byId(kmeans.transform(frame).select("id", "prediction").collectAsList(), 1, total);
            double[] wantCluster = SparkMlTest.toDoubles(clusters);
            Object[] votes =
                    byId(forest.transform(frame).select("id", "prediction").collectAsList(), 1, total);
            double[] wantVotes = SparkMlTest.toDoubles(forestPredict);
            for (int i = 0; i < total; i++) {
                assertEquals(wantCluster[i], (int) cluster[i], 0.0, "cluster of row " + i);
                assertEquals(wantVotes[i], (double) votes[i], 0.0, "forest's class of row " + i);
            }
        } finally {
            frame.unpersist();
        }
    }

    @Test
    void shouldRunTheModelOnlyForAnActionOnRowsAndOnEveryRowItReads() {
        SparkMlTest.Data d = SparkMlTest.data(SparkCluster.session(), 2, 51);
        try (CuwireLogisticRegressionModel model =
                        new CuwireLogisticRegression().setMaxIter(10).fit(d.frame());
                CuwireLinearRegressionModel other = new CuwireLinearRegression().fit(d.frame())) {
            CuwireSpark.executorStats(true);
            Dataset<Row> labels = model.transform(d.frame()).select("label");
            assertEquals(List.of("label"), List.of(labels.columns()));
            assertEquals(0, fetched(), "a transform and its plans run nothing");
            assertEquals(0, CuwireModelsTest.scoredInExecutors());
            // Catalyst cannot look into the partitions' function: rows read are scored, though no model column is
            assertEquals(SparkMlTest.ROWS, labels.count());
            assertEquals(
                    SparkMlTest.ROWS,
                    CuwireModelsTest.scoredInExecutors(),
                    "a query that reads no model column scores every row it reads");
            assertTrue(fetched() >= 1, "the executors fetched the model to score them");

            CuwireSpark.executorStats(true);
            Dataset<Row> none = other.transform(partitioned(new int[] {0, 0, 0}));
            assertEquals(List.of(0, 0, 0), partitionSizes(none), "three partitions of no rows");
            assertEquals(0, fetched(), "a partition of no rows never fetches the model");
            assertEquals(0, CuwireModelsTest.scoredInExecutors());
        }
    }

    @Test
    void shouldRefuseNullFeaturesAndNullElementsWithTheirMessages() {
        SparkMlTest.Data d = SparkMlTest.data(SparkCluster.session(), 0, 53);
        Dataset<Row> arrays = d.frame().selectExpr("id", "array(f0, f1, f2, f3) as features", "label");
        try (CuwireLinearRegressionModel model = new CuwireLinearRegression().fit(arrays)) {
            Dataset<Row> holes = d.frame()
                    .selectExpr(
                            "id",
                            "if(id = 7, array(f0, cast(null as double), f2, f3), array(f0, f1, f2, f3)) as features");
            SparkException e = assertThrows(
                    SparkException.class, () -> model.transform(holes).collectAsList());
            assertTrue(messages(e).contains("features hold null at 1 (expected: numbers, and no null)"), messages(e));
            Dataset<Row> nulls =
                    arrays.selectExpr("id", "if(id = 7, cast(null as array<double>), features) as features");
            e = assertThrows(SparkException.class, () -> model.transform(nulls).collectAsList());
            assertTrue(
                    messages(e).contains("null features (expected: an ml vector or an array of numbers in every row)"),
                    messages(e));
        }
    }

    /** The messages of {@code t} and its causes. */
    private static String messages(Throwable t) {
        StringBuilder b = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause()) {
            b.append(c.getMessage()).append('\n');
        }
        return b.toString();
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
