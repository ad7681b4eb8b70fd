package io.cuwire.transport.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.serialize.Family;
import io.cuwire.serialize.msgpack.MsgpackReader;
import io.cuwire.serialize.msgpack.MsgpackWriter;
import io.cuwire.transport.AuthenticationException;
import io.cuwire.transport.Capabilities;
import io.cuwire.transport.FrameAllocator;
import io.cuwire.transport.MessageAuthenticationException;
import io.cuwire.transport.PeerClosedException;
import io.cuwire.transport.ProtocolViolationException;
import io.cuwire.transport.TransportConfig;
import io.cuwire.transport.TransportTimeoutException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The handshake's binding, record by record over in-memory channels: who proves first, what a proof covers, what a
 * relay in the middle can and cannot do with it.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class HandshakeTest {
    private static final byte[] SECRET = "handshake-test-secret-0123456789".getBytes();
    private static final String SERVER = "127.0.0.1:4000";
    private static final FrameAllocator NOWHERE = d -> {
        throw new AssertionError("no frames");
    };

    private static TransportConfig config(byte[] secret) {
        return TransportConfig.builder()
                .secret(secret)
                .receiveInto(NOWHERE)
                .handshakeTimeout(Duration.ofSeconds(10))
                .build();
    }

    /** One direction of an in-memory connection; {@link #END} ends it. */
    private static final class Pipe {
        static final byte[] END = new byte[0];
        final LinkedBlockingQueue<byte[]> records = new LinkedBlockingQueue<>();
        final List<byte[]> seen = new ArrayList<>();

        void put(byte[] r) {
            synchronized (seen) {
                seen.add(r);
            }
            records.add(r);
        }

        byte[] take(long deadlineNanos) {
            try {
                byte[] r = records.poll(deadlineNanos - System.nanoTime(), TimeUnit.NANOSECONDS);
                if (r == null) {
                    throw new TransportTimeoutException("no record in time");
                }
                if (r == END) {
                    records.add(END);
                    throw new PeerClosedException("closed");
                }
                return r;
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        }

        List<Map<?, ?>> seenMaps() {
            List<Map<?, ?>> maps = new ArrayList<>();
            synchronized (seen) {
                for (byte[] r : seen) {
                    if (r != END) {
                        maps.add(map(r));
                    }
                }
            }
            return maps;
        }
    }

    /** An end of a connection: writes into {@code out}, reads from {@code in}. */
    private static RecordChannel end(Pipe out, Pipe in) {
        return new RecordChannel() {
            @Override
            public void writeRecord(byte[] record) {
                out.put(record.clone());
            }

            @Override
            public byte[] readRecord(int maxBytes, long deadlineNanos) {
                byte[] r = in.take(deadlineNanos);
                if (r.length > maxBytes) {
                    throw new ProtocolViolationException("record of " + r.length + " bytes");
                }
                return r;
            }
        };
    }

    private static Map<?, ?> map(byte[] record) {
        return (Map<?, ?>) new MsgpackReader(record, 0, record.length, 8, 1024).readValue();
    }

    private static CompletableFuture<Handshake.Result> side(
            RecordChannel channel,
            TransportConfig config,
            boolean client,
            String server,
            Runnable onAuthenticated,
            Pipe closes) {
        return CompletableFuture.supplyAsync(
                () -> {
                    try {
                        return Handshake.run(
                                channel,
                                config,
                                client,
                                Capabilities.local(List.of(Family.HOST)),
                                server,
                                onAuthenticated);
                    } finally {
                        closes.put(Pipe.END);
                    }
                },
                task -> Thread.ofVirtual().start(task));
    }

    private static Throwable failure(CompletableFuture<?> f) {
        ExecutionException e = assertThrows(ExecutionException.class, () -> f.get(20, TimeUnit.SECONDS));
        return e.getCause();
    }

    @Test
    void shouldAuthenticateBothSidesAndAgreeTheFamilies() throws Exception {
        Pipe toServer = new Pipe();
        Pipe toClient = new Pipe();
        AtomicBoolean serverSawProof = new AtomicBoolean();
        var client = side(end(toServer, toClient), config(SECRET), true, SERVER, () -> {}, toServer);
        var server =
                side(end(toClient, toServer), config(SECRET), false, SERVER, () -> serverSawProof.set(true), toClient);
        assertEquals(List.of(Family.HOST), client.get(20, TimeUnit.SECONDS).families());
        assertEquals(List.of(Family.HOST), server.get(20, TimeUnit.SECONDS).families());
        assertTrue(serverSawProof.get());
        List<Map<?, ?>> fromClient = toServer.seenMaps();
        assertEquals(SERVER, fromClient.get(0).get("server"), "the client's hello names the server it reached");
        assertEquals(2L, fromClient.get(0).get("pv"));
    }

    /** Runs both sides of one handshake over fresh pipes; the client's config first. */
    private static Handshake.Result[] connect(TransportConfig clientConfig, TransportConfig serverConfig)
            throws Exception {
        Pipe toServer = new Pipe();
        Pipe toClient = new Pipe();
        var client = side(end(toServer, toClient), clientConfig, true, SERVER, () -> {}, toServer);
        var server = side(end(toClient, toServer), serverConfig, false, SERVER, () -> {}, toClient);
        return new Handshake.Result[] {client.get(20, TimeUnit.SECONDS), server.get(20, TimeUnit.SECONDS)};
    }

    @Test
    void shouldDeriveSessionKeysPerDirectionAndConnectionWhenBothSidesProvedTheSecret() throws Exception {
        Handshake.Result[] one = connect(config(SECRET), config(SECRET));
        Handshake.Result[] two = connect(config(SECRET), config(SECRET));
        ByteBuffer header = ByteBuffer.wrap("a header".getBytes());
        // what the client seals the server opens, in order; the server's own key is another
        SessionKeys.Direction clientSends = one[0].keys().sending("server");
        SessionKeys.Direction serverReceives = one[1].keys().receiving("client");
        byte[] first = clientSends.seal(header);
        byte[] second = clientSends.seal(header);
        serverReceives.open(first, "record 0", header);
        serverReceives.open(second, "record 1", header);
        assertThrows(
                MessageAuthenticationException.class,
                () -> serverReceives.open(first, "a replay", header),
                "record 2 is not record 0 again");
        assertThrows(
                MessageAuthenticationException.class,
                () -> one[0].keys()
                        .receiving("server")
                        .open(one[1].keys().receiving("x").seal(header), "reflected", header),
                "the server's key is not the client's");
        assertThrows(
                MessageAuthenticationException.class,
                () -> two[1].keys()
                        .receiving("client")
                        .open(one[0].keys().sending("server").seal(header), "spliced", header),
                "another connection's keys differ");
        ByteBuffer changed = ByteBuffer.wrap("a headeR".getBytes());
        SessionKeys.Direction again = one[1].keys().receiving("client");
        assertThrows(
                MessageAuthenticationException.class,
                () -> again.open(one[0].keys().sending("server").seal(header), "changed", changed));
        assertEquals(0, header.position(), "sealing reads its parts without moving them");
    }

    @Test
    void shouldDeriveNoSessionKeysUnlessBothSidesProvedTheSecret() throws Exception {
        TransportConfig open = TransportConfig.builder()
                .allowUnauthenticated(true)
                .receiveInto(NOWHERE)
                .build();
        TransportConfig secretButOpen =
                config(SECRET).toBuilder().allowUnauthenticated(true).build();
        Handshake.Result[] neither = connect(open, open);
        assertNull(neither[0].keys());
        assertNull(neither[1].keys());
        Handshake.Result[] clientOnly = connect(secretButOpen, open);
        assertNull(clientOnly[0].keys(), "the server proved nothing");
        assertNull(clientOnly[1].keys(), "the server has no secret");
        Handshake.Result[] serverOnly = connect(open, secretButOpen);
        assertNull(serverOnly[0].keys());
        assertNull(serverOnly[1].keys());
    }

    /**
     * The server proves nothing to a client whose proof failed: a secret holder's proof is worth nothing to whoever
     * sent the client's records, and the server's own proof never reaches them.
     */
    @Test
    void shouldNotProveAnythingToAClientWhoseProofFailed() throws Exception {
        Pipe toServer = new Pipe();
        Pipe toClient = new Pipe();
        var client = side(
                end(toServer, toClient),
                config("not-the-right-secret-0123456789!!".getBytes()),
                true,
                SERVER,
                () -> {},
                toServer);
        AtomicBoolean authenticated = new AtomicBoolean();
        var server =
                side(end(toClient, toServer), config(SECRET), false, SERVER, () -> authenticated.set(true), toClient);
        AuthenticationException s = assertInstanceOf(AuthenticationException.class, failure(server));
        assertTrue(s.getMessage().contains("proof of the cluster secret is wrong"), s.getMessage());
        AuthenticationException c = assertInstanceOf(AuthenticationException.class, failure(client));
        assertTrue(c.getMessage().startsWith("peer refused this side: AuthenticationException"), c.getMessage());
        assertFalse(authenticated.get());
        List<Map<?, ?>> fromServer = toClient.seenMaps();
        assertEquals(2, fromServer.size(), "the server's hello and its refusal: " + fromServer);
        assertEquals("auth", fromServer.get(1).get("refused"));
        for (Map<?, ?> m : fromServer) {
            assertFalse(m.containsKey("proof"), "the server sent a proof: " + m);
        }
    }

    /**
     * A relay that passes a client's hello on to another listener unchanged is refused by that listener before it
     * proves anything (the hello names the relay's endpoint); one that rewrites the endpoint changes the transcript,
     * so the client's proof fails there.
     */
    @Test
    void shouldRefuseAClientProofRelayedFromAHandshakeWithAnotherEndpoint() throws Exception {
        for (boolean rewrite : new boolean[] {false, true}) {
            Pipe clientToRelay = new Pipe();
            Pipe relayToClient = new Pipe();
            Pipe relayToServer = new Pipe();
            Pipe serverToRelay = new Pipe();
            String relay = "127.0.0.1:5000";
            var client = side(end(clientToRelay, relayToClient), config(SECRET), true, relay, () -> {}, clientToRelay);
            var server =
                    side(end(serverToRelay, relayToServer), config(SECRET), false, SERVER, () -> {}, serverToRelay);
            UnaryOperator<byte[]> edit = r -> {
                Map<?, ?> m = map(r);
                if (!rewrite || !relay.equals(m.get("server"))) {
                    return r;
                }
                Map<Object, Object> changed = new LinkedHashMap<>(m);
                changed.put("server", SERVER);
                return new MsgpackWriter(128).value(changed).toByteArray();
            };
            Thread up = Thread.ofVirtual().start(() -> forward(clientToRelay, relayToServer, edit));
            Thread down = Thread.ofVirtual().start(() -> forward(serverToRelay, relayToClient, r -> r));
            AuthenticationException s = assertInstanceOf(AuthenticationException.class, failure(server));
            String expected = rewrite
                    ? "peer's proof of the cluster secret is wrong"
                    : "the client connected to 127.0.0.1:5000, but this connection arrived at 127.0.0.1:4000";
            assertTrue(s.getMessage().contains(expected), s.getMessage());
            assertInstanceOf(AuthenticationException.class, failure(client));
            for (Map<?, ?> m : serverToRelay.seenMaps()) {
                assertFalse(m.containsKey("proof"), "the server proved itself to the relay: " + m);
            }
            up.join();
            down.join();
        }
    }

    private static void forward(Pipe from, Pipe to, UnaryOperator<byte[]> edit) {
        while (true) {
            byte[] r;
            try {
                r = from.records.take();
            } catch (InterruptedException e) {
                return;
            }
            if (r == Pipe.END) {
                to.put(Pipe.END);
                return;
            }
            to.put(edit.apply(r));
        }
    }

    @Test
    void shouldTellAClientOfTheFirstProtocolVersionWhichVersionThisSideSpeaks() throws Exception {
        Pipe toServer = new Pipe();
        Pipe toClient = new Pipe();
        var server = side(end(toClient, toServer), config(SECRET), false, SERVER, () -> {}, toClient);
        Map<String, Object> hello = new LinkedHashMap<>();
        hello.put("magic", "cuwire-transport");
        hello.put("pv", 1L);
        hello.put("role", "client");
        hello.put("challenge", new byte[32]);
        toServer.put(new MsgpackWriter(128).value(hello).toByteArray());
        ProtocolViolationException e = assertInstanceOf(ProtocolViolationException.class, failure(server));
        assertEquals("peer speaks transport protocol version 1, this side speaks 2", e.getMessage());
        Map<?, ?> refusal = toClient.seenMaps().getFirst();
        assertEquals("cuwire-transport", refusal.get("magic"), "a version-1 client checks the magic first");
        assertEquals(2L, refusal.get("pv"), "and then reads the version from the refusal");
    }

    @Test
    void shouldNameEndpointsByNumericHostAndPort() throws Exception {
        assertEquals("127.0.0.1:80", Handshake.endpoint(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), 80)));
        assertEquals(
                "[0:0:0:0:0:0:0:1]:81", Handshake.endpoint(new InetSocketAddress(InetAddress.getByName("::1"), 81)));
        assertThrows(
                IllegalArgumentException.class,
                () -> Handshake.endpoint(InetSocketAddress.createUnresolved("cuwire.invalid", 1)));
    }
}
