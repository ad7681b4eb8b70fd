package io.cuwire.bench.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The transfer benchmark, small: every case runs, checks its content and lands in the CSV. */
class TransferBenchTest {
    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void shouldRunEveryCaseBetweenTwoProcessesCheckTheContentAndWriteTheCsv(@TempDir Path dir) throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        int code;
        try (PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8)) {
            code = TransferBench.run(TransferBench.Options.parse("--transports", "inproc,tcp,tls,ucx,ipc",
                    "--sizes", "1KiB,1MiB", "--repeat", "3", "--warmup", "2", "--out", dir.toString()), out);
        }
        String output = bytes.toString(StandardCharsets.UTF_8);
        assertEquals(0, code, output);
        boolean ucxSkipped = output.contains("SKIP transport=ucx");
        int transports = ucxSkipped ? 4 : 5;
        Pattern result = Pattern.compile("RESULT transport=(\\w+) family=(\\w+) size=(\\d+) median_ms=\\S+ gbps=\\S+ "
                + "d2h_bytes=(\\d+) h2d_bytes=(\\d+) vs_raw=\\S+ cold_ms=\\S+ raw_gbps=\\S+ checked=ok");
        Matcher m = result.matcher(output);
        int cases = 0;
        while (m.find()) {
            cases++;
            if (m.group(1).equals("ipc") && m.group(2).equals("cuda")) {
                assertEquals("0", m.group(4), "IPC moves cuda-family frames device to device: " + m.group());
                assertEquals("0", m.group(5), m.group());
            }
            if (m.group(1).matches("tcp|tls") && m.group(2).equals("cuda")) {
                assertTrue(Long.parseLong(m.group(4)) >= Long.parseLong(m.group(3)), "TCP stages: " + m.group());
            }
        }
        assertEquals(transports * 3 * 2, cases, output);
        for (String t : List.of("ipc", "tcp", "tls")) {
            assertTrue(Pattern.compile("RESULT transport=" + t + " family=cuda size=1024 rtt_us=\\d").matcher(output)
                    .find(), output);
        }
        List<Path> csvs;
        try (Stream<Path> files = Files.list(dir)) {
            csvs = files.filter(p -> p.toString().endsWith(".csv")).toList();
        }
        assertEquals(1, csvs.size());
        assertEquals(1 + transports * 3 * 2 + 3, Files.readAllLines(csvs.getFirst()).size(),
                "a header, the cases, the round trips (ipc, tcp, tls)");
    }

    @Test
    void shouldParseSizesAndRefuseNonsense() {
        assertEquals(1024, TransferBench.parseSize("1KiB"));
        assertEquals(64L << 20, TransferBench.parseSize("64MiB"));
        assertEquals(1L << 30, TransferBench.parseSize("1GiB"));
        assertEquals(4096, TransferBench.parseSize("4096"));
        assertThrows(IllegalArgumentException.class, () -> TransferBench.parseSize("3"));
        assertThrows(IllegalArgumentException.class, () -> TransferBench.Options.parse("--families", "pickle"));
        assertThrows(IllegalArgumentException.class, () -> TransferBench.Options.parse("--repeat"));
    }
}
