package io.cuwire.bench.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.cuwire.bench.harness.Cli;
import io.cuwire.bench.ml.SklearnForests;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code cuwire bench mllib} end to end at a tiny size in {@code local[2]} (the driver's cuwire endpoint serves the
 * tasks): every pair on both sides, their figures recorded, and where both sides compute the same thing (least
 * squares, the covariance's components, naive Bayes' counts) the same quality. Runs in the module's {@code spark}
 * test execution, whose class path has Spark's Kryo 4 and not the benchmarks' Kryo 5.
 */
@EnabledIfSystemProperty(named = "cuwire.bench.spark", matches = "true")
class MllibBenchTest {
    @TempDir
    Path dir;

    @Test
    @Timeout(value = 5, unit = TimeUnit.MINUTES)
    void shouldRunEveryPairOnBothSidesAndRecordThem() throws IOException {
        MllibArgs.Options o = Cli.parse(
                        new MllibArgs(),
                        "--master",
                        "local[2]",
                        "--rows",
                        "3000",
                        "--features",
                        "8",
                        "--trees",
                        "4",
                        "--depth",
                        "4",
                        "--logistic-iter",
                        "10",
                        "--kmeans-iter",
                        "5",
                        "--warm-rows",
                        "0",
                        "--data",
                        "synthetic",
                        "--out",
                        dir.toString())
                .options();
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        List<MllibBench.Result> results;
        try (PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8)) {
            results = MllibBench.run(o, out);
        }
        String printed = bytes.toString(StandardCharsets.UTF_8);
        System.out.print(printed);
        assertEquals(2 * MllibArgs.PAIRS.size(), results.size(), printed);
        Map<String, MllibBench.Result> by =
                results.stream().collect(Collectors.toMap(r -> r.pair() + "/" + r.side(), Function.identity()));
        for (MllibBench.Result r : results) {
            assertTrue(r.fitMs().median() > 0 && r.transformMs().median() > 0, r.toString());
            assertEquals(3000, r.rows());
            assertTrue(r.quality().values().stream().allMatch(Double::isFinite), r.toString());
        }
        assertClose(by, "LinearRegression", "RMSE", 1e-6);
        assertClose(by, "LinearRegression", "R²", 1e-6);
        assertClose(by, "PCA", "explained variance", 1e-6);
        assertClose(by, "NaiveBayes", "accuracy", 1e-9);
        assertClose(by, "NaiveBayes", "log-loss", 1e-4);
        for (String side : List.of("cuwire", "MLlib")) {
            // 4 classes; 8 clusters from well-apart centers: both far above chance on the held-out rows
            assertTrue(
                    by.get("LogisticRegression-multinomial/" + side).quality().get("accuracy") > 0.4, printed);
            assertTrue(by.get("RandomForestClassifier/" + side).quality().get("accuracy") > 0.3, printed);
            assertTrue(by.get("NaiveBayes/" + side).quality().get("accuracy") > 0.6, printed);
            assertTrue(by.get("RandomForestRegressor/" + side).quality().get("R²") > 0.3, printed);
        }
        assertTrue(printed.contains("INFO master=local[2]"), printed);
        Path md = dir.resolve(Files.list(dir)
                .map(p -> p.getFileName().toString())
                .filter(n -> n.startsWith("mllib-") && n.endsWith(".md"))
                .findFirst()
                .orElseThrow());
        String text = Files.readString(md);
        for (String pair : MllibArgs.PAIRS) {
            assertTrue(text.contains("| " + pair + " |"), pair + " in " + text);
        }
        assertTrue(text.contains("maxBins set to 256"), text);
        assertEquals(
                1 + results.size(),
                Files.readAllLines(Path.of(md.toString().replace(".md", ".csv")))
                        .size());
    }

    @Test
    void shouldConvertScikitLearnsShippedDataSets() throws IOException {
        assumeTrue(SklearnForests.unavailable().isEmpty(), () -> "no scikit-learn: " + SklearnForests.unavailable());
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8)) {
            assertNull(MllibBench.convert(SklearnForests.python(), dir, out));
        }
        assertEquals(1797, Files.readAllLines(dir.resolve("digits.csv")).size());
        assertEquals(569, Files.readAllLines(dir.resolve("breast_cancer.csv")).size());
        assertEquals(442, Files.readAllLines(dir.resolve("diabetes.csv")).size());
        assertEquals(
                65, Files.readAllLines(dir.resolve("digits.csv")).getFirst().split(",").length);
    }

    @Test
    void shouldNameTheSparkArtifactsAClassPathLacks() {
        assertTrue(
                SparkClassPath.missing().isEmpty(),
                () -> SparkClassPath.missing().orElseThrow());
        String why =
                SparkClassPath.missing(ClassLoader.getPlatformClassLoader()).orElseThrow();
        for (String artifact : List.of("spark-core_2.13", "spark-sql_2.13", "spark-mllib_2.13", "scala-library")) {
            assertTrue(why.contains(artifact), why);
        }
    }

    private static void assertClose(Map<String, MllibBench.Result> by, String pair, String metric, double rel) {
        double c = by.get(pair + "/cuwire").quality().get(metric);
        double m = by.get(pair + "/MLlib").quality().get(metric);
        assertTrue(
                Math.abs(c - m) <= rel * Math.max(1, Math.abs(m)),
                pair + " " + metric + ": cuwire " + c + ", MLlib " + m);
    }
}
