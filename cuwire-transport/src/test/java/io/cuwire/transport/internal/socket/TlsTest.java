package io.cuwire.transport.internal.socket;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.Buffer;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import io.cuwire.serialize.msgpack.MsgpackReader;
import io.cuwire.serialize.msgpack.MsgpackWriter;
import io.cuwire.transport.AuthenticationException;
import io.cuwire.transport.Capabilities;
import io.cuwire.transport.Connection;
import io.cuwire.transport.DeviceMap;
import io.cuwire.transport.IdleStrategy;
import io.cuwire.transport.PeerClosedException;
import io.cuwire.transport.ProtocolViolationException;
import io.cuwire.transport.ReceivedMessage;
import io.cuwire.transport.TestMessages;
import io.cuwire.transport.TlsMode;
import io.cuwire.transport.TransportConfig;
import io.cuwire.transport.TransportException;
import io.cuwire.transport.TransportTimeoutException;
import io.cuwire.transport.internal.Handshake;
import io.cuwire.transport.internal.RecordChannel;
import io.cuwire.transport.internal.tcp.TcpTransport;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * TLS under {@code tcp://}: the certificate of our own DER encoder, the exporter value that binds cuwire's handshake
 * to the TLS channel (and the relays it stops), the listener's rule for plaintext, and records that are not valid.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TlsTest {
    private static final long DEADLINE_NANOS = TimeUnit.SECONDS.toNanos(10);
    /** Threads of their own for the blocking parts (the common pool may have one thread on a small machine). */
    private static final ExecutorService THREADS = Executors.newVirtualThreadPerTaskExecutor();

    private BufferAllocator<HostBuffer> host;
    private BufferAllocator<DeviceBuffer> device;
    private final List<AutoCloseable> toClose = new ArrayList<>();

    @BeforeEach
    void openAllocators() {
        host = BufferAllocator.host("tls-host", BufferAllocator.UNLIMITED);
        device = Devices.get(0).newAllocator("tls-device", BufferAllocator.UNLIMITED);
    }

    @AfterEach
    void closeEverything() throws Exception {
        for (int i = toClose.size() - 1; i >= 0; i--) {
            toClose.get(i).close();
        }
        host.close(); // fails on any byte still allocated
        device.close();
    }

    private TransportConfig config(TlsMode mode) {
        return TransportConfig.builder()
                .secret(TestMessages.SECRET)
                .receiveInto(DeviceMap.of(host, device))
                .ioTimeout(Duration.ofSeconds(10))
                .tls(mode)
                .build();
    }

    private <T extends AutoCloseable> T closing(T resource) {
        toClose.add(resource);
        return resource;
    }

    private SocketListener listen(TransportConfig config, boolean peersAreLoopback) {
        return closing(TcpTransport.listen(new InetSocketAddress("127.0.0.1", 0), config, a -> peersAreLoopback));
    }

    private static InetSocketAddress socketAddress(String address) {
        return Sockets.parse("tcp", address);
    }

    /** A connected pair of blocking sockets over loopback: [client, server]. */
    private SocketChannel[] socketPair() throws IOException {
        try (ServerSocketChannel server = ServerSocketChannel.open()) {
            server.bind(new InetSocketAddress("127.0.0.1", 0));
            SocketChannel client = closing(SocketChannel.open(server.getLocalAddress()));
            SocketChannel accepted = closing(server.accept());
            return new SocketChannel[] {client, accepted};
        }
    }

    /** TLS sessions at both ends of {@code pair}: [client, server]. */
    private static TlsSession[] tlsPair(SocketChannel[] pair) throws Exception {
        TransportConfig anyKey = TransportConfig.builder()
                .allowUnauthenticated(true)
                .receiveInto(d -> null)
                .build();
        CompletableFuture<TlsSession> server = CompletableFuture.supplyAsync(
                () -> TlsSession.server(
                        pair[1],
                        "client",
                        TlsSession.serverContext(anyKey),
                        streamOf(pair[1]),
                        System.nanoTime() + DEADLINE_NANOS),
                THREADS);
        TlsSession client = TlsSession.client(pair[0], "server", System.nanoTime() + DEADLINE_NANOS);
        return new TlsSession[] {client, server.get(10, TimeUnit.SECONDS)};
    }

    private static java.io.InputStream streamOf(SocketChannel channel) {
        try {
            return channel.socket().getInputStream();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    @Test
    void shouldMakeASelfSignedP256CertificateThatVerifiesWithItsOwnKey() throws Exception {
        KeyPairGenerator g = KeyPairGenerator.getInstance("EC");
        g.initialize(new ECGenParameterSpec("secp256r1"));
        KeyPair pair = g.generateKeyPair();
        Instant now = Instant.parse("2026-12-01T12:00:00Z");
        X509Certificate c = SelfSignedCertificate.certificate(pair, now);
        c.verify(pair.getPublic());
        assertEquals(3, c.getVersion());
        assertEquals("CN=cuwire", c.getSubjectX500Principal().getName());
        assertEquals(c.getSubjectX500Principal(), c.getIssuerX500Principal());
        assertEquals("SHA256withECDSA", c.getSigAlgName());
        assertEquals(pair.getPublic(), c.getPublicKey());
        c.checkValidity(java.util.Date.from(now));
        assertEquals(Instant.parse("2026-12-01T11:00:00Z"), c.getNotBefore().toInstant());
        assertEquals(Instant.parse("2026-12-02T12:00:00Z"), c.getNotAfter().toInstant());
        assertTrue(c.getSerialNumber().signum() > 0);
        // GeneralizedTime from 2050 on
        X509Certificate late = SelfSignedCertificate.certificate(pair, Instant.parse("2051-06-01T00:00:00Z"));
        assertEquals(Instant.parse("2051-06-02T00:00:00Z"), late.getNotAfter().toInstant());
        assertArrayEquals(
                new byte[] {0x04, (byte) 0x82, 0x01, 0x00},
                java.util.Arrays.copyOf(SelfSignedCertificate.tlv(0x04, new byte[256]), 4));
    }

    @Test
    void shouldGiveBothEndsOfOneTlsChannelTheSameBindingAndAnotherChannelAnother() throws Exception {
        TlsSession[] one = tlsPair(socketPair());
        TlsSession[] two = tlsPair(socketPair());
        assertEquals(TlsSession.BINDING_BYTES, one[0].binding().length);
        assertArrayEquals(one[0].binding(), one[1].binding());
        assertArrayEquals(two[0].binding(), two[1].binding());
        assertFalse(java.util.Arrays.equals(one[0].binding(), two[0].binding()));
    }

    @Test
    void shouldCarryBytesBothWaysThroughTheEngineAndFailAGarbledRecordAsAProtocolError() throws Exception {
        SocketChannel[] pair = socketPair();
        TlsSession[] tls = tlsPair(pair);
        SocketIo client = closing(new SocketIo(pair[0], "server", tls[0], IdleStrategy.spinFor(Duration.ZERO)));
        SocketIo server = closing(new SocketIo(pair[1], "client", tls[1], IdleStrategy.spinFor(Duration.ZERO)));
        long stall = TimeUnit.SECONDS.toNanos(10);
        byte[] big = TestMessages.pattern(3 << 20, 7); // many records, more than the socket buffers hold
        ByteBuffer direct = ByteBuffer.allocateDirect(big.length);
        CompletableFuture<Void> write = CompletableFuture.runAsync(
                () -> client.write(
                        new ByteBuffer[] {
                            ByteBuffer.allocate(5)
                                    .put((byte) 1)
                                    .putInt(big.length)
                                    .flip(),
                            ByteBuffer.wrap(big)
                        },
                        stall,
                        SocketIo.NO_DEADLINE),
                THREADS);
        assertEquals(1, server.readByte(stall, SocketIo.NO_DEADLINE));
        assertEquals(big.length, server.readInt(stall, SocketIo.NO_DEADLINE));
        server.readFully(direct, stall, SocketIo.NO_DEADLINE);
        write.get(10, TimeUnit.SECONDS);
        byte[] got = new byte[big.length];
        direct.flip().get(got);
        assertArrayEquals(big, got);
        server.write(ByteBuffer.wrap(new byte[] {42}), stall, SocketIo.NO_DEADLINE);
        assertEquals(42, client.readByte(stall, SocketIo.NO_DEADLINE));

        // an application-data record whose bytes are not what the sender's key made: its tag does not verify
        ByteBuffer forged = ByteBuffer.allocate(5 + 40)
                .put((byte) 0x17)
                .put((byte) 3)
                .put((byte) 3)
                .putShort((short) 40);
        for (int i = 0; i < 40; i++) {
            forged.put((byte) (i * 37 + 11));
        }
        pair[0].write(forged.flip());
        ProtocolViolationException e =
                assertThrows(ProtocolViolationException.class, () -> server.readByte(stall, SocketIo.NO_DEADLINE));
        assertTrue(e.getMessage().startsWith("TLS with client failed: "), e.getMessage());
    }

    @Test
    void shouldRefuseATlsHandshakeThatIsNotTlsAsAProtocolError() throws Exception {
        SocketChannel[] pair = socketPair();
        pair[0].write(ByteBuffer.wrap(new byte[] {0x16, 3, 1, 0, 6, 1, 0, 0, 2, 0, 0}));
        TransportConfig anyKey = TransportConfig.builder()
                .allowUnauthenticated(true)
                .receiveInto(d -> null)
                .build();
        ProtocolViolationException e = assertThrows(
                ProtocolViolationException.class,
                () -> TlsSession.server(
                        pair[1],
                        "client",
                        TlsSession.serverContext(anyKey),
                        streamOf(pair[1]),
                        System.nanoTime() + DEADLINE_NANOS));
        assertTrue(e.getMessage().startsWith("the TLS handshake with client failed: "), e.getMessage());
    }

    @Test
    void shouldRefusePlaintextFromANonLoopbackPeerInAutoSayingWhatToSet() {
        SocketListener listener = listen(config(TlsMode.AUTO), false);
        ProtocolViolationException e = assertThrows(
                ProtocolViolationException.class,
                () -> TcpTransport.INSTANCE.connect(listener.address(), config(TlsMode.AUTO)));
        assertTrue(
                e.getMessage()
                        .contains("TLS required from non-loopback peers (listener tls AUTO): set the "
                                + "client's TransportConfig.tls(ON) or -Dcuwire.transport.tls=on"),
                e.getMessage());
        assertThrows(TransportTimeoutException.class, () -> listener.accept(Duration.ofMillis(50)));

        // the same listener takes the same peer over TLS, and carries a device and a host frame inside it
        try (Connection c = TcpTransport.INSTANCE.connect(listener.address(), config(TlsMode.ON));
                Connection s = listener.accept(Duration.ofSeconds(10))) {
            DeviceBuffer d = device.allocate(5 << 20);
            HostBuffer h = host.allocate(100_000);
            byte[] dBytes = TestMessages.pattern(5 << 20, 3);
            byte[] hBytes = TestMessages.pattern(100_000, 5);
            TestMessages.fill(d, dBytes);
            TestMessages.fill(h, hBytes);
            List<Buffer> frames = List.of(d, h);
            CompletableFuture<?> sent = c.send(TestMessages.message("inside-tls", frames));
            try (ReceivedMessage m = s.receive(Duration.ofSeconds(10))) {
                sent.join();
                d.close();
                h.close();
                assertEquals("inside-tls", m.value().root());
                assertArrayEquals(
                        dBytes, TestMessages.contents(m.value().frames().get(0).buffer()));
                assertArrayEquals(
                        hBytes, TestMessages.contents(m.value().frames().get(1).buffer()));
            }
        }
        assertEquals(0, listener.handshaking());
    }

    @Test
    void shouldTakePlaintextFromALoopbackPeerInAutoAndRefuseTlsWhenOff() {
        SocketListener auto = listen(config(TlsMode.AUTO), true);
        try (Connection c = TcpTransport.INSTANCE.connect(auto.address(), config(TlsMode.AUTO));
                Connection s = auto.accept(Duration.ofSeconds(10))) {
            assertTrue(c.isOpen() && s.isOpen());
        }
        SocketListener off = listen(config(TlsMode.OFF), false);
        assertThrows(PeerClosedException.class, () -> TcpTransport.INSTANCE.connect(off.address(), config(TlsMode.ON)));
        try (Connection c = TcpTransport.INSTANCE.connect(off.address(), config(TlsMode.OFF));
                Connection s = off.accept(Duration.ofSeconds(10))) {
            assertTrue(c.isOpen() && s.isOpen());
        }
    }

    // ---- a relay that terminates TLS on both sides and knows no secret

    /** How the relay changes the hellos it passes on. */
    private enum Rewrite {
        NONE,
        CLIENT_HELLO,
        BOTH_HELLOS
    }

    /**
     * Stands where the client believes the server is (as a hijacked name or route would put it): takes the client's
     * TLS with a certificate of its own, opens its own TLS (or plaintext) connection to the server, and passes
     * cuwire's handshake records on, rewriting the hellos' binding as told. Records the client's records.
     */
    private final class Relay implements AutoCloseable {
        final ServerSocketChannel socket;
        final List<Map<?, ?>> fromClient = Collections.synchronizedList(new ArrayList<>());
        final CompletableFuture<Void> done;

        Relay(InetSocketAddress server, Rewrite rewrite, boolean tlsToServer) throws IOException {
            socket = closing(ServerSocketChannel.open().bind(new InetSocketAddress("127.0.0.1", 0)));
            TransportConfig own = TransportConfig.builder()
                    .allowUnauthenticated(true)
                    .receiveInto(d -> null)
                    .build();
            done = CompletableFuture.runAsync(
                    () -> {
                        try {
                            SocketChannel a = closing(socket.accept());
                            TlsSession clientSide = TlsSession.server(
                                    a,
                                    "client",
                                    TlsSession.serverContext(own),
                                    streamOf(a),
                                    System.nanoTime() + DEADLINE_NANOS);
                            SocketChannel b = closing(SocketChannel.open(server));
                            RecordChannel toServer;
                            byte[] serverBinding = null;
                            if (tlsToServer) {
                                TlsSession serverSide =
                                        TlsSession.client(b, "server", System.nanoTime() + DEADLINE_NANOS);
                                toServer = serverSide.records();
                                serverBinding = serverSide.binding();
                            } else {
                                toServer = new io.cuwire.transport.internal.SocketRecords(b.socket(), "server");
                            }
                            RecordChannel toClient = clientSide.records();
                            byte[] sb = serverBinding;
                            CompletableFuture<Void> back = CompletableFuture.runAsync(
                                    () -> pass(
                                            toServer,
                                            toClient,
                                            rewrite == Rewrite.BOTH_HELLOS ? clientSide.binding() : null,
                                            null),
                                    THREADS);
                            pass(toClient, toServer, rewrite != Rewrite.NONE ? sb : null, fromClient);
                            back.join();
                        } catch (IOException e) {
                            throw new java.io.UncheckedIOException(e);
                        }
                    },
                    THREADS);
        }

        String address() {
            return "127.0.0.1:" + socket.socket().getLocalPort();
        }

        private void pass(RecordChannel from, RecordChannel to, byte[] binding, List<Map<?, ?>> seen) {
            try {
                while (true) {
                    byte[] record = from.readRecord(64 << 10, System.nanoTime() + DEADLINE_NANOS);
                    Map<?, ?> map = (Map<?, ?>) new MsgpackReader(record, 0, record.length, 8, 1024).readValue();
                    if (seen != null) {
                        seen.add(map);
                    }
                    if (binding != null && map.containsKey("challenge")) {
                        Map<Object, Object> changed = new LinkedHashMap<>(map);
                        changed.put("tls", binding);
                        record = new MsgpackWriter(256).value(changed).toByteArray();
                    }
                    to.writeRecord(record);
                }
            } catch (TransportException e) {
                // one side is gone, or refused: the relay is done
            }
        }

        @Override
        public void close() throws IOException {
            socket.close();
        }
    }

    /** A client that believes it dialled {@code server}'s endpoint and reached the relay. */
    private static Handshake.Result clientThrough(Relay relay, String serverEndpoint, TransportConfig config)
            throws IOException {
        try (SocketChannel channel = SocketChannel.open(socketAddress("tcp://" + relay.address()))) {
            TlsSession tls = TlsSession.client(channel, relay.address(), System.nanoTime() + DEADLINE_NANOS);
            return Handshake.run(
                    tls.records(),
                    config,
                    true,
                    Capabilities.local(config.families()),
                    serverEndpoint,
                    () -> {},
                    tls.binding());
        }
    }

    private static String endpoint(SocketListener listener) {
        return Handshake.endpoint(socketAddress(listener.address()));
    }

    @Test
    void shouldHaveTheServerRefuseARelayThatPassesTheClientsHelloOnAsItIs() throws Exception {
        SocketListener server = listen(config(TlsMode.ON), true);
        Relay relay = closing(new Relay(socketAddress(server.address()), Rewrite.NONE, true));
        AuthenticationException e = assertThrows(
                AuthenticationException.class, () -> clientThrough(relay, endpoint(server), config(TlsMode.ON)));
        assertTrue(
                e.getMessage()
                        .startsWith("peer refused this side: AuthenticationException: the peer's hello is "
                                + "not bound to this connection's TLS channel"),
                e.getMessage());
        relay.done.get(10, TimeUnit.SECONDS);
        assertEquals(1, relay.fromClient.size(), "the client sent only its hello, no proof: " + relay.fromClient);
        assertThrows(TransportTimeoutException.class, () -> server.accept(Duration.ofMillis(50)));
    }

    @Test
    void shouldHaveTheClientRefuseARelayThatRebindsTheClientsHelloBeforeItProvesAnything() throws Exception {
        SocketListener server = listen(config(TlsMode.ON), true);
        Relay relay = closing(new Relay(socketAddress(server.address()), Rewrite.CLIENT_HELLO, true));
        AuthenticationException e = assertThrows(
                AuthenticationException.class, () -> clientThrough(relay, endpoint(server), config(TlsMode.ON)));
        assertTrue(
                e.getMessage().startsWith("the peer's hello is not bound to this connection's TLS channel"),
                e.getMessage());
        relay.done.get(10, TimeUnit.SECONDS);
        assertEquals(2, relay.fromClient.size(), relay.fromClient.toString());
        assertEquals("auth", relay.fromClient.get(1).get("refused"), "the client refused instead of proving");
        assertThrows(TransportTimeoutException.class, () -> server.accept(Duration.ofMillis(50)));
    }

    @Test
    void shouldHaveTheServerRefuseTheProofOfAClientWhoseHellosWereBothRebound() throws Exception {
        SocketListener server = listen(config(TlsMode.ON), true);
        Relay relay = closing(new Relay(socketAddress(server.address()), Rewrite.BOTH_HELLOS, true));
        AuthenticationException e = assertThrows(
                AuthenticationException.class, () -> clientThrough(relay, endpoint(server), config(TlsMode.ON)));
        assertTrue(
                e.getMessage()
                        .startsWith("peer refused this side: AuthenticationException: peer's proof of the "
                                + "cluster secret is wrong"),
                e.getMessage());
        relay.done.get(10, TimeUnit.SECONDS);
        assertThrows(TransportTimeoutException.class, () -> server.accept(Duration.ofMillis(50)));
    }

    @Test
    void shouldHaveAPlaintextServerRefuseAHelloBoundToATlsChannel() throws Exception {
        SocketListener server = listen(config(TlsMode.AUTO), true);
        Relay relay = closing(new Relay(socketAddress(server.address()), Rewrite.NONE, false));
        AuthenticationException e = assertThrows(
                AuthenticationException.class, () -> clientThrough(relay, endpoint(server), config(TlsMode.ON)));
        assertTrue(
                e.getMessage()
                        .startsWith("peer refused this side: AuthenticationException: the peer's hello is "
                                + "bound to a TLS channel, but this connection is plaintext"),
                e.getMessage());
        relay.done.get(10, TimeUnit.SECONDS);
        assertThrows(TransportTimeoutException.class, () -> server.accept(Duration.ofMillis(50)));
    }

    @Test
    void shouldRefuseAKeyStoreWhoseKeyCannotBeReadAtTheListenersStart() throws Exception {
        KeyPair pair = SelfSignedCertificate.keyPair();
        java.security.KeyStore store = java.security.KeyStore.getInstance("PKCS12");
        store.load(null, null);
        java.security.cert.Certificate[] chain = {SelfSignedCertificate.certificate(pair, Instant.now())};
        store.setKeyEntry("mine", pair.getPrivate(), "right".toCharArray(), chain);
        TransportConfig wrong = TransportConfig.builder()
                .secret(TestMessages.SECRET)
                .receiveInto(DeviceMap.of(host, device))
                .tls(TlsMode.ON)
                .tlsKeyStore(store, "wrong".toCharArray())
                .build();
        TransportException e = assertThrows(TransportException.class, () -> listen(wrong, true));
        assertTrue(e.getMessage().startsWith("cannot set up TLS for a listener: "), e.getMessage());
        TransportConfig right =
                wrong.toBuilder().tlsKeyStore(store, "right".toCharArray()).build();
        SocketListener listener = listen(right, true);
        try (Connection c = TcpTransport.INSTANCE.connect(listener.address(), right);
                Connection s = listener.accept(Duration.ofSeconds(10))) {
            assertTrue(c.isOpen() && s.isOpen());
        }
    }
}
