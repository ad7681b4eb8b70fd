package io.cuwire.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
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
    void shouldRunTheMainJobCheckEveryPathAndWriteTheReport(@TempDir Path dir) throws Exception {
        Path report = dir.resolve("out/report");
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code;
        try (PrintStream o = new PrintStream(out, true, StandardCharsets.UTF_8);
                PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8)) {
            code = Main.run(new String[] {"demo", "--workers", "2", "--rows", "4000", "--features", "8",
                "--trees", "4", "--transports", "tcp,ipc", "--report", report.toString()}, o, e);
        }
        String text = out.toString(StandardCharsets.UTF_8);
        assertEquals(Main.OK, code, err.toString(StandardCharsets.UTF_8) + text);
        for (String line : List.of("... starting a local cluster over tcp", "... starting a local cluster over ipc",
                "... broadcasting RandomForestClassifier over ipc with the host family",
                "... broadcasting RandomForestClassifier over ipc with the java family",
                "java family: JDK serialization", "LinearRegression:", "KMeans:", "RandomForestClassifier:",
                "all checks MATCH")) {
            assertTrue(text.contains(line), line + " missing in:\n" + text);
        }
        for (String model : List.of("LinearRegression", "KMeans", "RandomForestClassifier")) {
            for (String path : List.of("tcp / cuda", "tcp / host", "tcp / java", "ipc / cuda", "ipc / host",
                    "ipc / java")) {
                assertTrue(text.lines().anyMatch(l -> l.startsWith("  " + path) && l.contains(" MATCH (")),
                        path + " row missing in:\n" + text);
            }
        }
        assertFalse(text.contains("MISMATCH"), text);
        String html = Files.readString(report.resolve("index.html"));
        assertTrue(text.contains("report: " + report.resolve("index.html").toAbsolutePath()), text);
        assertTrue(html.startsWith("<!DOCTYPE html>") && html.contains("<svg") && html.contains("ipc / host")
                && html.contains("RandomForestClassifier") && !html.contains("MISMATCH"), html);
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

    @Test
    @Timeout(value = 10, unit = TimeUnit.SECONDS)
    void shouldRefuseAWorkerWithoutASecretOrWithAShortOne() {
        for (String secret : new String[] {null, "0011"}) {
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            try (PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8)) {
                assertEquals(Main.USAGE, WorkerCommand.run(List.of("--device", "0"), secret,
                        new ByteArrayInputStream(new byte[0]), System.out, e));
            }
            String text = err.toString(StandardCharsets.UTF_8);
            assertTrue(text.contains(secret == null ? "no cluster secret" : "has 2 bytes"), text);
        }
    }
}
