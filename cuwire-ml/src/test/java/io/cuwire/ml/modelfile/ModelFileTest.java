package io.cuwire.ml.modelfile;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DType;
import io.cuwire.memory.NdArray;
import io.cuwire.ml.Estimator;
import io.cuwire.ml.MlTesting;
import io.cuwire.ml.ensemble.RandomForestClassifier;
import io.cuwire.ml.ensemble.RandomForestRegressor;
import io.cuwire.ml.linear.LinearRegression;
import io.cuwire.ml.linear.LogisticRegression;
import io.cuwire.test.TestRandom;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.io.TempDir;

/**
 * Model files that are malformed or hostile, written byte by byte: each is refused with a {@link ModelFileException}
 * naming the field, before anything the size of a declaration is allocated; and what the reader and writer agree on.
 */
class ModelFileTest {
    @TempDir
    Path dir;

    private BufferAllocator<?> mem;

    @BeforeEach
    void openAllocator() {
        mem = MlTesting.host("model-file");
    }

    @AfterEach
    void closeAllocatorAndCheckForLeaks() {
        assertEquals(0, mem.allocatedBytes(), "allocator balance after a refusal");
        mem.close();
    }

    /** A file of {@code header} (JSON text) followed by {@code data}. */
    private Path file(String header, byte[] data) throws IOException {
        byte[] text = header.getBytes(StandardCharsets.UTF_8);
        int pad = (8 - text.length % 8) % 8;
        ByteBuffer b = ByteBuffer.allocate(16 + text.length + pad + data.length).order(ByteOrder.LITTLE_ENDIAN);
        b.put(ModelFile.MAGIC).putLong(text.length).put(text).put(new byte[pad]).put(data);
        Path p = Files.createTempFile(dir, "model-", ".cwm");
        Files.write(p, b.array());
        return p;
    }

    private static byte[] doubles(double... v) {
        ByteBuffer b = ByteBuffer.allocate(8 * v.length).order(ByteOrder.LITTLE_ENDIAN);
        for (double x : v) {
            b.putDouble(x);
        }
        return b.array();
    }

    private static byte[] longs(long... v) {
        ByteBuffer b = ByteBuffer.allocate(8 * v.length).order(ByteOrder.LITTLE_ENDIAN);
        for (long x : v) {
            b.putLong(x);
        }
        return b.array();
    }

    private static byte[] concat(byte[]... parts) {
        int n = 0;
        for (byte[] p : parts) {
            n += p.length;
        }
        ByteBuffer b = ByteBuffer.allocate(n);
        for (byte[] p : parts) {
            b.put(p);
        }
        return b.array();
    }

    private static String linearHeader(String estimator, long version, String coefShape, String extra) {
        return "{\"format_version\": " + version + ", \"estimator\": \"" + estimator + "\", \"params\": {}, "
                + "\"attributes\": {\"n_features_in_\": 3}, \"arrays\": {"
                + "\"coef_\": {\"dtype\": \"float64\", \"shape\": " + coefShape + ", \"offset\": 0}, "
                + "\"intercept_\": {\"dtype\": \"float64\", \"shape\": [], \"offset\": 24}" + extra + "}}";
    }

    private ModelFileException refused(Path p) {
        return assertThrows(ModelFileException.class, () -> {
            try (Estimator e = ModelFile.read(p).toEstimator(mem, DType.FLOAT64)) {
                throw new AssertionError("accepted " + e);
            }
        });
    }

    private void assertRefused(Path p, String field, String inMessage) {
        ModelFileException e = refused(p);
        assertEquals(field, e.field(), e.getMessage());
        assertTrue(e.getMessage().contains(inMessage), e.getMessage());
    }

    @Test
    void shouldReadAWellFormedFileIntoAnEstimatorThatPredicts() throws IOException {
        Path p = file(linearHeader("LinearRegression", 1, "[3]", ""), doubles(1, 2, 3, 0.5));
        try (Estimator e = ModelFile.read(p).toEstimator(mem, DType.FLOAT64);
                NdArray x = MlTesting.array(mem, DType.FLOAT64, new double[] {1, 1, 1, 0, 0, 2}, 2, 3);
                NdArray y = ((LinearRegression) e).predict(x)) {
            assertArrayEquals(new double[] {6.5, 6.5}, MlTesting.values(y), 0);
        }
    }

