package io.cuwire.transport;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import io.cuwire.test.ChildJvm;
import io.cuwire.transport.internal.RefusalLog;
import io.cuwire.transport.internal.ipc.IpcTransport;
import io.cuwire.transport.internal.ipc.MappingCache;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * With a secret on both sides, every IPC record after the handshake carries a tag of the connection's session keys:
 * a peer ({@link MacTamperPeer}, another JVM writing records by hand) whose header length, header or device-frame
 * reference changed by one bit after tagging, that replays a message, or that sends one tagged for another
 * connection is refused with a {@link MessageAuthenticationException} before the changed part is used (nothing
 * allocated for a changed prefix or header, nothing mapped for a changed reference, nothing delivered), is
 * told so in a refusal that carries its own tag, is logged once, and every allocator is back to zero.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class IpcMessageAuthenticationTest {
    private final List<AutoCloseable> toClose = new ArrayList<>();
    private final List<String> logged = new ArrayList<>();
    private final AtomicInteger allocations = new AtomicInteger();
    private final Handler handler = new Handler() {
        @Override
        public void publish(LogRecord record) {
            synchronized (logged) {
                logged.add(record.getMessage());
            }
        }

        @Override
        public void flush() {}

        @Override
        public void close() {}
    };
    private BufferAllocator<HostBuffer> host;
    private BufferAllocator<DeviceBuffer> device;
    private Listener listener;

    @BeforeEach
    void open() {
        Logger.getLogger(RefusalLog.LOGGER).addHandler(handler);
        host = BufferAllocator.host("mac-host", BufferAllocator.UNLIMITED);
        device = Devices.get(Devices.all().size() - 1).newAllocator("mac-device", BufferAllocator.UNLIMITED);
        FrameAllocator frames = DeviceMap.of(host, device);
        TransportConfig config = TransportConfig.builder()
                .secret(TestMessages.SECRET)
                .ioTimeout(Duration.ofSeconds(10))
                .receiveInto(d -> {
                    allocations.incrementAndGet();
                    return frames.allocate(d);
                })
                .build();
        listener = Transports.ipc().listen("ipc://127.0.0.1:0", config);
    }

    @AfterEach
    void close() throws Exception {
        for (int i = toClose.size() - 1; i >= 0; i--) {
            toClose.get(i).close();
        }
        listener.close();
        Logger.getLogger(RefusalLog.LOGGER).removeHandler(handler);
        assertEquals(0, host.allocatedBytes() + device.allocatedBytes(), "every frame was freed");
        host.close();
        device.close();
    }

    private ChildJvm peer(String mode) throws Exception {
        ChildJvm p = TransportConformanceSuite.peerJvm(MacTamperPeer.class)
                .args(mode, listener.address(), HexFormat.of().formatHex(TestMessages.SECRET))
                .start();
        toClose.add(p);
        return p;
    }

    private Connection accept() {
        Connection c = listener.accept(Duration.ofSeconds(30));
        toClose.add(c);
        return c;
    }

    /** Waits for the peer and checks it was refused for its tag, and that this side logged that once. */
    private void assertRefusedForItsTag(ChildJvm p) throws Exception {
        assertEquals(0, p.awaitExit(Duration.ofSeconds(30)), p::output);
        assertTrue(p.output().contains("refused MessageAuthenticationException: the "), p.output());
        synchronized (logged) {
            assertEquals(
                    1,
                    logged.stream()
                            .filter(l -> l.contains("failed its message authentication code"))
                            .count(),
                    logged.toString());
        }
    }

    @Test
    void shouldAcceptTheHandWrittenRecordsAsTheTransportTagsThem() throws Exception {
        assertAccepted("valid", 1);
    }

    /**
     * Has the peer send its hand-written message in {@code mode} and checks it arrived: {@code deviceFrames} device
     * frames (pattern seeds 7, 8, ...) and the host frame, and that the peer read this side's consumed record.
     */
    private void assertAccepted(String mode, int deviceFrames) throws Exception {
        ChildJvm p = peer(mode);
        Connection c = accept();
        try (ReceivedMessage m = c.receive()) {
            assertEquals("tampered", m.value().root());
            assertEquals(deviceFrames + 1, m.value().frames().size());
            for (int i = 0; i < deviceFrames; i++) {
                assertArrayEquals(
                        TestMessages.pattern(MacTamperPeer.DEVICE_BYTES, 7 + i),
                        TestMessages.contents(m.value().frames().get(i).buffer()),
                        "device frame " + i);
            }
            assertArrayEquals(
                    TestMessages.pattern(MacTamperPeer.HOST_BYTES, 9),
                    TestMessages.contents(m.value().frames().get(deviceFrames).buffer()));
        }
        c.close();
        assertEquals(0, p.awaitExit(Duration.ofSeconds(30)), p::output);
        assertTrue(p.output().contains("consumed"), p.output());
    }

    @Test
    void shouldRefuseAChangedHeaderLengthBeforeAllocatingAnything() throws Exception {
        ChildJvm p = peer("flip-prefix");
        Connection c = accept();
        assertThrows(MessageAuthenticationException.class, c::receive);
        assertEquals(0, allocations.get(), "no frame was allocated");
        assertEquals(0, host.peakBytes() + device.peakBytes());
        assertRefusedForItsTag(p);
    }

    @Test
    void shouldRefuseAChangedHeaderBeforeParsingOrAllocatingAnything() throws Exception {
        ChildJvm p = peer("flip-header");
        Connection c = accept();
        MessageAuthenticationException e = assertThrows(MessageAuthenticationException.class, c::receive);
        assertTrue(e.getMessage().startsWith("the message header from "), e.getMessage());
        assertEquals(0, allocations.get(), "no frame was allocated");
        assertRefusedForItsTag(p);
    }

    @Test
    void shouldRefuseAChangedDeviceFrameReferenceBeforeMappingIt() throws Exception {
        assertRefusedBeforeMapping("flip-reference", "the device-frame reference from ");
    }

    /**
     * Has the peer send its message changed as {@code mode} says and checks that it was refused for its tag, with a
     * message beginning {@code refusal}, before anything of the peer was mapped.
     */
    private void assertRefusedBeforeMapping(String mode, String refusal) throws Exception {
        ChildJvm p = peer(mode);
        Connection c = accept();
        MessageAuthenticationException e = assertThrows(MessageAuthenticationException.class, c::receive);
        assertTrue(e.getMessage().startsWith(refusal), e.getMessage());
        MappingCache.Stats stats = IpcTransport.mappingStats(c);
        assertEquals(0, stats.opens(), "nothing of the peer was mapped: " + stats);
        assertRefusedForItsTag(p);
    }

    @Test
    void shouldAcceptAHandWrittenReferenceRunAsTheTransportTagsIt() throws Exception {
        assertAccepted("run-valid", 2);
    }

    @Test
    void shouldRefuseAChangedReferenceRunBeforeMappingAnythingOfIt() throws Exception {
        assertRefusedBeforeMapping("run-flip", "the device-frame reference run from ");
    }

    @Test
    void shouldRefuseAReplayedMessageBeforeAllocatingItsFrames() throws Exception {
        ChildJvm p = peer("replay");
        Connection c = accept();
        c.receive().close();
        assertEquals(2, allocations.get());
        MessageAuthenticationException e = assertThrows(MessageAuthenticationException.class, c::receive);
        assertTrue(e.getMessage().startsWith("the message record's prefix from "), e.getMessage());
        assertEquals(2, allocations.get(), "nothing more was allocated for the replay");
        assertRefusedForItsTag(p);
    }

    @Test
    void shouldRefuseAMessageTaggedForAnotherConnection() throws Exception {
        ChildJvm p = peer("splice");
        Connection first = accept();
        Connection second = accept();
        assertThrows(MessageAuthenticationException.class, second::receive);
        assertEquals(0, allocations.get(), "no frame was allocated");
        assertRefusedForItsTag(p);
        first.close();
    }
}
