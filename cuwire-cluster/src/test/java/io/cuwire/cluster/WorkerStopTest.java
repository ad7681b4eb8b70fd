package io.cuwire.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.cluster.rpc.Reply;
import io.cuwire.memory.DType;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * How a worker stops (issue 15, findings 9 and 10): once, with an exit code that says why ({@link WorkerExit}), and
 * a log line naming the client and the cause; refused peers are logged and do not stop it. Each test runs real
 * worker processes and is its own client.
 */
class WorkerStopTest {
    private static final byte[] SECRET =
            "a cluster secret of 32 bytes....".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
    private static final Duration EXIT = Duration.ofSeconds(30);

    /** Finding 10: shutdown ran twice and raced ("allocator 'worker-0-device' is closed", exit 3). */
    @Test
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void shouldExitZeroWithoutALeakReportOnEachOfTwentyCleanShutdowns() throws Exception {
        int rounds = 4;
        int perRound = 5;
        for (int round = 0; round < rounds; round++) {
            List<WorkerProcess> workers = new ArrayList<>();
            try {
                List<String> addresses = new ArrayList<>();
                for (int i = 0; i < perRound; i++) {
                    workers.add(WorkerProcess.start(i, "tcp", SECRET, Map.of()));
                }
                for (WorkerProcess w : workers) {
                    addresses.add(w.address());
                }
                try (LocalCluster cluster = LocalCluster.builder()
                                .secret(SECRET)
                                .connect(addresses)
                                .start();
                        NdArray a = NdArray.zeros(cluster.client().memory(), DType.FLOAT32, Order.C, 1024)) {
                    List<ObjectRef> refs = new ArrayList<>();
                    for (int i = 0; i < perRound; i++) {
                        refs.add(cluster.client().put(i, a).join());
                    }
                    assertEquals(perRound, refs.size());
                }
                for (WorkerProcess w : workers) {
                    int code = w.awaitExit(EXIT);
                    String output = String.join("\n", w.output());
                    assertEquals(WorkerExit.CLOSED.code(), code, "round " + round + ": " + output);
                    assertEquals(List.of(), w.lines("closed with"), "no leak report");
                    assertEquals(List.of(), w.lines("is closed"), "no allocator closed twice");
                    assertEquals(
                            1,
                            w.lines("the client closed the cluster; stopping (exit 0")
                                    .size(),
                            output);
                }
            } finally {
                workers.forEach(WorkerProcess::close);
            }
        }
    }

    /** Finding 9: a client gone mid-transfer ended the worker with exit 0 and no log line. */
    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void shouldExitClientLostAndLogTheClientWhenItGoesInTheMiddleOfAMessage() throws Exception {
        try (WorkerProcess w = WorkerProcess.start(0, "tcp", SECRET, Map.of())) {
            CompletableFuture<Reply> put;
            try (TestClient client = TestClient.connect(w.address(), SECRET);
                    NdArray big = NdArray.zeros(client.host, DType.UINT8, Order.C, 64L << 20)) {
                assertEquals(0L, client.workerDeviceBytes());
                w.signal("STOP");
                try {
                    put = client.request(id -> new WorkerRequest.Put(id, big));
                    awaitUnreadBytes(w.port());
                    client.endpoint.close();
                    ExecutionException e = assertThrows(ExecutionException.class, () -> put.get(30, TimeUnit.SECONDS));
                    assertInstanceOf(ClusterException.class, e.getCause());
                } finally {
                    w.signal("CONT");
                }
            }
            int code = w.awaitExit(EXIT);
            String output = String.join("\n", w.output());
            assertEquals(WorkerExit.CLIENT_LOST.code(), code, output);
            List<String> lines = w.lines("cuwire worker 0: client ");
            assertEquals(1, lines.size(), output);
            assertTrue(lines.getFirst().contains("PeerClosedException"), lines.getFirst());
            assertTrue(lines.getFirst().contains("stopping (exit 4: the client's connection ended"), lines.getFirst());
            assertEquals(List.of(), w.lines("closed with"), "the partial message was freed");
        }
    }

