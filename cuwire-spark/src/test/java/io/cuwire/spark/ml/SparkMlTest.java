package io.cuwire.spark.ml;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.NdArray;
import io.cuwire.ml.cluster.KMeans;
import io.cuwire.ml.linear.LinearRegression;
import io.cuwire.ml.linear.LogisticRegression;
import io.cuwire.spark.CuwireSpark;
import io.cuwire.spark.NodeStats;
import io.cuwire.spark.SparkCluster;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.spark.ml.Pipeline;
import org.apache.spark.ml.PipelineModel;
import org.apache.spark.ml.PipelineStage;
import org.apache.spark.ml.feature.VectorAssembler;
import org.apache.spark.ml.linalg.VectorUDT;
import org.apache.spark.ml.linalg.Vectors;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Spark ML stages on a two-executor local cluster, each against the same cuwire estimator fitted in one
 * process on the same rows: fitted state and predictions equal within tolerance; saved and loaded through Spark
 * ML persistence; released.
 */
@ExtendWith(SparkCluster.class)
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class SparkMlTest {
    static final int ROWS = 3000;
    private static final int FEATURES = 4;
    private static BufferAllocator<HostBuffer> host;

    @BeforeAll
    static void memory() {
        host = BufferAllocator.host("spark-ml-test", BufferAllocator.UNLIMITED);
    }

    @AfterAll
    static void leaks() {
        host.close();
    }

    /** Rows of {@code id}, {@code features} (an ml vector), {@code f0..f3} (doubles), {@code label}. */
    record Data(double[][] x, double[] y, Dataset<Row> frame) {}

    /** Linear targets with noise, or {@code classes} blobs with class labels when {@code classes > 0}. */
    static Data data(SparkSession spark, int classes, long seed) {
        Random r = new Random(seed);
        double[] w = {1.5, -2.0, 0.5, 3.0};
        double[][] centers = new double[Math.max(classes, 1)][FEATURES];
        for (double[] c : centers) {
            for (int j = 0; j < FEATURES; j++) {
                c[j] = r.nextDouble() * 40 - 20;
            }
        }
        double[][] x = new double[ROWS][FEATURES];
        double[] y = new double[ROWS];
        List<Row> rows = new ArrayList<>();
        for (int i = 0; i < ROWS; i++) {
            int k = classes > 0 ? i % classes : 0;
            double t = 0.25;
            for (int j = 0; j < FEATURES; j++) {
                x[i][j] = classes > 0 ? centers[k][j] + r.nextGaussian() : r.nextGaussian() * 3;
                t += w[j] * x[i][j];
            }
            y[i] = classes > 0 ? k : t + r.nextGaussian() * 0.1;
            rows.add(RowFactory.create((long) i, Vectors.dense(x[i]), x[i][0], x[i][1], x[i][2], x[i][3], y[i]));
        }
        StructType schema = new StructType(new StructField[] {
            new StructField("id", DataTypes.LongType, false, Metadata.empty()),
            new StructField("features", new VectorUDT(), false, Metadata.empty()),
            new StructField("f0", DataTypes.DoubleType, false, Metadata.empty()),
            new StructField("f1", DataTypes.DoubleType, false, Metadata.empty()),
            new StructField("f2", DataTypes.DoubleType, false, Metadata.empty()),
            new StructField("f3", DataTypes.DoubleType, false, Metadata.empty()),
            new StructField("label", DataTypes.DoubleType, false, Metadata.empty())
        });
        return new Data(x, y, spark.createDataFrame(rows, schema).repartition(4));
    }

    /** The predictions of a transformed frame, by id. */
    static double[] predictions(Dataset<Row> transformed, String column) {
        double[] out = new double[ROWS];
        Arrays.fill(out, Double.NaN);
        for (Row r : transformed.select("id", column).collectAsList()) {
            out[(int) r.getLong(0)] = ((Number) r.get(1)).doubleValue();
        }
        return out;
    }

    static double[] toDoubles(NdArray a) {
        return switch (a.dtype()) {
            case FLOAT64 -> a.toDoubleArray();
            case INT32 -> Arrays.stream(a.toIntArray()).asDoubleStream().toArray();
            default -> Arrays.stream(a.toLongArray()).asDoubleStream().toArray();
        };
    }

    @Test
    void shouldFitLinearRegressionEqualToTheSingleProcessFitAndPredictInTheExecutors() {
        Data d = data(SparkCluster.session(), 0, 1);
        CuwireSpark.executorStats(true);
        try (var model = new CuwireLinearRegression().fit(d.frame());
                NdArray x = NdArray.fromMatrix(host, d.x());
                NdArray y = NdArray.fromArray(host, d.y(), ROWS);
                LinearRegression single = new LinearRegression().fit(x, y);
                NdArray expected = single.predict(x)) {
            LinearRegression fitted = (LinearRegression) model.estimator();
            assertArrayEquals(single.coef().toDoubleArray(), fitted.coef().toDoubleArray(), 1e-9);
            assertEquals(single.intercept(), fitted.intercept(), 1e-9);
            assertArrayEquals(expected.toDoubleArray(), predictions(model.transform(d.frame()), "prediction"), 1e-8);
            long fetched = 0;
            long partialFits = 0;
            long scored = 0;
            for (NodeStats s : CuwireSpark.executorStats(false)) {
                assertTrue(s.fetched() <= 1, "an executor fetches a model once: " + s);
                fetched += s.fetched();
                // the emulated device computes on the CPU backend; a CUDA executor's stages would report cuda
                assertTrue(Set.of("cpu").containsAll(s.backends()), "the backends of " + s);
                partialFits += s.partialFits().getOrDefault("cpu", 0L);
                scored += s.scoredRows().getOrDefault("cpu", 0L);
            }
            assertTrue(fetched >= 1, "the executors fetched the model");
            assertTrue(partialFits >= 4, partialFits + " partial fits on the cpu backend for 4 partitions");
            assertTrue(scored >= ROWS, scored + " rows scored on the cpu backend for " + ROWS);
        }
        // closed, and the frame its transform made is garbage: after a GC the executors' copies are evicted
        SparkMlLifetimeTest.gcUntil(
                () -> CuwireSpark.executorStats(false).stream().allMatch(s -> s.cachedModels() == 0),
                () -> "executors still cache the model: " + CuwireSpark.executorStats(false));
    }

    @Test
    void shouldFindTheSingleProcessKMeansCentersOnArrayColumns() {
        Data d = data(SparkCluster.session(), 3, 2);
        Dataset<Row> arrays = d.frame().selectExpr("id", "array(f0, f1, f2, f3) as features");
        CuwireKMeans stage = new CuwireKMeans();
        stage.setParam("nClusters", 3).setParam("seed", 7L);
        assertEquals(20, stage.getMaxIter(), "defaults are MLlib's");
        try (var model = stage.fit(arrays);
                NdArray x = NdArray.fromMatrix(host, d.x());
                KMeans single = new KMeans().nClusters(3).seed(7).maxIter(20).fit(x)) {
            KMeans fitted = model.estimator();
            double[][] a = sorted(fitted.clusterCenters().toDoubleMatrix());
            double[][] b = sorted(single.clusterCenters().toDoubleMatrix());
            for (int k = 0; k < 3; k++) {
                assertArrayEquals(b[k], a[k], 1e-6);
            }
            // Executors predict as the driver's copy of the fitted model does.
            try (NdArray onDevice = NdArray.fromMatrix(CuwireSpark.deviceMemory(), d.x());
                    NdArray expected = fitted.predict(onDevice)) {
                assertArrayEquals(toDoubles(expected), predictions(model.transform(arrays), "prediction"), 0.0);
            }
        }
    }

    private static double[][] sorted(double[][] centers) {
        double[][] c = centers.clone();
        Arrays.sort(c, Comparator.comparingDouble((double[] v) -> v[0]));
        return c;
    }

    @Test
    void shouldFitLogisticRegressionAsTheSingleProcessFit() {
        Data d = data(SparkCluster.session(), 3, 3);
        CuwireLogisticRegression stage = new CuwireLogisticRegression();
        stage.setParam("c", 0.5);
        int[] labels = Arrays.stream(d.y()).mapToInt(v -> (int) v).toArray();
        try (var model = stage.fit(d.frame());
                NdArray x = NdArray.fromMatrix(host, d.x());
                NdArray y = NdArray.fromArray(host, labels, ROWS);
                LogisticRegression single = new LogisticRegression().c(0.5).fit(x, y);
                NdArray expected = single.predict(x)) {
            LogisticRegression fitted = model.estimator();
            assertEquals(3, fitted.classes());
            assertArrayEquals(single.coef().toDoubleArray(), fitted.coef().toDoubleArray(), 1e-3);
            double[] got = predictions(model.transform(d.frame()), "prediction");
            assertArrayEquals(toDoubles(expected), got, 0.0);
            long right = 0;
            for (int i = 0; i < ROWS; i++) {
                right += got[i] == d.y()[i] ? 1 : 0;
            }
            assertTrue(right > ROWS * 0.9, right + " of " + ROWS + " right");
        }
    }

    @Test
    void shouldSaveAndLoadAPipelineThroughSparkMlPersistence(@TempDir Path dir) throws Exception {
        Data d = data(SparkCluster.session(), 0, 4);
        Dataset<Row> columns = d.frame().drop("features");
        CuwireRidge ridge = new CuwireRidge();
        ridge.setParam("alpha", 2.0);
        VectorAssembler assembler = new VectorAssembler()
                .setInputCols(new String[] {"f0", "f1", "f2", "f3"})
                .setOutputCol("features");
        Pipeline pipeline = new Pipeline().setStages(new PipelineStage[] {assembler, ridge});
        pipeline.write().overwrite().save(dir.resolve("pipeline").toString());
        Pipeline loadedPipeline = Pipeline.load(dir.resolve("pipeline").toString());
        CuwireRidge loadedRidge = (CuwireRidge) loadedPipeline.getStages()[1];
        assertEquals(2.0, loadedRidge.getOrDefault(loadedRidge.alpha()));
        assertEquals(ridge.uid(), loadedRidge.uid());

        PipelineModel fitted = loadedPipeline.fit(columns);
        double[] before = predictions(fitted.transform(columns), "prediction");
        String path = dir.resolve("model").toString();
        fitted.write().overwrite().save(path);
        assertTrue(Files.size(dir.resolve("model/stages/1_" + ridge.uid() + "/cuwire/model.cuwire")) > 0);
        CuwireLinearRegressionModel original = (CuwireLinearRegressionModel) fitted.stages()[1];
        PipelineModel loaded = PipelineModel.load(path);
        CuwireLinearRegressionModel back = (CuwireLinearRegressionModel) loaded.stages()[1];
        try (original;
                back) {
            assertEquals(original.uid(), back.uid());
            assertEquals(original.estimator().params(), back.estimator().params());
            assertArrayEquals(before, predictions(loaded.transform(columns), "prediction"), 0.0);
        }
    }
}
