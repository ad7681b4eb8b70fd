package io.cuwire.transport;

import static io.cuwire.transport.TestMessages.contents;
import static io.cuwire.transport.TestMessages.fill;
import static io.cuwire.transport.TestMessages.message;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.Buffer;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyDirection;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.MemoryKind;
import io.cuwire.memory.TransferScope;
import io.cuwire.test.TestRandom;
import io.cuwire.transport.internal.tcp.TcpTransport;
import java.io.IOException;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * The conformance suite's tests that carry device frames, over TCP that stages every device frame through its
 * staging ring ({@link TcpTransport#STAGING_DEVICE_FRAMES}), as it does for a CUDA GPU's memory, although the emulated
 * device's memory could be read and written in place: CI runs on the emulated device, and this is where it sends and
 * receives device frames over TCP through the ring. The peer, in a child JVM, uses plain TCP (in place): the two
 * paths meet on the wire. The suite's other tests do not depend on how device frames cross; they run in
 * {@link TcpTransportTest} only, which keeps this class to a few seconds.
 */
@ExtendWith(TcpStagingRingTransportTest.DeviceFrameTestsOnly.class)
class TcpStagingRingTransportTest extends TransportConformanceSuite {
    /** The suite's tests that send or receive device frames. */
    static final Set<String> DEVICE_FRAME_TESTS = Set.of(
            "shouldEchoLargeDeviceAndHostFramesIntoTheReceiversOwnMemory",
            "shouldFailTheReceiveWithinTheTimeoutWhenThePeerDiesMidMessage",
            "shouldFailTheSendWhenThePeerDiesWhileReceiving",
            "shouldReceiveManySmallDeviceFramesWholeAndInBlocksNotOneAllocationEach");

    /** Runs this class's own tests and the suite's {@link #DEVICE_FRAME_TESTS}. */
    static final class DeviceFrameTestsOnly implements ExecutionCondition {
        @Override
        public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
            Method test = context.getTestMethod().orElse(null);
            if (test == null
                    || test.getDeclaringClass() != TransportConformanceSuite.class
                    || DEVICE_FRAME_TESTS.contains(test.getName())) {
                return ConditionEvaluationResult.enabled("carries device frames, or is this class's own");
            }
            return ConditionEvaluationResult.disabled("carries no device frame: TcpTransportTest runs it");
        }
    }

    @Override
    protected Transport transport() {
        return TcpTransport.STAGING_DEVICE_FRAMES;
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

    /** A renamed suite test would otherwise drop out of this class unnoticed. */
    @Test
    void shouldNameOnlyTestsTheSuiteHas() {
        for (String name : DEVICE_FRAME_TESTS) {
            Method found = null;
            for (Method m : TransportConformanceSuite.class.getDeclaredMethods()) {
                if (m.getName().equals(name) && m.isAnnotationPresent(Test.class)) {
                    found = m;
                }
            }
            assertNotNull(found, "TransportConformanceSuite has no test " + name);
        }
    }

    /**
     * The witness that the ring carries the frames: a device frame of 8 of the ring's chunks followed by 200 small
     * ones is copied a chunk (or a frame's piece of one) at a time, device to pinned host on the way out (at least
     * 8 + 200 copies, where in place it is one count per frame, 201) and back on the way in. The small frames cross as
     * one run of bytes sharing chunks and are received into one block, staged as one stream: a copy per chunk of the
     * block, not per frame (their 200 copies became 8 + a few); every frame arrives whole.
     */
    @Test
    void shouldStageDeviceFramesThroughTheRingChunkByChunkBothWays(TestInfo info) throws Exception {
        SplittableRandom random = TestRandom.create(info);
        int chunk = 1 << 20;
        Listener listener = listen(config().staging(chunk, 3).build());
        Peer p = peer("echo", listener);
        Connection c = accept(listener);
        int largeBytes = 7 * chunk + 123; // 8 chunks: around the 3 slots more than twice
        List<Integer> smallBytes = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
            smallBytes.add(1 + random.nextInt(20_000));
        }
        List<Buffer> frames = new ArrayList<>();
        List<byte[]> sent = new ArrayList<>();
        try (BufferAllocator<DeviceBuffer> sender = Devices.get(0).newAllocator("sender", BufferAllocator.UNLIMITED)) {
            for (int n : prepend(largeBytes, smallBytes)) {
                DeviceBuffer d = sender.allocate(n);
                byte[] bytes = TestRandom.bytes(random, n);
                fill(d, bytes);
                frames.add(d);
                sent.add(bytes);
            }
            long total = largeBytes
                    + smallBytes.stream().mapToLong(Integer::longValue).sum();
            TransferScope copies = CopyEngine.openScope("staged echo");
            CompletableFuture<MessageMetrics> sending = c.send(message("staged", frames));
            MessageMetrics s = sending.get(30, TimeUnit.SECONDS);
            long sentCopies = copies.copies(CopyDirection.D2H);
            try (ReceivedMessage echo = c.receive()) {
                copies.close();
                assertEquals(total, copies.bytes(CopyDirection.D2H), copies.toString());
                assertEquals(total, copies.bytes(CopyDirection.H2D), copies.toString());
                assertTrue(sentCopies >= 8 + smallBytes.size(), copies.toString());
                long smallTotal = total - largeBytes;
                long smallChunks = (smallTotal + chunk - 1) / chunk;
                assertTrue(copies.copies(CopyDirection.H2D) >= 8 + 1, copies.toString());
                assertTrue(
                        copies.copies(CopyDirection.H2D) <= 8 + smallChunks + 1,
                        "a copy per chunk of the small frames' block (" + smallChunks + "), not per frame: " + copies);
                assertEquals(total, s.deviceToHostBytes(), s.toString());
                assertEquals(
                        total,
                        echo.metrics().hostToDeviceBytes(),
                        echo.metrics().toString());
                assertEquals(frames.size(), echo.value().frames().size());
                for (int i = 0; i < frames.size(); i++) {
                    Buffer r = echo.value().frames().get(i).buffer();
                    assertEquals(MemoryKind.DEVICE, r.kind());
                    assertEquals(device.resource().deviceOrdinal(), r.deviceOrdinal());
                    assertArrayEquals(sent.get(i), contents(r), "frame " + i);
                }
            } finally {
                frames.forEach(Buffer::close);
            }
        }
        c.close();
        assertExit(p, 0);
    }

    /**
     * Small GPU messages are written on the caller's thread (their device frames staged whole into one slot of the
     * ring) and handed to the writer when the socket takes nothing: 64 messages of one 200 KiB device frame each are
     * sent before this side receives anything, while the peer echoes each one back (so it stops reading once this
     * side's receive buffer is full, and this side's sends stall). Every send must return, and every echo arrive whole,
     * one device-to-host copy per message.
     */
    @Test
    void shouldHandSmallDeviceMessagesToTheWriterWhenThePeerStopsReading(TestInfo info) throws Exception {
        SplittableRandom random = TestRandom.create(info);
        Listener listener = listen(config().build());
        Peer p = peer("echo", listener);
        Connection c = accept(listener);
        int n = 64;
        int bytes = 200 << 10;
        try (BufferAllocator<DeviceBuffer> sender = Devices.get(0).newAllocator("sender", BufferAllocator.UNLIMITED)) {
            try {
                sendAndCheckEchoes(c, sender, random, n, bytes);
            } finally {
                c.close();
            }
        }
        assertExit(p, 0);
    }

    private void sendAndCheckEchoes(
            Connection c, BufferAllocator<DeviceBuffer> sender, SplittableRandom random, int n, int bytes)
            throws Exception {
        List<byte[]> sent = new ArrayList<>();
        List<DeviceBuffer> frames = new ArrayList<>();
        List<CompletableFuture<MessageMetrics>> sends = new ArrayList<>();
        try {
            for (int i = 0; i < n; i++) {
                DeviceBuffer d = sender.allocate(bytes);
                byte[] b = TestRandom.bytes(random, bytes);
                fill(d, b);
                frames.add(d);
                sent.add(b);
            }
            TransferScope copies = CopyEngine.openScope("small device messages");
            for (int i = 0; i < n; i++) {
                sends.add(c.send(message("m" + i, List.of(frames.get(i)))));
            }
            for (int i = 0; i < n; i++) {
                try (ReceivedMessage echo = c.receive()) {
                    assertEquals("m" + i, echo.value().root());
                    assertArrayEquals(
                            sent.get(i), contents(echo.value().frames().get(0).buffer()), "message " + i);
                }
            }
            CompletableFuture.allOf(sends.toArray(CompletableFuture[]::new)).get(30, TimeUnit.SECONDS);
            copies.close();
            // one copy a message sent (its frame staged whole), one a message checked (contents reads it)
            assertEquals(2L * n * bytes, copies.bytes(CopyDirection.D2H), copies.toString());
            assertEquals(2L * n, copies.copies(CopyDirection.D2H), copies.toString());
        } finally {
            frames.forEach(Buffer::close);
        }
    }

    private static List<Integer> prepend(int first, List<Integer> rest) {
        List<Integer> all = new ArrayList<>(rest.size() + 1);
        all.add(first);
        all.addAll(rest);
        return all;
    }
}