    /** Finding 9: a malformed message from the client ended the worker with exit 0 and no log line. */
    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void shouldExitProtocolViolationAndLogTheReasonWhenTheClientSendsWhatTheWorkerRefuses() throws Exception {
        try (WorkerProcess w = WorkerProcess.start(0, "tcp", SECRET, Map.of());
                TestClient client = TestClient.connect(w.address(), SECRET)) {
            ExecutionException e = assertThrows(
                    ExecutionException.class,
                    () -> client.request(id -> new WorkerRequest.Put(id, "x".repeat(17 << 20)))
                            .get(60, TimeUnit.SECONDS));
            assertInstanceOf(ClusterException.class, e.getCause());
            int code = w.awaitExit(EXIT);
            String output = String.join("\n", w.output());
            assertEquals(WorkerExit.PROTOCOL_VIOLATION.code(), code, output);
            List<String> lines = w.lines("cuwire worker 0: client ");
            assertEquals(1, lines.size(), output);
            assertTrue(
                    lines.getFirst().contains("ProtocolViolationException: " + "")
                            && lines.getFirst().contains("declared a " + "header of "),
                    lines.getFirst());
            assertTrue(
                    lines.getFirst().contains("stopping (exit 5: the client sent what the worker refuses"),
                    lines.getFirst());
        }
    }

    /** Finding 9: peers refused after the handshake were not logged. */
    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void shouldLogEachRefusedPeerOnceAndGoOnServingItsClient() throws Exception {
        try (WorkerProcess w = WorkerProcess.start(0, "tcp", SECRET, Map.of())) {
            try (TestClient client = TestClient.connect(w.address(), SECRET)) {
                // The worker serves the first connection it accepts as its client; handshakes run concurrently, so
                // the client is known to be first only once it has been answered.
                assertEquals(0L, client.workerDeviceBytes());
                try (TestClient peer = TestClient.connect(w.address(), SECRET)) {
                    assertThrows(
                            ExecutionException.class,
                            () -> peer.request(id -> new WorkerRequest.Put(id, "x".repeat(17 << 20)))
                                    .get(60, TimeUnit.SECONDS));
                }
                try (TestClient peer = TestClient.connect(w.address(), SECRET)) {
                    Reply r = peer.request(WorkerRequest.Shutdown::new).get(60, TimeUnit.SECONDS);
                    assertInstanceOf(Reply.Failed.class, r, "only the client may shut the worker down");
                }
                assertEquals(0L, client.workerDeviceBytes(), "the client is served");
                assertInstanceOf(
                        Reply.Ok.class,
                        client.request(WorkerRequest.Shutdown::new).get(60, TimeUnit.SECONDS));
            }
            int code = w.awaitExit(EXIT);
            String output = String.join("\n", w.output());
            assertEquals(WorkerExit.CLOSED.code(), code, output);
            List<String> peers = w.lines("cuwire worker 0: refused peer ");
            assertEquals(1, peers.size(), output);
            assertTrue(
                    peers.getFirst().contains("ProtocolViolationException: " + "")
                            && peers.getFirst().contains("declared a " + "header of "),
                    peers.getFirst());
            assertEquals(
                    1,
                    w.lines("cuwire worker 0: refused a shutdown request from peer ")
                            .size(),
                    output);
        }
    }

    /**
     * Waits until bytes have arrived at the worker's end of a connection to {@code port} that the worker has not
     * read: {@code /proc/net/tcp}'s receive queue of an established socket on that local port.
     */
    static void awaitUnreadBytes(int port) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < deadline) {
            for (String table : List.of("/proc/net/tcp", "/proc/net/tcp6")) {
                Path p = Path.of(table);
                if (!Files.exists(p)) {
                    continue;
                }
                for (String line :
                        Files.readAllLines(p).subList(1, Files.readAllLines(p).size())) {
                    String[] f = line.trim().split("\\s+");
                    String local = f[1];
                    int localPort = Integer.parseInt(local.substring(local.lastIndexOf(':') + 1), 16);
                    long unread = Long.parseLong(f[4].substring(f[4].indexOf(':') + 1), 16);
                    if (localPort == port && f[3].equals("01") && unread > 0) {
                        return;
                    }
                }
            }
            Thread.sleep(5);
        }
        throw new AssertionError("no bytes arrived at port " + port + " within 30 s");
    }
}
