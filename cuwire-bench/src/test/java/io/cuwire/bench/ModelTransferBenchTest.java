package io.cuwire.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.bench.harness.Results;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The model-transfer benchmark's code paths at a tiny size, once (a worker JVM is started as in a real run), and its
 * results files; no timing is asserted.
 */
class ModelTransferBenchTest {
    /** Above the registry's 64 KiB frame threshold, so that cuwire sends the weights as a frame. */
    private static final long SIZE = 128 << 10;

    private static final List<String> WORKER_FLAGS = List.of(
            "--enable-native-access=ALL-UNNAMED",
            "--sun-misc-unsafe-memory-access=allow",
            "-Xmx256m",
            "-XX:TieredStopAtLevel=1");

    @Test
    void shouldMoveTheModelOverEveryPathAndHaveTheWorkerCheckEachOne(@TempDir Path dir) throws Exception {
        ModelTransferBench.Options options = ModelTransferBench.Options.parse(
                        "--sizes",
                        "128KiB",
                        "--rounds",
                        "2",
                        "--reps",
                        "3",
                        "--small-warmup",
                        "2",
                        "--out",
                        dir.toString())
                .withWorkerJvmArgs(WORKER_FLAGS);
        ByteArrayOutputStream printed = new ByteArrayOutputStream();
        int rc = ModelTransferBench.run(options, new PrintStream(printed, true, StandardCharsets.UTF_8));
        String out = printed.toString(StandardCharsets.UTF_8);
        assertEquals(0, rc, out);

        Path md = dir.resolve("model-transfer-" + Results.machine() + ".md");
        Path csv = dir.resolve("model-transfer-" + Results.machine() + ".csv");
        List<ModelTransferReport.Sample> samples = Files.readAllLines(csv).stream()
                .skip(1)
                .map(ModelTransferReport.Sample::parse)
                .toList();
        String report = Files.readString(md);
        // one cold transfer, 2 warm-up transfers and 2 rounds of 3 per path
        long transfers = 1 + 2 + 2 * 3;
        for (TransferPath p : options.paths()) {
            List<ModelTransferReport.Sample> mine =
                    samples.stream().filter(s -> s.path().equals(p.label())).toList();
            assertEquals(1, mine.stream().filter(s -> s.kind().equals("cold")).count(), p.label() + " cold");
            assertEquals(
                    2,
                    mine.stream()
                            .filter(s -> s.kind().equals("warm")
                                    && s.reps() == 3
                                    && s.nsPerMessage() > 0
                                    && s.size() == SIZE)
                            .count(),
                    p.label() + " warm samples");
            String worker = !p.toWorker()
                    ? p.label() + " went to a Dask worker process of its own (dask="
                    : p.raw()
                            ? p.label() + " received " + transfers + " transfers"
                            : p.label() + " checked " + transfers + " decoded models";
            assertTrue(report.contains(worker), "missing '" + worker + "' in\n" + report);
        }
        for (TransferPath p : List.of(TransferPath.CUWIRE_CUDA_HOST, TransferPath.CUWIRE_HOST)) {
            assertTrue(report.contains("- " + p.label() + ": client: serialize "), report);
            assertTrue(report.contains("; worker: receive "), report);
        }
        if (options.leftOut() != null) {
            assertTrue(report.contains("- " + options.leftOut()), report);
        }
        assertTrue(report.contains("## Summary over 1 run"), report);
        assertTrue(report.contains("(ceiling)"), report);
        assertTrue(report.contains("fewer than 5 rounds"), report);
    }

