package io.cuwire.cluster;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.cuwire.memory.DType;
import io.cuwire.memory.Devices;
import io.cuwire.memory.NdArray;
import io.cuwire.ml.MlTesting;
import io.cuwire.test.ChildJvm;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
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
        List<ChildJvm> processes = new ArrayList<>();
        List<String> addresses = new ArrayList<>();
        try {
            for (int i = 0; i < 2; i++) {
                ChildJvm p = startWorker(i, secret, "tcp://127.0.0.1:0");
                processes.add(p);
                addresses.add(listeningAddress(p));
            }
            try (LocalCluster cluster =
                    LocalCluster.builder().secret(secret).connect(addresses).start()) {
                assertEquals(2, cluster.size());
                assertEquals("tcp", cluster.transport());
                assertThrows(IllegalStateException.class, () -> cluster.processOf(0));
                Client client = cluster.client();
                double[] values = {1, 2, 3, 4, 5, 6};
                try (NdArray a = MlTesting.array(client.memory(), DType.FLOAT64, values, 3, 2);
                        NdArray b = MlTesting.array(client.memory(), DType.FLOAT64, values, 3, 2)) {
                    List<ObjectRef> parts = client.scatter(List.of(a, b));
                    assertEquals(
                            List.of(0, 1), parts.stream().map(ObjectRef::worker).toList());
                    // worker 1 fetches the partition of worker 0 from it, worker to worker
                    ObjectRef doubled =
                            client.submit(1, TestTasks.SCALE, parts.get(0), 2.0).join();
                    List<NdArray> back = client.gather(List.of(doubled), NdArray.class);
                    try {
                        assertArrayEquals(
                                new double[] {2, 4, 6, 8, 10, 12},
                                back.getFirst().toDoubleArray(),
                                0);
                    } finally {
                        MlTesting.closeAll(back);
                    }
                    client.free(parts);
                    client.free(List.of(doubled));
                }
            }
            assertExitedCleanly(processes);
        } finally {
            processes.forEach(ChildJvm::close);
        }
    }

    @Test
    void shouldRefuseToConnectWithoutTheSecret() {
        assertThrows(
                IllegalArgumentException.class,
                () -> LocalCluster.builder()
                        .connect(List.of("tcp://127.0.0.1:1"))
                        .start());
    }

    /** Starts worker {@code index} in a JVM of its own, listening at {@code listen}, as {@code cuwire worker} does. */
    static ChildJvm startWorker(int index, byte[] secret, String listen) throws IOException {
        return ChildJvm.builder(StandaloneWorkerMain.class)
                .property(Devices.PLATFORM_PROPERTY, Devices.platform())
                .args(Integer.toString(index), listen)
                .input(HexFormat.of().formatHex(secret) + "\n")
                .start();
    }

    /** The address the worker prints when it listens (within 60 s). */
    static String listeningAddress(ChildJvm worker) throws IOException, InterruptedException {
        String line = worker.awaitLine(StandaloneWorker.LISTENING + " ", Duration.ofSeconds(60));
        return line.substring(StandaloneWorker.LISTENING.length() + 1).strip();
    }

    /** Waits for each worker to exit (within 20 s each) and checks that it exited with 0. */
    static void assertExitedCleanly(List<ChildJvm> workers) throws IOException, InterruptedException {
        for (ChildJvm w : workers) {
            assertEquals(
                    0, w.awaitExit(Duration.ofSeconds(20)), "a worker's exit after the cluster closed:\n" + w.output());
        }
    }

    /** Starts a worker the way {@code cuwire worker} does: index, address; the secret on standard input. */
    public static final class StandaloneWorkerMain {
        private StandaloneWorkerMain() {}

        public static void main(String[] args) throws IOException {
            String hex = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII)).readLine();
            StandaloneWorker.serve(
                    Integer.parseInt(args[0]), 0, args[1], HexFormat.of().parseHex(hex.strip()), System.out);
        }
    }
}
