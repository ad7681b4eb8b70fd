package io.cuwire.cluster;

import io.cuwire.cluster.internal.Placement;
import java.io.PrintStream;

/**
 * A worker started by hand ({@code cuwire worker}) rather than by {@link LocalCluster}: the same process a local
 * cluster launches, in this JVM. It serves the first connection that authenticates with the cluster secret as its
 * client, and exits when that connection breaks or the client shuts it down, with a {@link WorkerExit} code that says
 * which, after logging why.
 */
public final class StandaloneWorker {
    /** The first word of the line the worker prints when it listens, followed by its address. */
    public static final String LISTENING = Worker.LISTENING;

    private StandaloneWorker() {}

    /**
     * Checks that this process has device {@code device}, the one {@link #serve} would bind.
     *
     * @throws IllegalArgumentException naming the devices this process sees, the platform and, on CUDA, the
     *     {@code CUDA_VISIBLE_DEVICES} that limits them, when it has no such device
     */
    public static void checkDevice(int device) {
        Placement.device(device);
    }

    /**
     * Listens on {@code address} ({@code tcp://host:port}, port 0 for any), prints {@link #LISTENING} and the bound
     * address to {@code out}, and serves; never returns normally (the JVM exits with the worker, its exit code a
     * {@link WorkerExit}'s).
     *
     * @param index the worker's index in its cluster (the worker number in its {@link ObjectRef}s)
     * @param device the device ordinal to bind to
     * @param secret the cluster secret, at least 16 bytes
     * @throws IllegalArgumentException if the secret is too short
     * @throws RuntimeException if the worker cannot start ({@code TransportException}: the address cannot be bound;
     *     {@code MemoryException}: the device cannot be used)
     */
    public static void serve(int index, int device, String address, byte[] secret, PrintStream out) {
        if (secret.length < 16) {
            throw new IllegalArgumentException("secret: " + secret.length + " bytes (expected: >= 16)");
        }
        Worker.serve(index, device, address, secret, out);
    }
}
