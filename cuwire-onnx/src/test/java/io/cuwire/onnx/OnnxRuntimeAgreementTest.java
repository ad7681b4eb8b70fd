package io.cuwire.onnx;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OnnxValue;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.Devices;
import io.cuwire.memory.NdArray;
import io.cuwire.ml.Estimator;
import io.cuwire.ml.cluster.KMeans;
import io.cuwire.ml.decomposition.PCA;
import io.cuwire.ml.ensemble.RandomForestClassifier;
import io.cuwire.ml.ensemble.RandomForestRegressor;
import io.cuwire.ml.linear.LinearRegression;
import io.cuwire.ml.linear.LogisticRegression;
import io.cuwire.ml.linear.Ridge;
import io.cuwire.ml.naivebayes.MultinomialNB;
import io.cuwire.ml.neighbors.KNeighborsClassifier;
import io.cuwire.ml.neighbors.NearestNeighbors;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Every exported estimator loaded by ONNX Runtime for Java, a runtime nobody here wrote: on rows held out of the fit,
 * its outputs equal cuwire's own predictions, labels exactly and values within float32 rounding. The estimators are
 * fitted in float32 on device memory (the emulated device here, CUDA on a GPU host).
 */
class OnnxRuntimeAgreementTest {
    private static final long SEED = 27;
    private static final int FIT_ROWS = 400;
    private static final int HELD_OUT = 200;
    private static final int FEATURES = 6;
    /** Float32 rounding of a few dozen products and sums, absolute and relative. */
    private static final double TOLERANCE = 2e-5;
    /** The system property naming a directory for the models, their inputs and cuwire's outputs. */
    static final String DUMP = "cuwire.onnx.dump";

    private static OrtEnvironment env;
    private static BufferAllocator<?> mem;

    @BeforeAll
    static void start() {
        env = OrtEnvironment.getEnvironment();
        mem = Devices.get(0).newAllocator("onnx-agreement", BufferAllocator.UNLIMITED);
    }

    @AfterAll
    static void stop() {
        mem.close();
    }

    /** Rows with features in [-2, 2), a held-out block after the fitted one; {@code counts}: small whole numbers. */
    private static float[] rows(int n, boolean counts, SplittableRandom random) {
        float[] x = new float[n * FEATURES];
        for (int i = 0; i < x.length; i++) {
            x[i] = counts ? random.nextInt(6) : (float) random.nextDouble(-2, 2);
        }
        return x;
    }

    /** Three classes by a noisy linear rule. */
    private static int[] classes(float[] x, int n, int classes, SplittableRandom random) {
        int[] y = new int[n];
        for (int i = 0; i < n; i++) {
            double s = x[i * FEATURES]
                    - 0.5 * x[i * FEATURES + 1]
                    + 0.3 * x[i * FEATURES + 2]
                    + 0.3 * random.nextGaussian();
            y[i] = classes == 2 ? (s > 0 ? 1 : 0) : (s > 0.7 ? 2 : s > -0.7 ? 1 : 0);
        }
        return y;
    }

    private static float[] targets(float[] x, int n, SplittableRandom random) {
        float[] y = new float[n];
        for (int i = 0; i < n; i++) {
            y[i] = (float) (1.5 * x[i * FEATURES]
                    - 2 * x[i * FEATURES + 3]
                    + Math.sin(x[i * FEATURES + 1])
                    + 0.1 * random.nextGaussian());
        }
        return y;
    }

    private record Data(NdArray fitX, NdArray testX, float[] test) implements AutoCloseable {
        @Override
        public void close() {
            fitX.close();
            testX.close();
        }
    }

    private static Data data(boolean counts, SplittableRandom random) {
        float[] fit = rows(FIT_ROWS, counts, random);
        float[] test = rows(HELD_OUT, counts, random);
        return new Data(
                NdArray.fromArray(mem, fit, FIT_ROWS, FEATURES),
                NdArray.fromArray(mem, test, HELD_OUT, FEATURES),
                test);
    }

