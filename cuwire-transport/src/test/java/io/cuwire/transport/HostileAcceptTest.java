package io.cuwire.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import io.cuwire.test.ChildJvm;
import io.cuwire.transport.internal.socket.SocketListener;
import io.cuwire.transport.internal.ucx.UcxTransport;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Peers without the secret against the listeners that accept over TCP (TCP, CUDA IPC, the UCX bootstrap): stalled
 * handshakes from many source addresses beside a legitimate client, and a relay between a secret holder and the
 * listener. Loopback only; the legitimate client is a {@link ConformancePeer} in a JVM of its own.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class HostileAcceptTest {
    /** The attackers' source addresses: 127.0.0.2 … 127.0.0.9 and 127.0.0.1, which the legitimate client shares. */
    static final List<String> SOURCES = List.of(
            "127.0.0.1",
            "127.0.0.2",
            "127.0.0.3",
            "127.0.0.4",
            "127.0.0.5",
            "127.0.0.6",
            "127.0.0.7",
            "127.0.0.8",
            "127.0.0.9");

    private BufferAllocator<HostBuffer> host;
    private BufferAllocator<DeviceBuffer> device;
    private final List<AutoCloseable> toClose = new ArrayList<>();

    @BeforeEach
    void openAllocators() {
        host = BufferAllocator.host("hostile-host", BufferAllocator.UNLIMITED);
        device = Devices.get(0).newAllocator("hostile-device", BufferAllocator.UNLIMITED);
    }

    @AfterEach
    void closeEverything() throws Exception {
        for (int i = toClose.size() - 1; i >= 0; i--) {
            toClose.get(i).close();
        }
        host.close();
        device.close();
    }

    private TransportConfig.Builder config() {
        return TransportConfig.builder().secret(TestMessages.SECRET).receiveInto(DeviceMap.of(host, device));
    }

    private Listener listen(String scheme, TransportConfig config) {
        if (scheme.equals(Transports.UCX)) {
            assumeTrue(UcxTransport.available(), () -> "UCX does not load here: " + UcxTransport.unavailableReason());
        }
        Listener l = Transports.forAddress(scheme + "://127.0.0.1:0").listen(scheme + "://127.0.0.1:0", config);
        toClose.add(l);
        return l;
    }

    private ChildJvm legitimateClient(String address) throws IOException {
        ChildJvm p = TransportConformanceSuite.peerJvm(ConformancePeer.class)
                .args("connect", address, HexFormat.of().formatHex(TestMessages.SECRET))
                .start();
        toClose.add(p);
        return p;
    }

    static InetSocketAddress socketAddress(String address) {
        String hostPort = address.substring(address.indexOf("://") + 3);
        int colon = hostPort.lastIndexOf(':');
        return new InetSocketAddress(hostPort.substring(0, colon), Integer.parseInt(hostPort.substring(colon + 1)));
    }

    /**
     * Opens {@code n} connections to {@code address} from the attackers' source addresses in turn, at once, each
     * sending the start of a hello (a length of 100 and 10 of its bytes) and then nothing; those that did not connect
     * within 10 s are left out (a listener that does not accept leaves them in the kernel's backlog).
     */
    static List<Socket> stalled(String address, int n) throws InterruptedException {
        InetSocketAddress target = socketAddress(address);
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

    /** Accepts on a thread of its own, as a worker does, skipping peers that fail; the first connection accepted. */
    private CompletableFuture<Connection> acceptLoop(Listener listener) {
        CompletableFuture<Connection> first = new CompletableFuture<>();
        Thread.ofPlatform().daemon().name("test-accept").start(() -> {
            while (!first.isDone()) {
                try {
                    first.complete(listener.accept());
                } catch (ConnectionClosedException e) {
                    first.completeExceptionally(e);
                } catch (TransportException e) {
                    // a peer failed its handshake: next
                }
            }
        });
        return first;
    }

    private void closeAll(List<Socket> sockets) {
        toClose.add(() -> {
            for (Socket s : sockets) {
                s.close();
            }
        });
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "ipc", "ucx"})
    void shouldConnectALegitimateClientWhileAHundredStalledHandshakesAreOpen(String scheme) throws Exception {
        Listener listener = listen(scheme, config().build());
        CompletableFuture<Connection> accepted = acceptLoop(listener);
        List<Socket> attackers = stalled(listener.address(), 100);
        closeAll(attackers);
        ChildJvm client = legitimateClient(listener.address());
        // the client's own connect and handshake timeouts bound its wait: it prints "refused" when they pass
        assertEquals(0, client.awaitExit(Duration.ofSeconds(60)), client::output);
        assertTrue(client.output().contains("connected, families"), client.output());
        toClose.add(accepted.get(10, TimeUnit.SECONDS));
        assertEquals(100, attackers.size(), "attackers connected");
    }

    /**
     * At each bound in turn (4 per source address with room in all; 16 in all with room per source): 100 stalled
     * handshakes close the oldest ones, and a legitimate client arriving last still connects.
     */
    @ParameterizedTest
    @ValueSource(strings = {"tcp", "ipc", "ucx"})
    void shouldCloseTheOldestStalledHandshakesAtTheBoundsAndStillConnectALegitimateClient(String scheme)
            throws Exception {
        int[][] bounds = {{64, 4}, {16, 16}};
        for (int[] bound : bounds) {
            try (Refusals refusals = new Refusals()) {
                Listener listener = listen(
                        scheme, config().maxUnauthenticated(bound[0], bound[1]).build());
                SocketListener tcp = (SocketListener) listener;
                CompletableFuture<Connection> accepted = acceptLoop(listener);
                List<Socket> attackers = stalled(listener.address(), 100);
                closeAll(attackers);
                assertTrue(
                        tcp.handshaking() <= Math.min(bound[0], SOURCES.size() * bound[1]),
                        () -> tcp.handshaking() + " connections in their handshake");
                ChildJvm client = legitimateClient(listener.address());
                assertEquals(0, client.awaitExit(Duration.ofSeconds(60)), client::output);
                assertTrue(client.output().contains("connected, families"), client.output());
                toClose.add(accepted.get(10, TimeUnit.SECONDS));
                String why = bound[1] < bound[0]
                        ? "closed as the oldest of 5 connections in their handshake from 127.0.0."
                        : "closed as the oldest of 17 connections in their handshake (at most 16)";
                refusals.await(Duration.ofSeconds(10), listener.address() + " refused ", why);
                listener.close();
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "ipc"})
    void shouldCloseAHandshakeThatDripsPastItsDeadline(String scheme) throws Exception {
        try (Refusals refusals = new Refusals()) {
            Listener listener = listen(
                    scheme, config().handshakeTimeout(Duration.ofMillis(500)).build());
            try (Socket s = new Socket()) {
                s.connect(socketAddress(listener.address()), 10_000);
                s.setSoTimeout(100);
                OutputStream out = s.getOutputStream();
                InputStream in = s.getInputStream();
                out.write(new byte[] {0, 0, 0, 100});
                boolean closed = false;
                for (int i = 0; i < 100 && !closed; i++) {
                    try {
                        out.write(i); // one byte of the hello every 100 ms: 10 s for all of it
                        closed = in.read() < 0;
                    } catch (SocketTimeoutException stillOpen) {
                        // nothing from the listener yet
                    } catch (IOException reset) {
                        closed = true;
                    }
                }
                assertTrue(closed, "the listener still held the connection after 10 s of drip");
                refusals.await(
                        Duration.ofSeconds(10), listener.address() + " refused /127.0.0.1:" + s.getLocalPort() + ": ");
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"tcp", "ipc"})
    void shouldHoldNoDirectBufferNorPlatformThreadPerConnectionBeforeItAuthenticates(String scheme) throws Exception {
        Listener listener = listen(scheme, config().build());
        SocketListener tcp = (SocketListener) listener;
        BufferPoolMXBean direct = ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class).stream()
                .filter(b -> b.getName().equals("direct"))
                .findFirst()
                .orElseThrow();
        System.gc();
        long directBefore = direct.getMemoryUsed();
        int threadsBefore = ManagementFactory.getThreadMXBean().getThreadCount();
        closeAll(stalled(listener.address(), 200));
        long end = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (tcp.handshaking() < 200 && System.nanoTime() < end) {
            Thread.sleep(10);
        }
        assertEquals(200, tcp.handshaking(), "connections in their handshake");
        long directGrowth = direct.getMemoryUsed() - directBefore;
        int threadGrowth = ManagementFactory.getThreadMXBean().getThreadCount() - threadsBefore;
        assertTrue(directGrowth < 64 << 10, "direct memory grew by " + directGrowth + " bytes for 200 connections");
        assertTrue(threadGrowth < 10, "platform threads grew by " + threadGrowth + " for 200 connections");
    }

    /**
     * Finding 8 of issue 15: a relay with no secret sits between a secret holder (who connects to it, taking it for a
     * worker) and the listener. It forwards the handshake both ways byte for byte, then cuts the secret holder off
     * and sends a message of its own on the connection the secret holder authenticated.
     */
    @ParameterizedTest
    @ValueSource(strings = {"tcp", "ipc"})
    void shouldGiveARelayBetweenASecretHolderAndTheListenerNoConnection(String scheme) throws Exception {
        Listener listener = listen(scheme, config().build());
        try (Refusals refusals = new Refusals();
                Relay relay = new Relay(socketAddress(listener.address()))) {
            ChildJvm client = legitimateClient(scheme + "://127.0.0.1:" + relay.port());
            while (!relay.done()) {
                try {
                    Connection c = listener.accept(Duration.ofMillis(200));
                    toClose.add(c);
                    String got;
                    try (ReceivedMessage m = c.receive(Duration.ofSeconds(10))) {
                        got = String.valueOf(m.value().root());
                    }
                    fail("the relay got an authenticated connection to the listener and sent '" + got + "' on it");
                } catch (TransportTimeoutException expected) {
                    // nothing authenticated yet
                }
            }
            assertEquals(0, client.awaitExit(Duration.ofSeconds(60)), client::output);
            String port = listener.address().substring(listener.address().lastIndexOf(':') + 1);
            String why = "the client connected to 127.0.0.1:" + relay.port() + ", but this connection arrived at "
                    + "127.0.0.1:" + port;
            assertTrue(client.output().contains("refused AuthenticationException"), client.output());
            assertTrue(client.output().contains(why), client.output());
            refusals.await(Duration.ofSeconds(10), listener.address() + " refused ", why);
        }
    }

    /**
     * Accepts one secret holder, connects to {@code target}, forwards every byte from the target and the secret
     * holder's first three handshake records, then sends a message of its own to the target.
     */
    static final class Relay implements AutoCloseable {
        private final ServerSocket server;
        private final InetSocketAddress target;
        private final AtomicBoolean done = new AtomicBoolean();
        private final List<Socket> sockets = new ArrayList<>();

        Relay(InetSocketAddress target) throws IOException {
            this.target = target;
            this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
            Thread.ofPlatform().daemon().name("relay").start(this::run);
        }

        int port() {
            return server.getLocalPort();
        }

        boolean done() {
            return done.get();
        }

        private void run() {
            try (Socket victim = server.accept();
                    Socket worker = new Socket()) {
                synchronized (sockets) {
                    sockets.add(victim);
                    sockets.add(worker);
                }
                worker.connect(target, 10_000);
                Thread back = Thread.ofPlatform().daemon().start(() -> pump(worker, victim));
                DataInputStream fromVictim = new DataInputStream(victim.getInputStream());
                DataOutputStream toWorker = new DataOutputStream(worker.getOutputStream());
                for (int i = 0; i < 3; i++) {
                    byte[] record = new byte[fromVictim.readInt()];
                    fromVictim.readFully(record);
                    toWorker.writeInt(record.length);
                    toWorker.write(record);
                    toWorker.flush();
                }
                byte[] header = TestMessages.message("relayed", List.of()).header();
                toWorker.writeByte(1);
                toWorker.writeInt(header.length);
                toWorker.write(header);
                toWorker.flush();
                back.join(Duration.ofSeconds(30));
            } catch (EOFException e) {
                // the listener (or the secret holder) hung up in the middle of the handshake
            } catch (IOException | InterruptedException e) {
                // the relay's sockets were closed
            } finally {
                done.set(true);
            }
        }

        private static void pump(Socket from, Socket to) {
            byte[] buffer = new byte[4096];
            try {
                InputStream in = from.getInputStream();
                OutputStream out = to.getOutputStream();
                int n;
                while ((n = in.read(buffer)) >= 0) {
                    out.write(buffer, 0, n);
                    out.flush();
                }
                to.shutdownOutput();
            } catch (IOException e) {
                // either side went away
            }
            try {
                to.close();
            } catch (IOException ignored) {
                // closing anyway
            }
        }

        @Override
        public void close() throws IOException {
            server.close();
            synchronized (sockets) {
                for (Socket s : sockets) {
                    s.close();
                }
            }
        }
    }
}
