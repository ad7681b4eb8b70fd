package io.cuwire.spark.internal;

import java.util.Objects;

/**
 * Where one node listens, as it advertises itself to the others (the driver's address in a model's handle, an
 * executor's in its registration and the driver's redirects): its TCP address, its CUDA IPC address where it listens
 * on one, and the identity of its host ({@link io.cuwire.transport.Capabilities#localHostId()}: host name plus boot
 * id), by which a fetcher tells whether it shares the host and so could map the node's device memory.
 *
 * <p>Encoded as one string ({@link #encode}): the TCP address alone when there is no IPC address (what every node
 * advertised before IPC), else the three parts separated by spaces, which neither an address nor a host name has.
 *
 * @param tcp the TCP address, {@code tcp://host:port}
 * @param ipc the CUDA IPC address, {@code ipc://host:port}, or empty
 * @param hostId the host's identity, or empty when {@code ipc} is
 */
public record Addresses(String tcp, String ipc, String hostId) {
    public Addresses {
        Objects.requireNonNull(tcp, "tcp");
        Objects.requireNonNull(ipc, "ipc");
        Objects.requireNonNull(hostId, "hostId");
        if (tcp.isBlank() || tcp.contains(" ") || ipc.contains(" ") || hostId.contains(" ")) {
            throw new IllegalArgumentException("node addresses '" + tcp + "', '" + ipc + "', '" + hostId
                    + "' (expected: a TCP address, no spaces)");
        }
        if (ipc.isEmpty() != hostId.isEmpty()) {
            throw new IllegalArgumentException("node addresses: an IPC address needs a host id and a host id an IPC"
                    + " address (ipc: '" + ipc + "', host id: '" + hostId + "')");
        }
    }

    /** Only a TCP address. */
    public static Addresses tcpOnly(String tcp) {
        return new Addresses(tcp, "", "");
    }

    /**
     * The addresses {@link #encode} wrote.
     *
     * @throws IllegalArgumentException if {@code encoded} is not one or three parts
     */
    public static Addresses parse(String encoded) {
        String[] parts = encoded.split(" ", -1);
        return switch (parts.length) {
            case 1 -> tcpOnly(parts[0]);
            case 3 -> new Addresses(parts[0], parts[1], parts[2]);
            default ->
                throw new IllegalArgumentException("node addresses '" + encoded
                        + "' (expected: 'tcp://host:port' or 'tcp://host:port ipc://host:port host-id')");
        };
    }

    /** Whether the node listens on CUDA IPC. */
    public boolean hasIpc() {
        return !ipc.isEmpty();
    }

    /** One string, for {@link #parse}. */
    public String encode() {
        return hasIpc() ? tcp + " " + ipc + " " + hostId : tcp;
    }

    @Override
    public String toString() {
        return hasIpc() ? tcp + " (ipc " + ipc + ")" : tcp;
    }
}
