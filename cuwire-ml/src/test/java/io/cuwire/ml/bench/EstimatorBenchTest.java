package io.cuwire.ml.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

class EstimatorBenchTest {
    @Test
    void tinyRunShouldPrintAMatchingResultLinePerEstimator() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        List<EstimatorBench.Result> results;
        try (PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8)) {
            results = EstimatorBench.run(EstimatorBench.Options.parse("--rows", "300", "--cols", "5", "--repeat", "1"),
                    out);
        }
        assertEquals(10, results.size());
        String[] lines = bytes.toString(StandardCharsets.UTF_8).strip().split("\n");
        assertEquals(10, lines.length);
        for (String line : lines) {
            assertTrue(line.matches("RESULT estimator=\\w+ backend=\\w+ fit_ms=[0-9.]+ predict_ms=[0-9.]+ rows=300 "
                    + "matches_reference=true"), line);
        }
    }

    @Test
    void shouldRefuseUnknownOptionsAndBadSizes() {
        assertEquals("unknown option '--size' (expected: --rows N, --cols D, --repeat R)",
                assertThrows(IllegalArgumentException.class,
                        () -> EstimatorBench.Options.parse("--size", "4")).getMessage());
        assertEquals("--rows 2 (expected: 8 .. 2147483647)", assertThrows(IllegalArgumentException.class,
                () -> EstimatorBench.Options.parse("--rows", "2")).getMessage());
        assertEquals("--rows x is not a number", assertThrows(IllegalArgumentException.class,
                () -> EstimatorBench.Options.parse("--rows", "x")).getMessage());
    }
}
