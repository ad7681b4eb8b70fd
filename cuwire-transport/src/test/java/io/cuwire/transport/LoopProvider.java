package io.cuwire.transport;

import io.cuwire.transport.internal.inproc.InProcessTransport;
import io.cuwire.transport.spi.Availability;
import io.cuwire.transport.spi.TransportProvider;

/**
 * A transport defined in test scope, registered in the test class path's {@code META-INF/services}: in-process
 * connections under a scheme of their own, {@code loop://name}, with names apart from {@code inproc://}'s. It shows
 * that a provider the module does not know is found by its scheme ({@link LoopTransportTest}).
 */
public final class LoopProvider implements TransportProvider {
    /** The scheme served. */
    public static final String SCHEME = "loop";

    private static final InProcessTransport TRANSPORT = new InProcessTransport(SCHEME);

    @Override
    public String scheme() {
        return SCHEME;
    }

    @Override
    public Availability availability() {
        return Availability.available("in-process connections under their own scheme (test scope)");
    }

    @Override
    public Transport transport() {
        return TRANSPORT;
    }
}
