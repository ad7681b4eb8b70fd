package io.cuwire.spark;

import io.cuwire.cluster.runtime.ModelCache;
import io.cuwire.serialize.Limits;
import io.cuwire.serialize.Serialized;
import io.cuwire.spark.internal.Node;
import java.io.Serial;
import java.io.Serializable;
import java.util.function.Function;

/**
 * The small, Java-serializable handle of a model broadcast with {@link CuwireSpark#broadcast}: what Spark ships to
 * tasks (in closures, or through {@code sc.broadcast}) instead of the model. It holds the model's id and version,
 * its serialized header and the driver endpoint's address, never the frames and never the cluster secret (that
 * comes from the plugin). In a task, {@link #apply} or {@link #acquire} give the model: each executor JVM fetches
 * its frames once over cuwire's transport, into a cache keyed by model id, version and device, and later tasks of
 * that JVM use the cached copy.
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

    ModelRef(long id, long version, byte[] header, String driverAddress, Class<T> type) {
        this.id = id;
        this.version = version;
        this.header = header.clone();
        this.frameBytes = Serialized.parseHeader(header, Limits.DEFAULT).totalFrameBytes();
        this.driverAddress = driverAddress;
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

    /** Where the driver's cuwire endpoint listens. */
    public String driverAddress() {
        return driverAddress;
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
        ModelCache.Lease l =
                Node.current().acquire(new Node.Wanted(id, version, frameBytes, driverAddress, toString()));
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