    /**
     * The model's outputs on {@code x} (HELD_OUT x FEATURES), as Java arrays by output name. Where the system property
     * {@value #DUMP} names a directory, the model, its input and cuwire's outputs ({@code expected}) are written there
     * too, for {@code bench/onnx/check_onnxruntime.py} (Python's onnxruntime).
     */
    private static Map<String, Object> run(String name, Estimator estimator, float[] x, Map<String, Object> expected)
            throws OrtException {
        byte[] model = OnnxExport.toBytes(estimator);
        dump(name, model, x, expected);
        Map<String, Object> out = new HashMap<>();
        try (OrtSession session = env.createSession(model, new OrtSession.SessionOptions());
                OnnxTensor input =
                        OnnxTensor.createTensor(env, FloatBuffer.wrap(x), new long[] {x.length / FEATURES, FEATURES});
                OrtSession.Result result = session.run(Map.of("X", input))) {
            for (Map.Entry<String, OnnxValue> e : result) {
                out.put(e.getKey(), e.getValue().getValue());
            }
        }
        return out;
    }

    /** Writes NAME.onnx, NAME.X.f32 and NAME.OUTPUT.f32 / .i64 (raw little-endian) and NAME.json, saying which. */
    private static void dump(String name, byte[] model, float[] x, Map<String, Object> expected) {
        String dir = System.getProperty(DUMP);
        if (dir == null) {
            return;
        }
        String file = name.replaceAll("[^A-Za-z0-9]+", "_");
        try {
            Path d = Files.createDirectories(Path.of(dir));
            Files.write(d.resolve(file + ".onnx"), model);
            StringBuilder json = new StringBuilder("{\"model\": \"" + file + ".onnx\", \"input\": {\"file\": \"" + file
                    + ".X.f32\", \"shape\": [" + x.length / FEATURES + ", " + FEATURES + "]}, \"outputs\": {");
            write(d.resolve(file + ".X.f32"), x);
            String sep = "";
            for (Map.Entry<String, Object> e : expected.entrySet()) {
                boolean labels = e.getValue() instanceof long[];
                String f = file + "." + e.getKey() + (labels ? ".i64" : ".f32");
                if (labels) {
                    ByteBuffer b = ByteBuffer.allocate(8 * ((long[]) e.getValue()).length)
                            .order(ByteOrder.LITTLE_ENDIAN);
                    b.asLongBuffer().put((long[]) e.getValue());
                    Files.write(d.resolve(f), b.array());
                } else {
                    write(d.resolve(f), (float[]) e.getValue());
                }
                json.append(sep)
                        .append("\"")
                        .append(e.getKey())
                        .append("\": \"")
                        .append(f)
                        .append("\"");
                sep = ", ";
            }
            Files.writeString(
                    d.resolve(file + ".json"),
                    json.append("}, \"tolerance\": ")
                            .append(TOLERANCE)
                            .append("}\n")
                            .toString());
        } catch (IOException e) {
            throw new UncheckedIOException("writing " + name + " under " + dir, e);
        }
    }

