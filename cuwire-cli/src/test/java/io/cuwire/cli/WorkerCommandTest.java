package io.cuwire.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.bench.harness.Cli;
import io.cuwire.cluster.WorkerExit;
import io.cuwire.memory.Devices;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

class WorkerCommandTest {
    @Test
    void shouldRefuseADeviceThisProcessLacksNamingTheDevicesItSees() {
        int visible = Devices.all().size();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        try (PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8)) {
            assertEquals(
                    Main.USAGE,
                    WorkerCommand.run(
                            Cli.parse(new WorkerCommand.Args(), "--device", String.valueOf(visible)),
                            "00".repeat(16),
                            new ByteArrayInputStream(new byte[0]),
                            System.out,
                            e));
        }
        String text = err.toString(StandardCharsets.UTF_8);
        assertTrue(
                text.startsWith("cuwire worker: device " + visible + " is not visible to this process: it sees "
                        + visible + " device(s) on platform " + Devices.platform()),
                text);
        assertTrue(!Devices.platform().equals("cuda") || text.contains("CUDA_VISIBLE_DEVICES"), text);
    }

    @Test
    void shouldListEveryExitCodeInItsHelp() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (PrintStream o = new PrintStream(out, true, StandardCharsets.UTF_8)) {
            assertEquals(Main.OK, Main.run(new String[] {"worker", "--help"}, o, System.err));
        }
        String text = out.toString(StandardCharsets.UTF_8);
        assertTrue(text.startsWith("usage: cuwire worker [-h] [--listen=ADDRESS] [--device=N] [--index=N]\n"), text);
        String words = text.replaceAll("\\s+", " ");
        for (WorkerExit e : WorkerExit.values()) {
            assertTrue(words.contains(" " + e.code() + " " + e.meaning() + " "), e + " in:\n" + text);
        }
    }

    @Test
    void shouldExitStartFailedWhenItCannotListen() throws IOException {
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            int code;
            try (PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8)) {
                code = WorkerCommand.run(
                        Cli.parse(new WorkerCommand.Args(), "--listen", "tcp://127.0.0.1:" + taken.getLocalPort()),
                        "00".repeat(16),
                        new ByteArrayInputStream(new byte[0]),
                        System.out,
                        e);
            }
            String text = err.toString(StandardCharsets.UTF_8);
            assertEquals(WorkerExit.START_FAILED.code(), code, text);
            assertTrue(text.startsWith("cuwire worker: cannot start: cannot listen at "), text);
        }
    }
}
