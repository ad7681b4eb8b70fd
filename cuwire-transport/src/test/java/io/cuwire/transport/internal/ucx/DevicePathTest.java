package io.cuwire.transport.internal.ucx;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.cuwire.transport.Capabilities;
import io.cuwire.transport.Connection;
import io.cuwire.transport.Listener;
import io.cuwire.transport.TestMessages;
import io.cuwire.transport.TransportConfig;
import io.cuwire.transport.Transports;
import io.cuwire.transport.internal.Handshake;
import io.cuwire.transport.internal.socket.Sockets;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Which path device frames take over UCX: direct only when both sides' UCX carries CUDA memory, as told in the
 * handshake; and a connection takes the path its own UCX and its peer's capabilities give.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class DevicePathTest {
    @Test
    void shouldGoDirectOnlyWhenBothSidesUcxCarriesCuda() {
        assertEquals(DevicePath.DIRECT, DevicePath.negotiate(true, true));
        assertEquals(DevicePath.STAGED, DevicePath.negotiate(true, false), "only this side's UCX carries CUDA");
        assertEquals(DevicePath.STAGED, DevicePath.negotiate(false, true), "only the peer's UCX carries CUDA");
        assertEquals(DevicePath.STAGED, DevicePath.negotiate(false, false));
    }

    @Test
    void shouldSendDirectPartsThatTheReceiverAccepts() {
        assertEquals(256 << 20, DevicePath.DIRECT_PART_BYTES, "large device frames go in parts of 256 MiB");
        assertTrue(DevicePath.DIRECT_PART_BYTES <= DevicePath.MAX_DIRECT_PART_BYTES, "within the receiver's check");
        assertEquals(1 << 30, DevicePath.directPartBytes("1073741824"));
        assertEquals(256 << 20, DevicePath.directPartBytes(null));
        assertEquals(256 << 20, DevicePath.directPartBytes(" "));
        for (String bad : new String[] {"4095", "1073741825", "1g", "-1"}) {
            IllegalArgumentException e =
                    assertThrows(IllegalArgumentException.class, () -> DevicePath.directPartBytes(bad));
            assertTrue(e.getMessage().contains(DevicePath.DIRECT_PART_PROPERTY + "=" + bad), e.getMessage());
        }
    }

    /**
     * A raw client that tells {@code ucxCuda} as given, whatever its UCX is: the accepted connection's path is what
     * this process's UCX and the claim give (here, with a UCX without CUDA, staged even for a peer that claims CUDA).
     */
    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void shouldTakeThePathThatThisSidesUcxAndThePeersCapabilitiesGive(boolean peerClaimsCuda) throws Exception {
        assumeTrue(Ucx.available(), "needs the system UCX (libucx0)");
        TransportConfig config = TransportConfig.builder()
                .secret(TestMessages.SECRET)
                .ioTimeout(Duration.ofSeconds(10))
                .receiveInto(d -> null)
                .build();
        try (Listener listener = Transports.ucx().listen("ucx://127.0.0.1:0", config)) {
            SocketChannel channel = Sockets.open(Transports.UCX, listener.address(), config);
            Handshake.Result handshake = Sockets.handshake(
                    channel, config, Capabilities.local(config.families()).withUcx(peerClaimsCuda));
            try (Bootstrap bootstrap = new Bootstrap(channel.socket())) {
                UcxAgent agent = new UcxAgent(Ucx.get(), "raw", config.idle());
                try {
                    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                    ByteBuffer address = agent.workerAddress(TimeUnit.SECONDS.toNanos(10));
                    byte[] mine = new byte[address.remaining()];
                    address.duplicate().get(mine);
                    bootstrap.writeRecord(mine);
                    byte[] theirs = bootstrap.readRecord(64 << 10, deadline);
                    agent.connect(ByteBuffer.wrap(theirs), () -> {}).get(10, TimeUnit.SECONDS);
                    bootstrap.writeRecord(new byte[] {'R'});
                    bootstrap.readRecord(1, deadline);
                    try (Connection c = listener.accept(Duration.ofSeconds(30))) {
                        assertEquals(peerClaimsCuda, c.peer().ucxCarriesCuda());
                        UcxConnection ucx = assertInstanceOf(UcxConnection.class, c);
                        assertEquals(DevicePath.negotiate(Ucx.get().carriesCuda(), peerClaimsCuda), ucx.devicePath());
                        if (!Ucx.get().carriesCuda()) {
                            assertEquals(DevicePath.STAGED, ucx.devicePath());
                        }
                    }
                } finally {
                    agent.close(0);
                }
            }
        }
    }
}