    private static void write(Path file, float[] v) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(4 * v.length).order(ByteOrder.LITTLE_ENDIAN);
        b.asFloatBuffer().put(v);
        Files.write(file, b.array());
    }

    private static void assertClose(float[] cuwire, float[] onnx, String what) {
        assertEquals(cuwire.length, onnx.length, what + ": length");
        double worst = 0;
        for (int i = 0; i < cuwire.length; i++) {
            double diff = Math.abs(cuwire[i] - onnx[i]);
            worst = Math.max(worst, diff / (1 + Math.abs(cuwire[i])));
            int at = i;
            assertTrue(
                    diff <= TOLERANCE * (1 + Math.abs(cuwire[i])),
                    () -> what + "[" + at + "]: cuwire " + cuwire[at] + ", ONNX Runtime " + onnx[at]);
        }
        System.out.printf("INFO %s: %d values agree, worst relative difference %.3g%n", what, cuwire.length, worst);
    }

    private static float[] flat(float[][] m) {
        float[] out = new float[m.length * m[0].length];
        for (int i = 0; i < m.length; i++) {
            System.arraycopy(m[i], 0, out, i * m[0].length, m[0].length);
        }
        return out;
    }

    private static long[] longs(NdArray labels) {
        int[] v = labels.toIntArray();
        long[] out = new long[v.length];
        for (int i = 0; i < v.length; i++) {
            out[i] = v[i];
        }
        return out;
    }

    private static void assertRegressor(Estimator m, NdArray predicted, float[] x, String what) throws OrtException {
        try (predicted) {
            float[] cuwire = predicted.toFloatArray();
            assertClose(
                    cuwire,
                    (float[]) run(what, m, x, Map.of("variable", cuwire)).get("variable"),
                    what + " variable");
        }
    }

    private static void assertClassifier(Estimator m, NdArray labels, NdArray proba, float[] x, String what)
            throws OrtException {
        try (labels;
                proba) {
            long[] label = longs(labels);
            float[] p = proba.toFloatArray();
            Map<String, Object> out = run(what, m, x, Map.of("label", label, "probabilities", p));
            assertArrayEquals(label, (long[]) out.get("label"), what + " label");
            assertClose(p, flat((float[][]) out.get("probabilities")), what + " probabilities");
        }
    }

    @Test
    void shouldMatchOnnxRuntimeForLinearRegression() throws OrtException {
        SplittableRandom random = new SplittableRandom(SEED);
        try (Data d = data(false, random);
                NdArray y = NdArray.fromArray(mem, targets(d.fitX.toFloatArray(), FIT_ROWS, random), FIT_ROWS);
                LinearRegression m = new LinearRegression().fit(d.fitX, y)) {
            assertRegressor(m, m.predict(d.testX), d.test, "LinearRegression");
        }
    }

    @Test
    void shouldMatchOnnxRuntimeForRidge() throws OrtException {
        SplittableRandom random = new SplittableRandom(SEED + 1);
        try (Data d = data(false, random);
                NdArray y = NdArray.fromArray(mem, targets(d.fitX.toFloatArray(), FIT_ROWS, random), FIT_ROWS);
                Ridge m = new Ridge().alpha(3).fit(d.fitX, y)) {
            assertRegressor(m, m.predict(d.testX), d.test, "Ridge");
        }
    }

    @Test
    void shouldMatchOnnxRuntimeForBinaryLogisticRegression() throws OrtException {
        SplittableRandom random = new SplittableRandom(SEED + 2);
        try (Data d = data(false, random);
                NdArray y = NdArray.fromArray(mem, classes(d.fitX.toFloatArray(), FIT_ROWS, 2, random), FIT_ROWS);
                LogisticRegression m = new LogisticRegression().fit(d.fitX, y)) {
            assertEquals(1, m.coef().dim(0), "a binary model keeps one row of coefficients");
            assertClassifier(m, m.predict(d.testX), m.predictProba(d.testX), d.test, "LogisticRegression(2)");
        }
    }

    @Test
    void shouldMatchOnnxRuntimeForMultinomialLogisticRegression() throws OrtException {
        SplittableRandom random = new SplittableRandom(SEED + 3);
        try (Data d = data(false, random);
                NdArray y = NdArray.fromArray(mem, classes(d.fitX.toFloatArray(), FIT_ROWS, 3, random), FIT_ROWS);
                LogisticRegression m = new LogisticRegression().fit(d.fitX, y)) {
            assertClassifier(m, m.predict(d.testX), m.predictProba(d.testX), d.test, "LogisticRegression(3)");
        }
    }

    @Test
    void shouldMatchOnnxRuntimesKMeansLabelsAndDistances() throws OrtException {
        SplittableRandom random = new SplittableRandom(SEED + 4);
        try (Data d = data(false, random);
                KMeans m = new KMeans().nClusters(5).seed(SEED).fit(d.fitX);
                NdArray labels = m.predict(d.testX);
                NdArray distances = m.transform(d.testX)) {
            long[] label = longs(labels);
            float[] dist = distances.toFloatArray();
            Map<String, Object> out = run("KMeans", m, d.test, Map.of("label", label, "distances", dist));
            assertArrayEquals(label, (long[]) out.get("label"), "KMeans label");
            assertClose(dist, flat((float[][]) out.get("distances")), "KMeans distances");
        }
    }

    @Test
    void shouldMatchOnnxRuntimeForPcaTransform() throws OrtException {
        SplittableRandom random = new SplittableRandom(SEED + 5);
        for (boolean whiten : new boolean[] {false, true}) {
            try (Data d = data(false, random);
                    PCA m = new PCA().nComponents(3).whiten(whiten).fit(d.fitX);
                    NdArray t = m.transform(d.testX)) {
                String what = "PCA(whiten=" + whiten + ")";
                float[] cuwire = t.toFloatArray();
                assertClose(
                        cuwire,
                        flat((float[][]) run(what, m, d.test, Map.of("transformed", cuwire))
                                .get("transformed")),
                        what);
            }
        }
    }

    @Test
    void shouldMatchOnnxRuntimeForMultinomialNaiveBayes() throws OrtException {
        SplittableRandom random = new SplittableRandom(SEED + 6);
        try (Data d = data(true, random);
                NdArray y = NdArray.fromArray(mem, classes(d.fitX.toFloatArray(), FIT_ROWS, 3, random), FIT_ROWS);
                MultinomialNB m = new MultinomialNB().fit(d.fitX, y)) {
            assertClassifier(m, m.predict(d.testX), m.predictProba(d.testX), d.test, "MultinomialNB");
        }
    }

    @Test
    void shouldMatchOnnxRuntimeForKNeighborsClassifier() throws OrtException {
        SplittableRandom random = new SplittableRandom(SEED + 7);
        try (Data d = data(false, random);
                NdArray y = NdArray.fromArray(mem, classes(d.fitX.toFloatArray(), FIT_ROWS, 3, random), FIT_ROWS);
                KNeighborsClassifier m =
                        new KNeighborsClassifier().nNeighbors(5).fit(d.fitX, y)) {
            assertClassifier(m, m.predict(d.testX), m.predictProba(d.testX), d.test, "KNeighborsClassifier");
        }
    }

    @Test
    void shouldMatchOnnxRuntimeForRandomForestClassifier() throws OrtException {
        SplittableRandom random = new SplittableRandom(SEED + 8);
        for (boolean exact : new boolean[] {true, false}) {
            try (Data d = data(false, random);
                    NdArray y = NdArray.fromArray(mem, classes(d.fitX.toFloatArray(), FIT_ROWS, 3, random), FIT_ROWS);
                    RandomForestClassifier m = new RandomForestClassifier()
                            .nEstimators(7)
                            .maxDepth(6)
                            .exactSplits(exact)
                            .seed(SEED)
                            .fit(d.fitX, y)) {
                assertClassifier(
                        m,
                        m.predict(d.testX),
                        m.predictProba(d.testX),
                        d.test,
                        "RandomForestClassifier(exactSplits=" + exact + ")");
            }
        }
    }

    @Test
    void shouldMatchOnnxRuntimeForRandomForestRegressor() throws OrtException {
        SplittableRandom random = new SplittableRandom(SEED + 9);
        for (boolean exact : new boolean[] {true, false}) {
            try (Data d = data(false, random);
                    NdArray y = NdArray.fromArray(mem, targets(d.fitX.toFloatArray(), FIT_ROWS, random), FIT_ROWS);
                    RandomForestRegressor m = new RandomForestRegressor()
                            .nEstimators(7)
                            .maxDepth(6)
                            .exactSplits(exact)
                            .seed(SEED)
                            .fit(d.fitX, y)) {
                assertRegressor(m, m.predict(d.testX), d.test, "RandomForestRegressor(exactSplits=" + exact + ")");
            }
        }
    }

    @Test
    void shouldRefuseAnEstimatorWithoutOnnxForm() {
        SplittableRandom random = new SplittableRandom(SEED + 10);
        try (Data d = data(false, random);
                NearestNeighbors m = new NearestNeighbors()) {
            m.fit(d.fitX);
            OnnxExportException e = assertThrows(OnnxExportException.class, () -> OnnxExport.toBytes(m));
            assertTrue(e.getMessage().startsWith("NearestNeighbors has no ONNX export (supported: "), e.getMessage());
        }
    }

    @Test
    void shouldRefuseAnUnfittedEstimator() {
        OnnxExportException e =
                assertThrows(OnnxExportException.class, () -> OnnxExport.toBytes(new RandomForestClassifier()));
        assertEquals("RandomForestClassifier is not fitted: nothing to export", e.getMessage());
    }

    @Test
    void shouldRoundThresholdsDownSoThatFloatInputsSplitAsInDouble() {
        double t = 0.5 * (1.1f + (double) Math.nextUp(1.1f));
        float f = OnnxExport.floatAtOrBelow(t);
        assertEquals(1.1f, f, "the midpoint of two neighboring floats rounds down to the lower");
        assertTrue(Math.nextUp(1.1f) > t && Math.nextUp(1.1f) > f, "the upper float goes right both ways");
        assertEquals(2.0f, OnnxExport.floatAtOrBelow(2.0), "an exact float stays");
        assertEquals(-1.1f, OnnxExport.floatAtOrBelow(-1.1f), "a negative exact float stays");
    }
}
