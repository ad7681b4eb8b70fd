package io.cuwire.cluster;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.DType;
import io.cuwire.memory.Devices;
import io.cuwire.memory.NdArray;
import io.cuwire.ml.MlTesting;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A cluster of workers started by hand, as {@code cuwire worker} starts them, and connected to. */
class ConnectTest {
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void shouldConnectToWorkersStartedByHandAndShutThemDownOnClose() throws Exception {
        byte[] secret = new byte[32];
        secret[0] = 7;
        List<Process> processes = new ArrayList<>();
        List<String> addresses = new ArrayList<>();
        try {
            for (int i = 0; i < 2; i++) {
                Process p = startWorker(i, secret, "tcp://127.0.0.1:0");
                processes.add(p);
                addresses.add(listeningAddress(p));
            }
            try (LocalCluster cluster = LocalCluster.builder().secret(secret).connect(addresses).start()) {
                assertEquals(2, cluster.size());
                assertEquals("tcp", cluster.transport());
                assertThrows(IllegalStateException.class, () -> cluster.processOf(0));
                Client client = cluster.client();
                double[] values = {1, 2, 3, 4, 5, 6};
                try (NdArray a = MlTesting.array(client.memory(), DType.FLOAT64, values, 3, 2);
                        NdArray b = MlTesting.array(client.memory(), DType.FLOAT64, values, 3, 2)) {
                    List<ObjectRef> parts = client.scatter(List.of(a, b));
                    assertEquals(List.of(0, 1), parts.stream().map(ObjectRef::worker).toList());
                    // worker 1 fetches the partition of worker 0 from it, worker to worker
                    ObjectRef doubled = client.submit(1, TestTasks.SCALE, parts.get(0), 2.0).join();
                    List<NdArray> back = client.gather(List.of(doubled), NdArray.class);
                    try {
                        assertArrayEquals(new double[] {2, 4, 6, 8, 10, 12}, back.getFirst().toDoubleArray(), 0);
                    } finally {
                        MlTesting.closeAll(back);
                    }
                    client.free(parts);
                    client.free(List.of(doubled));
                }
            }
            for (Process p : processes) {
                assertTrue(p.waitFor(20, TimeUnit.SECONDS), "a worker did not exit after the cluster closed");
                assertEquals(0, p.exitValue());
            }
        } finally {
            processes.forEach(Process::destroyForcibly);
        }
    }

    @Test
    void shouldRefuseToConnectWithoutTheSecret() {
        assertThrows(IllegalArgumentException.class,
                () -> LocalCluster.builder().connect(List.of("tcp://127.0.0.1:1")).start());
    }

    /** Starts worker {@code index} in a JVM of its own, listening at {@code listen}, as {@code cuwire worker} does. */
    static Process startWorker(int index, byte[] secret, String listen) throws IOException {
        List<String> cmd = new ArrayList<>(List.of(ProcessHandle.current().info().command().orElse("java"),
                "--enable-native-access=ALL-UNNAMED", "-D" + Devices.PLATFORM_PROPERTY + "=" + Devices.platform()));
        for (String p : List.of("cuwire.emulated.devices", "cuwire.emulated.memoryBytes", "cuwire.emulated.dir")) {
            String v = System.getProperty(p);
            if (v != null) {
                cmd.add("-D" + p + "=" + v);
            }
        }
        cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), StandaloneWorkerMain.class.getName(),
                Integer.toString(index), listen));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        try (OutputStream in = p.getOutputStream()) {
            in.write((HexFormat.of().formatHex(secret) + "\n").getBytes(StandardCharsets.US_ASCII));
        }
        return p;
    }

    /** The address the worker prints when it listens; its later output is read and dropped. */
    static String listeningAddress(Process p) throws IOException {
        BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
        String line;
        while ((line = r.readLine()) != null) {
            if (line.startsWith(StandaloneWorker.LISTENING + " ")) {
                String address = line.substring(StandaloneWorker.LISTENING.length() + 1).strip();
                Thread.ofPlatform().daemon().start(() -> drain(r));
                return address;
            }
        }
        throw new IOException("the worker exited before listening");
    }

    private static void drain(BufferedReader r) {
        try {
            while (r.readLine() != null) {
                // the worker's log
            }
        } catch (IOException e) {
            // the worker is gone
        }
    }

    /** Starts a worker the way {@code cuwire worker} does: index, address; the secret on standard input. */
    public static final class StandaloneWorkerMain {
        private StandaloneWorkerMain() {
        }

        public static void main(String[] args) throws IOException {
            String hex = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII)).readLine();
            StandaloneWorker.serve(Integer.parseInt(args[0]), 0, args[1], HexFormat.of().parseHex(hex.strip()),
                    System.out);
        }
    }
}
