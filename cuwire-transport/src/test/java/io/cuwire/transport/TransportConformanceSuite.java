package io.cuwire.transport;

import static io.cuwire.transport.TestMessages.contents;
import static io.cuwire.transport.TestMessages.fill;
import static io.cuwire.transport.TestMessages.message;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.cuwire.memory.Buffer;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyDirection;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.MemoryKind;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.TransferScope;
import io.cuwire.serialize.DecodeTarget;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.Frame;
import io.cuwire.serialize.LimitExceededException;
import io.cuwire.serialize.Limits;
import io.cuwire.serialize.PrimitiveArrayType;
import io.cuwire.serialize.Serialized;
import io.cuwire.serialize.TypeRegistry;
import io.cuwire.test.ChildJvm;
import io.cuwire.test.TestRandom;
import io.cuwire.transport.internal.HeapStaging;
import io.cuwire.transport.internal.socket.SocketIo;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.Timeout;

/**
 * The one suite every transport passes. The test's side listens; the other side is a {@link ConformancePeer},
 * started by the subclass in another process (transports between processes) or on a thread (in-process). Every
 * test checks at the end that the test side's allocators are back to zero.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
public abstract class TransportConformanceSuite {
    /** A running peer. */
    protected interface Peer extends AutoCloseable {
        /** Waits for the peer to finish; its exit code. */
        int await(Duration timeout) throws Exception;

        /** What it printed. */
        String output();

        /** Stops it if still running. */
        @Override
        void close();
    }

    /**
     * A child JVM ({@link ChildJvm}) that runs {@code main} as a peer: C1 only and the serial GC, for a quick start;
     * options the caller adds come after these and win over them.
     */
    static ChildJvm.Builder peerJvm(Class<?> main) {
        return ChildJvm.builder(main).jvmOptions("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC");
    }

    /** Starts {@code jvm}, as a {@link Peer}. */
    static Peer start(ChildJvm.Builder jvm) throws IOException {
        ChildJvm child = jvm.start();
        return new Peer() {
            @Override
            public int await(Duration timeout) throws IOException, InterruptedException {
                return child.awaitExit(timeout);
            }

            @Override
            public String output() {
                return child.output();
            }

            @Override
            public void close() {
                child.close();
            }
        };
    }

    protected BufferAllocator<HostBuffer> host;
    protected BufferAllocator<HostBuffer> pinned;
    protected BufferAllocator<DeviceBuffer> device;
    private final List<AutoCloseable> toClose = new ArrayList<>();

    /** The transport under test. */
    protected abstract Transport transport();

    /** A fresh address to listen at. */
    protected abstract String listenAddress();

    /** Starts a {@link ConformancePeer} with {@code args}. */
    protected abstract Peer startPeer(String... args) throws Exception;

    /** Whether the peer runs in a process of its own (and so can die in the middle of a message). */
    protected abstract boolean peerInOwnProcess();

    /** Whether device frames cross as bytes, staged through host memory (else they are handed over). */
    protected abstract boolean stagesDeviceFrames();

    /**
     * Whether host frames of heap memory cross as bytes, staged chunk by chunk through native memory (else they are
     * handed over).
     */
    protected abstract boolean stagesHeapFrames();

    /**
     * Whether a frame whose descriptor names a primitive array type is received into a fresh array of that type
     * (filled chunk by chunk through native memory), which the decoder returns without a copy; else it is received
     * as any frame and the decoder copies it.
     */
    protected abstract boolean receivesArrayFrames();

    @BeforeEach
    void openAllocators() {
        host = BufferAllocator.host("test-host", BufferAllocator.UNLIMITED);
        pinned = Devices.get(0).newPinnedAllocator("test-pinned", BufferAllocator.UNLIMITED);
        device = Devices.get(Devices.all().size() - 1).newAllocator("test-device", BufferAllocator.UNLIMITED);
    }

    @AfterEach
    void closeEverything() throws Exception {
        for (int i = toClose.size() - 1; i >= 0; i--) {
            toClose.get(i).close();
        }
        host.close();
        pinned.close();
        device.close();
    }

    protected TransportConfig.Builder config() {
        return TransportConfig.builder()
                .secret(TestMessages.SECRET)
                .ioTimeout(Duration.ofSeconds(10))
                .receiveInto(DeviceMap.of(host, device).withPinned(pinned));
    }

    protected Listener listen(TransportConfig config) {
        Listener l = transport().listen(listenAddress(), config);
        toClose.add(l);
        return l;
    }

    protected Peer peer(String mode, Listener listener, String... extra) throws Exception {
        return peerWithSecret(mode, listener, HexFormat.of().formatHex(TestMessages.SECRET), extra);
    }

    protected Peer peerWithSecret(String mode, Listener listener, String secretHex, String... extra) throws Exception {
        List<String> args = new ArrayList<>(List.of(mode, listener.address(), secretHex));
        args.addAll(List.of(extra));
        Peer p = startPeer(args.toArray(String[]::new));
        toClose.add(p);
        return p;
    }

    protected Connection accept(Listener listener) {
        Connection c = listener.accept(Duration.ofSeconds(30));
        toClose.add(c);
        return c;
    }

    protected static void assertExit(Peer p, int expected) throws Exception {
        assertEquals(expected, p.await(Duration.ofSeconds(30)), () -> "peer output:\n" + p.output());
    }

    private static <T extends Throwable> T cause(Class<T> type, Throwable t) {
        Throwable c = t instanceof CompletionException && t.getCause() != null ? t.getCause() : t;
        return assertInstanceOf(type, c, () -> "expected " + type.getSimpleName() + ", got " + t);
    }

    /**
     * Whether the receiver takes a run of small device frames into one block of its device memory, each frame a loan
     * of it ({@link io.cuwire.transport.internal.Frames#allocateRun}): one allocation per
     * {@link io.cuwire.transport.internal.Frames#RUN_BYTES} bytes instead of one per frame.
     */
    protected boolean receivesSmallDeviceFramesInBlocks() {
        return false;
    }

    /**
     * Whether the peer's capabilities say its UCX carries CUDA memory: only UCX connections tell it, and over a
     * CUDA-aware UCX (the bundle's on a GPU host) it is true.
     */
    protected boolean peerUcxCarriesCuda() {
        return false;
    }

    @Test
    void shouldEchoSmallHostFramesAndReportMetricsAndCapabilities(TestInfo info) throws Exception {
        SplittableRandom random = TestRandom.create(info);
        Listener listener = listen(config().build());
        Peer p = peer("echo", listener);
        Connection c = accept(listener);
        assertEquals(List.of(Family.CUDA, Family.HOST), c.families());
        assertTrue(
                c.peer().sameHost(Capabilities.local(List.of(Family.HOST))),
                c.peer().hostId());
        assertEquals(Devices.all().size(), c.peer().devices().size());
        assertEquals(peerUcxCarriesCuda(), c.peer().ucxCarriesCuda());
        try (HostBuffer a = host.allocate(100);
                HostBuffer b = host.allocate(3000);
                HostBuffer empty = host.allocate(0)) {
            byte[] da = TestRandom.bytes(random, 100);
            byte[] db = TestRandom.bytes(random, 3000);
            fill(a, da);
            fill(b, db);
            CompletableFuture<MessageMetrics> sent = c.send(message("small", List.of(a, b, empty)));
            try (ReceivedMessage echo = c.receive()) {
                assertEquals("small", echo.value().root());
                assertEquals(3, echo.value().frames().size());
                assertArrayEquals(da, contents(echo.value().frames().get(0).buffer()));
                assertArrayEquals(db, contents(echo.value().frames().get(1).buffer()));
                assertEquals(0, echo.value().frames().get(2).length());
                MessageMetrics r = echo.metrics();
                assertEquals(MessageMetrics.Direction.RECEIVED, r.direction());
                assertEquals(3100, r.frameBytes(MemoryKind.HOST));
                assertEquals(3, r.frames());
                assertTrue(r.headerBytes() > 0);
            }
            MessageMetrics s = sent.get(30, TimeUnit.SECONDS);
            assertEquals(MessageMetrics.Direction.SENT, s.direction());
            assertEquals(transport().name(), s.transport());
            assertEquals(3100, s.hostFrameBytes());
            assertEquals(0, s.deviceToHostBytes());
            assertTrue(s.nanos() > 0);
        }
        c.close();
        assertExit(p, 0);
    }

    /**
     * A message of many small device frames (a model held as many arrays): each arrives whole, as a device frame;
     * where the receiver takes them in blocks ({@link #receivesSmallDeviceFramesInBlocks}), 600 frames of 40,000
     * bytes (24 MB) are two allocations of its device memory, not 600, and the blocks go back when the frames do.
     * (Device frames the transport hands over, or pushes into an arena of its own, are none of its allocations.)
     */
    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void shouldReceiveManySmallDeviceFramesWholeAndInBlocksNotOneAllocationEach() throws Exception {
        int frames = 600;
        int bytes = 40_000;
        Listener listener = listen(config().build());
        Peer p = peer("send-frames", listener, Integer.toString(frames), Integer.toString(bytes));
        Connection c = accept(listener);
        try (ReceivedMessage m = c.receive()) {
            assertEquals(frames, m.value().frames().size());
            for (int i = 0; i < frames; i++) {
                Buffer b = m.value().frames().get(i).buffer();
                assertEquals(MemoryKind.DEVICE, b.kind(), "frame " + i);
                assertArrayEquals(TestMessages.pattern(bytes, i), contents(b), "frame " + i);
            }
            if (receivesSmallDeviceFramesInBlocks()) {
                // every frame is held: each allocation made for them is still open (loans of a block are not)
                assertEquals(2, device.openBuffers(), "one allocation per block of 16 MiB");
                assertEquals((long) frames * bytes, device.allocatedBytes());
            }
        }
        assertEquals(0, device.allocatedBytes(), "every block went back with its frames");
        c.close();
        assertExit(p, 0);
    }

    @Test
    void shouldEchoLargeDeviceAndHostFramesIntoTheReceiversOwnMemory(TestInfo info) throws Exception {
        SplittableRandom random = TestRandom.create(info);
        Listener listener = listen(config().build());
        Peer p = peer("echo", listener);
        Connection c = accept(listener);
        int deviceBytes = 20 << 20;
        int hostBytes = 6 << 20;
        try (BufferAllocator<DeviceBuffer> sender = Devices.get(0).newAllocator("sender", BufferAllocator.UNLIMITED);
                DeviceBuffer d = sender.allocate(deviceBytes + 123);
                HostBuffer h = host.allocate(hostBytes);
                HostBuffer pin = pinned.allocate(100_000)) {
            byte[] dd = TestRandom.bytes(random, deviceBytes + 123);
            byte[] dh = TestRandom.bytes(random, hostBytes);
            byte[] dp = TestRandom.bytes(random, 100_000);
            fill(d, dd);
            fill(h, dh);
            fill(pin, dp);
            CompletableFuture<MessageMetrics> sent = c.send(message("large", List.of(d, h, pin)));
            try (ReceivedMessage echo = c.receive()) {
                Buffer rd = echo.value().frames().get(0).buffer();
                assertEquals(MemoryKind.DEVICE, rd.kind());
                if (stagesDeviceFrames()) {
                    assertEquals(
                            device.resource().deviceOrdinal(),
                            rd.deviceOrdinal(),
                            "device frames land on the receiver's mapped device");
                    assertEquals(device, rd.allocator());
                }
                assertArrayEquals(dd, contents(rd));
                assertEquals(MemoryKind.HOST, echo.value().frames().get(1).kind());
                assertArrayEquals(dh, contents(echo.value().frames().get(1).buffer()));
                assertEquals(MemoryKind.PINNED, echo.value().frames().get(2).kind());
                assertArrayEquals(dp, contents(echo.value().frames().get(2).buffer()));
                MessageMetrics r = echo.metrics();
                assertEquals(deviceBytes + 123, r.deviceFrameBytes());
                assertEquals(100_000, r.pinnedFrameBytes());
                if (stagesDeviceFrames()) {
                    assertTrue(r.hostToDeviceBytes() >= deviceBytes + 123, r.toString());
                }
            }
            MessageMetrics s = sent.get(30, TimeUnit.SECONDS);
            assertEquals(deviceBytes + 123, s.deviceFrameBytes());
            assertEquals(hostBytes, s.hostFrameBytes());
            if (stagesDeviceFrames()) {
                assertTrue(s.deviceToHostBytes() >= deviceBytes + 123, s.toString());
            } else {
                assertEquals(0, s.deviceToHostBytes() + s.hostToDeviceBytes(), s.toString());
            }
        }
        c.close();
        assertExit(p, 0);
    }

    @Test
    void shouldCarryHeapArraysOfEveryPrimitiveTypeAroundTheFrameThresholdAndDecodeThemBack(TestInfo info)
            throws Exception {
        SplittableRandom random = TestRandom.create(info);
        TypeRegistry registry = new TypeRegistry()
                .registerGeneric(PrimitiveArraysModel.class, Family.CUDA, Family.HOST)
                .register(PrimitiveArraysModel.class);
        int threshold = 64 << 10;
        Listener listener = listen(config().build());
        Peer p = peer("echo", listener);
        Connection c = accept(listener);
        List<PrimitiveArraysModel> models = new ArrayList<>();
        List<Serialized> values = new ArrayList<>();
        long frameBytes = 0;
        long chunks = 0;
        long arrayBytes = 0;
        long arrayChunks = 0;
        for (Family[] chain : List.of(c.families().toArray(Family[]::new), new Family[] {Family.HOST})) {
            for (PrimitiveArraysModel m : List.of(
                    PrimitiveArraysModel.random("below " + List.of(chain), threshold, -1, random),
                    PrimitiveArraysModel.random("at " + List.of(chain), threshold, 0, random),
                    PrimitiveArraysModel.random("above " + List.of(chain), threshold, 1, random),
                    PrimitiveArraysModel.random("large " + List.of(chain), 3 << 20, 1, random))) {
                models.add(m);
                values.add(registry.serialize(m, chain));
                frameBytes += m.frameBytes(threshold);
                chunks += m.frameChunks(threshold, HeapStaging.CHUNK_BYTES);
            }
        }
        DecodeTarget target = new DecodeTarget(device, host, Limits.DEFAULT);
        long staged = 0;
        long stagingCopies = 0;
        for (int i = 0; i < models.size(); i++) {
            CompletableFuture<MessageMetrics> sent;
            ReceivedMessage echo;
            // An echo arrives only once the peer has the whole message: the sender's staging is done by then.
            try (TransferScope scope = CopyEngine.openScope("heap frames")) {
                sent = c.send(Message.of(values.get(i)));
                echo = c.receive();
                staged += scope.bytes(CopyDirection.H2H);
                stagingCopies += scope.copies(CopyDirection.H2H);
                assertEquals(0, scope.stats().totalBytes() - scope.bytes(CopyDirection.H2H), scope.toString());
            }
            IdentityHashMap<Object, Boolean> received = new IdentityHashMap<>();
            for (Frame f : echo.value().frames()) {
                if (f.arrayType() != null) {
                    received.put(((HostBuffer) f.buffer()).segment().heapBase().orElseThrow(), true);
                }
            }
            PrimitiveArraysModel back;
            try (echo;
                    TransferScope decode = CopyEngine.openScope("decode")) {
                back = registry.deserialize(echo.value(), PrimitiveArraysModel.class, target);
                long copied = decode.bytes(CopyDirection.H2H);
                if (receivesArrayFrames()) {
                    assertEquals(
                            models.get(i).frameBytes(threshold)
                                    - bytesOf(models.get(i).arrayFrames(threshold)),
                            copied,
                            "only the packed boolean[] frame is copied by the decoder");
                } else {
                    assertEquals(models.get(i).frameBytes(threshold), copied, "the decoder copies every frame");
                }
            }
            models.get(i).assertEqualTo(back);
            List<Object> framed = back.arrayFrames(threshold);
            if (receivesArrayFrames()) {
                assertEquals(framed.size(), received.size(), "every framed array arrived as a fresh array");
                for (Object a : framed) {
                    assertTrue(
                            received.containsKey(a),
                            a.getClass().getTypeName() + " of " + models.get(i).label
                                    + " is the array the frame was received into");
                }
            } else {
                assertEquals(0, received.size(), "no frame arrived as an array of its own");
            }
            assertEquals(
                    values.get(i).frames().size(),
                    sent.get(30, TimeUnit.SECONDS).frames());
            values.get(i).close();
            arrayBytes += bytesOf(framed);
            arrayChunks += chunksOf(framed, SocketIo.READ_BUFFER_BYTES);
        }
        if (stagesHeapFrames() && receivesArrayFrames()) {
            // The receiver copies each read's bytes out of its read buffer: at least one copy per buffer's worth.
            assertEquals(frameBytes + arrayBytes, staged, "each byte of the heap frames is staged once a side");
            assertTrue(
                    stagingCopies >= chunks + arrayChunks,
                    stagingCopies + " copies: in chunks of " + HeapStaging.CHUNK_BYTES
                            + " bytes at most sending, a read buffer's worth receiving");
        } else if (stagesHeapFrames()) {
            assertEquals(frameBytes, staged, "each byte of the heap frames is staged once");
            assertEquals(
                    chunks,
                    stagingCopies,
                    "in chunks of " + HeapStaging.CHUNK_BYTES + " bytes at most: no copy of a whole array");
        } else {
            assertEquals(0, staged, "heap frames are handed over");
        }
        c.close();
        assertExit(p, 0);
    }

    private static long bytesOf(List<Object> arrays) {
        long total = 0;
        for (Object a : arrays) {
            total += (long) java.lang.reflect.Array.getLength(a)
                    * PrimitiveArrayType.of(a.getClass()).elementSize();
        }
        return total;
    }

    /** Pieces of {@code piece} bytes the arrays make, array by array. */
    private static long chunksOf(List<Object> arrays, long piece) {
        long total = 0;
        for (Object a : arrays) {
            long n = (long) java.lang.reflect.Array.getLength(a)
                    * PrimitiveArrayType.of(a.getClass()).elementSize();
            total += (n + piece - 1) / piece;
        }
        return total;
    }

    /**
     * Sends a {@code long[]} of 2.5 GiB, serialized by the generic serializer, to the echo peer and back: past every
     * {@code int} on the way (a gigabyte per NIO call, 2 GiB per {@code ByteBuffer}, element counts), staged on the
     * sender chunk by chunk and never copied whole. Checked by sampling (ends, gigabyte and 2 GiB boundaries, random
     * elements) and a checksum of every element. For subclasses whose peer runs in a JVM of its own; needs about
     * 5 GiB of heap here (the array, and the one decoded while the first may not be collected yet) and 2.5 GiB of
     * native memory on each side. Took 35 to 45 s on the 2-core VM while other builds ran: faulting in the fresh
     * memory on both sides (four times 2.5 GiB) costs more than moving the bytes.
     */
    protected void roundTripALongArrayOfMoreThan2GiB(TestInfo info) throws Exception {
        SplittableRandom random = TestRandom.create(info);
        long bytes = 5L << 29;
        int n = Math.toIntExact(bytes / Long.BYTES);
        TypeRegistry registry = new TypeRegistry()
                .registerGeneric(PrimitiveArraysModel.class, Family.HOST)
                .register(PrimitiveArraysModel.class);
        PrimitiveArraysModel model = new PrimitiveArraysModel();
        model.label = "2.5 GiB";
        model.i64 = new long[n];
        long checksum = 0;
        for (int i = 0; i < n; i++) {
            model.i64[i] = longPattern(i);
            checksum += model.i64[i] * (2L * i + 1);
        }
        // Each side allocates the frame before reading it, faulting in 2.5 GiB of fresh memory: 4 to 20 s on the 2-core
        // VMs, a stall for the other side's writes.
        Listener listener = listen(config().ioTimeout(Duration.ofSeconds(60)).build());
        Peer p = peer("echo", listener, "60");
        Connection c = accept(listener);
        long t0 = System.nanoTime();
        Serialized value = registry.serialize(model, Family.HOST);
        assertEquals(
                List.of(bytes), value.frames().stream().map(f -> f.length()).toList());
        ReceivedMessage echo;
        try (TransferScope scope = CopyEngine.openScope("2.5 GiB")) {
            CompletableFuture<MessageMetrics> sent = c.send(Message.of(value));
            echo = c.receive();
            assertEquals(bytes, sent.get(30, TimeUnit.SECONDS).hostFrameBytes());
            if (receivesArrayFrames()) {
                long pieces = (bytes + SocketIo.READ_BUFFER_BYTES - 1) / SocketIo.READ_BUFFER_BYTES;
                assertEquals(2 * bytes, scope.bytes(CopyDirection.H2H), "each byte is staged once a side");
                assertTrue(
                        scope.copies(CopyDirection.H2H) >= HeapStaging.chunks(bytes) + pieces,
                        "no copy of the whole array: " + scope.copies(CopyDirection.H2H) + " copies");
            } else {
                assertEquals(bytes, scope.bytes(CopyDirection.H2H), "each byte is staged once");
                assertEquals(HeapStaging.chunks(bytes), scope.copies(CopyDirection.H2H), "no copy of the whole array");
            }
        }
        value.close();
        value = null;
        model = null;
        long t1 = System.nanoTime();
        PrimitiveArraysModel back;
        try (echo) {
            Frame frame = echo.value().frames().getFirst();
            assertEquals(MemoryKind.HOST, frame.kind());
            Object array = receivesArrayFrames()
                    ? ((HostBuffer) frame.buffer()).segment().heapBase().orElseThrow()
                    : null;
            back = registry.deserialize(
                    echo.value(), PrimitiveArraysModel.class, new DecodeTarget(device, host, Limits.DEFAULT));
            if (receivesArrayFrames()) {
                assertSame(array, back.i64, "the decoded array is the one the frame was received into");
            }
        }
        assertEquals("2.5 GiB", back.label);
        assertEquals(n, back.i64.length);
        List<Integer> samples = new ArrayList<>(List.of(
                0,
                1,
                n - 1,
                (1 << 27) - 1,
                1 << 27,
                (1 << 28) - 1,
                1 << 28,
                (1 << 28) + 1,
                HeapStaging.CHUNK_BYTES / Long.BYTES,
                HeapStaging.CHUNK_BYTES / Long.BYTES - 1));
        for (int i = 0; i < 1000; i++) {
            samples.add(random.nextInt(n));
        }
        for (int i : samples) {
            assertEquals(longPattern(i), back.i64[i], "element " + i);
        }
        long got = 0;
        for (int i = 0; i < n; i++) {
            got += back.i64[i] * (2L * i + 1);
        }
        assertEquals(checksum, got, "checksum of all " + n + " elements");
        System.out.printf(
                "2.5 GiB: round trip %.1f s, decode and check %.1f s%n",
                (t1 - t0) / 1e9, (System.nanoTime() - t1) / 1e9);
        c.close();
        assertExit(p, 0);
    }

    private static long longPattern(long i) {
        return i * 0x9E3779B97F4A7C15L ^ i >>> 17;
    }

    /**
     * Both sides send several messages before either receives (more bytes than the socket buffers between them hold,
     * each message small enough to be written on its caller's thread): a send must not wait for the peer to read,
     * or the two would wait for each other until the I/O timeout broke the connection.
     */
    @Test
    void shouldLetBothSidesSendBeforeEitherReceives() throws Exception {
        int count = 16;
        int bytes = 3 << 20;
        Listener listener = listen(config().build());
        Peer p = peer("exchange", listener, Integer.toString(count), Integer.toString(bytes));
        Connection c = accept(listener);
        assertEquals(0, ConformancePeer.exchange(c, host, count, bytes, System.out), "this side's exchange");
        c.close();
        assertExit(p, 0);
        assertTrue(p.output().contains("exchanged " + count), p.output());
    }

    @Test
    void shouldDeliverManyMessagesWholeAndInOrder(TestInfo info) throws Exception {
        SplittableRandom random = TestRandom.create(info);
        Listener listener = listen(config().build());
        Peer p = peer("echo", listener);
        Connection c = accept(listener);
        int n = 300;
        List<byte[]> payloads = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            payloads.add(TestRandom.bytes(random, random.nextInt(4096)));
        }
        CompletableFuture<Void> receiver = CompletableFuture.runAsync(() -> {
            for (int i = 0; i < n; i++) {
                try (ReceivedMessage m = c.receive()) {
                    assertEquals("m" + i, m.value().root());
                    assertArrayEquals(
                            payloads.get(i), contents(m.value().frames().get(0).buffer()));
                }
            }
        });
        List<CompletableFuture<MessageMetrics>> sends = new ArrayList<>();
        List<HostBuffer> frames = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            HostBuffer b = host.allocate(payloads.get(i).length);
            fill(b, payloads.get(i));
            frames.add(b);
            sends.add(c.send(message("m" + i, List.of(b))));
        }
        receiver.get(30, TimeUnit.SECONDS);
        CompletableFuture.allOf(sends.toArray(CompletableFuture[]::new)).get(30, TimeUnit.SECONDS);
        frames.forEach(Buffer::close);
        c.close();
        assertExit(p, 0);
    }

    @Test
    void shouldHoldTheSenderToBoundedBytesInFlightWhenTheReceiverIsSlow() throws Exception {
        long max = 2 << 20;
        Listener listener = listen(config().maxBytesInFlight(max).build());
        Peer p = peer("sink", listener, "15");
        Connection c = accept(listener);
        int n = 24;
        long peak = 0;
        List<CompletableFuture<MessageMetrics>> sends = new ArrayList<>();
        try (HostBuffer frame = host.allocate(512 << 10)) {
            for (int i = 0; i < n; i++) {
                sends.add(c.send(message("m" + i, List.of(frame))));
                peak = Math.max(peak, c.bytesInFlight());
                assertTrue(c.bytesInFlight() <= max, "bytes in flight " + c.bytesInFlight() + " > " + max);
            }
            CompletableFuture.allOf(sends.toArray(CompletableFuture[]::new)).get(30, TimeUnit.SECONDS);
        }
        assertTrue(peak > 0, "some messages were in flight");
        assertEquals(0, c.bytesInFlight());
        c.close();
        assertExit(p, 0);
        assertTrue(p.output().contains("received " + n), p.output());
    }

    /** Accepts on another thread (the in-process transport runs the server's handshake in accept). */
    private static CompletableFuture<Connection> acceptInBackground(Listener listener) {
        return CompletableFuture.supplyAsync(
                () -> listener.accept(Duration.ofSeconds(30)),
                task -> Thread.ofVirtual().start(task));
    }

    /** Closes {@code listener}, then checks that {@code accepted} got no connection from it. */
    private static void assertNothingAccepted(Listener listener, CompletableFuture<Connection> accepted) {
        listener.close();
        ExecutionException e = assertThrows(ExecutionException.class, () -> accepted.get(10, TimeUnit.SECONDS));
        assertInstanceOf(ConnectionClosedException.class, e.getCause());
    }

    @Test
    void shouldRefuseAPeerWithTheWrongSecretTellingItAndLoggingWhy() throws Exception {
        try (Refusals refusals = new Refusals()) {
            Listener listener = listen(config().build());
            CompletableFuture<Connection> accepted = acceptInBackground(listener);
            Peer p = peerWithSecret(
                    "connect", listener, HexFormat.of().formatHex("not-the-cluster-secret!!".getBytes()));
            assertExit(p, 0);
            assertTrue(
                    p.output()
                            .contains("refused AuthenticationException: peer refused this side: "
                                    + "AuthenticationException: peer's proof of the cluster secret is wrong"),
                    p.output());
            refusals.await(
                    Duration.ofSeconds(10),
                    listener.address() + " refused ",
                    "AuthenticationException: peer's proof of the cluster secret is wrong");
            assertNothingAccepted(listener, accepted);
        }
        assertEquals(0, host.peakBytes() + device.peakBytes(), "nothing was allocated for the refused peer");
    }

    @Test
    void shouldRefuseAPeerWithoutSecretUnlessExplicitlyAllowed() throws Exception {
        try (Refusals refusals = new Refusals()) {
            Listener strict = listen(config().build());
            CompletableFuture<Connection> accepted = acceptInBackground(strict);
            Peer p = peerWithSecret("connect", strict, "-");
            assertExit(p, 0);
            assertTrue(p.output().contains("refused AuthenticationException"), p.output());
            refusals.await(
                    Duration.ofSeconds(10),
                    strict.address() + " refused ",
                    "peer proved no cluster secret, and this side requires one");
            assertNothingAccepted(strict, accepted);
        }

        Listener open = listen(config().secret(null)
                .allowUnauthenticated(true)
                .families(Family.HOST)
                .build());
        Peer q = peerWithSecret("connect", open, "-");
        Connection c = accept(open);
        assertEquals(List.of(Family.HOST), c.families(), "the client's chain less what the server offers");
        assertExit(q, 0);
        assertTrue(q.output().contains("connected, families [HOST]"), q.output());
    }

    @Test
    void shouldRefuseAFamilyTheConnectionDidNotAgreeAtTheSenderAndBeforeAllocatingAtTheReceiver() throws Exception {
        Listener listener = listen(config().families(Family.HOST).build());
        Peer p = peer("send-unagreed-family", listener);
        Connection c = accept(listener);
        assertEquals(List.of(Family.HOST), c.families());
        try (BufferAllocator<DeviceBuffer> sender = Devices.get(0).newAllocator("sender", BufferAllocator.UNLIMITED);
                NdArray array = NdArray.fromArray(sender, new float[16], 16);
                Serialized value = new TypeRegistry().serialize(array, Family.CUDA)) {
            FamilyRefusedException out = assertThrows(FamilyRefusedException.class, () -> c.send(Message.of(value)));
            assertEquals(List.of(Family.CUDA), out.refused());
            assertTrue(
                    out.getMessage().contains("message uses family [cuda], this connection accepts [host]"),
                    out.getMessage());
        }
        FamilyRefusedException in =
                assertThrows(FamilyRefusedException.class, c::receive, "the peer's message, sent below its own check");
        assertEquals(List.of(Family.CUDA), in.refused());
        assertEquals(List.of(Family.HOST), in.accepted());
        assertTrue(
                in.getMessage().contains("message uses family [cuda], this connection accepts [host]"),
                in.getMessage());
        assertEquals(0, host.peakBytes() + device.peakBytes() + pinned.peakBytes(), "no frame was allocated");
        assertFalse(c.isOpen(), "a peer that sent an unagreed family is disconnected");
        assertExit(p, 0);
        assertTrue(p.output().contains("sender refused FamilyRefusedException"), p.output());
    }

    @Test
    void shouldRefuseAnOversizedFrameBeforeAllocatingAnything() throws Exception {
        Limits small = new Limits(1 << 20, 16, 16, 1 << 20, 1 << 20, 1024);
        Listener listener = listen(config().limits(small).build());
        Peer p = peer("send", listener, Long.toString(4 << 20));
        Connection c = accept(listener);
        ProtocolViolationException e = assertThrows(ProtocolViolationException.class, c::receive);
        assertInstanceOf(LimitExceededException.class, e.getCause(), e.toString());
        assertEquals(0, host.peakBytes() + device.peakBytes() + pinned.peakBytes(), "nothing was allocated");
        assertFalse(c.isOpen(), "a peer that broke the limits is disconnected");
        assertExit(p, 0);
    }

    /**
     * A refused message breaks the connection, but the sender learns why: its receive, its later send and (unless it
     * completed first) the refused send fail with {@link MessageRefusedException} and the receiver's reason, not a
     * bare {@link PeerClosedException}. The peer checks its side and its allocators; this side refuses before
     * allocating anything.
     */
    @Test
    void shouldTellTheSenderWhyItsMessageWasRefused() throws Exception {
        int maxHeader = 64 << 10;
        Listener listener = listen(config().limits(new Limits(maxHeader, 16, 16, 16 << 20, 16 << 20, 1024))
                .build());
        Peer p = peer("send-refused", listener, Integer.toString(100_000));
        Connection c = accept(listener);
        ProtocolViolationException e = assertThrows(ProtocolViolationException.class, c::receive);
        assertInstanceOf(LimitExceededException.class, e.getCause(), e.toString());
        assertFalse(c.isOpen());
        assertEquals(0, host.peakBytes() + device.peakBytes() + pinned.peakBytes(), "nothing was allocated");
        assertExit(p, 0);
        assertTrue(p.output().contains("receive: " + MessageRefusedException.class.getName()), p.output());
        assertTrue(p.output().contains("reason LimitExceededException: header of "), p.output());
        assertTrue(p.output().contains(" bytes exceeds the limit of " + maxHeader + "\n"), p.output());
    }

    @Test
    void shouldRefuseAFrameAllocatorThatReturnsHeapMemoryForAHostFrame() throws Exception {
        assumeTrue(stagesHeapFrames(), "frames are handed over: the receiver allocates none");
        FrameAllocator heap = d -> HostBuffer.wrap(MemorySegment.ofArray(new long[Math.toIntExact(d.length() / 8)]));
        Listener listener = listen(config().receiveInto(heap).build());
        Peer p = peer("send", listener, Long.toString(1 << 20));
        Connection c = accept(listener);
        TransportException e = assertThrows(TransportException.class, c::receive);
        assertTrue(e.getMessage().contains("returned HOST[1048576 bytes] of heap memory for"), e.getMessage());
        assertFalse(c.isOpen(), "the message could not be received: the connection is broken");
        c.close();
        assertExit(p, 0);
    }

    @Test
    void shouldFailTheReceiveWithinTheTimeoutWhenThePeerDiesMidMessage() throws Exception {
        assumeTrue(peerInOwnProcess(), "a peer on a thread of this JVM cannot die in the middle of a hand-over");
        Listener listener = listen(config().build());
        // 256 MiB: wide enough that the peer's watcher thread sees the half-way mark even on a loaded machine
        Peer p = peer("send-and-die", listener, Long.toString(256L << 20));
        Connection c = accept(listener);
        // PeerClosedException, not TransportTimeoutException: the receive learnt of the peer's death, it did not wait
        // out the I/O timeout (no clock is read: a loaded machine must not fail this)
        assertThrows(PeerClosedException.class, c::receive);
        assertEquals(77, p.await(Duration.ofSeconds(30)), p::output);
        assertTrue(device.peakBytes() >= 256L << 20, "the frame had been allocated: the peer died mid-message");
        assertEquals(0, device.allocatedBytes() + host.allocatedBytes(), "the broken message's frames are freed");
    }

    @Test
    void shouldFailTheSendWhenThePeerDiesWhileReceiving() throws Exception {
        Listener listener = listen(config().build());
        Peer p = peer("receive-and-die", listener, Long.toString(16 << 20));
        Connection c = accept(listener);
        try (BufferAllocator<DeviceBuffer> sender = Devices.get(0).newAllocator("sender", BufferAllocator.UNLIMITED);
                DeviceBuffer d = sender.allocate(64 << 20)) {
            try {
                // PeerClosedException, not a timeout: the send learnt of the peer's death
                CompletableFuture<MessageMetrics> f = c.send(message("doomed", List.of(d)));
                ExecutionFailure.of(f, Duration.ofSeconds(20), PeerClosedException.class);
            } catch (PeerClosedException expected) {
                // the peer was gone before the send began
            }
        }
        assertEquals(peerInOwnProcess() ? 77 : 0, p.await(Duration.ofSeconds(30)), p::output);
        assertThrows(TransportException.class, () -> c.send(message("after", List.of())));
    }

    @Test
    void shouldFailSendsInFlightPromptlyWhenClosed() throws Exception {
        Listener listener = listen(config().build());
        Peer p = peer("stall", listener);
        Connection c = accept(listener);
        List<CompletableFuture<MessageMetrics>> sends = new ArrayList<>();
        try (HostBuffer frame = host.allocate(8 << 20)) {
            for (int i = 0; i < 6; i++) {
                sends.add(c.send(message("m" + i, List.of(frame))));
            }
            long start = System.nanoTime();
            c.close();
            int failed = 0;
            for (CompletableFuture<MessageMetrics> f : sends) {
                try {
                    f.get(5, TimeUnit.SECONDS);
                } catch (java.util.concurrent.ExecutionException e) {
                    cause(ConnectionClosedException.class, e.getCause());
                    failed++;
                }
            }
            assertTrue(failed > 0, "messages still in flight fail");
            assertTrue(System.nanoTime() - start < Duration.ofSeconds(5).toNanos(), "close does not hang");
            assertThrows(ConnectionClosedException.class, () -> c.send(message("late", List.of())));
            assertThrows(ConnectionClosedException.class, c::receive);
        }
        p.close();
    }

    @Test
    void shouldTimeOutAReceiveBeforeAMessageBeginsAndStayUsable() throws Exception {
        Listener listener = listen(config().build());
        Peer p = peer("echo", listener);
        Connection c = accept(listener);
        assertThrows(TransportTimeoutException.class, () -> c.receive(Duration.ofMillis(100)));
        assertTrue(c.isOpen());
        try (HostBuffer b = host.allocate(10)) {
            CompletableFuture<MessageMetrics> f = c.send(message("after-timeout", List.of(b)));
            try (ReceivedMessage m = c.receive(Duration.ofSeconds(20))) {
                assertEquals("after-timeout", m.value().root());
            }
            f.get(10, TimeUnit.SECONDS);
        }
        c.close();
        assertExit(p, 0);
    }

    @Test
    void shouldWakeABlockedReceiveAndAcceptWhenClosed() throws Exception {
        Listener listener = listen(config().build());
        Peer p = peer("echo", listener);
        Connection c = accept(listener);
        CompletableFuture<ReceivedMessage> receiving = CompletableFuture.supplyAsync(c::receive);
        CompletableFuture<Connection> accepting = CompletableFuture.supplyAsync(listener::accept);
        Thread.sleep(100);
        long start = System.nanoTime();
        c.close();
        listener.close();
        ExecutionFailure.of(receiving, Duration.ofSeconds(5), ConnectionClosedException.class);
        ExecutionFailure.of(accepting, Duration.ofSeconds(5), ConnectionClosedException.class);
        assertTrue(System.nanoTime() - start < Duration.ofSeconds(5).toNanos(), "close does not hang");
        assertExit(p, 0);
    }

    /** Waits for a future that must fail with a given transport exception. */
    static final class ExecutionFailure {
        private ExecutionFailure() {}

        static <T extends Throwable> T of(CompletableFuture<?> f, Duration timeout, Class<T> type) throws Exception {
            try {
                f.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
            } catch (java.util.concurrent.ExecutionException e) {
                return cause(type, e.getCause());
            }
            return fail("expected the future to fail with " + type.getSimpleName());
        }
    }
}
