package io.cuwire.cluster.runtime;

import io.cuwire.cluster.rpc.Values;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The values a node keeps for its client by id (partitions scattered to it, tasks' results): a stored value belongs
 * to the store until {@link #free} or {@link #close}, which close it ({@link Values#close}). Ids start at 1 and are
 * never reused. Thread-safe.
 */
public final class ObjectStore implements AutoCloseable {
    private final Map<Long, Object> values = new ConcurrentHashMap<>();
    private final AtomicLong nextId = new AtomicLong(1);

    /** An empty store. */
    public ObjectStore() {}

    /**
     * Stores {@code value}; returns its id.
     *
     * @throws NullPointerException if {@code value} is {@code null}: there is nothing to store
     */
    public long put(Object value) {
        Objects.requireNonNull(value, "value");
        long id = nextId.getAndIncrement();
        values.put(id, value);
        return id;
    }

    /** The value stored as {@code id} (still the store's), or {@code null} if there is none. */
    public Object get(long id) {
        return values.get(id);
    }

    /** Closes and forgets the value stored as {@code id}, if any. */
    public void free(long id) {
        Values.close(values.remove(id));
    }

    /** The number of values stored. */
    public int size() {
        return values.size();
    }

    /** Closes and forgets every value. */
    @Override
    public void close() {
        for (Long id : values.keySet()) {
            free(id);
        }
    }
}
