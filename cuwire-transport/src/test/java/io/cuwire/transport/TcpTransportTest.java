package io.cuwire.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.cuwire.serialize.LimitExceededException;
import io.cuwire.serialize.MalformedHeaderException;
import io.cuwire.serialize.Serialized;
import io.cuwire.serialize.msgpack.MsgpackWriter;
import io.cuwire.transport.internal.Handshake;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.Timeout;

/**
 * The conformance suite over TCP with the peer in a second JVM, plus bytes no well-behaved peer sends: garbage
 * before and after the handshake, a declared header beyond the limits, array frame descriptors that cannot hold
 * their frame or that the heap cannot, a peer that stalls mid-message.
 */
class TcpTransportTest extends TransportConformanceSuite {
    @Override
    protected Transport transport() {
        return Transports.tcp();
    }

    @Override
    protected String listenAddress() {
        return "tcp://127.0.0.1:0";
    }

    @Override
    protected boolean peerInOwnProcess() {
        return true;
    }

    @Override
    protected boolean stagesDeviceFrames() {
        return true;
    }

    @Override
    protected boolean receivesSmallDeviceFramesInBlocks() {
        return true;
    }

    @Override
    protected boolean receivesArrayFrames() {
        return true;
    }

    @Override
    protected boolean stagesHeapFrames() {
        return true;
    }

