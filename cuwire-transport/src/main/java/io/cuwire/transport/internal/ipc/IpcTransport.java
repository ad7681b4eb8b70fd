package io.cuwire.transport.internal.ipc;

import io.cuwire.transport.Capabilities;
import io.cuwire.transport.Connection;
import io.cuwire.transport.Listener;
import io.cuwire.transport.Transport;
import io.cuwire.transport.TransportConfig;
import io.cuwire.transport.Transports;
import io.cuwire.transport.internal.Handshake;
import io.cuwire.transport.internal.NumericProperty;
import io.cuwire.transport.internal.socket.SocketListener;
import io.cuwire.transport.internal.socket.Sockets;
import java.nio.channels.SocketChannel;

/**
 * CUDA IPC between two processes of one host ({@code ipc://host:port}): control messages and host frames over TCP,
 * device frames copied by the receiver straight out of the sender's device memory through cached IPC mappings. See
 * {@link IpcConnection} for the wire and {@link MappingCache} for the mappings.
 *
 * <p>Why a mapping cache and not a staging ring: opening a handle costs 2–12 ms, so either choice opens nothing per
 * transfer once warm. A pre-opened ring in the receiver's memory costs the sender a device copy into the ring per
 * chunk and a round trip per slot, and holds the ring's memory for the connection's life; cached mappings copy
 * once, frame to frame at the link's speed, and cost an open per allocation the first time (the cold transfer).
 * With a pooled sender (the CUDA pool recycles whole blocks) the same allocations come back, so the cache stays
 * warm. A ring remains the alternative where a sender's allocations never repeat.
 */
public final class IpcTransport implements Transport {
    /** System property: the mappings a connection's cache keeps ({@value #DEFAULT_MAX_MAPPINGS} when unset). */
    public static final String MAX_MAPPINGS_PROPERTY = "cuwire.ipc.maxMappings";
    /**
     * Mappings a connection's cache keeps by default: enough for a model of ten thousand arrays, each in an
     * allocation of its own (the CUDA pool gives each block its own), to stay mapped from one message to the next.
     * With 256, least-recently-used eviction closed each array's mapping before the next message came back to it, so
     * every message opened them all again (the receiver's mapping phase 111-189 ms a message of 10,000 arrays on one
     * H200, 6-8 ms with 16,384; 2026-12-03); the byte bound ({@link #DEFAULT_MAX_MAPPED_BYTES}) still limits what
     * the mappings keep alive.
     */
    public static final int DEFAULT_MAX_MAPPINGS = 16_384;
    /** Bytes of mappings a connection's cache keeps by default. */
    public static final long DEFAULT_MAX_MAPPED_BYTES = 64L << 30;

    public static final IpcTransport INSTANCE =
            new IpcTransport(maxMappings(System.getProperty(MAX_MAPPINGS_PROPERTY)), DEFAULT_MAX_MAPPED_BYTES);

    private final int maxMappings;
    private final long maxMappedBytes;

    /** A transport whose connections each cache at most {@code maxMappings} mappings of {@code maxMappedBytes}. */
    public IpcTransport(int maxMappings, long maxMappedBytes) {
        if (maxMappings < 1 || maxMappedBytes < 1) {
            throw new IllegalArgumentException(
                    "maxMappings: " + maxMappings + ", maxMappedBytes: " + maxMappedBytes + " (expected: >= 1 each)");
        }
        this.maxMappings = maxMappings;
        this.maxMappedBytes = maxMappedBytes;
    }

    /**
     * The mappings a connection's cache keeps for the value of {@value #MAX_MAPPINGS_PROPERTY} ({@code null} or
     * blank: {@value #DEFAULT_MAX_MAPPINGS}).
     *
     * @throws IllegalArgumentException naming the property when the value is not a number from 1 to 1,048,576
     */
    static int maxMappings(String property) {
        return (int)
                NumericProperty.parse(MAX_MAPPINGS_PROPERTY, property, DEFAULT_MAX_MAPPINGS, 1, 1 << 20, "mappings");
    }

    /**
     * The counters of {@code connection}'s mapping cache (how often the peer's allocations were opened, reused,
     * closed): for tests and benchmarks.
     *
     * @throws IllegalArgumentException if it is not an IPC connection
     */
    public static MappingCache.Stats mappingStats(Connection connection) {
        if (connection instanceof IpcConnection c) {
            return c.mappingStats();
        }
        throw new IllegalArgumentException(connection + " is not a CUDA IPC connection");
    }

    @Override
    public String name() {
        return Transports.IPC;
    }

    @Override
    public Listener listen(String address, TransportConfig config) {
        return new SocketListener(
                Transports.IPC,
                Sockets.parse(Transports.IPC, address),
                config,
                Capabilities.local(config.families()),
                (channel, handshake, c) ->
                        new IpcConnection(channel, c, handshake, false, maxMappings, maxMappedBytes));
    }

    @Override
    public Connection connect(String address, TransportConfig config) {
        SocketChannel channel = Sockets.open(Transports.IPC, address, config);
        Handshake.Result handshake = Sockets.handshake(channel, config, Capabilities.local(config.families()));
        return new IpcConnection(channel, config, handshake, true, maxMappings, maxMappedBytes);
    }
}
