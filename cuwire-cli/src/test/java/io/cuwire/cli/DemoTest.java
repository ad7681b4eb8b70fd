package io.cuwire.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.bench.harness.Cli;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

class DemoTest {
    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void shouldRunTheMainJobCheckEveryPathAndWriteTheReport(@TempDir Path dir) throws Exception {
        Path report = dir.resolve("out/report");
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code;
        try (PrintStream o = new PrintStream(out, true, StandardCharsets.UTF_8);
                PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8)) {
            code = Main.run(
                    new String[] {
                        "demo",
                        "--workers",
                        "2",
                        "--rows",
                        "4000",
                        "--features",
                        "8",
                        "--trees",
                        "4",
                        "--transports",
                        "tcp,ipc",
                        "--model-size",
                        "256KiB",
                        "--sweep",
                        "64KiB",
                        "--repeat",
                        "1",
                        "--report",
                        report.toString()
                    },
                    o,
                    e);
        }
        String text = out.toString(StandardCharsets.UTF_8);
        assertEquals(Main.OK, code, err.toString(StandardCharsets.UTF_8) + text);
        for (String line : List.of(
                "... starting a local cluster over tcp",
                "... starting a local cluster over ipc",
                "... over ipc: an untimed round through every model and family",
                "... over ipc: timed round 1 of 1",
                "... over ipc: sweep: the payload model at 64.0 KiB",
                "verdict (from the tables below; broadcast times are medians of 1 timed runs per path):",
                "java family: JDK serialization",
                "payload model: a NearestNeighbors",
                "LinearRegression (",
                "KMeans (",
                "RandomForestClassifier (",
                "NearestNeighbors (256.0 KiB):",
                "sweep: median broadcast ms of the payload model by size",
                "all checks MATCH")) {
            assertTrue(text.contains(line), line + " missing in:\n" + text);
        }
        List<String> lines = text.lines().toList();
        int verdict = lines.indexOf(
                "verdict (from the tables below; broadcast times are medians of 1 timed runs per " + "path):");
        for (String model : List.of("LinearRegression", "KMeans", "RandomForestClassifier", "NearestNeighbors")) {
            assertTrue(
                    lines.get(verdict
                                    + 1
                                    + List.of(
                                                    "LinearRegression",
                                                    "KMeans",
                                                    "RandomForestClassifier",
                                                    "NearestNeighbors")
                                            .indexOf(model))
                            .startsWith("  " + model + " ("),
                    text);
            for (String path :
                    List.of("tcp / cuda", "tcp / host", "tcp / java", "ipc / cuda", "ipc / host", "ipc / java")) {
                assertTrue(
                        lines.stream().anyMatch(l -> l.startsWith("  " + path) && l.contains(" MATCH (")),
                        path + " row missing in:\n" + text);
            }
        }
        assertTrue(
                lines.stream()
                        .anyMatch(l ->
                                l.startsWith("  ipc / cuda ") && l.contains("0 of 16 did not find " + "themselves")),
                text);
        assertTrue(lines.stream().anyMatch(l -> l.matches("  ipc / java +[0-9.]+ +[0-9.]+")), "sweep row: " + text);
        assertFalse(text.contains("MISMATCH"), text);
        Path page = report.resolve("index.html");
        String html = Files.readString(page);
        assertTrue(text.contains("report: " + page.toAbsolutePath()), text);
        assertTrue(
                html.startsWith("<!DOCTYPE html>")
                        && html.contains("<svg class=\"sweep\"")
                        && html.contains("ipc / host")
                        && html.contains("NearestNeighbors (256.0 KiB)")
                        && !html.contains("MISMATCH"),
                html);
        Optional<Path> chromium = HeadlessChromium.find();
        if (chromium.isPresent()) {
            try (HeadlessChromium browser =
                    HeadlessChromium.start(chromium.get(), Files.createDirectories(dir.resolve("profile")))) {
                Map<String, Object> layout = ReportBrowserTest.layout(browser, page);
                assertEquals(List.of(), layout.get("problems"), String.valueOf(layout));
                assertEquals(6.0, layout.get("series"), "two transports x three families: " + layout);
                assertEquals(12.0, layout.get("points"), "two sizes per series: " + layout);
            }
        }
    }

    @Test
    @Timeout(value = 10, unit = TimeUnit.SECONDS)
    void shouldSizeThePayloadPerPlatformAndSweepFromOneMebibyteBelowIt() {
        assertEquals(512L << 20, Demo.defaultModelBytes("cuda"));
        assertEquals(Demo.EMULATED_MODEL_BYTES, Demo.defaultModelBytes("emulated"));
        assertEquals(List.of(1L << 20, 4L << 20, 16L << 20, 64L << 20, 256L << 20), Demo.defaultSweep(512L << 20));
        assertEquals(List.of(1L << 20, 4L << 20, 16L << 20), Demo.defaultSweep(32L << 20));
        assertEquals(List.of(), Demo.defaultSweep(1L << 20));
        Demo.Options o = Demo.Options.parse(List.of("--model-size", "8MiB", "--sweep", "4MiB,1MiB,4MiB"));
        assertEquals(8L << 20, o.modelBytesOn("cuda"));
        assertEquals(List.of(1L << 20, 4L << 20), o.sweepFor(8L << 20));
        assertEquals(List.of(), Demo.Options.parse(List.of("--sweep", "none")).sweepFor(512L << 20));
        assertEquals(Demo.EMULATED_MODEL_BYTES, Demo.Options.parse(List.of()).modelBytesOn("emulated"));
    }

    @Test
    @Timeout(value = 10, unit = TimeUnit.SECONDS)
    void shouldRefuseAPayloadThatIsNotWholeRowsAndASweepAtOrAboveIt() {
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class, () -> Demo.Options.parse(List.of("--model-size", "100000")));
        assertEquals(
                "--model-size 100000 (expected: at least 64KiB and whole rows of 256 bytes, 64 float32 each)",
                e.getMessage());
        e = assertThrows(
                IllegalArgumentException.class,
                () -> Demo.Options.parse(List.of("--model-size", "4MiB", "--sweep", "1MiB,4MiB")));
        assertEquals(
                "--sweep 4194304 bytes (expected: below the payload model's 4194304 bytes, which its own table "
                        + "measures)",
                e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> Demo.Options.parse(List.of("--sweep", "1MB")));
        assertTrue(
                e.getMessage().startsWith("--sweep 1MB: size '1MB' (expected: bytes with an optional binary unit"),
                e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> Demo.Options.parse(List.of("--repeat", "0")));
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        try (PrintStream p = new PrintStream(err, true, StandardCharsets.UTF_8)) {
            assertEquals(Main.USAGE, Main.run(new String[] {"demo", "--sweep", "512MiB"}, System.out, p));
        }
        assertTrue(
                err.toString(StandardCharsets.UTF_8)
                        .contains("--sweep 536870912 bytes (expected: below the " + "payload model's"),
                err.toString(StandardCharsets.UTF_8));
    }

    @Test
    @Timeout(value = 10, unit = TimeUnit.SECONDS)
    void shouldRefuseAnUnknownOption() {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        try (PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8)) {
            assertEquals(Main.USAGE, Main.run(new String[] {"demo", "--frobnicate", "1"}, System.out, e));
        }
        assertEquals(
                "cuwire demo: Unknown options: '--frobnicate', '1'",
                err.toString(StandardCharsets.UTF_8).strip());
    }

    @Test
    @Timeout(value = 10, unit = TimeUnit.SECONDS)
    void shouldRefuseAWorkerWithoutASecretOrWithAShortOne() {
        for (String secret : new String[] {null, "0011"}) {
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            try (PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8)) {
                assertEquals(
                        Main.USAGE,
                        WorkerCommand.run(
                                Cli.parse(new WorkerCommand.Args(), "--device", "0"),
                                secret,
                                new ByteArrayInputStream(new byte[0]),
                                System.out,
                                e));
            }
            String text = err.toString(StandardCharsets.UTF_8);
            assertTrue(text.contains(secret == null ? "no cluster secret" : "has 2 bytes"), text);
        }
    }
}
