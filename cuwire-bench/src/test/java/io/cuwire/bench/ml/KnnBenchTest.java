package io.cuwire.bench.ml;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.bench.harness.Results;
import io.cuwire.memory.DType;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class KnnBenchTest {
    private static String run(Path dir, String... args) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8)) {
            List<String> all = new ArrayList<>(List.of(args));
            all.addAll(List.of("--out", dir.toString()));
            List<KnnBench.Result> results = KnnBench.run(KnnBench.Options.parse(all.toArray(String[]::new)), out);
            assertTrue(results.stream().allMatch(KnnBench.Result::matchesCpu), results.toString());
        }
        return bytes.toString(StandardCharsets.UTF_8);
    }

    /**
     * A tiny run on device 0 (the emulated device in CI, whose kNearestRows is the CPU backend's; on a GPU the fused
     * kernel): per k, kNearestRows's line, then the GEMM + select baseline's in blocks of 7 queries, both checked
     * against the CPU backend on all 40 queries (the ids equal: the data have no ties), and the table files.
     */
    @Test
    void shouldTimeKNearestRowsBesideTheGemmBaselineAndCheckBothInATinyRun(@TempDir Path dir) throws IOException {
        String out = run(
                dir,
                "--rows",
                "3000",
                "--queries",
                "40",
                "--cols",
                "7",
                "--k",
                "5,9",
                "--dtype",
                "float64",
                "--repeat",
                "2",
                "--gemm-block-elements",
                "21000",
                "--check",
                "40");
        String[] lines = out.strip().split("\n");
        assertEquals(5, lines.length, out);
        assertTrue(
                lines[0].matches("INFO bench=knn device=\\w+ \\(.*\\) rows=3000 queries=40 cols=7 dtype=float64 k=5,9 "
                        + "repeat=2 warmup=1 gemm_block_queries=7 check_queries=40"),
                lines[0]);
        String number = "[0-9.]+";
        for (int i = 0; i < 2; i++) {
            int k = i == 0 ? 5 : 9;
            String fused = i == 0 ? "(fused_k8|cpu)" : "(fused_k32|cpu)";
            String tail = " rows=3000 queries=40 cols=7 k=" + k + " dtype=float64 predict_ms=" + number
                    + " queries_per_s=" + number + " vs_fused=" + number;
            assertTrue(
                    lines[1 + 2 * i].matches(
                            "RESULT bench=knn path=" + fused + tail.replace("vs_fused=" + number, "vs_fused=1.000")
                                    + " ids_agree=1.0000 matches_cpu=true"),
                    lines[1 + 2 * i]);
            assertTrue(
                    lines[2 + 2 * i].matches("RESULT bench=knn path=gemm_select" + tail
                            + " block_queries=7 ids_agree=1.0000 matches_cpu=true"),
                    lines[2 + 2 * i]);
        }
        List<String> csv = Files.readAllLines(dir.resolve("knn-" + Results.machine() + ".csv"));
        assertEquals(
                "path,rows,queries,cols,k,dtype,predict_ms,queries_per_s,vs_fused,ids_agree,matches_cpu,fit_ms",
                csv.getFirst());
        assertEquals(5, csv.size());
        String md = Files.readString(dir.resolve("knn-" + Results.machine() + ".md"));
        assertTrue(md.contains("| 9 | gemm_select (7 queries a block) | "), md);
    }

    /** scikit-learn on the same float32 rows and queries, per k, when Python has it. */
    @Test
    void shouldRunScikitLearnOnTheSameDataPerK(@TempDir Path dir) throws IOException {
        String python = EstimatorBenchTest.sklearnPython();
        Assumptions.assumeTrue(python != null, "no python3 with scikit-learn here");
        String out = run(
                dir,
                "--rows",
                "2000",
                "--queries",
                "30",
                "--cols",
                "4",
                "--k",
                "3,8",
                "--repeat",
                "1",
                "--peer",
                "sklearn",
                "--python",
                python);
        assertTrue(out.contains("INFO peer=sklearn sklearn="), out);
        for (int k : new int[] {3, 8}) {
            assertTrue(
                    out.matches("(?s).*\nRESULT bench=knn path=sklearn rows=2000 queries=30 cols=4 k=" + k
                            + " dtype=float32 predict_ms=[0-9.]+ queries_per_s=[0-9.]+ vs_fused=[0-9.]+ "
                            + "fit_ms=[0-9.]+\n.*"),
                    out);
        }
        String md = Files.readString(dir.resolve("knn-" + Results.machine() + ".md"));
        assertTrue(md.contains("| 8 | sklearn | "), md);
        assertTrue(md.contains("`peer=sklearn sklearn="), md);
    }

    @Test
    void shouldDefaultToAMillionRowsAndTenThousandQueriesAndRefuseBadOptions() {
        KnnBench.Options o = KnnBench.Options.parse();
        assertEquals(1_000_000, o.rows());
        assertEquals(10_000, o.queries());
        assertEquals(32, o.cols());
        assertEquals(List.of(5), o.ks());
        assertEquals(DType.FLOAT32, o.dtype());
        assertEquals(268, o.gemmBlockQueries(), "2^28 distances: 268 queries of a million rows");
        assertEquals(
                "--k [0] (expected: each 1 .. 1000000, the rows)",
                assertThrows(IllegalArgumentException.class, () -> KnnBench.Options.parse("--k", "0"))
                        .getMessage());
        assertEquals(
                "--dtype int32 (expected: float32 or float64)",
                assertThrows(IllegalArgumentException.class, () -> KnnBench.Options.parse("--dtype", "int32"))
                        .getMessage());
        assertEquals(
                "--gemm-block-elements 10 (expected: >= 100, the rows: one query's distances)",
                assertThrows(
                                IllegalArgumentException.class,
                                () -> KnnBench.Options.parse("--rows", "100", "--gemm-block-elements", "10"))
                        .getMessage());
        assertEquals(
                "Unknown options: '--size', '1'",
                assertThrows(IllegalArgumentException.class, () -> KnnBench.Options.parse("--size", "1"))
                        .getMessage());
    }
}
