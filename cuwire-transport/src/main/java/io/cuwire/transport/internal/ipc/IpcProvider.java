package io.cuwire.transport.internal.ipc;

import io.cuwire.transport.Transport;
import io.cuwire.transport.Transports;
import io.cuwire.transport.spi.Availability;
import io.cuwire.transport.spi.TransportProvider;

/**
 * Registers {@link IpcTransport} for {@code ipc://}. Every device platform exports IPC handles (CUDA memory
 * handles, the emulated device's shared-memory files), so it runs wherever sockets do; whether two peers share a
 * host and a platform is found in the handshake.
 */
public final class IpcProvider implements TransportProvider {
    private static final Availability AVAILABLE = Availability.available(
            "control over sockets, device frames " + "through the device platform's IPC handles");

    @Override
    public String scheme() {
        return Transports.IPC;
    }

    @Override
    public Availability availability() {
        return AVAILABLE;
    }

    @Override
    public Transport transport() {
        return IpcTransport.INSTANCE;
    }
}
