package io.cuwire.bench.harness;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ResultsTest {
    @Test
    void shouldNameTheMachineByItsGpusOrElseItsCores() {
        assertEquals("cpu-2core", Results.machine(List.of(), 2));
        assertEquals("nvidia-h200", Results.machine(List.of("NVIDIA H200"), 16));
        assertEquals("nvidia-h200-x2", Results.machine(List.of("NVIDIA H200", "NVIDIA H200"), 32));
        assertEquals("nvidia-h200+nvidia-a100-80gb", Results.machine(List.of("NVIDIA H200", "NVIDIA A100 80GB"), 8));
    }

    @Test
    void shouldStartANewFileWithTheRunAsCurrent() {
        String text = Results.fold(
                null,
                null,
                "copy-cpu-2core",
                "Copy on cpu-2core",
                "2026-12-02 10:00 UTC",
                "# Copy\n\n| a |\n|---|\n| 1 |\n## Summary\n\nfine",
                true);
        assertEquals("""
                # Copy on cpu-2core

                Newest run first: the current run, then every earlier run under "Earlier runs", each headed by its \
                date and the file it came from (`was ...`: grep an old file name to find its run). \
                `copy-cpu-2core.csv`, where present, holds the current run's rows; an earlier run's rows are inline \
                in its section.

                ## Current: Run 2026-12-02 10:00 UTC

                Its rows: `copy-cpu-2core.csv`.

                ### Copy

                | a |
                |---|
                | 1 |
                #### Summary

                fine
                """, text);
    }

    @Test
    void shouldMoveTheCurrentRunAndItsCsvUnderEarlierRunsKeepingTheOlderOnes() {
        String existing = """
                # T

                intro

                ## Current: Run 2026-12-01

                Its rows: `b-m.csv`.

                ### Old table

                ```
                # not a heading
                ```

                ## Earlier runs

                ### Run 2026-11-30 (was `b-s2-2026-11-30-m.md`)

                oldest
                """;
        String text = Results.fold(existing, "x,y\n1,2\n", "b-m", "ignored", "2026-12-02", "# New\n\nnew", false);
        assertEquals("""
                # T

                intro

                ## Current: Run 2026-12-02

                ### New

                new

                ## Earlier runs

                ### Run 2026-12-01

                #### Old table

                ```
                # not a heading
                ```

                Its rows (were `b-m.csv`):

                ```csv
                x,y
                1,2
                ```

                ### Run 2026-11-30 (was `b-s2-2026-11-30-m.md`)

                oldest
                """, text);
    }

    @Test
    void shouldRecordTwoRunsInOneFileNamedForTheMachine(@TempDir Path dir) throws Exception {
        Path md = Results.record(dir, "probe", "Probe", "first", "# One\n\nfirst run", "a\n1\n");
        Results.record(dir, "probe", "Probe", "second", "# Two\n\nsecond run", "a\n2\n");
        assertEquals("probe-" + Results.machine() + ".md", md.getFileName().toString());
        String text = Files.readString(md);
        assertTrue(text.indexOf("## Current: Run second") < text.indexOf("## Earlier runs"), text);
        assertTrue(text.indexOf("## Earlier runs") < text.indexOf("### Run first"), text);
        assertTrue(text.contains("```csv\na\n1\n```"), text);
        assertEquals("a\n2\n", Files.readString(dir.resolve("probe-" + Results.machine() + ".csv")));
        try (var files = Files.list(dir)) {
            assertEquals(2, files.count());
        }
    }
}
