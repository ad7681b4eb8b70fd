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
            code = TransferBench.run(
                    TransferBench.Options.parse(
                            "--transports",
                            "inproc,tcp,tls,ucx,ipc",
                            "--sizes",
                            "1KiB,1MiB",
                            "--repeat",
                            "3",
                            "--warmup",
                            "2",
                            "--case-warmup",
                            "0",
                            "--out",
                            dir.toString()),
                    out);
        }
        String output = bytes.toString(StandardCharsets.UTF_8);
        assertEquals(0, code, output);
        boolean ucxSkipped = output.contains("SKIP transport=ucx");
        int transports = ucxSkipped ? 4 : 5;
        Pattern result = Pattern.compile("RESULT transport=(\\w+) family=(\\w+) size=(\\d+) median_ms=\\S+ gbps=\\S+ "
                + "d2h_bytes=(\\d+) h2d_bytes=(\\d+) (latency_us=\\S+|vs_raw=\\S+ "
                + "ceiling=(raw-\\w+|ucx-raw(-\\d+m)?|peer-copy|device-copy) raw_gbps=\\S+) cold_ms=\\S+ checked=ok");
        Matcher m = result.matcher(output);
        int cases = 0;
        while (m.find()) {
            cases++;
            assertEquals(
                    m.group(1).equals("inproc"),
                    m.group(6).startsWith("latency_us="),
                    "in-process reports latency, every other path its ceiling: " + m.group());
            if (m.group(1).equals("ipc") && m.group(2).equals("cuda")) {
                assertEquals("0", m.group(4), "IPC moves cuda-family frames device to device: " + m.group());
                assertEquals("0", m.group(5), m.group());
            }
            // The model's arrays: the coefficients (the case's size) and an 8-byte intercept. Every other path copies
            // each to the host once on one side and back once on the other: exactly, no check window among them.
            long arrays = Long.parseLong(m.group(3)) + 8;
            if (!m.group(2).equals("cuda") || m.group(1).matches("tcp|tls|ucx")) {
                assertEquals(arrays, Long.parseLong(m.group(4)), "staged or host family: " + m.group());
                assertEquals(arrays, Long.parseLong(m.group(5)), m.group());
            }
        }
        assertEquals(transports * 3 * 2, cases, output);
        List<String> roundTrips = ucxSkipped ? List.of("ipc", "tcp", "tls") : List.of("ipc", "tcp", "tls", "ucx");
        for (String t : roundTrips) {
            // over a socket the round trip stands beside its ceiling, the raw socket's 1 KiB echo
            String ceiling = t.equals("tcp") || t.equals("tls") ? " raw_rtt_us=[\\d.]+ rtt_vs_raw=[\\d.]+$" : "$";
            assertTrue(
                    Pattern.compile(
                                    "^RESULT transport=" + t + " family=cuda size=1024 rtt_us=[\\d.]+" + ceiling,
                                    Pattern.MULTILINE)
                            .matcher(output)
                            .find(),
                    output);
        }
        List<Path> csvs;
        try (Stream<Path> files = Files.list(dir)) {
            csvs = files.filter(p -> p.toString().endsWith(".csv")).toList();
        }
        assertEquals(1, csvs.size());
        assertEquals(
                1 + transports * 3 * 2 + roundTrips.size(),
                Files.readAllLines(csvs.getFirst()).size(),
                "a header, the cases, the round trips " + roundTrips);
    }

    /**
     * Issue 21 item 0: the {@code cuda} family copies nothing to or from the host in one process and over IPC, at
     * sizes on both sides of every threshold of the path: 64 KiB (the push frame limit, TCP/IPC coalescing, the
     * check's window), 1 MiB (the emulated device's slab blocks, the read buffer), 4 MiB (slabs, the staging chunk,
     * IPC's host read-ahead) and three staging chunks. The counts are the most any transfer of a case copied, cold
     * and warm-up ones included; the receiver's content check runs outside both sides' scopes.
     */
    @Test
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void shouldCopyNoByteToTheHostForTheCudaFamilyInProcessAndOverIpcAroundEveryThreshold(@TempDir Path dir)
            throws Exception {
        List<String> sizes = List.of(
                "8",
                "1016",
                "1024",
                "65528",
                "65536",
                "65544",
                "1048568",
                "1048576",
                "1048584",
                "4194296",
                "4194304",
                "4194312",
                "12582920");
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        int code;
        try (PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8)) {
            code = TransferBench.run(
                    TransferBench.Options.parse(
                            "--transports",
                            "inproc,ipc",
                            "--families",
                            "cuda",
                            "--sizes",
                            String.join(",", sizes),
                            "--repeat",
                            "3",
                            "--warmup",
                            "3",
                            "--case-warmup",
                            "0",
                            "--out",
                            dir.toString()),
                    out);
        }
        String output = bytes.toString(StandardCharsets.UTF_8);
        assertEquals(0, code, output);
        Matcher m = Pattern.compile("RESULT transport=(\\w+) family=cuda size=(\\d+) .*?d2h_bytes=(\\d+) "
                        + "h2d_bytes=(\\d+) .*checked=ok")
                .matcher(output);
        int cases = 0;
        while (m.find()) {
            cases++;
            assertEquals("0", m.group(3), "device to host: " + m.group());
            assertEquals("0", m.group(4), "host to device: " + m.group());
        }
        assertEquals(2 * sizes.size(), cases, output);
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
