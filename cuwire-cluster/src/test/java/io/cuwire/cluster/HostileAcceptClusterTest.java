package io.cuwire.cluster;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.cuwire.memory.DType;
import io.cuwire.memory.NdArray;
import io.cuwire.ml.MlTesting;
import io.cuwire.test.ChildJvm;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Finding 1 of issue 15 against real workers ({@code cuwire worker}, started by hand): with 100 connections that sent
 * the start of a hello and stalled open at each worker, from 127.0.0.2 … 127.0.0.9 and from 127.0.0.1 (the
 * client's own address), the client connects within its usual timeouts and a worker still fetches from another.
 */
class HostileAcceptClusterTest {
    private static final List<String> SOURCES = List.of(
            "127.0.0.1",
            "127.0.0.2",
            "127.0.0.3",
            "127.0.0.4",
            "127.0.0.5",
            "127.0.0.6",
            "127.0.0.7",
            "127.0.0.8",
            "127.0.0.9");

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "ipc"})
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void shouldServeTheClientAndPeerFetchesWhileAHundredStalledHandshakesAreOpenAtEachWorker(String scheme)
            throws Exception {
        byte[] secret = new byte[32];
        secret[0] = 11;
        List<ChildJvm> processes = new ArrayList<>();
        List<String> addresses = new ArrayList<>();
        List<Socket> attackers = new ArrayList<>();
        try {
            for (int i = 0; i < 2; i++) {
                ChildJvm p = ConnectTest.startWorker(i, secret, scheme + "://127.0.0.1:0");
                processes.add(p);
                addresses.add(ConnectTest.listeningAddress(p));
            }
            for (String a : addresses) {
                attackers.addAll(stalled(a, 100));
            }
            try (LocalCluster cluster =
                    LocalCluster.builder().secret(secret).connect(addresses).start()) {
                Client client = cluster.client();
                double[] values = {1, 2, 3, 4, 5, 6};
                try (NdArray a = MlTesting.array(client.memory(), DType.FLOAT64, values, 3, 2);
                        NdArray b = MlTesting.array(client.memory(), DType.FLOAT64, values, 3, 2)) {
                    List<ObjectRef> parts = client.scatter(List.of(a, b));
                    // worker 1 fetches the partition of worker 0 from it, through worker 0's listener
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
            assertEquals(200, attackers.size(), "attackers connected");
            ConnectTest.assertExitedCleanly(processes);
        } finally {
            for (Socket s : attackers) {
                s.close();
            }
            processes.forEach(ChildJvm::close);
        }
    }

    /**
     * {@code n} connections to {@code address} from the attackers' source addresses in turn, opened at once, each
     * having sent a length of 100 and 10 bytes of a hello; those not connected within 10 s are left out.
     */
    private static List<Socket> stalled(String address, int n) throws InterruptedException {
        String hostPort = address.substring(address.indexOf("://") + 3);
        int colon = hostPort.lastIndexOf(':');
        InetSocketAddress target =
                new InetSocketAddress(hostPort.substring(0, colon), Integer.parseInt(hostPort.substring(colon + 1)));
        List<Socket> sockets = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            String source = SOURCES.get(i % SOURCES.size());
            threads.add(Thread.ofVirtual().start(() -> {
                Socket s = new Socket();
                try {
                    s.bind(new InetSocketAddress(InetAddress.getByName(source), 0));
                    s.connect(target, 10_000);
                    DataOutputStream out = new DataOutputStream(s.getOutputStream());
                    out.writeInt(100);
                    out.write(new byte[10]);
                    out.flush();
                    synchronized (sockets) {
                        sockets.add(s);
                    }
                } catch (IOException e) {
                    try {
                        s.close();
                    } catch (IOException ignored) {
                        // not connected
                    }
                }
            }));
        }
        for (Thread t : threads) {
            t.join();
        }
        return sockets;
    }
}
