package io.cuwire.transport;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyDirection;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.MemoryKind;
import io.cuwire.memory.TransferScope;
import io.cuwire.test.TestRandom;
import io.cuwire.transport.internal.ipc.IpcTransport;
import io.cuwire.transport.internal.ipc.MappingCache;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.Timeout;

/**
 * The conformance suite over CUDA IPC with the peer in a second JVM: on the emulated device here (both processes map
 * the same shared-memory files), on CUDA on a GPU host. Plus what is IPC's own: each of the peer's allocations is
 * opened once while cached, device frames never cross the host, and the mappings are all closed with the
 * connection.
 */
class IpcTransportTest extends TransportConformanceSuite {
    @Override
    protected Transport transport() {
        return Transports.ipc();
    }

    @Override
    protected String listenAddress() {
        return "ipc://127.0.0.1:0";
    }

    @Override
    protected boolean peerInOwnProcess() {
        return true;
    }

    @Override
    protected boolean stagesDeviceFrames() {
        return false;
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
        return start(peerJvm(ConformancePeer.class).jvmOptions(peerJvmOptions).args(args));
    }

    /** What {@link #startPeer} gives the peer's JVM besides the usual options. */
    private List<String> peerJvmOptions = List.of();

    /**
     * With both sides spinning (as on a machine of 8 or more cores) a receiver's consumed record rides along with its
     * reply, or, when it sends nothing, goes on its own after a grace: every send completes either way, and every
     * frame arrives whole, pulled or pushed.
     */
    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void shouldCompleteEverySendWhenConsumedRecordsRideWithRepliesOrGoAloneWhileBothSidesSpin(TestInfo info)
            throws Exception {
        peerJvmOptions = List.of("-D" + IdleStrategy.SPIN_PROPERTY + "=200");
        SplittableRandom random = TestRandom.create(info);
        Listener listener =
                listen(config().idle(IdleStrategy.spinFor(Duration.ofMillis(1))).build());
        Peer echo = peer("echo", listener);
        Connection c = accept(listener);
        try (DeviceBuffer d = device.allocate(1024)) {
            for (int i = 0; i < 300; i++) {
                byte[] data = TestRandom.bytes(random, 1024);
                TestMessages.fill(d, data);
                CompletableFuture<MessageMetrics> sent = c.send(TestMessages.message("r" + i, List.of(d)));
                try (ReceivedMessage back = c.receive(Duration.ofSeconds(10))) {
                    assertEquals("r" + i, back.value().root());
                    assertArrayEquals(
                            data,
                            TestMessages.contents(back.value().frames().get(0).buffer()),
                            "round " + i);
                }
                sent.get(10, TimeUnit.SECONDS); // completed by the peer's consumed record, carried by its reply
            }
        }
        c.close();
        assertExit(echo, 0);

        Listener second =
                listen(config().idle(IdleStrategy.spinFor(Duration.ofMillis(1))).build());
        Peer sink = peer("sink", second, "0");
        Connection s = accept(second);
        try (DeviceBuffer d = device.allocate(1024)) {
            for (int i = 0; i < 50; i++) {
                // the peer never replies: its consumed record goes on its own after the grace
                s.send(TestMessages.message("m" + i, List.of(d))).get(10, TimeUnit.SECONDS);
            }
        }
        s.close();
        assertExit(sink, 0);
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void shouldCarryALongArrayOfMoreThan2GiBToAnotherJvmAndBack(TestInfo info) throws Exception {
        roundTripALongArrayOfMoreThan2GiB(info);
    }

    @Test
    void shouldOpenEachOfThePeersAllocationsOnceWhileCachedAndCopyDeviceToDevice() throws Exception {
        int bytes = 3 << 20;
        int times = 12;
        Listener listener = listen(config().build());
        Peer p = peer("resend", listener, Integer.toString(bytes), Integer.toString(times));
        Connection c = accept(listener);
        try (TransferScope scope = CopyEngine.openScope("ipc test")) {
            for (int i = 0; i < times; i++) {
                try (ReceivedMessage m = c.receive()) {
                    assertEquals("r" + i, m.value().root());
                    assertEquals(
                            MemoryKind.DEVICE, m.value().frames().getFirst().kind());
                    assertEquals(0, m.metrics().hostToDeviceBytes(), m.metrics().toString());
                    assertEquals(i == 0 ? 1 : 0, m.metrics().mappingsOpened(), "message " + i + ": " + m.metrics());
                    assertArrayEquals(
                            TestMessages.pattern(bytes, i),
                            TestMessages.contents(m.value().frames().getFirst().buffer()));
                }
            }
            assertEquals(
                    (long) bytes * times,
                    scope.bytes(CopyDirection.PEER) + scope.bytes(CopyDirection.D2D),
                    "every frame was copied device to device");
            assertEquals(0, scope.bytes(CopyDirection.H2D), "nothing was staged through the host");
            assertEquals((long) bytes * times, scope.bytes(CopyDirection.D2H), "only the test's own checks");
        }
        MappingCache.Stats stats = IpcTransport.mappingStats(c);
        assertEquals(1, stats.opens(), stats.toString());
        assertEquals(times - 1, stats.hits(), stats.toString());
        assertEquals(1, stats.mapped());
        c.close();
        MappingCache.Stats after = IpcTransport.mappingStats(c);
        assertEquals(0, after.mapped(), after.toString());
        assertEquals(after.opens(), after.closes(), after.toString());
        assertEquals(0, p.await(java.time.Duration.ofSeconds(30)), p::output);
    }

    /**
     * A message referencing more of the sender's allocations than the receiver's mapping cache keeps: the receiver
     * copies what it mapped so far and gives those mappings back before it maps more, instead of holding one mapping
     * per allocation until the message ends (65,536 of them can pass {@code vm.max_map_count}).
     */
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void shouldHoldNoMoreMappingsThanTheCacheKeepsWhileAMessageReferencesMoreAllocations() throws Exception {
        int frames = 7;
        int bytes = 2 << 20;
        try (Listener listener = new IpcTransport(2, 1L << 40).listen(listenAddress(), config().build())) {
            MappingCache.Stats stats = receiveFramesFromPeer(listener, frames, bytes);
            assertEquals(frames, stats.opens(), stats.toString());
            assertTrue(stats.peakMapped() <= 2, "at most the cache's 2 mappings at once: " + stats);
        }
    }

    /**
     * Has a peer send one message of {@code frames} device frames of {@code bytes} each to {@code listener},
     * receives it, checks every frame's bytes, closes the connection once the peer is done; returns the connection's
     * mapping cache counters as they were after the message.
     */
    private MappingCache.Stats receiveFramesFromPeer(Listener listener, int frames, int bytes) throws Exception {
        Peer p = peer("send-frames", listener, Integer.toString(frames), Integer.toString(bytes));
        Connection c = accept(listener);
        try (ReceivedMessage m = c.receive()) {
            assertEquals(frames, m.value().frames().size());
            for (int i = 0; i < frames; i++) {
                assertArrayEquals(
                        TestMessages.pattern(bytes, i),
                        TestMessages.contents(m.value().frames().get(i).buffer()),
                        "frame " + i);
            }
        }
        MappingCache.Stats stats = IpcTransport.mappingStats(c);
        c.close();
        assertEquals(0, p.await(java.time.Duration.ofSeconds(30)), p::output);
        return stats;
    }

    /**
     * A message of 3,000 small device frames: their references cross as reference runs of at most 1,024 frames, so
     * the receiver looks up each of the sender's allocations once per run (the peer's frames share one or two slabs),
     * not once per frame: 10,000 frames must not mean 10,000 mapping lookups.
     */
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void shouldLeaseEachAllocationOncePerReferenceRunNotOncePerFrame() throws Exception {
        MappingCache.Stats stats = receiveFramesFromPeer(listen(config().build()), 3000, 1024);
        long leases = stats.opens() + stats.hits();
        assertTrue(leases <= 3 * 2, "3 runs of frames in at most 2 allocations each: " + stats);
    }

    /**
     * Small device frames between two processes: once the accepting side (this test) pulled one, it offers a push
     * arena; the dialling peer (echoing) then copies the frames it sends into it, and this side receives them as loans
     * of the arena: nothing allocated from its frame allocator, the bytes right. While the arena is full, frames are
     * pulled as before; loans given back make room again; a loan outlives its connection.
     */
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void shouldReceiveSmallDeviceFramesPushedIntoItsArenaAndPullThemWhileTheArenaIsFull() throws Exception {
        int bytes = 16 << 10;
        Listener listener = listen(config().ipcPushArenaBytes(4L * bytes).build());
        Peer p = peer("echo", listener);
        Connection c = accept(listener);
        try (BufferAllocator<DeviceBuffer> sending = Devices.get(0).newAllocator("sent", BufferAllocator.UNLIMITED);
                DeviceBuffer frame = sending.allocate(bytes)) {
            int[] round = {0};
            // the first echo is pulled; the arena's offer follows it to the peer
            boolean pushed = false;
            while (round[0] < 200 && !pushed) {
                ReceivedMessage m = echo(c, frame, bytes, round);
                pushed = device.allocatedBytes() == 0;
                m.close();
            }
            assertTrue(
                    pushed,
                    () -> "within 200 round trips an echo came back pushed into the arena; peer:\n" + p.output());
            List<ReceivedMessage> held = new ArrayList<>();
            try {
                for (int i = 0; i < 6; i++) {
                    held.add(echo(c, frame, bytes, round));
                    // four loans fill the arena of four frames: the fifth and sixth echo are pulled
                    assertEquals(i < 4 ? 0 : (long) (i - 3) * bytes, device.allocatedBytes(), "echo " + i + " held");
                }
            } finally {
                held.forEach(ReceivedMessage::close);
                held.clear(); // closed: the loop below must not close them again
            }
            assertEquals(0, device.allocatedBytes());
            for (int i = 0; i < 4; i++) {
                held.add(echo(c, frame, bytes, round));
                assertEquals(0, device.allocatedBytes(), "the loans came back: echo " + i + " pushed again");
                // code that takes more memory where a received array's came from (an estimator's fit) finds it
                assertSame(
                        device,
                        held.getLast().value().frames().getFirst().buffer().allocator());
            }
            ReceivedMessage last = held.getLast();
            held.subList(0, held.size() - 1).forEach(ReceivedMessage::close);
            c.close();
            assertArrayEquals(
                    TestMessages.pattern(bytes, round[0] - 1),
                    TestMessages.contents(last.value().frames().getFirst().buffer()),
                    "a loan outlives its connection");
            last.close();
        }
        assertEquals(0, p.await(java.time.Duration.ofSeconds(30)), p::output);
    }

    /** Sends {@code frame} with the next round's pattern, receives its echo, checks the bytes; the caller closes it. */
    private static ReceivedMessage echo(Connection c, DeviceBuffer frame, int bytes, int[] round) {
        int r = round[0]++;
        TestMessages.fill(frame, TestMessages.pattern(bytes, r));
        c.send(TestMessages.message("m" + r, List.of(frame))).join();
        ReceivedMessage m = c.receive();
        assertEquals("m" + r, m.value().root());
        assertEquals(MemoryKind.DEVICE, m.value().frames().getFirst().kind());
        assertArrayEquals(
                TestMessages.pattern(bytes, r),
                TestMessages.contents(m.value().frames().getFirst().buffer()),
                "echo " + r);
        return m;
    }

    @Test
    void shouldListenAndConnectAtIpcAddresses() {
        Listener listener = listen(config().build());
        assertTrue(listener.address().startsWith("ipc://127.0.0.1:"), listener.address());
        assertEquals(Transports.ipc(), Transports.forAddress(listener.address()));
        assertTrue(Capabilities.local(List.of()).transports().contains(Transports.IPC));
    }
}
