package io.cuwire.transport.internal.tcp;

import io.cuwire.transport.Transport;
import io.cuwire.transport.Transports;
import io.cuwire.transport.spi.Availability;
import io.cuwire.transport.spi.TransportProvider;

/** Registers {@link TcpTransport} for {@code tcp://}; sockets are always there. */
public final class TcpProvider implements TransportProvider {
    private static final Availability AVAILABLE =
            Availability.available("sockets, device frames staged through " + "pinned host buffers");

    @Override
    public String scheme() {
        return Transports.TCP;
    }

    @Override
    public Availability availability() {
        return AVAILABLE;
    }

    @Override
    public Transport transport() {
        return TcpTransport.INSTANCE;
    }
}
