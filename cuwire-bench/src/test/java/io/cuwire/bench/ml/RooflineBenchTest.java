package io.cuwire.bench.ml;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class RooflineBenchTest {
    @Test
    void shouldMeasureTheCopyAndBothPredictionsAndCheckThemInATinyRun() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        RooflineBench.Result[] results;
        try (PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8)) {
            results = RooflineBench.run(
                    RooflineBench.Options.parse(
                            "--rows", "20000", "--cols", "16", "--repeat", "3", "--fit-rows", "5000"),
                    out);
        }
        String[] lines = bytes.toString(StandardCharsets.UTF_8).strip().split("\n");
        assertEquals(6, lines.length, String.join("\n", lines));
        assertTrue(lines[0].startsWith("INFO bench=roofline device="), lines[0]);
        assertTrue(
                lines[2].matches("RESULT bench=roofline copy=d2d bytes=1280000 copy_ms=[0-9.]+ gbps=[0-9.]+"),
                lines[2]);
        assertTrue(
                lines[3].matches("RESULT bench=roofline read=sum bytes=1280000 read_ms=[0-9.]+ gbps=[0-9.]+"),
                lines[3]);
        String number = "[0-9.]+";
        for (int i = 0; i < 2; i++) {
            String name = i == 0 ? "LinearRegression" : "KMeans";
            String kernel = " kernel=\\w+";
            assertTrue(
                    lines[4 + i].matches("RESULT bench=roofline estimator=" + name + " rows=20000 cols=16 "
                            + "predict_ms=" + number + " gbps=" + number + " roofline_gbps=" + number + " fraction="
                            + number + " read_gbps=" + number + " vs_read=" + number + " backend=\\w+" + kernel
                            + " fit_ms="
                            + number + " out_bytes=80000 out=device checked_rows=10000 matches_cpu=true"),
                    lines[4 + i]);
            assertEquals(
                    results[i].predictMs() / (1280000 / (results[i].readGbps() * 1e6)),
                    results[i].vsRead(),
                    1e-9 * results[i].vsRead());
            assertTrue(results[i].matchesCpu(), results[i].toString());
        }
        // the emulated device computes on the CPU backend; on a GPU, 16 float32 columns and 8 clusters take the
        // registers kernel by default, or the kernel of -Dcuwire.ml.nearestKernel
        String backend = results[1].backend();
        String setting = System.getProperty("cuwire.ml.nearestKernel", "auto");
        String want = !backend.equals("cuda")
                ? backend
                : switch (setting) {
                    case "v4" -> "ml_nearest_rows_v4_k8_f32";
                    case "scalar" -> "ml_nearest_rows_k8_f32";
                    default -> "ml_nearest_rows_regs_v4_k8x1_f32";
                };
        assertEquals(want, results[1].kernel(), lines[5]);
        // LinearRegression's product: on a GPU the float4 kernel for 16 aligned float32 columns, unless
        // -Dcuwire.ml.gemvKernel=scalar
        String gemv = !results[0].backend().equals("cuda")
                ? results[0].backend()
                : System.getProperty("cuwire.ml.gemvKernel", "auto").equals("scalar")
                        ? "ml_gemv_rows_f32"
                        : "ml_gemv_rows_v4_f32";
        assertEquals(gemv, results[0].kernel(), lines[4]);
    }

    @Test
    void shouldDefaultToTenMillionRowsAndRefuseBadOptions() {
        RooflineBench.Options o = RooflineBench.Options.parse();
        assertEquals(new RooflineBench.Options(10_000_000, 64, 8, 1_000_000, 10), o);
        assertEquals(100, RooflineBench.Options.parse("--rows", "100").fitRows());
        assertEquals(
                "--fit-rows 200 (expected: 8 .. 100, the rows, and fit-rows x cols <= 2147483639)",
                assertThrows(
                                IllegalArgumentException.class,
                                () -> RooflineBench.Options.parse("--rows", "100", "--fit-rows", "200"))
                        .getMessage());
        assertEquals(
                "Unknown options: '--size', '1'",
                assertThrows(IllegalArgumentException.class, () -> RooflineBench.Options.parse("--size", "1"))
                        .getMessage());
    }
}
