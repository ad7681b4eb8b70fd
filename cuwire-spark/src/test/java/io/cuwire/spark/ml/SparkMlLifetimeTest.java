package io.cuwire.spark.ml;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.cuwire.spark.CuwireSpark;
import io.cuwire.spark.NodeStats;
import io.cuwire.spark.SparkCluster;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.ml.Pipeline;
import org.apache.spark.ml.PipelineModel;
import org.apache.spark.ml.PipelineStage;
import org.apache.spark.ml.evaluation.Evaluator;
import org.apache.spark.ml.linalg.VectorUDT;
import org.apache.spark.ml.linalg.Vectors;
import org.apache.spark.ml.param.ParamMap;
import org.apache.spark.ml.tuning.CrossValidator;
import org.apache.spark.ml.tuning.CrossValidatorModel;
import org.apache.spark.ml.tuning.ParamGridBuilder;
import org.apache.spark.ml.tuning.TrainValidationSplit;
import org.apache.spark.ml.tuning.TrainValidationSplitModel;
import org.apache.spark.ml.util.Identifiable;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Model lifetime under Spark's laziness, for every stage: the DataFrame a model returns works after the model is
 * dropped and a GC ran; {@code transform(df, paramMap)} (a copy that is garbage at once) too; closing a copy does not
 * break the original nor the original its copies; {@code CrossValidator} with an evaluator that forces a GC before
 * each evaluation, {@code TrainValidationSplit}, and {@code Pipeline} / {@code PipelineModel} persistence work; and
 * once models and DataFrames are dropped and a GC ran, no device bytes remain on the driver or the executors. The
 * scenarios run 20 times each ({@code -Dcuwire.spark.lifetimeRepeats=N} changes that), run {@code r} with stage
 * {@code r % 9}, so that every stage takes part at least twice; with {@code -Dcuwire.spark.lifetimeEveryStage=true}
 * every run takes every stage (nine times the Spark jobs: 23 minutes on two busy cores; add
 * {@code -Djunit.jupiter.execution.timeout.mode=disabled}, as a method can outrun the class's timeout). {@value #ROWS}
 * rows in two partitions, stages set to fit in a few Spark jobs. Each step runs in a method of its own, so that no
 * local variable of a test keeps a model or a frame reachable.
 */
@ExtendWith(SparkCluster.class)
@Timeout(value = 15, unit = TimeUnit.MINUTES)
class SparkMlLifetimeTest {
    static final int REPEATS = Integer.getInteger("cuwire.spark.lifetimeRepeats", 20);
    static final boolean EVERY_STAGE = Boolean.getBoolean("cuwire.spark.lifetimeEveryStage");
    static final int ROWS = 40;

    /** {@code id}, {@code features} (3 non-negative values, shifted by class) and {@code label} (0 or 1). */
    static Dataset<Row> frame() {
        Random r = new Random(21);
        List<Row> rows = new ArrayList<>();
        for (int i = 0; i < ROWS; i++) {
            int label = i % 2;
            rows.add(RowFactory.create(
                    (long) i,
                    Vectors.dense(r.nextInt(4) + 3.0 * label, r.nextInt(4), r.nextInt(4) + 2.0 * (1 - label)),
                    (double) label));
        }
        StructType schema = new StructType(new StructField[] {
            new StructField("id", DataTypes.LongType, false, Metadata.empty()),
            new StructField("features", new VectorUDT(), false, Metadata.empty()),
            new StructField("label", DataTypes.DoubleType, false, Metadata.empty())
        });
        JavaSparkContext jsc =
                JavaSparkContext.fromSparkContext(SparkCluster.session().sparkContext());
        return SparkCluster.session().createDataFrame(jsc.parallelize(rows, 2), schema);
    }

    /** Every stage, set to fit in a few Spark jobs on the small frame. */
    static List<Supplier<CuwireEstimator<?, ?, ?>>> stages() {
        return List.of(
                CuwireLinearRegression::new,
                () -> new CuwireRidge().setParam("alpha", 0.5),
                () -> new CuwireKMeans()
                        .setParam("nClusters", 2)
                        .setParam("maxIter", 2)
                        .setParam("seed", 1L),
                () -> new CuwireLogisticRegression().setParam("maxIter", 3),
                CuwireMultinomialNB::new,
                () -> new CuwireRandomForestClassifier()
                        .setParam("nEstimators", 2)
                        .setParam("maxDepth", 3),
                () -> new CuwireRandomForestRegressor()
                        .setParam("nEstimators", 2)
                        .setParam("maxDepth", 3),
                () -> new CuwireKNeighborsClassifier().setParam("nNeighbors", 3),
                () -> new CuwirePCA().setParam("nComponents", 2));
    }

    /** The indices of the stages run {@code rep} takes: {@code rep % count}, or every one. */
    static List<Integer> stagesOfRun(int rep, int count) {
        List<Integer> out = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            if (EVERY_STAGE || i == rep % count) {
                out.add(i);
            }
        }
        return out;
    }

    /**
     * Checks that the runs of a scenario all passed: {@code passed[i]} runs of stage {@code i} got through their
     * assertions, as many as {@link #stagesOfRun} asked for in {@code REPEATS} runs (with 20, every stage at least
     * twice); prints the count.
     */
    static void allRunsPassed(String scenario, int[] passed) {
        int[] expected = new int[passed.length];
        for (int rep = 0; rep < REPEATS; rep++) {
            for (int i : stagesOfRun(rep, passed.length)) {
                expected[i]++;
            }
        }
        assertArrayEquals(expected, passed, scenario + ": runs by stage");
        System.out.println(scenario + ": " + Arrays.stream(passed).sum() + " of "
                + Arrays.stream(expected).sum() + " runs passed, by stage " + Arrays.toString(passed));
    }

    /** The column a stage's models append. */
    static String appended(CuwireEstimator<?, ?, ?> stage) {
        return stage.appendedCol();
    }

    /** A transformed frame and the state its model held (the model itself is garbage once this is returned). */
    record Transformed(Dataset<Row> frame, FittedState state, String column) {}

    static Transformed fitAndTransform(CuwireEstimator<?, ?, ?> stage, Dataset<Row> df) {
        CuwireModel<?> model = stage.fit(df);
        return new Transformed(model.transform(df), model.state(), appended(stage));
    }

    /** Runs GCs until {@code done}; fails after 60 s naming {@code what}. */
    static void gcUntil(BooleanSupplier done, Supplier<String> what) {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!done.getAsBoolean()) {
            if (System.nanoTime() > end) {
                fail("after 60 s of GCs: " + what.get());
            }
            System.gc();
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                fail("interrupted");
            }
        }
    }

    /** The appended column of {@code t} on every row, computed in the executors. */
    static void assertComputed(Dataset<Row> frame, String column, long rows) {
        List<Row> got = frame.select(column).collectAsList();
        assertEquals(rows, got.size());
        for (Row r : got) {
            assertFalse(r.isNullAt(0), column);
        }
    }

    @Test
    void shouldKeepATransformedFrameAliveBeyondItsModelThroughAGc() {
        Dataset<Row> df = frame();
        List<Supplier<CuwireEstimator<?, ?, ?>>> stages = stages();
        List<FittedState> all = new ArrayList<>();
        int[] passed = new int[stages.size()];
        for (int rep = 0; rep < REPEATS; rep++) {
            for (int i : stagesOfRun(rep, stages.size())) {
                all.add(fitTransformGcAndAct(stages.get(i).get(), df));
                passed[i]++;
            }
        }
        allRunsPassed("fit(df).transform(df), a GC, an action", passed);
        gcUntil(() -> all.stream().allMatch(FittedState::isReleased), () -> "states held after the frames went");
        assertNoDeviceBytes();
    }

    /** {@code stage.fit(df).transform(df)}, a GC that collects the model, then an action; the state it held. */
    private static FittedState fitTransformGcAndAct(CuwireEstimator<?, ?, ?> stage, Dataset<Row> df) {
        Transformed t = fitAndTransform(stage, df);
        gcUntil(
                () -> t.state().holds() == 1,
                () -> stage + ": the model was not collected; holds "
                        + t.state().holds());
        assertFalse(t.state().isReleased(), "the frame's plan holds the state");
        assertComputed(t.frame(), t.column(), ROWS);
        return t.state();
    }

    @Test
    void shouldKeepTransformWithParamMapAndClosedCopiesWorking() {
        Dataset<Row> df = frame();
        List<FittedState> states = transformWithParamMaps(df);
        gcUntil(
                () -> states.stream().allMatch(FittedState::isReleased),
                () -> "states held after everything went: "
                        + states.stream().map(FittedState::holds).toList());
        assertNoDeviceBytes();
    }

    /** A model per stage, transformed with param maps and copied, copies and models closed; their states. */
    private static List<FittedState> transformWithParamMaps(Dataset<Row> df) {
        List<CuwireModel<?>> models = new ArrayList<>();
        List<FittedState> states = new ArrayList<>();
        for (Supplier<CuwireEstimator<?, ?, ?>> s : stages()) {
            CuwireModel<?> m = s.get().fit(df);
            models.add(m);
            states.add(m.state());
        }
        List<Dataset<Row>> frames = new ArrayList<>();
        int[] framesOf = new int[models.size()];
        int[] passed = new int[models.size()];
        for (int rep = 0; rep < REPEATS; rep++) {
            List<Dataset<Row>> these = new ArrayList<>();
            for (int i : stagesOfRun(rep, models.size())) {
                CuwireModel<?> m = models.get(i);
                // what CrossValidator and TrainValidationSplit call: a copy with the params, garbage at once
                these.add(m.transform(df, new ParamMap().put(m.appendedCol(), "out" + rep)));
                framesOf[i]++;
            }
            frames.addAll(these);
            gcUntil(
                    () -> {
                        for (int i = 0; i < states.size(); i++) {
                            if (states.get(i).holds() != 1 + framesOf[i]) {
                                return false;
                            }
                        }
                        return true;
                    },
                    () -> "copies not collected: holds "
                            + states.stream().map(FittedState::holds).toList());
            for (Dataset<Row> f : these) {
                assertComputed(f, "out" + rep, ROWS);
            }
            for (int i : stagesOfRun(rep, models.size())) {
                passed[i]++;
            }
        }
        allRunsPassed("transform(df, paramMap), a GC, an action", passed);
        for (CuwireModel<?> m : models) {
            closeCopiesAndOriginal(m, df);
        }
        return states;
    }

    /** Closing a copy does not break the original, nor closing the original its copies or the frames it made. */
    private static void closeCopiesAndOriginal(CuwireModel<?> m, Dataset<Row> df) {
        String column = m.getOrDefault(m.appendedCol());
        CuwireModel<?> copy = m.copy(ParamMap.empty());
        copy.close();
        assertTrue(copy.isClosed());
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> copy.transform(df));
        assertTrue(e.getMessage().contains("was closed"), e.getMessage());
        assertComputed(m.transform(df), column, ROWS);
        CuwireModel<?> second = m.copy(ParamMap.empty());
        Dataset<Row> before = m.transform(df);
        m.close();
        m.close();
        assertComputed(second.transform(df), column, ROWS);
        assertComputed(before, column, ROWS);
        second.close();
    }

    /** An evaluator that forces a GC before it computes the column (the model copy being evaluated is garbage). */
    static final class GcFirstEvaluator extends Evaluator {
        private static final long serialVersionUID = 1L;
        private final String uid;
        private final String column;

        GcFirstEvaluator(String uid, String column) {
            this.uid = uid;
            this.column = column;
        }

        @Override
        public double evaluate(Dataset<?> dataset) {
            // the copy being evaluated is garbage: collect it, and give the cleaner a moment to drop its hold
            long cleaned = FittedState.cleaned();
            System.gc();
            for (int i = 0; i < 50 && FittedState.cleaned() == cleaned; i++) {
                try {
                    Thread.sleep(10);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
            List<Row> rows = dataset.select(column).collectAsList();
            for (Row r : rows) {
                assertFalse(r.isNullAt(0), column);
            }
            return rows.size();
        }

        @Override
        public String uid() {
            return uid;
        }

        @Override
        public GcFirstEvaluator copy(ParamMap extra) {
            return new GcFirstEvaluator(uid, column);
        }
    }

    @Test
    void shouldWorkInCrossValidatorAndTrainValidationSplitWithEveryStage() {
        Dataset<Row> df = frame();
        List<FittedState> states = new ArrayList<>();
        List<Supplier<CuwireEstimator<?, ?, ?>>> stages = stages();
        int[] passed = new int[stages.size()];
        for (int rep = 0; rep < REPEATS; rep++) {
            for (int i : stagesOfRun(rep, stages.size())) {
                states.add(crossValidate(stages.get(i).get(), df, rep));
                passed[i]++;
            }
        }
        allRunsPassed("CrossValidator, a GC before each evaluation", passed);
        for (Supplier<CuwireEstimator<?, ?, ?>> s : stages) {
            states.add(trainValidationSplit(s.get(), df));
        }
        gcUntil(() -> states.stream().allMatch(FittedState::isReleased), () -> "states held after the models went");
        assertNoDeviceBytes();
    }

    /** A 2-fold cross-validation of {@code stage} whose evaluator forces a GC; the best model's state. */
    private static FittedState crossValidate(CuwireEstimator<?, ?, ?> stage, Dataset<Row> df, long seed) {
        CrossValidatorModel cv = new CrossValidator()
                .setEstimator(stage)
                .setEvaluator(new GcFirstEvaluator(Identifiable.randomUID("gcFirst"), appended(stage)))
                .setEstimatorParamMaps(new ParamGridBuilder().build())
                .setNumFolds(2)
                .setSeed(seed)
                .fit(df);
        assertEquals(1, cv.avgMetrics().length);
        assertTrue(cv.avgMetrics()[0] > 0, stage + ": rows evaluated");
        assertComputed(cv.transform(df), appended(stage), ROWS);
        return ((CuwireModel<?>) cv.bestModel()).state();
    }

    /** A train-validation split of {@code stage} whose evaluator forces a GC; the best model's state. */
    private static FittedState trainValidationSplit(CuwireEstimator<?, ?, ?> stage, Dataset<Row> df) {
        TrainValidationSplitModel tvs = new TrainValidationSplit()
                .setEstimator(stage)
                .setEvaluator(new GcFirstEvaluator(Identifiable.randomUID("gcFirst"), appended(stage)))
                .setEstimatorParamMaps(new ParamGridBuilder().build())
                .setTrainRatio(0.5)
                .setSeed(5)
                .fit(df);
        assertComputed(tvs.transform(df), appended(stage), ROWS);
        return ((CuwireModel<?>) tvs.bestModel()).state();
    }

    @Test
    void shouldSaveAndLoadAPipelineOfEveryStage(@TempDir Path dir) throws IOException {
        Dataset<Row> df = frame();
        savePipelineAndModel(df, dir);
        assertNoDeviceBytes();
    }

    /**
     * Every stage in one pipeline, each appending a column of its own: saved, loaded, fitted; the fitted pipeline
     * saved and loaded appends the same columns.
     */
    private static void savePipelineAndModel(Dataset<Row> df, Path dir) throws IOException {
        List<Supplier<CuwireEstimator<?, ?, ?>>> suppliers = stages();
        PipelineStage[] stages = new PipelineStage[suppliers.size()];
        String[] columns = new String[stages.length + 1];
        columns[0] = "id";
        for (int i = 0; i < stages.length; i++) {
            CuwireEstimator<?, ?, ?> stage = suppliers.get(i).get();
            columns[i + 1] = "out" + i;
            stage.set(stage.getParam(stage instanceof CuwirePCA ? "outputCol" : "predictionCol"), columns[i + 1]);
            if (stage.hasParam("rawPredictionCol")) {
                stage.set(stage.getParam("rawPredictionCol"), "raw" + i);
                stage.set(stage.getParam("probabilityCol"), "probability" + i);
            }
            stages[i] = stage;
        }
        Pipeline pipeline = new Pipeline().setStages(stages);
        String path = dir.resolve("pipeline").toString();
        pipeline.write().overwrite().save(path);
        Pipeline loadedPipeline = Pipeline.load(path);
        for (int i = 0; i < stages.length; i++) {
            assertEquals(stages[i].uid(), loadedPipeline.getStages()[i].uid());
            assertEquals(stages[i].getClass(), loadedPipeline.getStages()[i].getClass());
        }
        PipelineModel fitted = loadedPipeline.fit(df);
        List<Row> before =
                fitted.transform(df).selectExpr(columns).orderBy("id").collectAsList();
        String modelPath = dir.resolve("model").toString();
        fitted.write().overwrite().save(modelPath);
        PipelineModel loaded = PipelineModel.load(modelPath);
        assertEquals(
                before,
                loaded.transform(df).selectExpr(columns).orderBy("id").collectAsList(),
                "the loaded pipeline's columns");
    }

    @AfterAll
    static void nothingLeft() {
        assertNoDeviceBytes();
    }

    /**
     * The driver and every executor hold no device memory once GCs ran: what the test dropped and did not track (a
     * fold's models inside CrossValidator) is released by the cleaner after its GC, so this runs GCs until it is.
     */
    static void assertNoDeviceBytes() {
        gcUntil(
                SparkMlLifetimeTest::noDeviceBytes,
                () -> "device bytes remain: " + CuwireSpark.driverStats() + " "
                        + CuwireSpark.driverStats().deviceBytes() + " bytes; executors "
                        + CuwireSpark.executorStats(false));
        List<NodeStats> executors = CuwireSpark.executorStats(false);
        assertEquals(SparkCluster.EXECUTORS, executors.size());
        for (NodeStats s : executors) {
            assertEquals(0, s.cachedModels(), s.toString());
        }
    }

    private static boolean noDeviceBytes() {
        if (CuwireSpark.driverStats().deviceBytes() != 0) {
            return false;
        }
        for (NodeStats s : CuwireSpark.executorStats(false)) {
            if (s.deviceBytes() != 0) {
                return false;
            }
        }
        return true;
    }
}
