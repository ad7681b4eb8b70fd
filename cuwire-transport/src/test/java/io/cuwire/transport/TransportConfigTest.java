package io.cuwire.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import org.junit.jupiter.api.Test;

/** Configuration rules that hold before any transport is involved. */
class TransportConfigTest {
    private final FrameAllocator nowhere = d -> {
        throw new AssertionError("no frames expected");
    };

    @Test
    void shouldRequireASecretUnlessUnauthenticatedPeersAreExplicitlyAllowed() {
        IllegalStateException e = assertThrows(
                IllegalStateException.class,
                () -> TransportConfig.builder().receiveInto(nowhere).build());
        assertTrue(e.getMessage().contains("allowUnauthenticated"), e.getMessage());
        TransportConfig open = TransportConfig.builder()
                .receiveInto(nowhere)
                .allowUnauthenticated(true)
                .build();
        assertNull(open.secret());
        assertThrows(
                IllegalStateException.class,
                () -> TransportConfig.builder()
                        .receiveInto(nowhere)
                        .secret(new byte[8])
                        .build());
    }

    @Test
    void shouldBoundHandshakesByDefaultAndRefuseBoundsThatCannotHold() {
        TransportConfig c = TransportConfig.builder()
                .receiveInto(nowhere)
                .secret(TestMessages.SECRET)
                .build();
        assertEquals(java.time.Duration.ofSeconds(5), c.handshakeTimeout());
        assertEquals(256, c.maxUnauthenticated());
        assertEquals(32, c.maxUnauthenticatedPerSource());
        TransportConfig tight = c.toBuilder().maxUnauthenticated(8, 2).build();
        assertEquals(8, tight.maxUnauthenticated());
        assertEquals(2, tight.maxUnauthenticatedPerSource());
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class, () -> TransportConfig.builder().maxUnauthenticated(4, 5));
        assertEquals("maxUnauthenticated(total: 4, perSource: 5) (expected: 1 <= perSource <= total)", e.getMessage());
        assertThrows(
                IllegalArgumentException.class, () -> TransportConfig.builder().maxUnauthenticated(0, 0));
    }

    @Test
    void shouldRequireMemoryForReceivedFrames() {
        assertThrows(
                IllegalStateException.class,
                () -> TransportConfig.builder().secret(TestMessages.SECRET).build());
    }

    @Test
    void shouldRefuseAMessageWhoseHeaderDoesNotDescribeItsFrames() {
        try (BufferAllocator<HostBuffer> host = BufferAllocator.host("cfg", BufferAllocator.UNLIMITED);
                HostBuffer a = host.allocate(10);
                HostBuffer b = host.allocate(20)) {
            byte[] header = TestMessages.message("x", java.util.List.of(a)).header();
            assertThrows(IllegalArgumentException.class, () -> Message.of(header, java.util.List.of(b)));
            assertThrows(IllegalArgumentException.class, () -> Message.of(new byte[] {1, 2, 3}, java.util.List.of()));
        }
    }

    @Test
    void shouldMapDeviceFramesBySenderDeviceAndHostFramesToHost() {
        try (BufferAllocator<HostBuffer> host = BufferAllocator.host("map-host", BufferAllocator.UNLIMITED);
                BufferAllocator<DeviceBuffer> d0 = Devices.get(0).newAllocator("map-d0", BufferAllocator.UNLIMITED);
                BufferAllocator<DeviceBuffer> d1 =
                        Devices.get(Devices.all().size() - 1).newAllocator("map-d1", BufferAllocator.UNLIMITED)) {
            DeviceMap map = DeviceMap.of(host, d0).with(3, d1);
            try (var a = map.allocate(
                            new io.cuwire.serialize.FrameDescriptor(io.cuwire.memory.MemoryKind.DEVICE, 3, 8));
                    var b = map.allocate(
                            new io.cuwire.serialize.FrameDescriptor(io.cuwire.memory.MemoryKind.DEVICE, 0, 8));
                    var c = map.allocate(
                            new io.cuwire.serialize.FrameDescriptor(io.cuwire.memory.MemoryKind.PINNED, -1, 8))) {
                assertEquals(d1, a.allocator());
                assertEquals(d0, b.allocator());
                assertEquals(host, c.allocator());
            }
        }
    }

    @Test
    void shouldDefaultToTlsUnlessLoopbackAndReadTheModeFromItsPropertyValues() {
        TransportConfig c = TransportConfig.builder()
                .receiveInto(nowhere)
                .secret(TestMessages.SECRET)
                .build();
        assertEquals(System.getProperty(TlsMode.PROPERTY) == null ? TlsMode.AUTO : TlsMode.fromProperty(), c.tls());
        assertNull(c.tlsKeyStore());
        assertEquals(TlsMode.AUTO, TlsMode.parse(null));
        assertEquals(TlsMode.ON, TlsMode.parse(" ON "));
        assertEquals(TlsMode.OFF, TlsMode.parse("off"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> TlsMode.parse("yes"));
        assertEquals("cuwire.transport.tls=yes (expected: auto, on or off)", e.getMessage());
        java.net.InetAddress loopback = java.net.InetAddress.getLoopbackAddress();
        java.net.InetAddress other = java.net.InetAddress.ofLiteral("192.0.2.7");
        assertEquals(false, TlsMode.AUTO.clientUsesTls(loopback));
        assertEquals(true, TlsMode.AUTO.clientUsesTls(other));
        assertEquals(true, TlsMode.ON.clientUsesTls(loopback));
        assertEquals(false, TlsMode.OFF.clientUsesTls(other));
        assertEquals(true, TlsMode.AUTO.acceptsPlaintext(true));
        assertEquals(false, TlsMode.AUTO.acceptsPlaintext(false));
        assertEquals(false, TlsMode.ON.acceptsPlaintext(true));
        assertEquals(true, TlsMode.OFF.acceptsPlaintext(false));
    }
}