    /** A binary logistic regression over 3 features (coef_ 1, 1, 1; intercept_ 0) with {@code params}. */
    private Path logistic(String params) throws IOException {
        String header = "{\"format_version\": 1, \"estimator\": \"LogisticRegression\", \"params\": " + params
                + ", \"attributes\": {\"n_features_in_\": 3}, \"arrays\": {"
                + "\"coef_\": {\"dtype\": \"float64\", \"shape\": [1, 3], \"offset\": 0}, "
                + "\"intercept_\": {\"dtype\": \"float64\", \"shape\": [1], \"offset\": 24}, "
                + "\"classes_\": {\"dtype\": \"int64\", \"shape\": [2], \"offset\": 32}}}";
        return file(header, concat(doubles(1, 1, 1, 0), longs(0, 1)));
    }

    @Test
    void shouldReadTheDeprecatedPenaltyOfNewerScikitLearnAsL2AndRefuseAnL1Mix() throws IOException {
        // scikit-learn 1.8 deprecated LogisticRegression.penalty: get_params() says "deprecated", l1_ratio the mix
        for (String params : List.of(
                "{\"penalty\": \"deprecated\", \"l1_ratio\": 0.0, \"C\": 1.0}",
                "{\"penalty\": \"deprecated\", \"l1_ratio\": null, \"C\": 1.0}",
                "{\"penalty\": \"l2\", \"C\": 1.0}")) {
            try (Estimator e = ModelFile.read(logistic(params)).toEstimator(mem, DType.FLOAT64);
                    NdArray x = MlTesting.array(mem, DType.FLOAT64, new double[] {1, 1, 1, -1, -1, -1}, 2, 3);
                    NdArray y = ((LogisticRegression) e).predict(x)) {
                assertEquals(LogisticRegression.Penalty.L2, e.params().get("penalty"), params);
                assertArrayEquals(new double[] {1, 0}, MlTesting.values(y), 0, params);
            }
        }
        assertRefused(
                logistic("{\"penalty\": \"deprecated\", \"l1_ratio\": 0.5}"), "params.l1_ratio", "0.5 with penalty");
        assertRefused(
                logistic("{\"penalty\": \"l1\"}"), "params.penalty", "l1 (expected: l2, none, null or deprecated)");
    }

    @Test
    void shouldRefuseAShapeThatDisagreesWithTheFeatures() throws IOException {
        Path p = file(linearHeader("LinearRegression", 1, "[2]", ""), doubles(1, 2, 0, 0.5));
        assertRefused(p, "arrays.coef_.shape", "(2,) (expected: (3,))");
        p = file(linearHeader("LinearRegression", 1, "[3, 1]", ""), doubles(1, 2, 3, 0.5));
        assertRefused(p, "arrays.coef_.shape", "(3, 1) (expected: (3,))");
    }

    @Test
    void shouldRefuseNaNWhereAFiniteValueIsNeeded() throws IOException {
        Path p = file(linearHeader("Ridge", 1, "[3]", ""), doubles(1, Double.NaN, 3, 0.5));
        assertRefused(p, "coef_[1]", "NaN");
    }

    @Test
    void shouldRefuseAHugeDeclaredSizeBeforeAllocatingIt() throws IOException {
        Path p = file(linearHeader("LinearRegression", 1, "[1000000000000000]", ""), doubles(1, 2, 3, 0.5));
        assertRefused(p, "arrays.coef_", "within the 32 bytes after the header");
        p = file(
                linearHeader("LinearRegression", 1, "[4294967296, 4294967296, 4294967296]", ""), doubles(1, 2, 3, 0.5));
        assertRefused(p, "arrays.coef_", "(4294967296, 4294967296, 4294967296)");
        byte[] raw = Files.readAllBytes(p);
        ByteBuffer.wrap(raw).order(ByteOrder.LITTLE_ENDIAN).putLong(8, 1L << 62);
        Files.write(p, raw);
        assertRefused(p, "header_length", "4611686018427387904");
    }

    @Test
    void shouldRefuseAFileOverTheReadersLimit() throws IOException {
        Path p = file(linearHeader("LinearRegression", 1, "[3]", ""), doubles(1, 2, 3, 0.5));
        ModelFileException e = assertThrows(ModelFileException.class, () -> ModelFile.read(p, 64));
        assertEquals("file", e.field());
        assertTrue(e.getMessage().contains("at most 64, the reader's limit"), e.getMessage());
    }

