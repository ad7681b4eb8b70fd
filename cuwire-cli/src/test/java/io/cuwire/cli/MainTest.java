package io.cuwire.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.Devices;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class MainTest {
    /** One in-process run of the command line: exit code and what went to stdout and stderr. */
    record Result(int exitCode, String out, String err) {}

    static Result run(String... args) {
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
        assertEquals("cuwire info: Unknown option: '--verbose'", r.err().strip());
        assertEquals("", r.out());
    }

    @Test
    void shouldPrintGeneratedHelpForEachCommand() {
        Result r = run("bench", "copy", "--help");
        assertEquals(Main.OK, r.exitCode(), r.err());
        assertTrue(r.out().startsWith("usage: cuwire bench copy "), r.out());
        assertTrue(r.out().contains("[--size=SIZE]") && r.out().contains("[--repeat=N]"), r.out());
        assertTrue(r.out().contains("--size=SIZE") && r.out().contains("default: 1GiB"), r.out());
        r = run("help", "bench");
        assertEquals(Main.OK, r.exitCode(), r.err());
        assertTrue(r.out().startsWith("usage: cuwire bench"), r.out());
        for (String bench : List.of(
                "copy",
                "transfer",
                "broadcast",
                "estimators",
                "knn",
                "roofline",
                "mllib",
                "spark-broadcast",
                "spark-stages")) {
            assertTrue(r.out().contains("\n  " + bench + " "), bench + " missing in:\n" + r.out());
            Result one = run("bench", bench, "--help");
            assertEquals(Main.OK, one.exitCode(), bench + ": " + one.err());
            assertTrue(one.out().startsWith("usage: cuwire bench " + bench), one.out());
        }
        r = run("info", "-h");
        assertEquals(Main.OK, r.exitCode(), r.err());
        assertTrue(r.out().startsWith("usage: cuwire info"), r.out());
    }

    @Test
    void shouldRefuseTheSparkBenchmarksWithoutSparkNamingWhatIsMissing() {
        // this module's class path has cuwire-bench and cuwire-spark, not Spark (provided there)
        for (String bench : List.of("mllib", "spark-broadcast", "spark-stages")) {
            Result r = run("bench", bench);
            assertEquals(Main.FAILED, r.exitCode(), r.out());
            assertTrue(
                    r.err().startsWith("cuwire bench " + bench + ": needs Apache Spark 4.2 on the class path"),
                    r.err());
            assertTrue(r.err().contains("spark-core_2.13 (org.apache.spark.SparkContext)"), r.err());
            assertTrue(r.err().contains("spark-mllib_2.13"), r.err());
        }
    }

    /** Every command but help, depth first: cuwire demo, cuwire worker, ..., cuwire bench copy, .... */
    private static List<CommandLine> commands(CommandLine c) {
        List<CommandLine> all = new ArrayList<>();
        for (CommandLine sub : c.getSubcommands().values()) {
            if (!sub.getCommandName().equals("help") && !all.contains(sub)) {
                all.add(sub);
                all.addAll(commands(sub));
            }
        }
        return all;
    }

    @Test
    void shouldListEveryOptionInEachCommandsHelpAndRefuseAnUnknownOneNamingIt() {
        List<CommandLine> commands = commands(Main.commandLine(System.out, System.err));
        assertEquals(
                List.of(
                        "demo",
                        "worker",
                        "info",
                        "model",
                        "inspect",
                        "import",
                        "export",
                        "python-helper",
                        "bench",
                        "copy",
                        "transfer",
                        "broadcast",
                        "estimators",
                        "knn",
                        "roofline",
                        "mllib",
                        "spark-broadcast",
                        "spark-stages"),
                commands.stream().map(CommandLine::getCommandName).toList());
        for (CommandLine c : commands) {
            String name = c.getCommandSpec().qualifiedName(" ");
            List<String> path = new ArrayList<>(List.of(name.split(" ")).subList(1, name.split(" ").length));
            path.add("--help");
            Result help = run(path.toArray(String[]::new));
            assertEquals(Main.OK, help.exitCode(), name + ": " + help.err());
            assertTrue(help.out().startsWith("usage: " + name), help.out());
            for (CommandLine.Model.OptionSpec o : c.getCommandSpec().options()) {
                assertTrue(
                        help.out().contains(o.longestName()),
                        o.longestName() + " not in the help of " + name + ":\n" + help.out());
                String[] words = o.description().length == 0 ? new String[0] : o.description()[0].split(" ");
                String start = words.length < 2 ? "" : words[0] + " " + words[1];
                assertTrue(
                        !start.isEmpty() && help.out().contains(start),
                        o.longestName() + "'s description (" + start + ") not in:\n" + help.out());
            }
            path.set(path.size() - 1, "--no-such-option");
            Result bad = run(path.toArray(String[]::new));
            assertEquals(Main.USAGE, bad.exitCode(), name);
            assertTrue(bad.err().startsWith(name + ": Unknown option: '--no-such-option'"), bad.err());
        }
    }

    @Test
    void shouldRefuseABadValueOfEachCommandNamingTheOption() {
        String[][] cases = {
            {"cuwire demo: --repeat 0 (expected: >= 1)", "demo", "--repeat", "0"},
            {"cuwire demo: --model-size 100000 (expected: at least 64KiB", "demo", "--model-size", "100000"},
            {"cuwire demo: Invalid value for option '--transports'", "demo", "--transports", "tcp,pigeon"},
            {"cuwire worker: Invalid value for option '--device': 'x' is not an int", "worker", "--device", "x"},
            {"cuwire bench transfer: Invalid value for option '--families'", "bench", "transfer", "--families", "pickle"
            },
            {"cuwire bench transfer: --repeat 0 (expected: >= 1)", "bench", "transfer", "--repeat", "0"},
            {
                "cuwire bench broadcast: Invalid value for option '--java': 'maybe' is not a boolean",
                "bench",
                "broadcast",
                "--java",
                "maybe"
            },
            {"cuwire bench broadcast: --workers 0 (expected: >= 1)", "bench", "broadcast", "--workers", "0"},
            {
                "cuwire bench estimators: Invalid value for option '--backends'",
                "bench",
                "estimators",
                "--backends",
                "cpu,tpu"
            },
            {"cuwire bench estimators: Invalid value for option '--peer'", "bench", "estimators", "--peer", "torch"},
            {"cuwire bench estimators: --neighbors 0 (expected: 1 .. ", "bench", "estimators", "--neighbors", "0"},
        };
        for (String[] c : cases) {
            Result r = run(List.of(c).subList(1, c.length).toArray(String[]::new));
            assertEquals(Main.USAGE, r.exitCode(), String.join(" ", c));
            assertTrue(r.err().startsWith(c[0]), c[0] + " expected, got: " + r.err());
            assertEquals("", r.out());
        }
    }

    @Test
    void shouldRefuseAnUnknownOptionExactly() {
        Result r = run("bench", "roofline", "--rowz", "5");
        assertEquals(Main.USAGE, r.exitCode());
        assertEquals(
                "cuwire bench roofline: Unknown options: '--rowz', '5'", r.err().strip());
        r = run("bench", "frobnicate");
        assertEquals(Main.USAGE, r.exitCode());
        assertTrue(
                r.err().startsWith("cuwire bench: unknown command 'frobnicate'; which benchmark? one of: copy, "),
                r.err());
    }

    @Test
    void shouldRefuseABadValueExactly() {
        Result r = run("bench", "roofline", "--repeat", "often");
        assertEquals(Main.USAGE, r.exitCode());
        assertEquals(
                "cuwire bench roofline: Invalid value for option '--repeat': 'often' is not an int",
                r.err().strip());
        r = run("bench", "copy", "--size", "1MB");
        assertEquals(Main.USAGE, r.exitCode());
        assertEquals(
                "cuwire bench copy: Invalid value for option '--size': size '1MB' (expected: bytes with an "
                        + "optional binary unit, e.g. 4096, 64KiB, 1m, 1GiB or 1g)",
                r.err().strip());
        r = run("bench", "copy", "--repeat", "0");
        assertEquals(Main.USAGE, r.exitCode());
        assertEquals("cuwire bench copy: --repeat: 0 (expected: > 0)", r.err().strip());
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
        assertTrue(
                r.err().startsWith("cuwire bench transfer: Invalid value for option '--sizes'")
                        && r.err().contains("size 'lots'"),
                r.err());
        r = run("bench", "transfer", "--transports", "carrier-pigeon");
        assertEquals(Main.USAGE, r.exitCode());
        assertTrue(r.err().contains("unknown transport 'carrier-pigeon'"), r.err());
    }

    @Test
    void shouldRunTheEstimatorBenchmarkAtTinySizes() {
        Result r = run("bench", "estimators", "--rows", "64", "--cols", "3", "--repeat", "1");
        assertEquals(Main.OK, r.exitCode(), r.err() + r.out());
        String[] all = r.out().strip().split("\n");
        // the settings, a first-run INFO and a RESULT line per estimator and backend, and the neighbors' copying fits
        assertEquals(45, all.length, r.out());
        List<String> lines =
                Arrays.stream(all).filter(l -> !l.startsWith("INFO estimator=")).toList();
        assertEquals(21, lines.size(), r.out());
        assertTrue(
                lines.get(7)
                        .matches("RESULT estimator=KMeans backend=cpu fit_ms=[0-9.]+ predict_ms=[0-9.]+ rows=64 "
                                + "matches_reference=true"),
                lines.get(7));
        assertTrue(
                lines.get(8)
                        .matches("RESULT estimator=KMeans backend=\\w+ fit_ms=[0-9.]+ predict_ms=[0-9.]+ rows=64 "
                                + "matches_reference=true"),
                lines.get(8));
        r = run("bench", "estimators", "--rows", "lots");
        assertEquals(Main.USAGE, r.exitCode());
        assertEquals(
                "cuwire bench estimators: Invalid value for option '--rows': 'lots' is not a long",
                r.err().strip());
    }

    @Test
    void shouldRunTheNeighborsBenchmarkAtATinySize() {
        Result r = run("bench", "knn", "--rows", "2000", "--queries", "20", "--cols", "4", "--k", "3", "--repeat", "1");
        assertEquals(Main.OK, r.exitCode(), r.err() + r.out());
        String[] lines = r.out().strip().split("\n");
        assertEquals(3, lines.length, r.out());
        assertTrue(lines[0].startsWith("INFO bench=knn device="), lines[0]);
        assertTrue(lines[2].startsWith("RESULT bench=knn path=gemm_select rows=2000 queries=20 cols=4 k=3 "), lines[2]);
        assertTrue(lines[2].endsWith(" matches_cpu=true"), lines[2]);
        r = run("bench", "knn", "--k", "0");
        assertEquals(Main.USAGE, r.exitCode());
        assertEquals(
                "cuwire bench knn: --k [0] (expected: each 1 .. 1000000, the rows)",
                r.err().strip());
    }

    @Test
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void shouldRunTheBroadcastBenchmarkAtATinySizeAndWriteItsTables(@TempDir Path dir) throws Exception {
        Result r =
                run("bench", "broadcast", "--size", "1MiB", "--repeat", "2", "--warmup", "4", "--out", dir.toString());
        assertEquals(Main.OK, r.exitCode(), r.err() + r.out());
        assertTrue(
                r.out()
                        .matches("(?s).*\nRESULT bench=broadcast workers=1 strategy=none transport=ipc family=cuda "
                                + "size=1048576 phase=raw median_ms=[0-9.]+ .*checked=ok\n.*"),
                "raw missing in:\n" + r.out());
        for (String phase : new String[] {"cold", "warm", "unchanged"}) {
            assertTrue(
                    r.out()
                            .matches("(?s).*\nRESULT bench=broadcast workers=1 strategy=each transport=ipc "
                                    + "family=cuda size=1048576 phase=" + phase
                                    + " median_ms=[0-9.]+ .*checked=ok\n.*"),
                    phase + " missing in:\n" + r.out());
        }
        assertTrue(
                r.out()
                        .matches("(?s).*\nRESULT bench=broadcast workers=1 strategy=each transport=ipc family=cuda "
                                + "size=1048576 phase=warm median_ms=[0-9.]+ min_ms=[0-9.]+ max_ms=[0-9.]+ gbps=[0-9.]+ "
                                + "gbps_aggregate=[0-9.]+ host_bytes=0 sent=1 vs_raw=[0-9.]+ checked=ok\n.*"),
                "the cuda family moves nothing through the host:\n" + r.out());
        for (String phase : new String[] {"cold", "warm"}) {
            assertTrue(
                    r.out()
                            .matches("(?s).*\nRESULT bench=broadcast workers=1 strategy=each transport=tcp "
                                    + "family=java size=1048576 phase=" + phase
                                    + " median_ms=[0-9.]+ .* java_vs_cuda=[0-9.]+ "
                                    + "checked=ok\n.*"),
                    phase + ":\n" + r.out());
        }
        assertTrue(
                r.out()
                        .matches("(?s).*\nRESULT bench=broadcast size=1048576 summary cuda_ipc_warm_ms=[0-9.]+ "
                                + "raw_ms=[0-9.]+ vs_raw=[0-9.]+ within_1\\.15=(true|false) java_tcp_warm_ms=[0-9.]+ "
                                + "java_vs_cuda=[0-9.]+ at_least_50=(true|false) checked=ok\nwrote .*"),
                r.out());
        try (var files = Files.list(dir)) {
            assertEquals(
                    2,
                    files.filter(f -> f.getFileName().toString().matches("broadcast-.*\\.(csv|md)"))
                            .count());
        }
        r = run("bench", "broadcast", "--size", "1000");
        assertEquals(Main.USAGE, r.exitCode());
        assertTrue(
                r.err().startsWith("cuwire bench broadcast: Invalid value for option '--size")
                        && r.err().contains("1000 (expected: a multiple of 256"),
                r.err());
        r = run("bench", "broadcast", "--strategies", "star");
        assertEquals(Main.USAGE, r.exitCode());
        assertTrue(
                r.err().startsWith("cuwire bench broadcast: Invalid value for option '--strategies'")
                        && r.err().contains("unknown strategy 'star'"),
                r.err());
    }

    @Test
    @Timeout(value = 240, unit = TimeUnit.SECONDS)
    void shouldBroadcastToThreeWorkersByEachStrategyAndSendNothingForAnUnchangedModel(@TempDir Path dir)
            throws Exception {
        Result r = run(
                "bench",
                "broadcast",
                "--workers",
                "3",
                "--sizes",
                "64KiB,256KiB",
                "--repeat",
                "2",
                "--warmup",
                "6",
                "--out",
                dir.toString());
        assertEquals(Main.OK, r.exitCode(), r.err() + r.out());
        int devices = Devices.all().size();
        String placed = devices == 1 ? "0,0,0" : devices == 2 ? "1,1,1" : devices == 3 ? "1,2,1" : "1,2,3";
        assertTrue(
                r.out()
                        .contains(" 3 worker(s) on device(s) " + placed + " (worker i on the i-th), sizes "
                                + "65536,262144, strategies each,chain,tree,"),
                devices + " device(s): devices 1.." + (devices - 1)
                        + " for the workers, or device 0 on a one-device host:\n" + r.out());
        for (String size : new String[] {"65536", "262144"}) {
            assertTrue(
                    r.out()
                            .matches("(?s).*\nRESULT bench=broadcast workers=3 strategy=none transport=ipc "
                                    + "family=cuda size=" + size + " phase=raw median_ms=[0-9.]+ .*checked=ok\n.*"),
                    r.out());
            for (String strategy : new String[] {"each", "chain", "tree"}) {
                for (String phase : new String[] {"cold", "warm", "unchanged"}) {
                    String sent = phase.equals("unchanged") ? "0" : "3";
                    assertTrue(
                            r.out()
                                    .matches("(?s).*\nRESULT bench=broadcast workers=3 strategy=" + strategy
                                            + " transport=ipc family=cuda size=" + size + " phase=" + phase
                                            + " median_ms=[0-9.]+ "
                                            + "min_ms=[0-9.]+ max_ms=[0-9.]+ gbps=[0-9.]+ gbps_aggregate=[0-9.]+ host_bytes=0 sent="
                                            + sent + " vs_raw=[0-9.]+ checked=ok\n.*"),
                            strategy + " " + phase + " of " + size + " missing or wrong in:\n" + r.out());
                }
            }
            assertTrue(
                    r.out()
                            .matches("(?s).*\nRESULT bench=broadcast workers=3 size=" + size + " summary "
                                    + "raw_ms=[0-9.]+ each_vs_raw=[0-9.]+ best_pipelined=(chain|tree) pipelined_warm_ms=[0-9.]+ "
                                    + "pipelined_vs_raw=[0-9.]+ within_1\\.5=n/a unchanged_max_ms=[0-9.]+ "
                                    + "unchanged_under_1ms=(true|false) checked=ok\n.*"),
                    "below 1 GiB there is no 1.5 target:\n" + r.out());
        }
        assertTrue(
                r.out()
                        .contains("SKIP bench=broadcast transport=tcp family=java reason=\"the java family runs "
                                + "with --workers 1 only"),
                r.out());
        assertFalse(r.out().contains("family=java size="), "no java family case with three workers:\n" + r.out());
        Path csv;
        try (var files = Files.list(dir)) {
            csv = files.filter(f -> f.getFileName().toString().matches("broadcast-.*\\.csv"))
                    .findFirst()
                    .orElseThrow();
        }
        List<String> rows = Files.readAllLines(csv);
        assertEquals(
                "workers,strategy,transport,family,size,phase,median_ms,min_ms,max_ms,gbps,gbps_aggregate,"
                        + "vs_raw,java_vs_cuda,host_bytes,sent,checked",
                rows.getFirst());
        assertEquals(2 * (1 + 3 * 3), rows.size() - 1, "per size a raw copy and three phases per strategy:\n" + rows);
        assertEquals(
                6,
                rows.stream()
                        .filter(l -> l.matches("3,(each|chain|tree),ipc,cuda,\\d+,unchanged,.*,0,0," + "true"))
                        .count(),
                "unchanged: no bytes through the host, no worker sent frames:\n" + rows);
    }

    @Test
    void shouldRunTheRooflineBenchmarkAtTinySizes() {
        Result r = run("bench", "roofline", "--rows", "2000", "--cols", "8", "--repeat", "1");
        assertEquals(Main.OK, r.exitCode(), r.err() + r.out());
        String[] lines = r.out().strip().split("\n");
        assertEquals(6, lines.length, r.out());
        assertTrue(lines[3].startsWith("RESULT bench=roofline read=sum bytes=64000 read_ms="), lines[3]);
        assertTrue(
                lines[5].startsWith("RESULT bench=roofline estimator=KMeans rows=2000 cols=8 predict_ms="), lines[5]);
        assertTrue(lines[5].endsWith(" matches_cpu=true"), lines[5]);
        r = run("bench", "roofline", "--clusters", "0");
        assertEquals(Main.USAGE, r.exitCode());
        assertEquals(
                "cuwire bench roofline: --clusters 0 (expected: >= 1)", r.err().strip());
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
            assertTrue(
                    r.out().matches("(?s).*\ntransport " + transport + ": (un)?available \\(.+\\)\n.*"),
                    transport + " missing in:\n" + r.out());
        }
        assertTrue(r.out().contains("transport inproc: available"), r.out());
        assertTrue(r.out().contains("transport tcp: available"), r.out());
    }
}
