package io.cuwire.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

class DemoTest {
    @Test
    @Timeout(value = 90, unit = TimeUnit.SECONDS)
    void shouldRunTheMainJobOnTwoWorkersAndPrintTheTableAndWriteThePlot(@TempDir Path dir) throws Exception {
        Path plot = dir.resolve("out/demo.png");
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code;
        try (PrintStream o = new PrintStream(out, true, StandardCharsets.UTF_8);
                PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8)) {
            code = Main.run(new String[] {"demo", "--workers", "2", "--rows", "4000", "--features", "8",
                "--model-rows", "1000", "--plot", plot.toString()}, o, e);
        }
        String text = out.toString(StandardCharsets.UTF_8);
        assertEquals(Main.OK, code, err.toString(StandardCharsets.UTF_8) + text);
        for (String row : List.of("scatter X and y", "fit LinearRegression", "fit KMeans",
                "broadcast 0.0 MiB model, cuda, chain", "broadcast 0.0 MiB model, host, each in turn",
                "broadcast it again, unchanged (cache)", "predict LinearRegression on every partition")) {
            assertTrue(text.contains(row), row + " missing in:\n" + text);
        }
        assertTrue(text.contains("broadcast again: 2 cache hits, 0 workers sent frames"), text);
        byte[] png = Files.readAllBytes(plot);
        assertTrue(png.length > 1000 && png[1] == 'P' && png[2] == 'N' && png[3] == 'G');
    }

    @Test
    @Timeout(value = 10, unit = TimeUnit.SECONDS)
    void shouldRefuseAnUnknownOption() {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        try (PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8)) {
            assertEquals(Main.USAGE, Main.run(new String[] {"demo", "--frobnicate", "1"}, System.out, e));
        }
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("unknown option --frobnicate"));
    }
}
