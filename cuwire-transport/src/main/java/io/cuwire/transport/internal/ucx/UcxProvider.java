package io.cuwire.transport.internal.ucx;

import io.cuwire.transport.Transport;
import io.cuwire.transport.TransportUnavailableException;
import io.cuwire.transport.Transports;
import io.cuwire.transport.spi.Availability;
import io.cuwire.transport.spi.TransportProvider;

/**
 * Registers {@link UcxTransport} for {@code ucx://}: available where JUCX and the system UCX load (tried once per
 * process, on the first lookup); the availability names which UCX loaded ({@link UcxBuild#describe}).
 */
public final class UcxProvider implements TransportProvider {
    @Override
    public String scheme() {
        return Transports.UCX;
    }

    @Override
    public Availability availability() {
        try {
            return Availability.available(Ucx.get().build().describe());
        } catch (TransportUnavailableException e) {
            return Availability.unavailable(e.getMessage());
        }
    }

    @Override
    public Transport transport() {
        return UcxTransport.INSTANCE;
    }
}
