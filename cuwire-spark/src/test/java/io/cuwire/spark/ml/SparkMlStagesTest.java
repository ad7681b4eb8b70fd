package io.cuwire.spark.ml;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.NdArray;
import io.cuwire.ml.Estimator;
import io.cuwire.ml.decomposition.PCA;
import io.cuwire.ml.ensemble.RandomForest;
import io.cuwire.ml.ensemble.RandomForestClassifier;
import io.cuwire.ml.ensemble.RandomForestRegressor;
import io.cuwire.ml.naivebayes.MultinomialNB;
import io.cuwire.ml.neighbors.KNeighborsClassifier;
import io.cuwire.serialize.OpaqueBlob;
import io.cuwire.spark.CuwireSpark;
import io.cuwire.spark.SparkCluster;
import io.cuwire.spark.TestFrames;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.apache.spark.ml.linalg.Vector;
import org.apache.spark.ml.linalg.VectorUDT;
import org.apache.spark.ml.util.DefaultParamsReader$;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The naive Bayes, forest, nearest-neighbor and PCA stages on the shared two-executor cluster, each against cuwire
 * in one process on the same rows, and each model saved and loaded through Spark ML persistence. The frames are
 * {@value #PARTS} contiguous slices of the rows, so that a forest's partitions are known to the test.
 */
@ExtendWith(SparkCluster.class)
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class SparkMlStagesTest {
    private static final int ROWS = 2000;
    private static final int PARTS = 4;

    /** Rows of {@code id}, {@code features} (an ml vector) and {@code label}, in {@value #PARTS} contiguous slices. */
    static Dataset<Row> frame(double[][] x, double[] y) {
        return TestFrames.frame(x, y, PARTS);
    }

    /** {@code classes} overlapping gaussian blobs in 4 dimensions, labelled {@code i % classes}. */
    static double[][] blobs(Random r, int classes, double spread, double[] labels) {
        double[][] centers = new double[classes][4];
        for (double[] c : centers) {
            for (int j = 0; j < 4; j++) {
                c[j] = r.nextDouble() * 6 - 3;
            }
        }
        double[][] x = new double[ROWS][4];
        for (int i = 0; i < ROWS; i++) {
            labels[i] = i % classes;
            for (int j = 0; j < 4; j++) {
                x[i][j] = centers[i % classes][j] + r.nextGaussian() * spread;
            }
        }
        return x;
    }

    static int[] ints(double[] labels) {
        return Arrays.stream(labels).mapToInt(v -> (int) v).toArray();
    }

    /** The predictions of a transformed frame, by id. */
    static double[] predictions(Dataset<Row> transformed, String column) {
        double[] out = new double[ROWS];
        Arrays.fill(out, Double.NaN);
        for (Row r : transformed.select("id", column).collectAsList()) {
            out[(int) r.getLong(0)] = r.getDouble(1);
        }
        return out;
    }

    /** The vectors of a transformed frame's column, by id. */
    static double[][] vectors(Dataset<Row> transformed, String column) {
        double[][] out = new double[ROWS][];
        for (Row r : transformed.select("id", column).collectAsList()) {
            out[(int) r.getLong(0)] = ((Vector) r.get(1)).toArray();
        }
        return out;
    }

    /** Saves {@code model}, loads it back, and checks that it appends the same column; closes both. */
    static void assertSavedAndLoaded(CuwireModel<?> model, Dataset<Row> frame, Path dir) throws IOException {
        String column = model.getOrDefault(model.appendedCol());
        String path = dir.resolve(model.uid()).toString();
        model.write().overwrite().save(path);
        try (model;
                CuwireModel<?> back = DefaultParamsReader$.MODULE$.loadParamsInstance(path, SparkCluster.session())) {
            assertEquals(model.getClass(), back.getClass());
            assertEquals(model.estimator().getClass(), back.estimator().getClass());
            assertEquals(model.estimator().params(), back.estimator().params());
            assertEquals(column, back.getOrDefault(back.appendedCol()));
            List<Row> before =
                    model.transform(frame).select("id", column).orderBy("id").collectAsList();
            List<Row> after =
                    back.transform(frame).select("id", column).orderBy("id").collectAsList();
            assertEquals(before, after, "the loaded model's " + column);
        }
    }

    /** Saves the unfitted stage and loads it with {@code load}; the cuwire estimator's parameters survive. */
    static <S extends CuwireEstimator<?, ?, ?>> void assertStageSavedAndLoaded(
            S stage, Path dir, Function<String, S> load) throws IOException {
        String path = dir.resolve("stage-" + stage.uid()).toString();
        stage.write().overwrite().save(path);
        S back = load.apply(path);
        assertEquals(stage.uid(), back.uid());
        try (Estimator a = stage.estimator();
                Estimator b = back.estimator()) {
            assertEquals(a.params(), b.params());
        }
    }

    @Test
    void shouldFitNaiveBayesAndNearestNeighborsEqualToTheSingleProcessFit(@TempDir Path dir) throws IOException {
        Random r = new Random(11);
        double[][] counts = new double[ROWS][4];
        double[] labels = new double[ROWS];
        for (int i = 0; i < ROWS; i++) {
            labels[i] = i % 3;
            for (int j = 0; j < 4; j++) {
                counts[i][j] = r.nextInt(6) + (j == i % 3 ? 2 : 0);
            }
        }
        Dataset<Row> nbFrame = frame(counts, labels);
        CuwireMultinomialNB nbStage = new CuwireMultinomialNB();
        nbStage.setParam("alpha", 0.5);
        assertEquals(Boolean.TRUE, nbStage.getOrDefault(nbStage.fitPrior()), "defaults are the cuwire estimator's");
        assertStageSavedAndLoaded(nbStage, dir, CuwireMultinomialNB::load);
        try (NdArray x = NdArray.fromMatrix(CuwireSpark.deviceMemory(), counts);
                NdArray y = NdArray.fromArray(CuwireSpark.deviceMemory(), ints(labels), ROWS);
                MultinomialNB single = new MultinomialNB().alpha(0.5).fit(x, y);
                NdArray expected = single.predict(x)) {
            var model = nbStage.fit(nbFrame);
            MultinomialNB fitted = model.estimator();
            assertEquals(3, fitted.classes());
            assertArrayEquals(
                    single.featureLogProb().toDoubleArray(),
                    fitted.featureLogProb().toDoubleArray(),
                    1e-12);
            assertArrayEquals(
                    single.classLogPrior().toDoubleArray(),
                    fitted.classLogPrior().toDoubleArray(),
                    1e-12);
            double[] got = predictions(model.transform(nbFrame), "prediction");
            assertArrayEquals(SparkMlTest.toDoubles(expected), got, 0.0);
            assertSavedAndLoaded(model, nbFrame, dir);
        }

        double[] knnLabels = new double[ROWS];
        double[][] points = blobs(r, 3, 2.0, knnLabels);
        Dataset<Row> knnFrame = frame(points, knnLabels).withColumnRenamed("label", "cls");
        CuwireKNeighborsClassifier knnStage = new CuwireKNeighborsClassifier();
        knnStage.setParam("nNeighbors", 7).setLabelCol("cls").setPredictionCol("vote");
        assertStageSavedAndLoaded(knnStage, dir, CuwireKNeighborsClassifier::load);
        try (NdArray x = NdArray.fromMatrix(CuwireSpark.deviceMemory(), points);
                NdArray y = NdArray.fromArray(CuwireSpark.deviceMemory(), ints(knnLabels), ROWS);
                KNeighborsClassifier single =
                        new KNeighborsClassifier().nNeighbors(7).fit(x, y);
                NdArray expected = single.predict(x)) {
            var model = knnStage.fit(knnFrame);
            KNeighborsClassifier fitted = model.estimator();
            assertTrue(single.fitX().contentEquals(fitted.fitX()), "the partitions' rows, in order, on the driver");
            double[] want = SparkMlTest.toDoubles(expected);
            double[] got = predictions(model.transform(knnFrame), "vote");
            assertArrayEquals(want, got, 0.0);
            long wrong = 0;
            for (int i = 0; i < ROWS; i++) {
                wrong += want[i] == knnLabels[i] ? 0 : 1;
            }
            assertTrue(wrong > 0 && wrong < ROWS / 2, wrong + " wrong: the classes overlap, the vote is not trivial");
            assertSavedAndLoaded(model, knnFrame, dir);
        }
    }

    /** The in-process forest from the same {@value #PARTS} slices: each slice's partial, merged in order. */
    static <F extends RandomForest> F mergedForest(F forest, double[][] x, double[] y, boolean classes) {
        List<OpaqueBlob> parts = new ArrayList<>();
        try {
            for (int p = 0; p < PARTS; p++) {
                int from = ROWS * p / PARTS;
                int to = ROWS * (p + 1) / PARTS;
                try (NdArray xs = NdArray.fromMatrix(CuwireSpark.deviceMemory(), Arrays.copyOfRange(x, from, to));
                        NdArray ys = classes
                                ? NdArray.fromArray(
                                        CuwireSpark.deviceMemory(), ints(Arrays.copyOfRange(y, from, to)), to - from)
                                : NdArray.fromArray(
                                        CuwireSpark.deviceMemory(), Arrays.copyOfRange(y, from, to), to - from)) {
                    parts.add(forest.partial(xs, ys, p, PARTS));
                }
            }
            switch (forest) {
                case RandomForestClassifier c -> c.merge(parts);
                case RandomForestRegressor g -> g.merge(parts);
            }
            return forest;
        } finally {
            parts.forEach(OpaqueBlob::close);
        }
    }

    @Test
    void shouldFitForestsEqualToTheMergedFitOfTheSamePartitions(@TempDir Path dir) throws IOException {
        Random r = new Random(12);
        double[] labels = new double[ROWS];
        double[][] x = blobs(r, 3, 1.5, labels);
        Dataset<Row> classes = frame(x, labels);
        CuwireRandomForestClassifier stage = new CuwireRandomForestClassifier();
        stage.setParam("nEstimators", 12).setParam("maxDepth", 6).setParam("seed", 3L);
        assertEquals(2, stage.getOrDefault(stage.minSamplesSplit()), "defaults are the cuwire estimator's");
        assertStageSavedAndLoaded(stage, dir, CuwireRandomForestClassifier::load);
        Map<String, Object> params = Map.of("nEstimators", 12, "maxDepth", 6, "seed", 3L, "nClasses", 3);
        try (NdArray all = NdArray.fromMatrix(CuwireSpark.deviceMemory(), x);
                RandomForestClassifier merged = mergedForest(
                        (RandomForestClassifier) new RandomForestClassifier().setParams(params), x, labels, true);
                NdArray expected = merged.predict(all)) {
            var model = stage.fit(classes);
            RandomForestClassifier fitted = model.estimator();
            assertEquals(12, fitted.info().trees());
            double[] want = SparkMlTest.toDoubles(expected);
            assertArrayEquals(want, predictions(model.transform(classes), "prediction"), 0.0);
            long right = 0;
            for (int i = 0; i < ROWS; i++) {
                right += want[i] == labels[i] ? 1 : 0;
            }
            assertTrue(right > ROWS * 0.7 && right < ROWS, right + " of " + ROWS + " right");
            assertSavedAndLoaded(model, classes, dir);
        }

        double[] targets = new double[ROWS];
        for (int i = 0; i < ROWS; i++) {
            targets[i] = 2 * x[i][0] - x[i][1] + 0.5 * x[i][2] * x[i][3] + r.nextGaussian() * 0.1;
        }
        Dataset<Row> values = frame(x, targets);
        CuwireRandomForestRegressor regressor = new CuwireRandomForestRegressor();
        regressor
                .setParam("nEstimators", 8)
                .setParam("maxDepth", 8)
                .setParam("seed", 5L)
                .setParam("maxFeatures", 1.0);
        try (NdArray all = NdArray.fromMatrix(CuwireSpark.deviceMemory(), x);
                RandomForestRegressor merged = mergedForest(
                        (RandomForestRegressor) new RandomForestRegressor()
                                .setParams(Map.of("nEstimators", 8, "maxDepth", 8, "seed", 5L, "maxFeatures", 1.0)),
                        x,
                        targets,
                        false);
                NdArray expected = merged.predict(all)) {
            var model = regressor.fit(values);
            assertEquals(8, (model.estimator()).info().trees());
            double[] want = expected.toDoubleArray();
            assertArrayEquals(want, predictions(model.transform(values), "prediction"), 1e-9);
            double sse = 0;
            double sst = 0;
            double mean = Arrays.stream(targets).average().orElseThrow();
            for (int i = 0; i < ROWS; i++) {
                sse += (want[i] - targets[i]) * (want[i] - targets[i]);
                sst += (targets[i] - mean) * (targets[i] - mean);
            }
            assertTrue(1 - sse / sst > 0.8, "training R^2 " + (1 - sse / sst));
            assertSavedAndLoaded(model, values, dir);
        }
    }

    @Test
    void shouldFindTheSingleProcessPcaComponentsAndWriteVectors(@TempDir Path dir) throws IOException {
        Random r = new Random(13);
        double[][] x = new double[ROWS][4];
        for (double[] row : x) {
            double z0 = r.nextGaussian();
            double z1 = r.nextGaussian();
            row[0] = 5 * z0 + 1;
            row[1] = 3 * z1 + z0;
            row[2] = 1.5 * r.nextGaussian() - 2;
            row[3] = 0.5 * r.nextGaussian() + 0.2 * z1;
        }
        Dataset<Row> frame = frame(x, new double[ROWS]).drop("label");
        CuwirePCA stage = new CuwirePCA();
        stage.setParam("nComponents", 2);
        stage.setOutputCol("projected").setCenter(true);
        assertStageSavedAndLoaded(stage, dir, CuwirePCA::load);
        assertInstanceOf(
                VectorUDT.class,
                stage.transformSchema(frame.schema()).apply("projected").dataType());
        try (NdArray all = NdArray.fromMatrix(CuwireSpark.deviceMemory(), x);
                PCA single = new PCA().nComponents(2).fit(all);
                NdArray projected = single.transform(all)) {
            var model = stage.fit(frame);
            PCA fitted = model.estimator();
            double[][] a = single.components().toDoubleMatrix();
            double[][] b = fitted.components().toDoubleMatrix();
            double[] sign = new double[2];
            for (int c = 0; c < 2; c++) {
                double dot = 0;
                for (int j = 0; j < 4; j++) {
                    dot += a[c][j] * b[c][j];
                }
                sign[c] = Math.signum(dot);
                for (int j = 0; j < 4; j++) {
                    assertEquals(a[c][j], sign[c] * b[c][j], 1e-9, "component " + c + " up to sign");
                }
            }
            assertArrayEquals(
                    single.explainedVariance().toDoubleArray(),
                    fitted.explainedVariance().toDoubleArray(),
                    1e-9);
            Dataset<Row> out = model.transform(frame);
            assertInstanceOf(VectorUDT.class, out.schema().apply("projected").dataType());
            double[][] want = projected.toDoubleMatrix();
            double[][] got = vectors(out, "projected");
            for (int i = 0; i < ROWS; i++) {
                assertEquals(2, got[i].length);
                for (int c = 0; c < 2; c++) {
                    assertEquals(want[i][c], sign[c] * got[i][c], 1e-8, "row " + i + ", component " + c);
                }
            }
            assertSavedAndLoaded(model, frame, dir);
        }
    }
}
