package io.cuwire.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

class MainTest {
    /** One in-process run of the command line: exit code and what went to stdout and stderr. */
    private record Result(int exitCode, String out, String err) {
    }

    private static Result run(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code;
        try (PrintStream o = new PrintStream(out, true, StandardCharsets.UTF_8);
                PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8)) {
            code = Main.run(args, o, e);
        }
        return new Result(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void shouldPrintUsageToStdoutWithoutArguments() {
        Result r = run();
        assertEquals(Main.OK, r.exitCode());
        assertTrue(r.out().startsWith("usage: cuwire"), r.out());
        assertEquals("", r.err());
    }

    @Test
    void shouldPrintUsageForHelpAndDashDashHelp() {
        for (String help : new String[] {"help", "--help", "-h"}) {
            Result r = run(help);
            assertEquals(Main.OK, r.exitCode(), help);
            assertTrue(r.out().contains("info"), r.out());
        }
    }

    @Test
    void shouldRejectUnknownCommandWithUsageOnStderrAndExitCode2() {
        Result r = run("frobnicate");
        assertEquals(Main.USAGE, r.exitCode());
        assertEquals("", r.out());
        assertTrue(r.err().startsWith("cuwire: unknown command 'frobnicate'"), r.err());
        assertTrue(r.err().contains("usage: cuwire"), r.err());
    }

    @Test
    void shouldRejectArgumentsToInfo() {
        Result r = run("info", "--verbose");
        assertEquals(Main.USAGE, r.exitCode());
        assertTrue(r.err().contains("takes no arguments"), r.err());
    }

    @Test
    void shouldNameTheBenchmarksAndRefuseBadOptions() {
        Result r = run("bench");
        assertEquals(Main.USAGE, r.exitCode());
        assertTrue(r.err().contains("one of: copy"), r.err());
        r = run("bench", "copy", "--size", "lots");
        assertEquals(Main.USAGE, r.exitCode());
        assertTrue(r.err().startsWith("cuwire bench copy: "), r.err());
        r = run("bench", "transfer", "--sizes", "lots");
        assertEquals(Main.USAGE, r.exitCode());
        assertTrue(r.err().startsWith("cuwire bench transfer: size 'lots'"), r.err());
        r = run("bench", "transfer", "--transports", "carrier-pigeon");
        assertEquals(Main.USAGE, r.exitCode());
        assertTrue(r.err().contains("unknown transport 'carrier-pigeon'"), r.err());
    }

    @Test
    void shouldRunTheEstimatorBenchmarkAtTinySizes() {
        Result r = run("bench", "estimators", "--rows", "64", "--cols", "3", "--repeat", "1");
        assertEquals(Main.OK, r.exitCode(), r.err() + r.out());
        String[] lines = r.out().strip().split("\n");
        assertEquals(21, lines.length, r.out());
        assertTrue(lines[7].matches("RESULT estimator=KMeans backend=cpu fit_ms=[0-9.]+ predict_ms=[0-9.]+ rows=64 "
                + "matches_reference=true"), lines[7]);
        assertTrue(lines[8].matches("RESULT estimator=KMeans backend=\\w+ fit_ms=[0-9.]+ predict_ms=[0-9.]+ rows=64 "
                + "matches_reference=true"), lines[8]);
        r = run("bench", "estimators", "--rows", "lots");
        assertEquals(Main.USAGE, r.exitCode());
        assertTrue(r.err().startsWith("cuwire bench estimators: --rows lots is not a number"), r.err());
    }

    @Test
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void shouldRunTheBroadcastBenchmarkAtATinySizeAndWriteItsTables(@TempDir Path dir) throws Exception {
        Result r = run("bench", "broadcast", "--size", "1MiB", "--repeat", "2", "--warmup", "4", "--out",
                dir.toString());
        assertEquals(Main.OK, r.exitCode(), r.err() + r.out());
        for (String phase : new String[] {"raw", "cold", "warm", "unchanged"}) {
            assertTrue(r.out().matches("(?s).*\nRESULT bench=broadcast transport=ipc family=cuda size=1048576 phase="
                    + phase + " median_ms=[0-9.]+ .*checked=ok\n.*"), phase + " missing in:\n" + r.out());
        }
        assertTrue(r.out().matches("(?s).*\nRESULT bench=broadcast transport=ipc family=cuda size=1048576 phase=warm "
                + "median_ms=[0-9.]+ min_ms=[0-9.]+ max_ms=[0-9.]+ gbps=[0-9.]+ host_bytes=0 vs_raw=[0-9.]+ "
                + "checked=ok\n.*"), "the cuda family moves nothing through the host:\n" + r.out());
        for (String phase : new String[] {"cold", "warm"}) {
            assertTrue(r.out().matches("(?s).*\nRESULT bench=broadcast transport=tcp family=java size=1048576 phase="
                    + phase + " median_ms=[0-9.]+ .* java_vs_cuda=[0-9.]+ checked=ok\n.*"), phase + ":\n" + r.out());
        }
        assertTrue(r.out().contains(" checked=ok\nwrote "), r.out());
        try (var files = Files.list(dir)) {
            assertEquals(2, files.filter(f -> f.getFileName().toString().matches("broadcast-.*\\.(csv|md)")).count());
        }
        r = run("bench", "broadcast", "--size", "1000");
        assertEquals(Main.USAGE, r.exitCode());
        assertTrue(r.err().startsWith("cuwire bench broadcast: --size 1000 (expected: a multiple of 256"), r.err());
    }

    @Test
    void shouldRunTheRooflineBenchmarkAtTinySizes() {
        Result r = run("bench", "roofline", "--rows", "2000", "--cols", "8", "--repeat", "1");
        assertEquals(Main.OK, r.exitCode(), r.err() + r.out());
        String[] lines = r.out().strip().split("\n");
        assertEquals(5, lines.length, r.out());
        assertTrue(lines[4].startsWith("RESULT bench=roofline estimator=KMeans rows=2000 cols=8 predict_ms="),
                lines[4]);
        assertTrue(lines[4].endsWith(" matches_cpu=true"), lines[4]);
        r = run("bench", "roofline", "--clusters", "0");
        assertEquals(Main.USAGE, r.exitCode());
        assertEquals("cuwire bench roofline: --clusters 0 (expected: >= 1)", r.err().strip());
    }

    @Test
    void shouldRefuseTheCopyBenchmarkWithoutAGpuAndSayWhy() {
        org.junit.jupiter.api.Assumptions.assumeFalse(io.cuwire.cuda.Cuda.isAvailable(), "a GPU is here");
        Result r = run("bench", "copy", "--size", "1m");
        assertEquals(Main.FAILED, r.exitCode());
        assertTrue(r.err().contains("needs a CUDA device"), r.err());
    }

    @Test
    void shouldReportDevicesPlatformAndEveryTransport() {
        Result r = run("info");
        assertEquals(Main.OK, r.exitCode(), r.err());
        assertTrue(r.out().matches("(?s)device 0: platform=\\w+ name=\".+\" memory=[0-9.]+ \\w+ free=.*"), r.out());
        assertTrue(r.out().contains("\nplatform: "), r.out());
        for (String transport : new String[] {"inproc", "tcp", "ucx", "ipc"}) {
            assertTrue(r.out().matches("(?s).*\ntransport " + transport + ": (un)?available \\(.+\\)\n.*"),
                    transport + " missing in:\n" + r.out());
        }
        assertTrue(r.out().contains("transport inproc: available"), r.out());
        assertTrue(r.out().contains("transport tcp: available"), r.out());
    }
}
