package io.cuwire.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The conformance suite over {@link LoopProvider}'s transport, found through {@link Transports} by its scheme as any
 * caller finds one; its peer runs on a thread and finds it by the listener's address the same way.
 */
class LoopTransportTest extends TransportConformanceSuite {
    private static final AtomicInteger NAMES = new AtomicInteger();

    @Override
    protected Transport transport() {
        return Transports.forScheme(LoopProvider.SCHEME);
    }

    @Override
    protected String listenAddress() {
        return LoopProvider.SCHEME + "://suite-" + NAMES.incrementAndGet();
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
    void shouldBeFoundByTheSchemeOfItsAddressesAndNameItsConnectionsWithIt() {
        assertInstanceOf(
                LoopProvider.class,
                Transports.providers().stream()
                        .filter(p -> p.scheme().equals(LoopProvider.SCHEME))
                        .findFirst()
                        .orElseThrow());
        assertEquals(
                LoopProvider.SCHEME, Transports.forAddress("loop://anything").name());
        try (Listener listener = transport().listen(listenAddress(), config().build())) {
            assertEquals(transport(), Transports.forAddress(listener.address()));
        }
    }
}
