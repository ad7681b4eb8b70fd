package io.cuwire.ml.modelfile;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DType;
import io.cuwire.memory.NdArray;
import io.cuwire.ml.Classifier;
import io.cuwire.ml.Estimator;
import io.cuwire.ml.MlTesting;
import io.cuwire.ml.Regressor;
import io.cuwire.ml.cluster.KMeans;
import io.cuwire.ml.decomposition.PCA;
import io.cuwire.ml.ensemble.RandomForestClassifier;
import io.cuwire.ml.ensemble.RandomForestRegressor;
import io.cuwire.ml.linear.LinearRegression;
import io.cuwire.ml.linear.LogisticRegression;
import io.cuwire.ml.linear.Ridge;
import io.cuwire.ml.naivebayes.MultinomialNB;
import io.cuwire.ml.neighbors.KNeighborsClassifier;
import io.cuwire.test.SklearnPython;
import io.cuwire.test.TestRandom;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * scikit-learn and cuwire through model files, both ways, with the scikit-learn that {@link SklearnPython} finds
 * (Debian's {@code python3-sklearn} in CI); skipped with the reason without one. One Python process fits every
 * listed estimator and writes its file and its predictions on held-out rows ({@code sklearn_models.py fit}); cuwire
 * imports each file on host memory and on device 0, in float64 and float32, and predicts the same rows: labels
 * equal, values within {@value #F64} (float64) or {@value #F32} (float32) of scikit-learn's, relative to their
 * largest magnitude. The other way, cuwire fits on the same training sets and writes files that a second Python
 * process rebuilds scikit-learn estimators from ({@code cuwire_sklearn.load}) and predicts with; scikit-learn's two
 * forests, imported into cuwire and written back, make that process predict what scikit-learn predicted first.
 */
class SklearnModelFileTest {
    static final double F64 = 1e-9;
    static final double F32 = 1e-5;

    @TempDir
    static Path dir;

    private BufferAllocator<?> mem;

    @BeforeAll
    static void fitInScikitLearn() throws IOException {
        Optional<String> why = SklearnPython.unavailable();
        Assumptions.assumeTrue(why.isEmpty(), () -> "no scikit-learn: " + why.orElse(""));
        Files.writeString(dir.resolve(ModelFile.HELPER), ModelFile.sklearnHelper(), StandardCharsets.UTF_8);
        try (InputStream in = SklearnModelFileTest.class.getResourceAsStream("sklearn_models.py")) {
            Files.copy(in, dir.resolve("sklearn_models.py"));
        }
        long seed = TestRandom.seed("SklearnModelFileTest");
        System.out.println("SklearnModelFileTest: scikit-learn data seed " + seed);
        SklearnPython.run(
                dir,
                dir.resolve("sklearn_models.py"),
                Duration.ofMinutes(2),
                "fit",
                dir.toString(),
                Long.toString(seed));
    }

    @AfterEach
    void closeAllocatorAndCheckForLeaks() {
        if (mem != null) {
            assertEquals(0, mem.allocatedBytes(), "allocator balance after closing everything");
            mem.close();
        }
    }

    @ParameterizedTest(name = "{0} on {1} as {2}")
    @CsvSource({
        "linear, host, float64", "linear, device, float64", "linear, host, float32",
        "ridge, host, float64", "ridge, device, float64", "ridge, host, float32",
        "logistic, host, float64", "logistic, device, float64", "logistic, host, float32",
        "logistic_binary, host, float64", "logistic_binary, device, float64", "logistic_binary, host, float32",
        "kmeans, host, float64", "kmeans, device, float64", "kmeans, host, float32",
        "pca, host, float64", "pca, device, float64", "pca, host, float32",
        "nb, host, float64", "nb, device, float64", "nb, host, float32",
        "knn, host, float64", "knn, device, float64", "knn, host, float32",
        "forest_classifier, host, float64", "forest_classifier, device, float64", "forest_classifier, host, float32",
        "forest_regressor, host, float64", "forest_regressor, device, float64", "forest_regressor, host, float32"
    })
    void shouldPredictWhatScikitLearnPredictsAfterImport(String name, String where, String dtypeName)
            throws IOException {
        mem = where.equals("host") ? MlTesting.host("import-host") : MlTesting.device("import-device");
        DType dtype = DType.byName(dtypeName);
        double tol = dtype == DType.FLOAT64 ? F64 : F32;
        ModelFile file = ModelFile.read(dir.resolve(name + ".cwm"));
        Map<String, Object> expected = json(dir.resolve(name + ".json"));
        assertEquals(expected.get("estimator"), file.estimator());
        Matrix x = matrix(expected.get("X"));
        try (Estimator e = file.toEstimator(mem, dtype);
                NdArray rows = MlTesting.array(mem, dtype, x.values(), x.rows(), x.cols())) {
            assertEquals(file.estimator(), e.getClass().getSimpleName());
            compare(name, e, rows, expected, tol);
        }
    }

    @Test
    void shouldLetScikitLearnRebuildWhatCuwireFitted() throws IOException {
        mem = MlTesting.host("export");
        Map<String, Object> data = json(dir.resolve("data.json"));
        Map<String, Supplier<Estimator>> cases = new LinkedHashMap<>();
        cases.put("linear", LinearRegression::new);
        cases.put("ridge", () -> new Ridge().alpha(0.5));
        cases.put("logistic", () -> new LogisticRegression().maxIter(1000));
        cases.put("logistic_binary", () -> new LogisticRegression().c(0.5));
        cases.put("kmeans", () -> new KMeans().nClusters(3).seed(7));
        cases.put("pca", () -> new PCA().nComponents(3).whiten(true));
        cases.put("nb", () -> new MultinomialNB().alpha(0.7));
        cases.put("knn", () -> new KNeighborsClassifier().nNeighbors(5));
        cases.put(
                "forest_classifier",
                () -> new RandomForestClassifier().nEstimators(8).maxDepth(8).seed(3));
        cases.put(
                "forest_regressor",
                () -> new RandomForestRegressor().nEstimators(8).maxDepth(8).seed(4));
        Map<String, String> kinds = Map.of(
                "linear",
                "reg",
                "ridge",
                "reg",
                "logistic",
                "cls",
                "logistic_binary",
                "bin",
                "kmeans",
                "cls",
                "pca",
                "reg",
                "nb",
                "counts",
                "knn",
                "cls",
                "forest_classifier",
                "cls",
                "forest_regressor",
                "reg");
        Map<String, Map<String, Object>> cuwire = new LinkedHashMap<>();
        for (Map.Entry<String, Supplier<Estimator>> c : cases.entrySet()) {
            @SuppressWarnings("unchecked")
            Map<String, Object> set = (Map<String, Object>) data.get(kinds.get(c.getKey()));
            Matrix x = matrix(set.get("X"));
            Matrix test = matrix(set.get("test"));
            double[] y = vector(set.get("y"));
            try (Estimator e = c.getValue().get();
                    NdArray xs = MlTesting.array(mem, DType.FLOAT64, x.values(), x.rows(), x.cols());
                    NdArray ts = MlTesting.array(mem, DType.FLOAT64, test.values(), test.rows(), test.cols())) {
                fit(e, xs, y);
                ModelFile.of(e).write(dir.resolve(c.getKey() + ".cuwire.cwm"));
                Map<String, Object> rows = new LinkedHashMap<>();
                rows.put("X", set.get("test"));
                Files.writeString(dir.resolve(c.getKey() + ".cuwire.json"), ModelJson.write(rows));
                cuwire.put(c.getKey(), outputs(e, ts));
            }
        }
        // scikit-learn's own forests, imported into cuwire and written back: scikit-learn predicts as it did before
        Map<String, String> roundTrips =
                Map.of("forest_classifier", "sk_forest_classifier", "forest_regressor", "sk_forest_regressor");
        for (Map.Entry<String, String> c : roundTrips.entrySet()) {
            Map<String, Object> sk = json(dir.resolve(c.getKey() + ".json"));
            try (Estimator e = ModelFile.read(dir.resolve(c.getKey() + ".cwm")).toEstimator(mem, DType.FLOAT64)) {
                ModelFile.of(e).write(dir.resolve(c.getValue() + ".cuwire.cwm"));
            }
            Files.writeString(dir.resolve(c.getValue() + ".cuwire.json"), ModelJson.write(Map.of("X", sk.get("X"))));
            Map<String, Object> before = new LinkedHashMap<>(sk);
            before.keySet().retainAll(List.of("predict", "proba"));
            cuwire.put(c.getValue(), before);
        }
        SklearnPython.run(dir, dir.resolve("sklearn_models.py"), Duration.ofMinutes(2), "reverse", dir.toString());
        for (Map.Entry<String, Map<String, Object>> c : cuwire.entrySet()) {
            Map<String, Object> sk = json(dir.resolve(c.getKey() + ".sklearn.json"));
            for (Map.Entry<String, Object> out : c.getValue().entrySet()) {
                String what = c.getKey() + " " + out.getKey();
                assertTrue(sk.containsKey(out.getKey()), what + ": scikit-learn gave " + sk.keySet());
                double[] have = out.getValue() instanceof double[] d ? d : flat(out.getValue());
                double[] want = flat(sk.get(out.getKey()));
                if (out.getKey().equals("predict") && sk.containsKey("proba")) {
                    assertSameLabelsButTies(what, want, have, flat(sk.get("proba")));
                } else {
                    assertClose(what, want, have, F64);
                }
            }
        }
    }

    private void fit(Estimator e, NdArray x, double[] y) {
        switch (e) {
            case KMeans m -> m.fit(x);
            case PCA m -> m.fit(x);
            case Regressor r -> {
                try (NdArray ys = MlTesting.array(mem, DType.FLOAT64, y, y.length)) {
                    r.fit(x, ys);
                }
            }
            case Classifier c -> {
                int[] labels = new int[y.length];
                for (int i = 0; i < y.length; i++) {
                    labels[i] = (int) y[i];
                }
                try (NdArray ys = MlTesting.labels(mem, labels)) {
                    c.fit(x, ys);
                }
            }
            default -> throw new AssertionError(e);
        }
    }

    /** cuwire's outputs under scikit-learn's method names. */
    private static Map<String, Object> outputs(Estimator e, NdArray x) {
        Map<String, Object> out = new LinkedHashMap<>();
        try (NdArray p = predictions(e, x)) {
            if (p != null) {
                out.put("predict", MlTesting.values(p));
            }
        }
        if (e instanceof Classifier c) {
            try (NdArray p = c.predictProba(x)) {
                out.put("proba", MlTesting.values(p));
            }
        }
        NdArray t = e instanceof KMeans k ? k.transform(x) : e instanceof PCA p ? p.transform(x) : null;
        if (t != null) {
            try (t) {
                out.put("transform", MlTesting.values(t));
            }
        }
        return out;
    }

    private static NdArray predictions(Estimator e, NdArray x) {
        return switch (e) {
            case Classifier c -> c.predict(x);
            case Regressor r -> r.predict(x);
            case KMeans k -> k.predict(x);
            default -> null;
        };
    }

    private static void compare(String name, Estimator e, NdArray x, Map<String, Object> expected, double tol) {
        Map<String, Object> got = outputs(e, x);
        assertEquals(
                expected.keySet().stream()
                        .filter(k -> !k.equals("X") && !k.equals("estimator"))
                        .toList(),
                List.copyOf(got.keySet()),
                name + ": the outputs compared");
        for (Map.Entry<String, Object> out : got.entrySet()) {
            double[] want = flat(expected.get(out.getKey()));
            double[] have = (double[]) out.getValue();
            boolean labels = out.getKey().equals("predict") && (e instanceof Classifier || e instanceof KMeans);
            if (labels) {
                assertArrayEquals(want, have, 0, name + " labels");
            } else {
                assertClose(name + " " + out.getKey(), want, have, tol);
            }
        }
    }

    /**
     * Labels equal, but where two classes' probabilities tie within {@value #F64}: a forest's mean over trees is
     * summed in another order by each side, so a tie (4 of 8 trees each way) may round either way.
     */
    private static void assertSameLabelsButTies(String what, double[] want, double[] have, double[] proba) {
        assertEquals(want.length, have.length, what + ": values");
        int classes = proba.length / want.length;
        for (int i = 0; i < want.length; i++) {
            if (want[i] != have[i]) {
                double a = proba[i * classes + (int) want[i]];
                double b = proba[i * classes + (int) have[i]];
                assertTrue(
                        Math.abs(a - b) <= F64,
                        what + " row " + i + ": " + have[i] + " (expected: " + want[i] + ", whose probability " + a
                                + " is not tied with " + b + ")");
            }
        }
    }

    private static void assertClose(String what, double[] want, double[] have, double tol) {
        assertEquals(want.length, have.length, what + ": values");
        double scale = 0;
        for (double w : want) {
            scale = Math.max(scale, Math.abs(w));
        }
        double err = MlTesting.maxAbsDiff(want, have) / Math.max(scale, Double.MIN_NORMAL);
        assertTrue(err <= tol, what + ": relative error " + err + " (expected: <= " + tol + ")");
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> json(Path file) throws IOException {
        return (Map<String, Object>) ModelJson.parse(Files.readString(file, StandardCharsets.UTF_8));
    }

    private record Matrix(double[] values, long rows, long cols) {}

    private static Matrix matrix(Object rows) {
        List<?> r = (List<?>) rows;
        int cols = ((List<?>) r.getFirst()).size();
        return new Matrix(flat(rows), r.size(), cols);
    }

    private static double[] vector(Object v) {
        return flat(v);
    }

    private static double[] flat(Object v) {
        List<?> l = (List<?>) v;
        if (!l.isEmpty() && l.getFirst() instanceof List) {
            return l.stream()
                    .map(SklearnModelFileTest::flat)
                    .flatMapToDouble(java.util.Arrays::stream)
                    .toArray();
        }
        return l.stream().mapToDouble(o -> ((Number) o).doubleValue()).toArray();
    }
}