    @Test
    void shouldRefuseAnUnknownEstimatorArrayOrKey() throws IOException {
        assertRefused(
                file(linearHeader("pickle.loads", 1, "[3]", ""), doubles(1, 2, 3, 0.5)),
                "estimator",
                "'pickle.loads' (expected one of: LinearRegression");
        assertRefused(
                file(
                        linearHeader(
                                "LinearRegression",
                                1,
                                "[3]",
                                ", \"extra\": {\"dtype\": \"float64\", \"shape\": [1]," + " \"offset\": 32}"),
                        doubles(1, 2, 3, 0.5, 9)),
                "arrays.extra",
                "an unknown array for LinearRegression");
        String header = linearHeader("LinearRegression", 1, "[3]", "").replaceFirst("\\{", "{\"code\": \"x\", ");
        assertRefused(file(header, doubles(1, 2, 3, 0.5)), "code", "an unknown header key");
        String object = linearHeader("LinearRegression", 1, "[3]", "")
                .replace("\"float64\", \"shape\": []", "\"object\", \"shape\": []");
        assertRefused(file(object, doubles(1, 2, 3, 0.5)), "arrays.intercept_.dtype", "object");
    }

    @Test
    void shouldRefuseAFutureFormatVersionNamingIt() throws IOException {
        assertRefused(
                file(linearHeader("LinearRegression", 2, "[3]", ""), doubles(1, 2, 3, 0.5)),
                "format_version",
                "the file is newer than this reader");
    }

