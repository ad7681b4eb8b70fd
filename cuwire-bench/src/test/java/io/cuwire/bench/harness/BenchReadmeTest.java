package io.cuwire.bench.harness;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class BenchReadmeTest {
    private static final Path BENCH = Path.of("..", "bench");

    @Test
    void shouldBeWhatTheGeneratorGivesFromTheCurrentResultsFiles() throws Exception {
        assertEquals(
                BenchReadme.generate(BENCH.resolve("results")),
                Files.readString(BENCH.resolve("README.md")),
                "bench/README.md differs from what the results files give: regenerate it with ./cuwire bench readme");
    }

    @Test
    void shouldTakeEachFigureFromTheNewestRunThatHasItAndCiteThatRun(@TempDir Path dir) throws Exception {
        String older = Results.fold(
                null,
                null,
                "transfer-nvidia-h200",
                "t",
                "2026-12-01, first",
                "RESULT transport=ipc family=cuda size=1024 rtt_us=99.0\n"
                        + "RESULT transport=ipc family=cuda size=1073741824 median_ms=1.2 gbps=900.0 d2h_bytes=0 "
                        + "h2d_bytes=0 vs_raw=0.90 raw_gbps=1000.0 checked=ok",
                false);
        String newer = Results.fold(
                older,
                null,
                "transfer-nvidia-h200",
                "t",
                "2026-12-02, second",
                "- `RESULT transport=ipc family=cuda size=1024 rtt_us=70.5`",
                false);
        Files.writeString(dir.resolve("transfer-nvidia-h200.md"), newer);
        List<BenchReadme.Run> runs = BenchReadme.runs(dir, "transfer-nvidia-h200.md");
        assertEquals(
                List.of("run 2026-12-02, second", "run 2026-12-01, first"),
                runs.stream().map(BenchReadme.Run::label).toList());
        String readme = BenchReadme.generate(dir);
        assertTrue(
                readme.contains(
                        "| nvidia-h200 | 70.5 µs |  |  | `transfer-nvidia-h200.md`, run 2026-12-02, " + "second |"),
                readme);
        assertTrue(
                readme.contains("| nvidia-h200 | 900.0 GB/s, host bytes 0 / 0 | raw 1000.0 GB/s | 0.90 × | "
                        + "`transfer-nvidia-h200.md`, run 2026-12-01, first |"),
                readme);
        assertTrue(
                readme.contains("| nvidia-h200-x2 | not recorded |  |  | `transfer-nvidia-h200-x2.md`: no such "
                        + "figure in any run |"),
                readme);
    }

    @Test
    void shouldShowEachTransportsPerFrameCostOfTheManyFramesCaseAndIpcsCopiesAndOpens(@TempDir Path dir)
            throws Exception {
        Files.writeString(
                dir.resolve("transfer-cpu-2core.md"),
                Results.fold(
                        null,
                        null,
                        "transfer-cpu-2core",
                        "t",
                        "2026-12-07, many",
                        "before: RESULT transport=tcp family=cuda many_frames arrays=10000 per_frame_us=20.000\n"
                                + "RESULT transport=tcp family=cuda many_frames arrays=10000 array_bytes=102400 "
                                + "many_ms=400.000 one_ms=380.000 per_frame_us=2.000 receiver_allocations=62/2 "
                                + "receiver_syscalls=900/800 sender_syscalls=700/600 receiver_opens=0/0 "
                                + "cold_opens=0/0 host_bytes=1 checked=ok\n"
                                + "RESULT transport=ipc family=cuda many_frames arrays=10000 array_bytes=102400 "
                                + "many_ms=130.000 one_ms=60.000 per_frame_us=7.000 receiver_allocations=62/2 "
                                + "receiver_syscalls=4/3 sender_syscalls=5/4 receiver_opens=0/0 cold_opens=313/1 "
                                + "host_bytes=0 checked=ok copy_per_frame_us=5.500",
                        false));
        String readme = BenchReadme.generate(dir);
        assertTrue(
                readme.contains("| TCP many frames: (10,000 arrays − one array of their bytes) / 10,000 ≤ 2 µs (issue "
                        + "21.4) | cpu-2core | 2.000 µs a frame (many 400.000 ms, one 380.000 ms; per message, "
                        + "many/one: receiver allocations 62/2, receiver syscalls 900/800, sender syscalls 700/600) |"
                        + "  | 1.00 × the target | `transfer-cpu-2core.md`, run 2026-12-07, many |"),
                readme);
        assertTrue(
                readme.contains("| IPC many frames: (10,000 arrays − one array of their bytes) / 10,000 ≤ 1 µs (issue "
                        + "21.4) | cpu-2core | 7.000 µs a frame (many 130.000 ms, one 60.000 ms; per message, "
                        + "many/one: receiver allocations 62/2, receiver syscalls 4/3, sender syscalls 5/4, IPC handle "
                        + "opens 0/0 (first message 313/1)) | the copies alone 5.500 µs a frame | 7.00 × the target |"),
                readme);
        assertTrue(
                readme.contains("| TCP many frames: (10,000 arrays − one array of their bytes) / 10,000 ≤ 2 µs (issue "
                        + "21.4) | nvidia-h200 | not recorded |"),
                readme);
    }

    @Test
    void shouldReadATableByItsColumnNames(@TempDir Path dir) throws Exception {
        Files.writeString(
                dir.resolve("estimators-cpu-2core.md"),
                Results.fold(null, null, "estimators-cpu-2core", "e", "2026-12-02", """
                        | estimator | cuwire cpu fit | scikit-learn fit | fit ratio | predict ratio |
                        |---|---|---|---|---|
                        | Ridge | 2 | 1 | 2.00 | 0.50 |
                        | PCA | 1 | 1 | 1.00 | 1.20 |
                        """, false));
        String readme = BenchReadme.generate(dir);
        assertTrue(
                readme.contains("| cpu-2core | 1 of 2 estimators within 1.5 × on both | scikit-learn, same data, "
                        + "same run | worst 2.00 × (Ridge fit) | `estimators-cpu-2core.md`, run 2026-12-02 |"),
                readme);
    }

    /** bench knn: the GEMM + select line at 10⁶ x 10⁴ and the fused and scikit-learn lines of its k and dtype. */
    @Test
    void shouldPutTheFusedNeighborsKernelBesideItsBaselineAndScikitLearn(@TempDir Path dir) throws Exception {
        String at = "rows=1000000 queries=10000 cols=32 k=5 dtype=float32";
        Files.writeString(
                dir.resolve("knn-nvidia-h200.md"),
                Results.fold(
                        null,
                        null,
                        "knn-nvidia-h200",
                        "k",
                        "2026-12-08",
                        "```text\nRESULT bench=knn path=fused_k8 " + at + " predict_ms=30.000 queries_per_s=333333 "
                                + "vs_fused=1.000 ids_agree=1.0000 matches_cpu=true\n"
                                + "RESULT bench=knn path=gemm_select " + at + " predict_ms=90.000 queries_per_s=111111 "
                                + "vs_fused=3.000 block_queries=268 ids_agree=0.9980 matches_cpu=true\n"
                                + "RESULT bench=knn path=sklearn " + at + " predict_ms=3000.000 queries_per_s=3333 "
                                + "vs_fused=100.000 fit_ms=1.000\n```\n",
                        false));
        String readme = BenchReadme.generate(dir);
        assertTrue(
                readme.contains("| nvidia-h200 | fused_k8 30.000 ms (k 5, 32 float32 columns) | GEMM + select 90.000 "
                        + "ms; scikit-learn 3000.000 ms | 3.000 ×, 100.000 × (their time over kNearestRows's) | "
                        + "`knn-nvidia-h200.md`, run 2026-12-08 |"),
                readme);
        assertTrue(readme.contains("| cpu-2core | not recorded |  |  | `knn-cpu-2core.md`: no such figure"), readme);
    }
}
