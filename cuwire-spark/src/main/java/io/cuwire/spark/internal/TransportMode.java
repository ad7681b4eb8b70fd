package io.cuwire.spark.internal;

import io.cuwire.transport.Transports;
import java.util.Locale;

/**
 * How a node picks the transport of a fetch ({@code spark.cuwire.transport}): {@link #AUTO} takes CUDA IPC where it
 * can work and TCP elsewhere, {@link #TCP} always TCP, {@link #IPC} only CUDA IPC.
 */
public enum TransportMode {
    /** CUDA IPC when the peer listens on it, shares this host and this node can map device memory; else TCP. */
    AUTO,
    /** TCP always: device frames staged through host memory. */
    TCP,
    /** CUDA IPC only: a fetch that cannot use it fails, saying why. */
    IPC;

    /** The setting that names the mode, for the plugin and for a task's local property. */
    public static final String SETTING = "spark.cuwire.transport";

    /**
     * The transport one fetch takes: the address to connect to and the transport's name.
     *
     * @param address the peer's address for that transport
     * @param transport {@value Transports#TCP} or {@value Transports#IPC}
     * @param whyNotIpc under {@link #AUTO}, why TCP was taken; empty otherwise
     */
    public record Choice(String address, String transport, String whyNotIpc) {}

    /**
     * The mode a setting names ({@code auto}, {@code tcp}, {@code ipc}, any case; {@code null} or blank:
     * {@link #AUTO}).
     *
     * @throws IllegalArgumentException naming {@code key} if it names none
     */
    public static TransportMode parse(String key, String value) {
        if (value == null || value.isBlank()) {
            return AUTO;
        }
        return switch (value.strip().toLowerCase(Locale.ROOT)) {
            case "auto" -> AUTO;
            case "tcp" -> TCP;
            case "ipc" -> IPC;
            default -> throw new IllegalArgumentException(key + "=" + value + " (expected: auto, tcp or ipc)");
        };
    }

    /**
     * The transport of a fetch from {@code peer} by a node of host {@code localHostId}.
     *
     * @param peer where the peer listens
     * @param localHostId this node's host identity
     * @param localIpc why this node cannot use CUDA IPC (the transport missing from the build, a device that exports
     *     no handles), or empty when it can
     * @throws IllegalStateException under {@link #IPC} when CUDA IPC cannot carry the fetch, saying why
     */
    public Choice choose(Addresses peer, String localHostId, String localIpc) {
        if (this == TCP) {
            return new Choice(peer.tcp(), Transports.TCP, "");
        }
        String why;
        if (!localIpc.isEmpty()) {
            why = localIpc;
        } else if (!peer.hasIpc()) {
            why = "the peer at " + peer.tcp() + " listens on no CUDA IPC address";
        } else if (!peer.hostId().equals(localHostId)) {
            why = "the peer at " + peer.ipc() + " runs on host '" + peer.hostId() + "', this node on '" + localHostId
                    + "'";
        } else {
            return new Choice(peer.ipc(), Transports.IPC, "");
        }
        if (this == IPC) {
            throw new IllegalStateException(
                    SETTING + "=ipc, but CUDA IPC cannot carry this fetch: " + why + " (set auto to fall back to tcp)");
        }
        return new Choice(peer.tcp(), Transports.TCP, why);
    }
}
