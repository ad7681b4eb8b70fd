package io.cuwire.memory;

/**
 * A source of memory of one kind on one device: the host heap outside the JVM's, a device's pool, pinned memory.
 * Allocators ({@link BufferAllocator}) sit on top of a resource and keep the accounts; a resource only allocates
 * and frees. Implementations are thread-safe.
 *
 * @param <B> the buffer type it hands out
 */
public interface MemoryResource<B extends Buffer> {
    /** The kind of memory it hands out. */
    MemoryKind kind();

    /** The device ordinal of that memory, or {@link Buffer#HOST_ORDINAL}. */
    int deviceOrdinal();

    /**
     * Allocates {@code bytes} (zero is allowed); the buffer frees itself on {@code close()}.
     *
     * @throws AllocationLimitException if the memory is not there
     */
    B allocate(long bytes);

    /** A short name for messages, e.g. {@code HOST} or {@code DEVICE:cuda0 pool}. */
    String describe();
}
