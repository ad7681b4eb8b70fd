package io.cuwire.transport;

import static io.cuwire.transport.TestMessages.contents;
import static io.cuwire.transport.TestMessages.fill;
import static io.cuwire.transport.TestMessages.message;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.TransferStats;
import io.cuwire.transport.internal.MessageEvent;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.Test;

/**
 * The conformance suite over the in-process transport; its peer runs on a thread (two processes make no sense for a
 * transport within one JVM). Plus what only this transport promises: no copy at all.
 */
class InProcessTransportTest extends TransportConformanceSuite {
    private static final AtomicInteger NAMES = new AtomicInteger();

    @Override
    protected Transport transport() {
        return Transports.inProcess();
    }

    @Override
    protected String listenAddress() {
        return "inproc://suite-" + NAMES.incrementAndGet();
    }

    @Override
    protected boolean peerInOwnProcess() {
        return false;
    }

    @Override
    protected boolean stagesDeviceFrames() {
        return false;
    }

    @Override
    protected boolean receivesArrayFrames() {
        return false;
    }

    @Override
    protected boolean stagesHeapFrames() {
        return false;
    }

    @Override
    protected Peer startPeer(String... args) {
        return ThreadPeer.start(args);
    }

    @Test
    void shouldHandDeviceFramesOverWithoutACopyAndCompleteTheSendWhenTheReceiverIsDone() throws Exception {
        Listener listener = listen(config().build());
        CompletableFuture<Connection> client =
                CompletableFuture.supplyAsync(() -> transport().connect(listener.address(), config().build()));
        Connection server = accept(listener);
        try (Connection c = client.get(10, TimeUnit.SECONDS);
                BufferAllocator<DeviceBuffer> sender =
                        Devices.get(0).newAllocator("sender", BufferAllocator.UNLIMITED);
                DeviceBuffer frame = sender.allocate(1 << 20)) {
            byte[] data = TestMessages.pattern(1 << 20, 5);
            fill(frame, data);
            TransferStats before = CopyEngine.totals();
            CompletableFuture<MessageMetrics> sent = c.send(message("model", List.of(frame)));
            ReceivedMessage m = server.receive();
            assertEquals(0, CopyEngine.totals().minus(before).totalBytes(), "nothing was copied");
            assertFalse(sent.isDone(), "the receiver still holds the frame");
            assertArrayEquals(data, contents(m.value().frames().get(0).buffer()));
            m.close();
            assertEquals(1 << 20, sent.get(1, TimeUnit.SECONDS).deviceFrameBytes());
            assertTrue(frame.isOpen(), "the sender still owns its frame");
        }
    }

    @Test
    void shouldRecordAJfrEventForEveryMessage() throws Exception {
        Path file = Files.createTempFile("cuwire-transport", ".jfr");
        try (Recording recording = new Recording()) {
            recording.enable(MessageEvent.NAME);
            recording.start();
            Listener listener = listen(config().build());
            CompletableFuture<Connection> client =
                    CompletableFuture.supplyAsync(() -> transport().connect(listener.address(), config().build()));
            Connection server = accept(listener);
            try (Connection c = client.get(10, TimeUnit.SECONDS)) {
                CompletableFuture<MessageMetrics> sent = c.send(message("event", List.of()));
                server.receive().close();
                sent.get(1, TimeUnit.SECONDS);
            }
            recording.stop();
            recording.dump(file);
            List<RecordedEvent> events = RecordingFile.readAllEvents(file).stream()
                    .filter(e -> e.getEventType().getName().equals(MessageEvent.NAME))
                    .toList();
            assertEquals(2, events.size(), events.toString());
            assertEquals(
                    List.of("RECEIVED", "SENT"),
                    events.stream().map(e -> e.getString("direction")).sorted().toList());
            assertEquals("inproc", events.get(0).getString("transport"));
        } finally {
            Files.deleteIfExists(file);
        }
    }
}