    @Test
    void shouldRefuseWhatIsNotAModelFile() throws IOException {
        Path p = Files.createTempFile(dir, "pickle-", ".pkl");
        Files.write(p, new byte[] {(byte) 0x80, 4, (byte) 0x95, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
        assertRefused(p, "magic", "a cuwire model file");
        Path deep = file("[".repeat(1000) + "]".repeat(1000), new byte[0]);
        assertRefused(deep, "header", "nesting deeper than 32");
        Path overlap = file(
                linearHeader("LinearRegression", 1, "[3]", "").replace("\"offset\": 24", "\"offset\": 16"),
                doubles(1, 2, 3, 0.5));
        assertRefused(overlap, "arrays.intercept_.offset", "after the end of arrays.coef_");
    }

    /** A one-tree forest regressor of 3 nodes (a root split and two leaves), its arrays' values given. */
    private Path forest(long[] left, long[] right, long[] feature, double[] threshold, double[] value)
            throws IOException {
        int n = left.length;
        String header = "{\"format_version\": 1, \"estimator\": \"RandomForestRegressor\", \"params\": {}, "
                + "\"attributes\": {\"n_features_in_\": 2}, \"arrays\": {"
                + "\"tree_node_count\": {\"dtype\": \"int64\", \"shape\": [1], \"offset\": 0}, "
                + "\"children_left\": {\"dtype\": \"int64\", \"shape\": [" + n + "], \"offset\": 8}, "
                + "\"children_right\": {\"dtype\": \"int64\", \"shape\": [" + n + "], \"offset\": " + (8 + 8 * n)
                + "}, \"feature\": {\"dtype\": \"int64\", \"shape\": [" + n + "], \"offset\": " + (8 + 16 * n) + "}, "
                + "\"threshold\": {\"dtype\": \"float64\", \"shape\": [" + n + "], \"offset\": " + (8 + 24 * n)
                + "}, \"value\": {\"dtype\": \"float64\", \"shape\": [" + n + ", 1], \"offset\": " + (8 + 32 * n)
                + "}}}";
        return file(
                header,
                concat(longs(n), longs(left), longs(right), longs(feature), doubles(threshold), doubles(value)));
    }

    @Test
    void shouldImportATreeAndRefuseOneWhoseChildIsOutsideItOrShared() throws IOException {
        double[] t = {0.5, -2, -2};
        double[] v = {0, 10, 20};
        try (Estimator e = ModelFile.read(
                                forest(new long[] {1, -1, -1}, new long[] {2, -1, -1}, new long[] {1, -2, -2}, t, v))
                        .toEstimator(mem, DType.FLOAT64);
                NdArray x = MlTesting.array(mem, DType.FLOAT64, new double[] {9, 0.5, 9, 0.6}, 2, 2);
                NdArray y = ((RandomForestRegressor) e).predict(x)) {
            assertArrayEquals(new double[] {10, 20}, MlTesting.values(y), 0);
        }
        assertRefused(
                forest(new long[] {7, -1, -1}, new long[] {2, -1, -1}, new long[] {1, -2, -2}, t, v),
                "children_left[0]",
                "7 in tree 0 node 0 (expected: a node 1 .. 2");
        assertRefused(
                forest(new long[] {1, -1, -1}, new long[] {1, -1, -1}, new long[] {1, -2, -2}, t, v),
                "children_right[0]",
                "reached a second time");
        assertRefused(
                forest(new long[] {1, 1, -1}, new long[] {2, 2, -1}, new long[] {1, 0, -2}, t, v),
                "children_left[1]",
                "reached a second time");
        assertRefused(
                forest(new long[] {1, -1, -1}, new long[] {2, -1, -1}, new long[] {5, -2, -2}, t, v),
                "feature[0]",
                "(expected: 0 .. 1)");
        assertRefused(
                forest(
                        new long[] {1, -1, -1},
                        new long[] {2, -1, -1},
                        new long[] {1, -2, -2},
                        new double[] {Double.NaN, -2, -2},
                        v),
                "threshold[0]",
                "NaN");
        assertRefused(
                forest(new long[] {1, -1, -1}, new long[] {2, -1, -1}, new long[] {1, -2, -2}, t, new double[] {
                    0, Double.POSITIVE_INFINITY, 1
                }),
                "value[1]",
                "Infinity");
        assertRefused(
                forest(new long[] {-1, -1, -1}, new long[] {-1, -1, -1}, new long[] {-2, -2, -2}, t, v),
                "tree_node_count[0]",
                "node 1 is not reached from the root");
        assertRefused(
                forest(new long[] {1L << 60, -1, -1}, new long[] {2, -1, -1}, new long[] {1, -2, -2}, t, v),
                "children_left[0]",
                "within +-2^53");
        assertRefused(
                forest(new long[] {(1L << 32) + 1, -1, -1}, new long[] {2, -1, -1}, new long[] {1, -2, -2}, t, v),
                "children_left[0]",
                "4294967297 in tree 0 node 0");
    }

    @Test
    void shouldRefuseNaiveBayesLogProbabilitiesThatTheCountsContradict() throws IOException {
        // 2 classes, 2 features: counts {3, 1}, features {{2, 1}, {0, 4}}, alpha 1
        double[] flp = {Math.log(3.0 / 5), Math.log(2.0 / 5), Math.log(1.0 / 6), Math.log(5.0 / 6)};
        double[] prior = {Math.log(0.75), Math.log(0.25)};
        String header = "{\"format_version\": 1, \"estimator\": \"MultinomialNB\", \"params\": {\"alpha\": 1.0}, "
                + "\"attributes\": {\"n_features_in_\": 2}, \"arrays\": {"
                + "\"class_count_\": {\"dtype\": \"float64\", \"shape\": [2], \"offset\": 0}, "
                + "\"feature_count_\": {\"dtype\": \"float64\", \"shape\": [2, 2], \"offset\": 16}, "
                + "\"feature_log_prob_\": {\"dtype\": \"float64\", \"shape\": [2, 2], \"offset\": 48}, "
                + "\"class_log_prior_\": {\"dtype\": \"float64\", \"shape\": [2], \"offset\": 80}, "
                + "\"classes_\": {\"dtype\": \"int64\", \"shape\": [2], \"offset\": 96}}}";
        byte[] counts = doubles(3, 1, 2, 1, 0, 4);
        try (Estimator e = ModelFile.read(file(header, concat(counts, doubles(flp), doubles(prior), longs(0, 1))))
                .toEstimator(mem, DType.FLOAT64)) {
            assertTrue(e.isFitted());
        }
        flp[2] = Math.log(0.5);
        assertRefused(
                file(header, concat(counts, doubles(flp), doubles(prior), longs(0, 1))),
                "feature_log_prob_[2]",
                "but the counts and alpha give");
    }

    @Test
    void shouldWriteWhatItReadsAndRefuseAnUnfittedEstimator() throws IOException {
        try (LinearRegression m = new LinearRegression()
                        .adoptFitted(MlTesting.array(mem, DType.FLOAT64, new double[] {1, -2}, 2), 0.25);
                RandomForestRegressor f =
                        new RandomForestRegressor().nEstimators(2).maxDepth(2)) {
            Path p = dir.resolve("linear.cwm");
            ModelFile.of(m).write(p);
            ModelFile read = ModelFile.read(p);
            assertEquals("LinearRegression", read.estimator());
            assertEquals(Map.of("fit_intercept", true), read.params());
            assertArrayEquals(new double[] {1, -2}, read.arrays().get("coef_").values(), 0);
            assertTrue(read.describe().contains("coef_"), read.describe());
            ModelFileException e = assertThrows(ModelFileException.class, () -> ModelFile.of(f));
            assertEquals("estimator", e.field());
        }
    }

    /** Rows of {@code cols} float32 values (what scikit-learn casts rows to, so both comparisons agree on them). */
    private static double[] float32Rows(SplittableRandom random, int rows, int cols) {
        double[] v = new double[rows * cols];
        for (int i = 0; i < v.length; i++) {
            v[i] = (float) random.nextGaussian();
        }
        return v;
    }

    @Test
    void shouldWriteForestsThatReadBackIntoTheSamePredictions(TestInfo info) throws IOException {
        SplittableRandom random = TestRandom.create(info);
        int n = 300;
        double[] xs = float32Rows(random, n, 4);
        double[] reg = new double[n];
        int[] cls = new int[n];
        for (int i = 0; i < n; i++) {
            reg[i] = xs[4 * i] - 2 * xs[4 * i + 1] * xs[4 * i + 2] + 0.1 * random.nextGaussian();
            cls[i] = xs[4 * i] + xs[4 * i + 3] > 0.5 ? 2 : xs[4 * i + 1] > 0 ? 1 : 0;
        }
        double[] test = float32Rows(random, 100, 4);
        try (NdArray x = MlTesting.array(mem, DType.FLOAT64, xs, n, 4);
                NdArray t = MlTesting.array(mem, DType.FLOAT64, test, 100, 4);
                NdArray yr = MlTesting.array(mem, DType.FLOAT64, reg, n);
                NdArray yc = MlTesting.labels(mem, cls);
                RandomForestRegressor r =
                        new RandomForestRegressor().nEstimators(5).maxDepth(6).seed(3);
                RandomForestClassifier c =
                        new RandomForestClassifier().nEstimators(5).maxDepth(6).seed(4)) {
            r.fit(x, yr);
            c.fit(x, yc);
            Path rp = dir.resolve("regressor.cwm");
            Path cp = dir.resolve("classifier.cwm");
            ModelFile.of(r).write(rp);
            ModelFile.of(c).write(cp);
            ModelFile rf = ModelFile.read(rp);
            assertEquals(
                    List.of("tree_node_count", "children_left", "children_right", "feature", "threshold", "value"),
                    List.copyOf(rf.arrays().keySet()));
            assertArrayEquals(
                    new long[] {r.info().nodes(), 1}, rf.arrays().get("value").shape());
            assertEquals(5L, rf.params().get("n_estimators"));
            assertArrayEquals(
                    new long[] {3}, ModelFile.read(cp).arrays().get("classes_").shape());
            try (Estimator back = rf.toEstimator(mem, DType.FLOAT64);
                    NdArray want = r.predict(t);
                    NdArray got = ((RandomForestRegressor) back).predict(t)) {
                assertArrayEquals(MlTesting.values(want), MlTesting.values(got), 0);
            }
            try (Estimator back = ModelFile.read(cp).toEstimator(mem, DType.FLOAT64);
                    NdArray want = c.predictProba(t);
                    NdArray got = ((RandomForestClassifier) back).predictProba(t)) {
                assertArrayEquals(MlTesting.values(want), MlTesting.values(got), 1e-12);
            }
        }
    }

    @Test
    void shouldConvertThresholdsSoThatDoublesSplitAsScikitLearnsFloat32sDo(TestInfo info) {
        SplittableRandom random = TestRandom.create(info);
        List<double[]> cases = new ArrayList<>();
        for (int i = 0; i < 20_000; i++) {
            double t = random.nextDouble(-4, 4) * Math.pow(10, random.nextInt(-6, 7));
            float f = (float) t;
            double near = switch (random.nextInt(4)) {
                case 0 -> f;
                case 1 -> ((double) f + Math.nextUp(f)) / 2;
                case 2 -> ((double) Math.nextDown(f) + f) / 2;
                default -> t + random.nextDouble(-1, 1) * Math.ulp(f);
            };
            cases.add(new double[] {t, near});
            cases.add(new double[] {t, Math.nextUp(near)});
            cases.add(new double[] {t, Math.nextDown(near)});
        }
        for (double[] c : cases) {
            double converted = SklearnTrees.float32Threshold(c[0]);
            assertEquals((float) c[1] <= c[0], c[1] <= converted, "threshold " + c[0] + ", x " + c[1]);
        }
    }
}
