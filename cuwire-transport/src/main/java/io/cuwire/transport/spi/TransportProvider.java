package io.cuwire.transport.spi;

import io.cuwire.transport.Transport;

/**
 * A transport, found with {@link java.util.ServiceLoader} by the scheme of its addresses: cuwire-transport registers
 * {@code tcp}, {@code ipc}, {@code ucx} and {@code inproc} in {@code META-INF/services}; another jar on the class path
 * adds a scheme by registering a provider of its own. {@link io.cuwire.transport.Transports} asks
 * {@link #availability()} before it hands out {@link #transport()}, and names the reason when a transport can't run.
 *
 * <p>Implementations have a public no-argument constructor, are thread-safe, and keep no per-connection state.
 */
public interface TransportProvider {
    /** The address scheme served, without {@code ://}: {@code tcp}. Also the transport's {@link Transport#name()}. */
    String scheme();

    /**
     * Whether the transport can run in this process, and why (or why not): UCX is unavailable where its system
     * library does not load. Asked on every lookup: an implementation that probes something costly probes once and
     * keeps the answer.
     */
    Availability availability();

    /** The transport, made once and kept for the process; asked only while {@link #availability()} says available. */
    Transport transport();
}
