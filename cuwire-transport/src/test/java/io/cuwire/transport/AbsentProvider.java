package io.cuwire.transport;

import io.cuwire.transport.spi.Availability;
import io.cuwire.transport.spi.TransportProvider;

/**
 * A provider in test scope that never runs here, as UCX without its library: a lookup of its scheme must fail with
 * its reason and must never ask it for the transport.
 */
public final class AbsentProvider implements TransportProvider {
    /** The scheme served. */
    public static final String SCHEME = "absent";
    /** Why it can't run. */
    public static final String REASON = "absent not available: libabsent.so.1 not found; install libabsent1";

    @Override
    public String scheme() {
        return SCHEME;
    }

    @Override
    public Availability availability() {
        return Availability.unavailable(REASON);
    }

    @Override
    public Transport transport() {
        throw new AssertionError("asked for the transport of an unavailable provider");
    }
}