    @Override
    protected Peer startPeer(String... args) throws IOException {
        return start(peerJvm(ConformancePeer.class).args(args));
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void shouldCarryALongArrayOfMoreThan2GiBToAnotherJvmAndBack(TestInfo info) throws Exception {
        roundTripALongArrayOfMoreThan2GiB(info);
    }

    /** A raw socket that speaks exactly what a test tells it to. */
    private static final class RawPeer implements AutoCloseable {
        final Socket socket;
        final DataOutputStream out;
        final DataInputStream in;

        RawPeer(Listener listener) throws IOException {
            String a = listener.address().substring("tcp://".length());
            int colon = a.lastIndexOf(':');
            socket = new Socket();
            socket.connect(new InetSocketAddress(a.substring(0, colon), Integer.parseInt(a.substring(colon + 1))));
            out = new DataOutputStream(socket.getOutputStream());
            in = new DataInputStream(socket.getInputStream());
        }

        /** Runs a correct client handshake with the test secret. */
        void handshake(TransportConfig config) {
            Handshake.client(socket, config, Capabilities.local(config.families()));
        }

        void send(byte[] bytes) throws IOException {
            out.write(bytes);
            out.flush();
        }

        @Override
        public void close() throws IOException {
            socket.close();
        }
    }

    /** Whether {@code in} is at its end, or was reset (closed with the rest of what this side sent unread). */
    private static boolean ended(java.io.InputStream in) {
        try {
            return in.read() < 0;
        } catch (IOException e) {
            return true;
        }
    }

    /** Accepts on another thread while the raw peer talks. */
    private Connection acceptWhile(Listener listener, RawPeer peer) throws Exception {
        var accepted = java.util.concurrent.CompletableFuture.supplyAsync(() -> accept(listener));
        peer.handshake(config().build());
        return accepted.get(10, TimeUnit.SECONDS);
    }

    @Test
    void shouldRefuseGarbageInsteadOfAHandshakeTellingThePeerAndLoggingWhy() throws Exception {
        Listener listener = listen(config().build());
        try (Refusals refusals = new Refusals();
                RawPeer raw = new RawPeer(listener)) {
            raw.send("GET / HTTP/1.1\r\nHost: cuwire\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
            refusals.await(
                    Duration.ofSeconds(10),
                    listener.address() + " refused ",
                    "ProtocolViolationException",
                    "sent a handshake record of 1195725856 bytes (expected: 0..1024)");
            byte[] refusal = new byte[raw.in.readInt()];
            raw.in.readFully(refusal);
            assertTrue(new String(refusal, StandardCharsets.UTF_8).contains("not a cuwire transport"));
            assertTrue(ended(raw.in), "the listener closed the connection after its refusal");
            assertThrows(TransportTimeoutException.class, () -> listener.accept(Duration.ofMillis(100)));
        }
        assertEquals(0, host.peakBytes() + device.peakBytes());
    }

    @Test
    void shouldRefuseGarbageAfterTheHandshake() throws Exception {
        Listener listener = listen(config().build());
        try (RawPeer raw = new RawPeer(listener)) {
            Connection c = acceptWhile(listener, raw);
            raw.send(TestMessages.pattern(4096, 3));
            assertThrows(ProtocolViolationException.class, c::receive);
            assertTrue(!c.isOpen());
        }
        assertEquals(0, host.peakBytes() + device.peakBytes());
    }

    @Test
    void shouldRefuseADeclaredHeaderBeyondTheLimitBeforeAllocatingIt() throws Exception {
        Listener listener = listen(config().build());
        try (RawPeer raw = new RawPeer(listener)) {
            Connection c = acceptWhile(listener, raw);
            raw.send(new byte[] {1, 0x7f, (byte) 0xff, (byte) 0xff, (byte) 0xff});
            ProtocolViolationException e = assertThrows(ProtocolViolationException.class, c::receive);
            assertInstanceOf(LimitExceededException.class, e.getCause());
        }
        assertEquals(0, host.peakBytes() + device.peakBytes());
    }

    /**
     * Over TCP receiving is the caller's own: a sender that never receives learns why the peer refused its message
     * from a send, once the peer's end is gone (it waits a while for this side to read its refusal first).
     */
    @Test
    void shouldTellASenderThatDoesNotReceiveWhyItsMessageWasRefused() throws Exception {
        Listener listener = listen(config().build());
        Peer p = peer("refuse", listener, "1024");
        Connection c = accept(listener);
        c.send(TestMessages.message("h".repeat(4096), List.of())).get(10, TimeUnit.SECONDS); // written, then refused
        MessageRefusedException refused = null;
        long end = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (refused == null && System.nanoTime() < end) {
            try {
                c.send(TestMessages.message("more", List.of())).get(10, TimeUnit.SECONDS);
                Thread.sleep(20);
            } catch (ExecutionException e) {
                refused = assertInstanceOf(MessageRefusedException.class, e.getCause());
            } catch (MessageRefusedException e) {
                refused = e;
            }
        }
        assertNotNull(refused, "a send learned of the refusal");
        assertTrue(refused.reason().startsWith("LimitExceededException: header of "), refused.reason());
        assertTrue(refused.reason().endsWith(" exceeds the limit of 1024"), refused.reason());
        assertThrows(MessageRefusedException.class, () -> c.send(TestMessages.message("after", List.of())));
        assertThrows(MessageRefusedException.class, c::receive);
        assertEquals(0, p.await(Duration.ofSeconds(30)), p::output);
        assertTrue(p.output().contains("refused " + ProtocolViolationException.class.getName()), p.output());
    }

    /** A version-2 header over raw nodes and raw frame descriptors, sealed as a sender would seal it. */
    private static byte[] rawHeader(Object root, List<Object> descriptors) {
        Map<String, Object> top = new LinkedHashMap<>();
        top.put("fam", List.of());
        top.put("root", root);
        top.put("frames", descriptors);
        byte[] bytes = new MsgpackWriter().raw(new byte[6]).value(top).toByteArray();
        CRC32C crc = new CRC32C();
        crc.update(bytes, 6, bytes.length - 6);
        bytes[0] = (byte) 0xC1;
        bytes[1] = (byte) Serialized.FORMAT_VERSION;
        ByteBuffer.wrap(bytes, 2, 4).putInt((int) crc.getValue());
        return bytes;
    }

    /** {@code [1][header length][header]}: a message record's start. */
    private static byte[] recordStart(byte[] header) {
        return ByteBuffer.allocate(5 + header.length)
                .put((byte) 1)
                .putInt(header.length)
                .put(header)
                .array();
    }

    @Test
    void shouldRefuseAnArrayFrameDescriptorOfTheWrongLengthKindOrTypeBeforeAllocatingAnything() throws Exception {
        Map<List<Object>, String> refused = new LinkedHashMap<>();
        refused.put(List.of(0L, -1L, 12L, "f64[]"), "a f64[] frame of 12 bytes, not a whole number of 8-byte elements");
        refused.put(List.of(2L, 0L, 16L, "f32[]"), "a f32[] frame of DEVICE memory on device 0");
        refused.put(List.of(0L, -1L, 16L, "bool[]"), "names array type 'bool[]'");
        // More elements than a Java array holds: refused by count, never attempted.
        refused.put(List.of(0L, -1L, (long) Integer.MAX_VALUE, "i8[]"), "more than an array holds");
        Listener listener = listen(config().build());
        for (Map.Entry<List<Object>, String> bad : refused.entrySet()) {
            try (RawPeer raw = new RawPeer(listener)) {
                Connection c = acceptWhile(listener, raw);
                raw.send(recordStart(rawHeader("bad", List.of(bad.getKey()))));
                raw.send(new byte[16]);
                ProtocolViolationException e = assertThrows(ProtocolViolationException.class, c::receive);
                assertInstanceOf(MalformedHeaderException.class, e.getCause(), e.toString());
                assertTrue(e.getMessage().contains(bad.getValue()), e.getMessage());
                assertFalse(c.isOpen());
            }
        }
        assertEquals(0, host.peakBytes() + device.peakBytes() + pinned.peakBytes(), "nothing was allocated");
    }

    /**
     * A peer may declare an array frame within the limits that the heap cannot hold: its allocation fails the
     * receive (and the connection) with the frame named, and nothing is left allocated.
     */
    @Test
    void shouldFailAReceiveWhoseArrayFrameTheHeapCannotHoldAndNameTheFrame() throws Exception {
        long elements = Integer.MAX_VALUE - 8;
        assumeTrue(Runtime.getRuntime().maxMemory() < elements * Long.BYTES, "the heap holds a 16 GiB long[]");
        Listener listener = listen(config().build());
        try (RawPeer raw = new RawPeer(listener)) {
            Connection c = acceptWhile(listener, raw);
            Map<String, Object> node = new LinkedHashMap<>();
            node.put("t", "i64[]");
            node.put("n", elements);
            node.put("fr", 0L);
            raw.send(recordStart(rawHeader(node, List.of(List.of(0L, -1L, elements * Long.BYTES, "i64[]")))));
            TransportException e = assertThrows(TransportException.class, c::receive);
            assertTrue(
                    e.getMessage()
                            .startsWith(
                                    "cannot allocate frame 0 (FrameDescriptor[kind=HOST, " + "deviceOrdinal=-1, length="
                                            + elements * Long.BYTES + ", arrayType=I64]) of a message from "),
                    e.getMessage());
            assertTrue(e.getMessage().contains(" as a long[] of " + elements + " elements: "), e.getMessage());
            assertInstanceOf(OutOfMemoryError.class, e.getCause());
            assertFalse(c.isOpen());
        }
        assertEquals(0, host.peakBytes() + device.peakBytes() + pinned.peakBytes(), "nothing else was allocated");
    }

    /** An array frame is allocated when its bytes begin: after every frame before it has arrived whole. */
    @Test
    void shouldAllocateEachFrameOnlyOnceTheFramesBeforeItHaveArrived() throws Exception {
        Listener listener = listen(config().ioTimeout(Duration.ofMillis(500)).build());
        try (RawPeer raw = new RawPeer(listener)) {
            Connection c = acceptWhile(listener, raw);
            List<Object> descriptors = List.of(List.of(0L, -1L, 1L << 20), List.of(0L, -1L, 4L << 20));
            raw.send(recordStart(rawHeader("two", descriptors)));
            raw.send(new byte[1000]); // part of the first frame, then nothing
            assertThrows(TransportTimeoutException.class, c::receive);
            assertEquals(1 << 20, host.peakBytes(), "only the first frame was allocated");
            assertEquals(0, host.allocatedBytes(), "and freed");
        }
    }

    @Test
    void shouldFailWithinTheIoTimeoutWhenAPeerStallsMidMessageAndFreeTheFrames() throws Exception {
        Listener listener = listen(config().ioTimeout(Duration.ofMillis(500)).build());
        try (RawPeer raw = new RawPeer(listener);
                io.cuwire.memory.HostBuffer frame = host.allocate(1 << 20)) {
            Connection c = acceptWhile(listener, raw);
            byte[] header = TestMessages.message("stalls", List.of(frame)).header();
            java.io.ByteArrayOutputStream record = new java.io.ByteArrayOutputStream();
            DataOutputStream d = new DataOutputStream(record);
            d.writeByte(1);
            d.writeInt(header.length);
            d.write(header);
            d.write(new byte[1000]);
            raw.send(record.toByteArray());
            long start = System.nanoTime();
            assertThrows(TransportTimeoutException.class, c::receive);
            long took = System.nanoTime() - start;
            assertTrue(took < Duration.ofSeconds(5).toNanos(), "took " + took / 1_000_000 + " ms");
            assertEquals(2L << 20, host.peakBytes(), "the frame was allocated, then freed");
            assertEquals(1 << 20, host.allocatedBytes(), "only the test's own frame is left");
        }
    }

    /**
     * A peer that drips a message's bytes, one every 100 ms, never stalls long enough for the I/O timeout, which
     * restarts on every byte: the message's deadline (the I/O timeout plus its declared bytes at the minimum rate,
     * counted from its first byte) ends it all the same, and its frame is freed. Before, the receive (and its
     * frame) was held for as long as the drip went on.
     */
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void shouldFailAMessageWhoseBytesDripSlowerThanTheMinimumRateByItsDeadline() throws Exception {
        Listener listener = listen(config().ioTimeout(Duration.ofMillis(1000))
                .minReceiveRate(1 << 20)
                .build());
        try (RawPeer raw = new RawPeer(listener);
                io.cuwire.memory.HostBuffer frame = host.allocate(1 << 20)) {
            Connection c = acceptWhile(listener, raw);
            byte[] header = TestMessages.message("drips", List.of(frame)).header();
            java.io.ByteArrayOutputStream record = new java.io.ByteArrayOutputStream();
            DataOutputStream d = new DataOutputStream(record);
            d.writeByte(1);
            d.writeInt(header.length);
            d.write(header);
            raw.send(record.toByteArray());
            Thread drip = Thread.ofPlatform().daemon().start(() -> {
                try {
                    for (int i = 0; i < 300 && !Thread.currentThread().isInterrupted(); i++) { // 30 s at most
                        raw.send(new byte[1]);
                        Thread.sleep(100);
                    }
                    raw.socket.close();
                } catch (IOException | InterruptedException e) {
                    // the receiver closed, or the test ended
                }
            });
            try {
                TransportTimeoutException e = assertThrows(TransportTimeoutException.class, c::receive);
                String declared = (5L + header.length + (1 << 20)) + " bytes";
                assertTrue(
                        e.getMessage().contains("a message declaring " + declared + " must arrive within "),
                        e.getMessage());
                assertTrue(
                        e.getMessage().contains("(ioTimeout, and its bytes at minReceiveRate 1048576 bytes/s)"),
                        e.getMessage());
                assertTrue(!c.isOpen());
                assertEquals(1 << 20, host.allocatedBytes(), "only the test's own frame is left");
            } finally {
                drip.interrupt();
            }
        }
    }
}
