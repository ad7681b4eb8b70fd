package io.cuwire.transport;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.CopyDirection;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.MemoryKind;
import io.cuwire.memory.TransferScope;
import io.cuwire.transport.internal.ipc.IpcTransport;
import io.cuwire.transport.internal.ipc.MappingCache;
import java.io.IOException;
import java.util.List;
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
    protected boolean receivesArrayFrames() {
        return true;
    }

    @Override
    protected boolean stagesHeapFrames() {
        return true;
    }

    @Override
    protected Peer startPeer(String... args) throws IOException {
        return ChildJvm.start(ConformancePeer.class, args);
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
                    assertEquals(MemoryKind.DEVICE, m.value().frames().getFirst().kind());
                    assertEquals(0, m.metrics().hostToDeviceBytes(), m.metrics().toString());
                    assertArrayEquals(TestMessages.pattern(bytes, i),
                            TestMessages.contents(m.value().frames().getFirst().buffer()));
                }
            }
            assertEquals((long) bytes * times, scope.bytes(CopyDirection.PEER) + scope.bytes(CopyDirection.D2D),
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
            Peer p = peer("send-frames", listener, Integer.toString(frames), Integer.toString(bytes));
            Connection c = accept(listener);
            try (ReceivedMessage m = c.receive()) {
                assertEquals(frames, m.value().frames().size());
                for (int i = 0; i < frames; i++) {
                    assertArrayEquals(TestMessages.pattern(bytes, i),
                            TestMessages.contents(m.value().frames().get(i).buffer()), "frame " + i);
                }
            }
            MappingCache.Stats stats = IpcTransport.mappingStats(c);
            assertEquals(frames, stats.opens(), stats.toString());
            assertTrue(stats.peakMapped() <= 2, "at most the cache's 2 mappings at once: " + stats);
            c.close();
            assertEquals(0, p.await(java.time.Duration.ofSeconds(30)), p::output);
        }
    }

    @Test
    void shouldListenAndConnectAtIpcAddresses() {
        Listener listener = listen(config().build());
        assertTrue(listener.address().startsWith("ipc://127.0.0.1:"), listener.address());
        assertEquals(Transports.ipc(), Transports.forAddress(listener.address()));
        assertTrue(Capabilities.local(List.of()).transports().contains(Transports.IPC));
    }
}
