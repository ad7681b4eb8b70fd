package io.cuwire.spark.ml;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.DType;
import io.cuwire.memory.NdArray;
import io.cuwire.ml.Classifier;
import io.cuwire.ml.Estimator;
import io.cuwire.ml.Regressor;
import io.cuwire.ml.cluster.KMeans;
import io.cuwire.ml.decomposition.PCA;
import io.cuwire.ml.ensemble.RandomForestClassifier;
import io.cuwire.ml.ensemble.RandomForestRegressor;
import io.cuwire.ml.linear.LinearRegression;
import io.cuwire.ml.linear.LogisticRegression;
import io.cuwire.ml.linear.Ridge;
import io.cuwire.ml.modelfile.ModelFile;
import io.cuwire.ml.modelfile.ModelFileException;
import io.cuwire.ml.naivebayes.MultinomialNB;
import io.cuwire.ml.neighbors.KNeighborsClassifier;
import io.cuwire.spark.CuwireSpark;
import io.cuwire.spark.NodeStats;
import io.cuwire.spark.SparkCluster;
import io.cuwire.spark.TestFrames;
import io.cuwire.test.SklearnPython;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.function.Supplier;
import org.apache.spark.ml.linalg.Vector;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Model files as Spark models ({@link CuwireModels#fromModelFile}) on the shared two-executor cluster: for each
 * estimator a model file supports, a file cuwire wrote ({@link ModelFile#of}) and one scikit-learn wrote (through
 * {@code cuwire_sklearn.save}, where {@link SklearnPython} finds scikit-learn; skipped with the reason otherwise)
 * transformed on a {@code Dataset} in the executors gives what the estimator read from the same file in this process
 * (or scikit-learn) predicts on the same rows.
 */
@ExtendWith(SparkCluster.class)
@Timeout(value = 4, unit = TimeUnit.MINUTES)
class CuwireModelsTest {
    private static final int ROWS = 400;
    private static final int PARTS = 3;

    /** {@code ROWS} rows of 4 features in 3 blobs (non-negative, so that naive Bayes takes them as counts). */
    private static double[][] rows(Random r, double[] labels) {
        double[][] centers = {{1, 6, 2, 4}, {5, 1, 6, 2}, {3, 3, 1, 7}};
        double[][] x = new double[ROWS][4];
        for (int i = 0; i < ROWS; i++) {
            labels[i] = i % 3;
            for (int j = 0; j < 4; j++) {
                x[i][j] = Math.max(0, centers[i % 3][j] + r.nextGaussian() * 1.5);
            }
        }
        return x;
    }

    /**
     * One estimator: how to make it, whether it is fitted on the class labels or on a target, the Spark model it
     * becomes, and the columns that model appends once the test has renamed them.
     */
    private record Case(
            Supplier<Estimator> make,
            boolean classes,
            Class<?> model,
            Function<CuwireModel<?>, List<String>> columns) {}

    private static List<String> classifierColumns(CuwireModel<?> m) {
        CuwireClassificationModel<?> c = (CuwireClassificationModel<?>) m;
        c.setPredictionCol("label_index").setProbabilityCol("p").setRawPredictionCol("");
        return List.of("label_index", "p");
    }

    private static List<Case> cases() {
        Function<CuwireModel<?>, List<String>> regression = m -> {
            ((CuwireLinearRegressionModel) m).setPredictionCol("y_hat");
            return List.of("y_hat");
        };
        return List.of(
                new Case(LinearRegression::new, false, CuwireLinearRegressionModel.class, regression),
                new Case(() -> new Ridge().alpha(0.5), false, CuwireLinearRegressionModel.class, regression),
                new Case(
                        () -> new LogisticRegression().maxIter(200),
                        true,
                        CuwireLogisticRegressionModel.class,
                        CuwireModelsTest::classifierColumns),
                new Case(() -> new KMeans().nClusters(3).seed(5), false, CuwireKMeansModel.class, m -> {
                    ((CuwireKMeansModel) m).setPredictionCol("cluster");
                    return List.of("cluster");
                }),
                new Case(() -> new PCA().nComponents(2).whiten(true), false, CuwirePCAModel.class, m -> {
                    ((CuwirePCAModel) m).setOutputCol("projected");
                    return List.of("projected");
                }),
                new Case(
                        () -> new MultinomialNB().alpha(0.7),
                        true,
                        CuwireMultinomialNBModel.class,
                        CuwireModelsTest::classifierColumns),
                new Case(
                        () -> new KNeighborsClassifier().nNeighbors(5),
                        true,
                        CuwireKNeighborsClassificationModel.class,
                        CuwireModelsTest::classifierColumns),
                new Case(
                        () -> new RandomForestClassifier()
                                .nEstimators(6)
                                .maxDepth(6)
                                .seed(2),
                        true,
                        CuwireRandomForestClassificationModel.class,
                        CuwireModelsTest::classifierColumns),
                new Case(
                        () -> new RandomForestRegressor()
                                .nEstimators(6)
                                .maxDepth(6)
                                .seed(3),
                        false,
                        CuwireRandomForestRegressionModel.class,
                        m -> {
                            ((CuwireRandomForestRegressionModel) m).setPredictionCol("y_hat");
                            return List.of("y_hat");
                        }));
    }

    /** What {@code e} computes in this process for the columns a model of it appends, in their order. */
    private static List<double[][]> expected(Estimator e, NdArray x) {
        List<double[][]> out = new ArrayList<>();
        switch (e) {
            case Classifier c -> {
                try (NdArray p = c.predict(x);
                        NdArray q = c.predictProba(x)) {
                    out.add(column(SparkMlTest.toDoubles(p)));
                    out.add(q.toDoubleMatrix());
                }
            }
            case Regressor g -> {
                try (NdArray p = g.predict(x)) {
                    out.add(column(SparkMlTest.toDoubles(p)));
                }
            }
            case KMeans k -> {
                try (NdArray p = k.predict(x)) {
                    out.add(column(SparkMlTest.toDoubles(p)));
                }
            }
            case PCA p -> {
                try (NdArray t = p.transform(x)) {
                    out.add(t.toDoubleMatrix());
                }
            }
            default -> throw new AssertionError(e);
        }
        return out;
    }

    private static double[][] column(double[] v) {
        double[][] out = new double[v.length][];
        for (int i = 0; i < v.length; i++) {
            out[i] = new double[] {v[i]};
        }
        return out;
    }

    /** The values of {@code column} of {@code out} by id: a number or a vector per row. */
    private static double[][] collected(Dataset<Row> out, String column) {
        double[][] v = new double[ROWS][];
        for (Row r : out.select("id", column).collectAsList()) {
            Object o = r.get(1);
            v[(int) r.getLong(0)] = o instanceof Vector vec ? vec.toArray() : new double[] {((Number) o).doubleValue()};
        }
        return v;
    }

    /** The rows the executors scored (on any backend) since their counters were last reset. */
    static long scoredInExecutors() {
        long n = 0;
        for (NodeStats s : CuwireSpark.executorStats(false)) {
            n += s.scoredRows().values().stream().mapToLong(Long::longValue).sum();
        }
        return n;
    }

    private static void assertRowsClose(String what, double[][] want, double[][] got, double tol) {
        for (int i = 0; i < ROWS; i++) {
            assertNotNull(got[i], what + ": row " + i + " missing");
            assertArrayEquals(want[i], got[i], tol, what + ": row " + i);
        }
    }

    @Test
    void shouldTransformWhatEachEstimatorOfAModelFilePredictsInTheExecutors(@TempDir Path dir) throws IOException {
        Random r = new Random(27);
        double[] labels = new double[ROWS];
        double[][] x = rows(r, labels);
        double[] target = new double[ROWS];
        for (int i = 0; i < ROWS; i++) {
            target[i] = 2 * x[i][0] - x[i][1] + 0.5 * x[i][2] * x[i][3] + r.nextGaussian() * 0.1;
        }
        int[] classes = SparkMlStagesTest.ints(labels);
        Dataset<Row> frame = TestFrames.frame(x, labels, PARTS);
        for (Case c : cases()) {
            Path file = dir.resolve(c.model().getSimpleName() + "-" + System.nanoTime() + ".cwm");
            try (Estimator e = c.make().get();
                    NdArray xs = NdArray.fromMatrix(CuwireSpark.deviceMemory(), x)) {
                fit(e, xs, classes, target);
                ModelFile.of(e).write(file);
            }
            long before = scoredInExecutors();
            try (NdArray xs = NdArray.fromMatrix(CuwireSpark.deviceMemory(), x);
                    Estimator inProcess = ModelFile.read(file).toEstimator(CuwireSpark.deviceMemory(), DType.FLOAT64);
                    CuwireModel<?> model = CuwireModels.fromModelFile(file.toString())) {
                String what = inProcess.getClass().getSimpleName();
                assertInstanceOf(c.model(), model, what);
                assertEquals(inProcess.getClass(), model.estimator().getClass(), what);
                List<String> columns = c.columns().apply(model);
                List<double[][]> want = expected(inProcess, xs);
                Dataset<Row> out = model.transform(frame);
                for (int k = 0; k < columns.size(); k++) {
                    assertRowsClose(what + " " + columns.get(k), want.get(k), collected(out, columns.get(k)), 1e-9);
                }
            }
            assertTrue(scoredInExecutors() >= before + ROWS, "the executors scored the rows");
        }
    }

    private static void fit(Estimator e, NdArray x, int[] classes, double[] target) {
        switch (e) {
            case Classifier c -> {
                try (NdArray y = NdArray.fromArray(CuwireSpark.deviceMemory(), classes, classes.length)) {
                    c.fit(x, y);
                }
            }
            case Regressor g -> {
                try (NdArray y = NdArray.fromArray(CuwireSpark.deviceMemory(), target, target.length)) {
                    g.fit(x, y);
                }
            }
            case KMeans k -> k.fit(x);
            case PCA p -> p.fit(x);
            default -> throw new AssertionError(e);
        }
    }

    @Test
    void shouldRefuseAFileOfAnotherModelThanAsked(@TempDir Path dir) throws IOException {
        Path file = dir.resolve("linear.cwm");
        try (LinearRegression m = new LinearRegression()
                .adoptFitted(NdArray.fromArray(CuwireSpark.deviceMemory(), new double[] {1, 2}, 2), 0.5)) {
            ModelFile.of(m).write(file);
        }
        ModelFileException e = assertThrows(
                ModelFileException.class, () -> CuwireModels.fromModelFile(file.toString(), CuwireKMeansModel.class));
        assertEquals("estimator", e.field());
        assertTrue(e.getMessage().contains("expected: a CuwireKMeansModel"), e.getMessage());
        try (CuwireLinearRegressionModel m =
                CuwireModels.fromModelFile(file.toString(), CuwireLinearRegressionModel.class)) {
            assertArrayEquals(new double[] {1, 2}, m.coefficients().toArray(), 0);
        }
    }

    /** The scikit-learn side: fits on the rows of rows.json, saves each model, writes its predictions. */
    private static final String SKLEARN = """
            import json, sys
            import numpy as np
            sys.path.insert(0, sys.argv[1])
            import cuwire_sklearn
            from sklearn import decomposition, ensemble, linear_model
            d = json.load(open("rows.json"))
            x, y, t = np.array(d["X"]), np.array(d["y"], dtype=np.int64), np.array(d["t"])
            models = {
                "logistic": linear_model.LogisticRegression(max_iter=500).fit(x, y),
                "forest_classifier": ensemble.RandomForestClassifier(n_estimators=9, max_depth=6,
                                                                     random_state=0).fit(x, y),
                "forest_regressor": ensemble.RandomForestRegressor(n_estimators=9, max_depth=6,
                                                                   random_state=0).fit(x, t),
                "pca": decomposition.PCA(n_components=2).fit(x),
            }
            for name, m in models.items():
                cuwire_sklearn.save(m, name + ".cwm")
                outputs = {"transform": m.transform} if name == "pca" else {"predict": m.predict}
                if hasattr(m, "predict_proba"):
                    outputs["proba"] = m.predict_proba
                for output, f in outputs.items():
                    np.savetxt("%s.%s.txt" % (name, output), np.asarray(f(x), dtype=np.float64).reshape(len(x), -1),
                               fmt="%.17g")
            """;

    @Test
    void shouldTransformWhatScikitLearnPredictsFromItsModelFiles(@TempDir Path dir) throws IOException {
        Optional<String> why = SklearnPython.unavailable();
        Assumptions.assumeTrue(why.isEmpty(), () -> "no scikit-learn: " + why.orElse(""));
        Random r = new Random(28);
        double[] labels = new double[ROWS];
        double[][] x = rows(r, labels);
        double[] target = new double[ROWS];
        for (int i = 0; i < ROWS; i++) {
            target[i] = x[i][0] * x[i][1] - x[i][3] + r.nextGaussian() * 0.1;
        }
        Files.writeString(dir.resolve(ModelFile.HELPER), ModelFile.sklearnHelper(), StandardCharsets.UTF_8);
        Files.writeString(dir.resolve("fit.py"), SKLEARN, StandardCharsets.UTF_8);
        Files.writeString(
                dir.resolve("rows.json"),
                "{\"X\": " + Arrays.deepToString(x) + ", \"y\": " + Arrays.toString(labels) + ", \"t\": "
                        + Arrays.toString(target) + "}");
        SklearnPython.run(dir, dir.resolve("fit.py"), Duration.ofMinutes(2), dir.toString());
        Function<String, double[][]> sk = name -> sklearn(dir.resolve(name + ".txt"));
        Dataset<Row> frame = TestFrames.frame(x, labels, PARTS);
        try (CuwireLogisticRegressionModel m = CuwireModels.fromModelFile(
                dir.resolve("logistic.cwm").toString(), CuwireLogisticRegressionModel.class)) {
            Dataset<Row> out = m.transform(frame);
            assertRowsClose("logistic probability", sk.apply("logistic.proba"), collected(out, "probability"), 1e-9);
            assertRowsClose("logistic prediction", sk.apply("logistic.predict"), collected(out, "prediction"), 0);
        }
        try (CuwireRandomForestClassificationModel m = CuwireModels.fromModelFile(
                dir.resolve("forest_classifier.cwm").toString(), CuwireRandomForestClassificationModel.class)) {
            Dataset<Row> out = m.transform(frame);
            double[][] proba = sk.apply("forest_classifier.proba");
            assertRowsClose("forest probability", proba, collected(out, "probability"), 1e-9);
            double[][] want = sk.apply("forest_classifier.predict");
            double[][] got = collected(out, "prediction");
            for (int i = 0; i < ROWS; i++) {
                int a = (int) want[i][0];
                int b = (int) got[i][0];
                assertTrue(
                        a == b || Math.abs(proba[i][a] - proba[i][b]) <= 1e-9,
                        "forest prediction row " + i + ": " + b + " (expected: " + a + ", not tied)");
            }
        }
        try (CuwireRandomForestRegressionModel m = CuwireModels.fromModelFile(
                dir.resolve("forest_regressor.cwm").toString(), CuwireRandomForestRegressionModel.class)) {
            assertRowsClose(
                    "forest regression",
                    sk.apply("forest_regressor.predict"),
                    collected(m.transform(frame), "prediction"),
                    1e-9);
        }
        try (CuwirePCAModel m =
                CuwireModels.fromModelFile(dir.resolve("pca.cwm").toString(), CuwirePCAModel.class)) {
            assertTrue(m.getCenter(), "scikit-learn's PCA subtracts the mean");
            assertRowsClose("pca", sk.apply("pca.transform"), collected(m.transform(frame), "pcaFeatures"), 1e-9);
        }
    }

    /** scikit-learn's outputs: a row of numbers per line, as {@code numpy.savetxt} writes them. */
    private static double[][] sklearn(Path file) {
        try {
            return Files.readAllLines(file, StandardCharsets.UTF_8).stream()
                    .map(l -> Arrays.stream(l.trim().split("\\s+"))
                            .mapToDouble(Double::parseDouble)
                            .toArray())
                    .toArray(double[][]::new);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
