package io.cuwire.transport.internal.inproc;

import io.cuwire.transport.Transport;
import io.cuwire.transport.Transports;
import io.cuwire.transport.spi.Availability;
import io.cuwire.transport.spi.TransportProvider;

/** Registers {@link InProcessTransport} for {@code inproc://}. */
public final class InProcessProvider implements TransportProvider {
    private static final Availability AVAILABLE = Availability.available("client and workers in one JVM");

    @Override
    public String scheme() {
        return Transports.IN_PROCESS;
    }

    @Override
    public Availability availability() {
        return AVAILABLE;
    }

    @Override
    public Transport transport() {
        return InProcessTransport.INSTANCE;
    }
}