    @Test
    void shouldFoldASecondRunIntoTheSameFiles(@TempDir Path dir) throws Exception {
        ModelTransferBench.Options options = ModelTransferBench.Options.parse("--out", dir.toString());
        for (int run = 1; run <= 2; run++) {
            ModelTransferReport.Run r =
                    new ModelTransferReport.Run("2026-12-01 10:0" + run + " UTC", "abc", options, 1.0);
            for (int round = 1; round <= 5; round++) {
                r.sample(SIZE * 4096, TransferPath.RAW_ONCE, "warm", round, 0, 1, 200e6 + round);
                r.sample(SIZE * 4096, TransferPath.RAW_1M, "warm", round, 1, 1, 180e6 + round);
                r.sample(SIZE * 4096, TransferPath.FORY, "warm", round, 2, 1, 230e6 + round);
                r.sample(SIZE * 4096, TransferPath.CUWIRE_HOST, "warm", round, 3, 1, (run == 1 ? 300e6 : 190e6));
                r.sample(SIZE * 4096, TransferPath.DASK, "warm", round, 4, 1, 250e6);
            }
            r.sample(SIZE * 4096, TransferPath.CUWIRE_HOST, "cold", 0, 0, 1, run == 1 ? 500e6 : 200e6);
            r.fail(SIZE * 4096, TransferPath.CUWIRE_CUDA_HOST, "transfer 0 failed: no");
            ModelTransferReport.write(dir, "mt", r, false);
        }
        String md = Files.readString(dir.resolve("mt.md"));
        assertTrue(md.contains("## Summary over 2 runs"), md);
        assertTrue(md.indexOf("<!-- run 1 -->") < md.indexOf("<!-- run 2 -->"), md);
        assertTrue(
                md.contains("run 1: cuwire-host at 512 MiB: ≥ 0.9 × the raw ceiling: NOT MET (0.600 ×, raw-1m)"), md);
        assertTrue(md.contains("run 2: cuwire-host at 512 MiB: ≥ 0.9 × the raw ceiling: MET (0.947 ×, raw-1m)"), md);
        assertTrue(md.contains("run 2: cuwire-host at 512 MiB: ahead of Fory out-of-band: MET"), md);
        assertTrue(md.contains("cuwire-cuda-host at 512 MiB: NOT MET (failed: transfer 0 failed: no)"), md);
        assertTrue(md.contains("run 1: cuwire-host at 512 MiB: ahead of Dask scatter: NOT MET (300 vs 250 ms)"), md);
        assertTrue(md.contains("run 2: cuwire-host at 512 MiB: ahead of Dask scatter: MET (190 vs 250 ms)"), md);
        assertTrue(
                md.contains("run 1: cuwire-host at 512 MiB: the cold transfer ≤ 1.5 × a warm one: NOT MET (1.67 ×"),
                md);
        assertTrue(md.contains("run 2: cuwire-host at 512 MiB: the cold transfer ≤ 1.5 × a warm one: MET (1.05 ×"), md);
        assertEquals(
                1 + 2 * (5 * 5 + 2), Files.readAllLines(dir.resolve("mt.csv")).size());
    }

    @Test
    void shouldWarnWhenAPathBeatsTheCeiling(@TempDir Path dir) throws Exception {
        ModelTransferReport.Run r =
                new ModelTransferReport.Run("2026-12-01 10:00 UTC", "abc", ModelTransferBench.Options.parse(), 1.0);
        for (int round = 1; round <= 5; round++) {
            r.sample(SIZE, TransferPath.RAW_64K, "warm", round, 0, 10, 300e3);
            r.sample(SIZE, TransferPath.KRYO, "warm", round, 1, 10, 250e3);
        }
        ModelTransferReport.write(dir, "mt", r, true);
        assertTrue(Files.readString(dir.resolve("mt.md")).contains("WARNING: kryo is faster than the ceiling"));
    }

    @Test
    void shouldRotateTheOrderAndReverseItEveryOtherRound() {
        Map<TransferPath, Boolean> three = new LinkedHashMap<>();
        for (TransferPath p : List.of(TransferPath.RAW_ONCE, TransferPath.JDK, TransferPath.KRYO)) {
            three.put(p, true);
        }
        assertEquals(
                List.of(TransferPath.RAW_ONCE, TransferPath.JDK, TransferPath.KRYO),
                ModelTransferBench.rotated(three, 0));
        assertEquals(
                List.of(TransferPath.RAW_ONCE, TransferPath.KRYO, TransferPath.JDK),
                ModelTransferBench.rotated(three, 1));
        assertEquals(
                List.of(TransferPath.KRYO, TransferPath.RAW_ONCE, TransferPath.JDK),
                ModelTransferBench.rotated(three, 2));
    }

    @Test
    void shouldRunDaskByDefaultExactlyWherePythonHasIt() {
        ModelTransferBench.Options options = ModelTransferBench.Options.parse();
        boolean dask = DaskPeer.unavailable().isEmpty();
        assertEquals(dask, options.paths().contains(TransferPath.DASK), String.valueOf(options.leftOut()));
        assertEquals(dask, options.leftOut() == null, String.valueOf(options.leftOut()));
        assertEquals(
                TransferPath.values().length - (dask ? 0 : 1), options.paths().size());
        assertEquals(
                List.of(TransferPath.DASK),
                ModelTransferBench.Options.parse("--paths", "dask-scatter").paths());
    }

    @Test
    void shouldRefuseAnUnknownPath() {
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class, () -> ModelTransferBench.Options.parse("--paths", "raw-once,grpc"));
        assertTrue(e.getMessage().startsWith("unknown path 'grpc' (expected: raw-once, raw-64k"), e.getMessage());
    }
}
