package io.cuwire.transport.internal.tcp;

import static io.cuwire.transport.TestMessages.contents;
import static io.cuwire.transport.TestMessages.fill;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyDirection;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.Device;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.TransferScope;
import io.cuwire.test.TestRandom;
import io.cuwire.transport.ConnectionClosedException;
import io.cuwire.transport.IdleStrategy;
import io.cuwire.transport.internal.socket.SocketIo;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.Timeout;

/**
 * The TCP staging ring on its own, between two ends of a loopback socket: the path of every device frame of a device
 * the host cannot address (a CUDA GPU), which TCP on the emulated device no longer takes (it reads and writes that
 * memory in place). Small slots, so that a few hundred KiB wrap around the ring many times; the emulated device's
 * streams run their copies on threads of their own, so a slot reused before its copy finished would show as wrong
 * bytes. Every test ends with the rings' pinned memory and the frames' device memory back to zero.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class StagingRingTest {
    private static final int CHUNK = 16 << 10;
    private static final int SLOTS = 3;
    private static final long STALL_NANOS = TimeUnit.SECONDS.toNanos(20);
    /** Asked of both sockets in the backpressure tests, so that they buffer little of a frame. */
    private static final int SOCKET_BUFFER_BYTES = 32 << 10;

    private final Device dev = Devices.get(0);
    private final List<AutoCloseable> toClose = new ArrayList<>();
    private final List<StagingRing> rings = new ArrayList<>();
    private BufferAllocator<DeviceBuffer> frames;
    private SocketChannel senderChannel;
    private SocketChannel receiverChannel;
    private SocketIo senderIo;
    private SocketIo receiverIo;

    @BeforeEach
    void openAllocator() {
        frames = dev.newAllocator("ring-test-frames", BufferAllocator.UNLIMITED);
    }

    @AfterEach
    void closeEverything() throws Exception {
        for (int i = toClose.size() - 1; i >= 0; i--) {
            toClose.get(i).close();
        }
        for (StagingRing ring : rings) {
            ring.close(); // throws MemoryLeakException if a slot's buffer were still open
            assertEquals(0, ring.pinnedBytes(), "the ring's pinned memory is freed");
        }
        assertEquals(0, frames.allocatedBytes(), "every frame was freed");
        frames.close();
    }

    /** A connected loopback pair, each side's buffers limited to {@code socketBuffer} bytes unless it is 0. */
    private void connect(int socketBuffer) throws IOException {
        SocketChannel[] pair = loopbackPair(socketBuffer);
        senderChannel = pair[0];
        receiverChannel = pair[1];
        senderIo = new SocketIo(senderChannel, "receiver", IdleStrategy.fromProperty());
        toClose.add(senderIo);
        receiverIo = new SocketIo(receiverChannel, "sender", IdleStrategy.fromProperty());
        toClose.add(receiverIo);
    }

    /** A connected loopback pair {@code [writer, reader]}, buffers as {@link #connect} says. */
    private static SocketChannel[] loopbackPair(int socketBuffer) throws IOException {
        try (ServerSocketChannel server = ServerSocketChannel.open()) {
            if (socketBuffer > 0) {
                server.setOption(StandardSocketOptions.SO_RCVBUF, socketBuffer); // the accepted socket's, from SYN
            }
            server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            SocketChannel writer = SocketChannel.open();
            if (socketBuffer > 0) {
                writer.setOption(StandardSocketOptions.SO_SNDBUF, socketBuffer);
            }
            writer.connect(server.getLocalAddress());
            return new SocketChannel[] {writer, server.accept()};
        }
    }

    /**
     * How many bytes a loopback pair made as {@link #connect}{@code (socketBuffer)} makes takes, written a chunk at a
     * time, while nothing reads it: until a write has taken nothing for 200 ms. The system's own accounting makes
     * this differ from the buffer sizes asked for (or reported).
     */
    private static long socketCapacity(int socketBuffer) throws IOException, InterruptedException {
        SocketChannel[] pair = loopbackPair(socketBuffer);
        try (SocketChannel writer = pair[0]) {
            writer.configureBlocking(false);
            ByteBuffer chunk = ByteBuffer.allocateDirect(CHUNK);
            long taken = 0;
            long since = System.nanoTime();
            while (System.nanoTime() - since < TimeUnit.MILLISECONDS.toNanos(200)) {
                int n = writer.write(chunk.clear());
                if (n > 0) {
                    taken += n;
                    since = System.nanoTime();
                } else {
                    Thread.sleep(5);
                }
            }
            return taken;
        } finally {
            pair[1].close();
        }
    }

    private StagingRing ring(String name) {
        StagingRing ring = new StagingRing(dev, CHUNK, SLOTS, name);
        rings.add(ring);
        assertEquals((long) CHUNK * SLOTS, ring.pinnedBytes());
        return ring;
    }

    /** A device frame of {@code n} random bytes, freed after the test; its bytes in {@code contents}. */
    private DeviceBuffer frame(SplittableRandom random, int n, List<byte[]> contents) {
        DeviceBuffer d = frames.allocate(n);
        toClose.add(d);
        byte[] bytes = TestRandom.bytes(random, n);
        fill(d, bytes);
        contents.add(bytes);
        return d;
    }

    /** Sends {@code run} on a thread of its own, counting the copies that thread enqueues in {@code scope}. */
    private CompletableFuture<Void> sendAsync(
            StagingRing ring, List<DeviceBuffer> run, AtomicReference<TransferScope> scope) {
        CompletableFuture<Void> sent = new CompletableFuture<>();
        Thread.ofPlatform().daemon().name("ring-sender").start(() -> {
            try (TransferScope s = CopyEngine.openThreadScope("ring sender")) {
                scope.set(s);
                ring.send(run, senderIo, STALL_NANOS);
                sent.complete(null);
            } catch (RuntimeException | Error e) {
                sent.completeExceptionally(e);
            }
        });
        return sent;
    }

    /** Receives one frame of each of {@code lengths}, in order, through {@code ring}; the caller frees them. */
    private List<DeviceBuffer> receive(StagingRing ring, List<Integer> lengths) {
        List<DeviceBuffer> received = new ArrayList<>();
        for (int n : lengths) {
            DeviceBuffer d = frames.allocate(n);
            toClose.add(d);
            received.add(d);
            ring.receive(receiverIo, d, STALL_NANOS);
        }
        ring.awaitCopies();
        return received;
    }

    /**
     * One run of frames smaller than a slot, of exactly a slot, larger than several slots and empty, so that chunks
     * hold the end of one frame and the starts of the next ones, and one frame spans chunks on every slot: each
     * frame arrives whole, in order, each byte staged once each way.
     */
    @Test
    void shouldCarryARunOfFramesSmallerAndLargerThanASlotInOrder(TestInfo info) throws Exception {
        SplittableRandom random = TestRandom.create(info);
        connect(0);
        StagingRing sender = ring("sender");
        StagingRing receiver = ring("receiver");
        List<Integer> lengths = List.of(100, CHUNK - 100 + 7, 0, 7 * CHUNK + 5, 1, CHUNK, 3);
        List<byte[]> sentBytes = new ArrayList<>();
        List<DeviceBuffer> run = new ArrayList<>();
        for (int n : lengths) {
            run.add(frame(random, n, sentBytes));
        }
        long total = lengths.stream().mapToLong(Integer::longValue).sum();
        AtomicReference<TransferScope> senderCopies = new AtomicReference<>();
        CompletableFuture<Void> sent = sendAsync(sender, run, senderCopies);
        List<DeviceBuffer> received;
        try (TransferScope receiverCopies = CopyEngine.openThreadScope("ring receiver")) {
            received = receive(receiver, lengths);
            assertEquals(total, receiverCopies.bytes(CopyDirection.H2D), "each byte copied to the device once");
            assertEquals(0, receiverCopies.bytes(CopyDirection.D2H));
        }
        sent.get(30, TimeUnit.SECONDS);
        assertEquals(total, senderCopies.get().bytes(CopyDirection.D2H), "each byte staged to the host once");
        assertEquals(0, senderCopies.get().bytes(CopyDirection.H2D));
        for (int i = 0; i < lengths.size(); i++) {
            assertArrayEquals(sentBytes.get(i), contents(received.get(i)), "frame " + i + " of " + lengths.get(i));
        }
    }

    /**
     * Messages of 1 to 7 chunks through the same two rings: each message starts on the slot after the last one's,
     * so the ring wraps around within messages and between them, and a slot is never refilled before the socket (or
     * the copy to the frame) is done with it.
     */
    @Test
    void shouldWrapAroundTheSlotsWithinAndAcrossMessages(TestInfo info) throws Exception {
        SplittableRandom random = TestRandom.create(info);
        connect(0);
        StagingRing sender = ring("sender");
        StagingRing receiver = ring("receiver");
        for (int chunks = 1; chunks <= 7; chunks++) {
            int n = chunks * CHUNK - random.nextInt(CHUNK); // the last chunk partly filled
            List<byte[]> sentBytes = new ArrayList<>();
            DeviceBuffer d = frame(random, n, sentBytes);
            AtomicReference<TransferScope> copies = new AtomicReference<>();
            CompletableFuture<Void> sent = sendAsync(sender, List.of(d), copies);
            DeviceBuffer r = receive(receiver, List.of(n)).get(0);
            sent.get(30, TimeUnit.SECONDS);
            assertEquals(chunks, copies.get().copies(CopyDirection.D2H), "one copy per chunk of " + n + " bytes");
            assertArrayEquals(sentBytes.get(0), contents(r), "message of " + chunks + " chunks");
        }
    }

    /**
     * A sender whose socket takes nothing more (the receiver reads nothing, both socket buffers small) stops
     * staging: it copies at most its slots' worth of bytes beyond what the sockets hold, not the frame. Once the
     * receiver reads, the frame arrives whole.
     */
    @Test
    void shouldStageNoMoreThanItsSlotsAheadOfASocketThatTakesNothing(TestInfo info) throws Exception {
        SplittableRandom random = TestRandom.create(info);
        long socketsHold = socketCapacity(SOCKET_BUFFER_BYTES);
        connect(SOCKET_BUFFER_BYTES);
        int n = 256 * CHUNK; // 4 MiB
        assertTrue(socketsHold + (long) SLOTS * CHUNK < n / 4, "the sockets hold " + socketsHold + " bytes");
        StagingRing sender = ring("sender");
        StagingRing receiver = ring("receiver");
        List<byte[]> sentBytes = new ArrayList<>();
        DeviceBuffer d = frame(random, n, sentBytes);
        AtomicReference<TransferScope> copies = new AtomicReference<>();
        CompletableFuture<Void> sent = sendAsync(sender, List.of(d), copies);
        long staged = awaitStalled(copies, sent);
        assertTrue(staged > 0, "the sender began");
        // a chunk of slack: the socket may take part of a chunk here and not there
        assertTrue(
                staged <= socketsHold + (long) (SLOTS + 1) * CHUNK,
                "staged " + staged + " bytes of " + n + " while the sockets hold " + socketsHold + " and the ring "
                        + SLOTS * CHUNK);
        System.out.println("staging ring stalled after " + staged + " bytes; the sockets hold " + socketsHold);
        DeviceBuffer r = receive(receiver, List.of(n)).get(0);
        sent.get(30, TimeUnit.SECONDS);
        assertEquals(n, copies.get().bytes(CopyDirection.D2H));
        assertArrayEquals(sentBytes.get(0), contents(r));
    }

    /**
     * A sender waiting for a socket that takes nothing fails with {@link ConnectionClosedException} when the
     * connection's socket is closed under it (as {@code TcpConnection.close()} does), and its ring can then be closed
     * with nothing of it left allocated.
     */
    @Test
    void shouldFailAWaitingSenderWithConnectionClosedWhenItsSocketCloses(TestInfo info) throws Exception {
        SplittableRandom random = TestRandom.create(info);
        connect(SOCKET_BUFFER_BYTES);
        StagingRing sender = ring("sender");
        DeviceBuffer d = frame(random, 256 * CHUNK, new ArrayList<>());
        AtomicReference<TransferScope> copies = new AtomicReference<>();
        CompletableFuture<Void> sent = sendAsync(sender, List.of(d), copies);
        awaitStalled(copies, sent);
        senderIo.close();
        ExecutionException e = assertThrows(ExecutionException.class, () -> sent.get(10, TimeUnit.SECONDS));
        ConnectionClosedException closed = assertInstanceOf(ConnectionClosedException.class, e.getCause());
        assertTrue(closed.getMessage().contains("is closed"), closed.getMessage());
        sender.close();
        rings.remove(sender);
        assertEquals(0, sender.pinnedBytes());
    }

    /**
     * A receiver waiting in the middle of a frame for bytes that do not come fails with
     * {@link ConnectionClosedException} when its socket is closed under it; the frame may then be freed (no copy into
     * it still runs) and the ring closed.
     */
    @Test
    void shouldFailAWaitingReceiverWithConnectionClosedWhenItsSocketCloses(TestInfo info) throws Exception {
        SplittableRandom random = TestRandom.create(info);
        connect(0);
        StagingRing sender = ring("sender");
        StagingRing receiver = ring("receiver");
        List<byte[]> sentBytes = new ArrayList<>();
        DeviceBuffer half = frame(random, 5 * CHUNK / 2, sentBytes);
        sendAsync(sender, List.of(half), new AtomicReference<>()).get(30, TimeUnit.SECONDS);
        DeviceBuffer whole = frames.allocate(5L * CHUNK); // twice what was sent
        toClose.add(whole);
        CompletableFuture<Void> receiving = CompletableFuture.runAsync(
                () -> receiver.receive(receiverIo, whole, STALL_NANOS),
                task -> Thread.ofPlatform().start(task));
        Thread.sleep(200);
        assertFalse(receiving.isDone(), "the receiver waits for the rest of the frame");
        receiverIo.close();
        ExecutionException e = assertThrows(ExecutionException.class, () -> receiving.get(10, TimeUnit.SECONDS));
        assertInstanceOf(ConnectionClosedException.class, e.getCause());
        receiver.quiesce();
        receiver.close();
        rings.remove(receiver);
        assertEquals(0, receiver.pinnedBytes());
    }

    /**
     * Waits until the sender's staged bytes stop growing for 300 ms (it waits for the socket); fails if the send
     * ended instead.
     *
     * @return the bytes staged device to host by then
     */
    private static long awaitStalled(AtomicReference<TransferScope> copies, CompletableFuture<Void> sent)
            throws InterruptedException {
        long last = -1;
        long since = System.nanoTime();
        while (System.nanoTime() - since < TimeUnit.MILLISECONDS.toNanos(300)) {
            assertFalse(sent.isDone(), "the send ended although nobody reads");
            TransferScope scope = copies.get();
            long now = scope == null ? -1 : scope.bytes(CopyDirection.D2H);
            if (now != last) {
                last = now;
                since = System.nanoTime();
            }
            Thread.sleep(10);
        }
        return last;
    }
}
