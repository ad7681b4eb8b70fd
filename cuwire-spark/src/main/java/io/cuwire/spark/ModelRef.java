package io.cuwire.spark;

import io.cuwire.cluster.runtime.ModelCache;
import io.cuwire.serialize.Limits;
import io.cuwire.serialize.Serialized;
import io.cuwire.spark.internal.Addresses;
import io.cuwire.spark.internal.Node;
import io.cuwire.spark.internal.TransportMode;
import java.io.Serial;
import java.io.Serializable;
import java.util.Optional;
import java.util.function.Function;
import org.apache.spark.TaskContext;

/**
 * The small, Java-serializable handle of a model broadcast with {@link CuwireSpark#broadcast}: what Spark ships to
 * tasks (in closures, or through {@code sc.broadcast}) instead of the model. It holds the model's id and version,
 * its serialized header and the driver endpoint's addresses (TCP, and CUDA IPC with the driver's host identity where
 * the driver listens on it), never the frames and never the cluster secret (that comes from the plugin). In a task,
 * {@link #apply} or {@link #acquire} give the model: each executor JVM fetches its frames once over cuwire's
 * transport, into a cache keyed by model id, version and device, and later tasks of that JVM use the cached copy.
 * The transport of a fetch is picked by {@code spark.cuwire.transport}: the application's setting, or the job's local
 * property of that name where set ({@code sc.setLocalProperty}).
 *
 * @param <T> the model's type
 */
public final class ModelRef<T> implements Serializable {
    @Serial
    private static final long serialVersionUID = 1L;

    private final long id;
    private final long version;
    private final byte[] header;
    private final long frameBytes;
    private final String driverAddress;
    private final Class<T> type;
    /** The driver's CUDA IPC address, or {@code null} (none, or a handle serialized before there were any). */
    private final String driverIpcAddress;
    /** The driver's host identity, {@code null} when {@link #driverIpcAddress} is. */
    private final String driverHostId;

    ModelRef(long id, long version, byte[] header, Addresses driver, Class<T> type) {
        this.id = id;
        this.version = version;
        this.header = header.clone();
        this.frameBytes = Serialized.parseHeader(header, Limits.DEFAULT).totalFrameBytes();
        this.driverAddress = driver.tcp();
        this.driverIpcAddress = driver.hasIpc() ? driver.ipc() : null;
        this.driverHostId = driver.hasIpc() ? driver.hostId() : null;
        this.type = type;
    }

    /** The model's id, one per broadcast value of the driver. */
    public long id() {
        return id;
    }

    /** The model's version: it goes up each time the same value is broadcast again. */
    public long version() {
        return version;
    }

    /** The model's serialized header (msgpack: types, parameters, frame descriptors). */
    public byte[] header() {
        return header.clone();
    }

    /** The bytes of the model's frames. */
    public long frameBytes() {
        return frameBytes;
    }

    /** Where the driver's cuwire endpoint listens on TCP. */
    public String driverAddress() {
        return driverAddress;
    }

    /** Where the driver's cuwire endpoint listens on CUDA IPC, if it does. */
    public Optional<String> driverIpcAddress() {
        return Optional.ofNullable(driverIpcAddress);
    }

    /** The model's type. */
    public Class<T> type() {
        return type;
    }

    /**
     * The model, for use until the lease is closed: the cached copy in this JVM, fetched first when this JVM does
     * not have it. Do not close the model itself; it belongs to the cache (or, on the driver, to the caller of
     * {@code broadcast}).
     *
     * @throws IllegalStateException if the model was released, or this JVM has no cuwire endpoint (no plugin)
     */
    public Lease<T> acquire() {
        Addresses driver = driverIpcAddress == null
                ? Addresses.tcpOnly(driverAddress)
                : new Addresses(driverAddress, driverIpcAddress, driverHostId);
        TaskContext task = TaskContext.get();
        String transport = task == null ? null : task.getLocalProperty(TransportMode.SETTING);
        ModelCache.Lease l = Node.current()
                .acquire(new Node.Wanted(id, version, frameBytes, driver.encode(), transport, toString()));
        T value = type.cast(l.value());
        return new Lease<>(value, l);
    }

    /** Applies {@code f} to the model while it is held; returns what {@code f} returns. */
    public <R> R apply(Function<? super T, ? extends R> f) {
        try (Lease<T> l = acquire()) {
            return f.apply(l.value());
        }
    }

    @Override
    public String toString() {
        return "model " + id + " v" + version + " (" + type.getSimpleName() + ", " + frameBytes + " frame bytes, from "
                + driverAddress + ")";
    }

    /**
     * A model in use.
     *
     * @param <T> the model's type
     */
    public static final class Lease<T> implements AutoCloseable {
        private final T value;
        private final ModelCache.Lease lease;

        Lease(T value, ModelCache.Lease lease) {
            this.value = value;
            this.lease = lease;
        }

        /** The model; valid until {@link #close()}. */
        public T value() {
            return value;
        }

        /** Releases the model (an evicted model is closed after its last lease). */
        @Override
        public void close() {
            lease.close();
        }
    }
}
