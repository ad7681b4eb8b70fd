package io.cuwire.bench.ml;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class EstimatorBenchTest {
    @Test
    void tinyRunShouldPrintAMatchingResultLinePerEstimatorAndBackendAndWriteTheTables(@TempDir Path dir)
            throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        List<EstimatorBench.Result> results;
        try (PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8)) {
            results = EstimatorBench.run(EstimatorBench.Options.parse("--rows", "300", "--cols", "5", "--repeat", "1",
                    "--out", dir.toString()), out);
        }
        assertEquals(20, results.size());
        String[] lines = bytes.toString(StandardCharsets.UTF_8).strip().split("\n");
        assertEquals(21, lines.length);
        assertTrue(lines[0].startsWith("INFO bench=estimators rows=300 cols=5 repeat=1 backends=device,cpu "),
                lines[0]);
        for (int i = 1; i < lines.length; i++) {
            String backend = i % 2 == 1 ? "cpu" : "\\w+";
            assertTrue(lines[i].matches("RESULT estimator=\\w+ backend=" + backend + " fit_ms=[0-9.]+ "
                    + "predict_ms=[0-9.]+ rows=300 matches_reference=true"), lines[i]);
        }
        List<String> csv = Files.readAllLines(dir.resolve("estimators.csv"));
        assertEquals("estimator,backend,rows,fit_ms,predict_ms,matches_reference", csv.getFirst());
        assertEquals(21, csv.size());
        List<String> md = Files.readAllLines(dir.resolve("estimators.md"));
        assertTrue(md.stream().anyMatch(l -> l.startsWith("| estimator | rows | cpu fit | cpu predict | ")),
                md.toString());
        assertTrue(md.stream().anyMatch(l -> l.startsWith("| RandomForestRegressor | 300 | ") && l.endsWith(" true |")),
                md.toString());
    }

    @Test
    void shouldRunOneBackendAlone() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8)) {
            List<EstimatorBench.Result> results = EstimatorBench.run(EstimatorBench.Options.parse("--rows", "64",
                    "--cols", "3", "--repeat", "1", "--backends", "device"), out);
            assertEquals(10, results.size());
            assertTrue(results.stream().allMatch(EstimatorBench.Result::matchesReference), results.toString());
            assertTrue(results.stream().noneMatch(r -> r.backend().equals("cpu")), results.toString());
        }
    }

    @Test
    void shouldRunTheNamedEstimatorsWithTheNeighborsAsked() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8)) {
            List<EstimatorBench.Result> results = EstimatorBench.run(EstimatorBench.Options.parse("--rows", "200",
                    "--cols", "3", "--repeat", "1", "--neighbors", "40", "--estimators",
                    "NearestNeighbors,KNeighborsClassifier"), out);
            assertEquals(List.of("NearestNeighbors", "NearestNeighbors", "KNeighborsClassifier",
                    "KNeighborsClassifier"), results.stream().map(EstimatorBench.Result::estimator).toList());
            assertTrue(results.stream().allMatch(EstimatorBench.Result::matchesReference), results.toString());
        }
        assertTrue(bytes.toString(StandardCharsets.UTF_8).contains(" neighbors=40 "), bytes.toString());
        assertEquals("--estimators: unknown estimator 'SVM' (expected: LinearRegression, Ridge, LogisticRegression, "
                + "KMeans, PCA, MultinomialNB, NearestNeighbors, KNeighborsClassifier, RandomForestClassifier, "
                + "RandomForestRegressor)", assertThrows(IllegalArgumentException.class,
                        () -> EstimatorBench.Options.parse("--estimators", "SVM")).getMessage());
        assertEquals("--neighbors 0 (expected: 1 .. 1000)", assertThrows(IllegalArgumentException.class,
                () -> EstimatorBench.Options.parse("--neighbors", "0")).getMessage());
    }

    @Test
    void shouldRefuseUnknownOptionsAndBadSizes() {
        assertEquals("unknown option '--size' (expected: --rows N, --cols D, --repeat R, --backends device,cpu, "
                + "--neighbors K, --estimators NAME,NAME, --out DIR)", assertThrows(IllegalArgumentException.class,
                        () -> EstimatorBench.Options.parse("--size", "4")).getMessage());
        assertEquals("--rows 2 (expected: 8 .. 2147483647)", assertThrows(IllegalArgumentException.class,
                () -> EstimatorBench.Options.parse("--rows", "2")).getMessage());
        assertEquals("--rows x is not a number", assertThrows(IllegalArgumentException.class,
                () -> EstimatorBench.Options.parse("--rows", "x")).getMessage());
        assertEquals("--backends: unknown backend 'tpu' (expected: device, cuda or cpu)",
                assertThrows(IllegalArgumentException.class,
                        () -> EstimatorBench.Options.parse("--backends", "cpu,tpu")).getMessage());
        assertEquals("--backends [device, cuda] (expected: one or more of device or cuda, and cpu, each once)",
                assertThrows(IllegalArgumentException.class,
                        () -> EstimatorBench.Options.parse("--backends", "device,cuda")).getMessage());
    }
}
