package io.cuwire.bench.cuda;

import static io.cuwire.cuda.CudaTestSupport.assumeCuda;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.cuda.Cuda;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CopyBenchmarkTest {
    @Test
    void shouldDefaultToOneGibibyteAndTwentyRepeats() {
        CopyBenchmark.Options o = CopyBenchmark.Options.parse();

        assertEquals(1L << 30, o.size());
        assertEquals(20, o.repeat());
        assertNull(o.out());
    }

    @Test
    void shouldParseSizesWithSuffixesRepeatsAndTheCsvFile() {
        CopyBenchmark.Options o = CopyBenchmark.Options.parse("--size", "256m", "--repeat", "5", "--out", "x.csv");

        assertEquals(256L << 20, o.size());
        assertEquals(5, o.repeat());
        assertEquals(Path.of("x.csv"), o.out());
        assertEquals(
                1073741824L, CopyBenchmark.Options.parse("--size", "1073741824").size());
        assertEquals(4096L, CopyBenchmark.Options.parse("--size", "4k").size());
    }

    @Test
    void shouldRefuseBadArgumentsWithUsage() {
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> CopyBenchmark.Options.parse("--sise", "1"));
        assertEquals("Unknown options: '--sise', '1'", e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> CopyBenchmark.Options.parse("--size"));
        assertThrows(IllegalArgumentException.class, () -> CopyBenchmark.Options.parse("--size", "lots"));
        assertEquals(
                "--repeat: 0 (expected: > 0)",
                assertThrows(IllegalArgumentException.class, () -> CopyBenchmark.Options.parse("--repeat", "0"))
                        .getMessage());
    }

    @Test
    void shouldSummarizeRepetitionsAsMedianMinAndMax() {
        CopyBenchmark.Result r = CopyBenchmark.Result.of("h2d_pinned", 1L << 30, new double[] {50, 56, 55, 54});

        assertEquals(54.5, r.medianGbps());
        assertEquals(50, r.minGbps());
        assertEquals(56, r.maxGbps());
        assertEquals(
                "COPY case=h2d_pinned size=1073741824 median_gbps=54.50 min_gbps=50.00 max_gbps=56.00 repeats=4",
                r.line());
        assertEquals("h2d_pinned,1073741824,54.500,50.000,56.000,4", r.csv());
    }

    @Test
    @Tag("gpu")
    void shouldMeasureEveryCaseAndWriteTheCsv(@TempDir Path dir) throws IOException {
        assumeCuda();
        Path csv = dir.resolve("copy.csv");
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();

        List<CopyBenchmark.Result> results = CopyBenchmark.run(
                new CopyBenchmark.Options(64L << 20, 3, csv), new PrintStream(bytes, true, StandardCharsets.UTF_8));

        String out = bytes.toString(StandardCharsets.UTF_8);
        System.out.println(out);
        for (String name : List.of("h2d_pinned", "d2h_pinned", "h2d_pageable", "d2h_pageable", "d2d")) {
            assertTrue(out.contains("COPY case=" + name + " size=67108864 median_gbps="), out);
        }
        if (Cuda.deviceCount() >= 2) {
            assertTrue(out.contains("COPY case=peer size="), out);
        }
        for (CopyBenchmark.Result r : results) {
            assertTrue(r.minGbps() > 0, r.line());
        }
        List<String> lines = Files.readAllLines(csv);
        assertEquals(String.join(",", CopyBenchmark.CSV_COLUMNS), lines.getFirst());
        assertEquals(results.size() + 1, lines.size());
    }
}
