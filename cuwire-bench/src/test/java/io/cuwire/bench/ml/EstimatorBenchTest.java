package io.cuwire.bench.ml;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.bench.harness.Results;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class EstimatorBenchTest {
    @Test
    void shouldPrintAMatchingResultLinePerEstimatorAndBackendAndWriteTheTablesInATinyRun(@TempDir Path dir)
            throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        List<EstimatorBench.Result> results;
        try (PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8)) {
            results = EstimatorBench.run(
                    EstimatorBench.Options.parse(
                            "--rows", "300", "--cols", "5", "--repeat", "1", "--warmup", "1", "--out", dir.toString()),
                    out);
        }
        assertEquals(20, results.size());
        // the neighbors' copying fit, timed beside their fitView, on both backends
        List<String> copying = new ArrayList<>();
        List<String> rest = new ArrayList<>();
        for (String line : bytes.toString(StandardCharsets.UTF_8).strip().split("\n")) {
            (line.contains(" copying_fit_ms=") ? copying : rest).add(line);
        }
        assertEquals(4, copying.size(), copying.toString());
        for (String line : copying) {
            assertTrue(
                    line.matches("INFO estimator=(NearestNeighbors|KNeighborsClassifier) backend=\\w+ "
                            + "copying_fit_ms=[0-9.]+ \\(fit, which copies X; fit_ms is fitView's, .*\\)"),
                    line);
        }
        String[] all = rest.toArray(String[]::new);
        assertEquals(41, all.length);
        assertTrue(
                all[0].startsWith("INFO bench=estimators rows=300 cols=5 repeat=1 warmup=1 backends=device,cpu "),
                all[0]);
        // each RESULT line follows the INFO line of its first, untimed run
        List<String> lines = new ArrayList<>(List.of(all[0]));
        for (int i = 1; i < all.length; i += 2) {
            assertTrue(
                    all[i].matches("INFO estimator=\\w+ backend=\\w+ first_fit_ms=[0-9.]+ first_predict_ms=[0-9.]+ "
                            + "\\(the first untimed run\\)"),
                    all[i]);
            lines.add(all[i + 1]);
        }
        for (int i = 1; i < lines.size(); i++) {
            String backend = i % 2 == 1 ? "cpu" : "\\w+";
            assertTrue(
                    lines.get(i)
                            .matches("RESULT estimator=\\w+ backend=" + backend + " fit_ms=[0-9.]+ "
                                    + "predict_ms=[0-9.]+ rows=300 matches_reference=true"),
                    lines.get(i));
        }
        List<String> csv = Files.readAllLines(dir.resolve("estimators-" + Results.machine() + ".csv"));
        assertEquals("estimator,backend,rows,fit_ms,predict_ms,matches_reference", csv.getFirst());
        assertEquals(21, csv.size());
        List<String> md = Files.readAllLines(dir.resolve("estimators-" + Results.machine() + ".md"));
        assertTrue(
                md.stream().anyMatch(l -> l.startsWith("| estimator | rows | cpu fit | cpu predict | ")),
                md.toString());
        assertTrue(
                md.stream().anyMatch(l -> l.startsWith("| RandomForestRegressor | 300 | ") && l.endsWith(" true |")),
                md.toString());
    }

    @Test
    void shouldSkipThePeerWithTheReasonWhenThereIsNoPython(@TempDir Path dir) throws IOException {
        String out = run(dir, "/nonexistent/python3", "Ridge");
        assertTrue(out.contains("INFO peer=sklearn skipped: cannot start /nonexistent/python3 ("), out);
        String md = Files.readString(dir.resolve("estimators-" + Results.machine() + ".md"));
        assertTrue(md.contains("scikit-learn did not run: cannot start /nonexistent/python3 ("), md);
    }

    @Test
    void shouldRunTheScikitLearnPeerOnTheSameDataAndWriteTheComparison(@TempDir Path dir) throws IOException {
        String python = sklearnPython();
        Assumptions.assumeTrue(python != null, "no python3 with scikit-learn here");
        String out = run(dir, python, "Ridge,KMeans,NearestNeighbors,RandomForestClassifier");
        assertTrue(out.contains("INFO peer=sklearn sklearn="), out);
        for (String e : List.of("Ridge", "KMeans", "NearestNeighbors")) {
            assertTrue(out.matches("(?s).*\nPEER estimator=" + e + " fit_ms=[0-9.]+ predict_ms=[0-9.]+ .*"), out);
        }
        assertTrue(!out.contains("PEER estimator=RandomForest"), out);
        String md = Files.readString(dir.resolve("estimators-" + Results.machine() + ".md"));
        assertTrue(
                md.matches("(?s).*\\| KMeans \\| [0-9.]+ \\| [0-9.]+ \\| [0-9.]+ \\| [0-9.]+ \\| [0-9.]+ \\| "
                        + "[0-9.]+ \\| \\d+ / \\d+ \\| n_clusters=8,init=given,n_init=1,tol=0,max_iter=100,.*"),
                md);
    }

    @Test
    void shouldParseThePeersLinesAndRefuseWhatTheyLack() {
        SklearnPeer.Row r = SklearnPeer.parse(
                "PEER estimator=KMeans fit_ms=1.5 predict_ms=0.25 n_iter=3 " + "settings=n_clusters=8,tol=0");
        assertEquals(new SklearnPeer.Row("KMeans", 1.5, 0.25, "3", "n_clusters=8,tol=0"), r);
        assertEquals(
                "peer line without predict_ms: PEER estimator=KMeans fit_ms=1.5",
                assertThrows(
                                IllegalArgumentException.class,
                                () -> SklearnPeer.parse("PEER estimator=KMeans fit_ms=1.5"))
                        .getMessage());
        assertEquals(
                "Invalid value for option '--peer': expected one of [NONE, SKLEARN] (case-insensitive) but was "
                        + "'torch'",
                assertThrows(IllegalArgumentException.class, () -> EstimatorBench.Options.parse("--peer", "torch"))
                        .getMessage());
    }

    private static String run(Path dir, String python, String estimators) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8)) {
            EstimatorBench.run(
                    EstimatorBench.Options.parse(
                            "--rows",
                            "200",
                            "--cols",
                            "4",
                            "--repeat",
                            "1",
                            "--backends",
                            "cpu",
                            "--estimators",
                            estimators,
                            "--peer",
                            "sklearn",
                            "--python",
                            python,
                            "--out",
                            dir.toString()),
                    out);
        }
        return bytes.toString(StandardCharsets.UTF_8);
    }

    /** python3 on the path, else /usr/bin/python3, whichever imports scikit-learn; {@code null} for neither. */
    static String sklearnPython() {
        return List.of("python3", "/usr/bin/python3").stream()
                .filter(EstimatorBenchTest::hasSklearn)
                .findFirst()
                .orElse(null);
    }

    private static boolean hasSklearn(String python) {
        try {
            Process p = new ProcessBuilder(python, "-c", "import sklearn")
                    .redirectErrorStream(true)
                    .start();
            p.getInputStream().readAllBytes();
            return p.waitFor(60, TimeUnit.SECONDS) && p.exitValue() == 0;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    @Test
    void shouldRunOneBackendAlone() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8)) {
            List<EstimatorBench.Result> results = EstimatorBench.run(
                    EstimatorBench.Options.parse(
                            "--rows", "64", "--cols", "3", "--repeat", "1", "--backends", "device"),
                    out);
            assertEquals(10, results.size());
            assertTrue(results.stream().allMatch(EstimatorBench.Result::matchesReference), results.toString());
            assertTrue(results.stream().noneMatch(r -> r.backend().equals("cpu")), results.toString());
        }
    }

    @Test
    void shouldRunTheNamedEstimatorsWithTheNeighborsAsked() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8)) {
            List<EstimatorBench.Result> results = EstimatorBench.run(
                    EstimatorBench.Options.parse(
                            "--rows",
                            "200",
                            "--cols",
                            "3",
                            "--repeat",
                            "1",
                            "--neighbors",
                            "40",
                            "--estimators",
                            "NearestNeighbors,KNeighborsClassifier"),
                    out);
            assertEquals(
                    List.of("NearestNeighbors", "NearestNeighbors", "KNeighborsClassifier", "KNeighborsClassifier"),
                    results.stream().map(EstimatorBench.Result::estimator).toList());
            assertTrue(results.stream().allMatch(EstimatorBench.Result::matchesReference), results.toString());
        }
        assertTrue(bytes.toString(StandardCharsets.UTF_8).contains(" neighbors=40 "), bytes.toString());
        assertEquals(
                "--estimators: unknown estimator 'SVM' (expected: LinearRegression, Ridge, LogisticRegression, "
                        + "KMeans, PCA, MultinomialNB, NearestNeighbors, KNeighborsClassifier, RandomForestClassifier, "
                        + "RandomForestRegressor)",
                assertThrows(IllegalArgumentException.class, () -> EstimatorBench.Options.parse("--estimators", "SVM"))
                        .getMessage());
        assertEquals(
                "--neighbors 0 (expected: 1 .. 1000)",
                assertThrows(IllegalArgumentException.class, () -> EstimatorBench.Options.parse("--neighbors", "0"))
                        .getMessage());
        assertEquals(
                "--warmup 0 (expected: >= 1)",
                assertThrows(IllegalArgumentException.class, () -> EstimatorBench.Options.parse("--warmup", "0"))
                        .getMessage());
    }

    @Test
    void shouldRefuseUnknownOptionsAndBadSizes() {
        assertEquals(
                "Unknown options: '--size', '4'",
                assertThrows(IllegalArgumentException.class, () -> EstimatorBench.Options.parse("--size", "4"))
                        .getMessage());
        assertEquals(
                "--rows 2 (expected: 8 .. 2147483647)",
                assertThrows(IllegalArgumentException.class, () -> EstimatorBench.Options.parse("--rows", "2"))
                        .getMessage());
        assertEquals(
                "Invalid value for option '--rows': 'x' is not a long",
                assertThrows(IllegalArgumentException.class, () -> EstimatorBench.Options.parse("--rows", "x"))
                        .getMessage());
        String backend = assertThrows(
                        IllegalArgumentException.class, () -> EstimatorBench.Options.parse("--backends", "cpu,tpu"))
                .getMessage();
        assertTrue(
                backend.startsWith("Invalid value for option '--backends'")
                        && backend.endsWith("expected one of [DEVICE, CUDA, CPU] (case-insensitive) but was 'tpu'"),
                backend);
        assertEquals(
                "--backends [device, cuda] (expected: one or more of device or cuda, and cpu, each once)",
                assertThrows(
                                IllegalArgumentException.class,
                                () -> EstimatorBench.Options.parse("--backends", "device,cuda"))
                        .getMessage());
    }

    @Test
    void shouldTakeTheIssuesForestSizeAndRefuseABadPeer() {
        EstimatorBench.Options o = EstimatorBench.Options.parse(
                "--rows",
                "1000000",
                "--cols",
                "64",
                "--forest-rows",
                "1000000",
                "--forest-trees",
                "100",
                "--forest-depth",
                "12",
                "--forest-peer",
                "sklearn");
        assertEquals(new EstimatorBench.Forests(1_000_000, 100, 12, true), o.forests());
        assertEquals(
                new EstimatorBench.Forests(50_000, 8, 10, false),
                EstimatorBench.Options.parse().forests());
        assertEquals(
                "Invalid value for option '--forest-peer': expected one of [NONE, SKLEARN] (case-insensitive) "
                        + "but was 'cuml'",
                assertThrows(
                                IllegalArgumentException.class,
                                () -> EstimatorBench.Options.parse("--forest-peer", "cuml"))
                        .getMessage());
        assertEquals(
                "--forest-rows 1000, --forest-trees 0, --forest-depth 10 (expected: each >= 1)",
                assertThrows(
                                IllegalArgumentException.class,
                                () -> EstimatorBench.Options.parse("--forest-rows", "1000", "--forest-trees", "0"))
                        .getMessage());
    }

    @Test
    void shouldPutTheScikitLearnPeerBesideTheForests() {
        Optional<String> why = SklearnForests.unavailable();
        Assumptions.assumeTrue(why.isEmpty(), () -> "scikit-learn not available: " + why.orElseThrow());
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        List<EstimatorBench.Result> results;
        try (PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8)) {
            results = EstimatorBench.run(
                    EstimatorBench.Options.parse(
                            "--rows",
                            "400",
                            "--cols",
                            "4",
                            "--repeat",
                            "1",
                            "--backends",
                            "cpu",
                            "--estimators",
                            "RandomForestClassifier,RandomForestRegressor",
                            "--forest-trees",
                            "5",
                            "--forest-depth",
                            "4",
                            "--forest-rows",
                            "300",
                            "--forest-peer",
                            "sklearn"),
                    out);
        }
        String printed = bytes.toString(StandardCharsets.UTF_8);
        assertEquals(
                List.of(
                        "RandomForestClassifier/cpu",
                        "RandomForestClassifier/sklearn",
                        "RandomForestRegressor/cpu",
                        "RandomForestRegressor/sklearn"),
                results.stream().map(r -> r.estimator() + "/" + r.backend()).toList(),
                printed);
        assertTrue(results.stream().allMatch(r -> r.rows() == 300 && r.matchesReference()), printed);
        assertTrue(printed.contains(" forest_trees=5 forest_depth=4 forest_rows=300"), printed);
    }
}
