package io.cuwire.memory;

/**
 * Something registered with an owner (a {@link MemoryHolder} with its {@link Device}, a
 * {@link BufferAllocator.Reclaimer} with its allocator), until {@link #close()} takes it off. Closing twice is
 * harmless. Thread-safe.
 */
public interface Registration extends AutoCloseable {
    /** Takes the registration off; later calls do nothing. */
    @Override
    void close();
}
