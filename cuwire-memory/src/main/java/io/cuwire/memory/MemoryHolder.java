package io.cuwire.memory;

/**
 * Something that holds a device's memory and can say what it holds: an entry of the device's
 * {@link DeviceMemoryReport}, which the message of an allocation that fails on the device includes. Owners register
 * their holders with the device ({@link Device#addMemoryHolder}): allocators made by {@link Device#newAllocator} do so
 * themselves, a platform registers its pool, and caches of device memory (a worker's models, a connection's IPC
 * mappings) register what they keep.
 *
 * <p>{@link #describeHolding()} is called on the thread whose allocation failed, with no allocator lock held; it must
 * be thread-safe, cheap, and must not allocate device memory.
 */
@FunctionalInterface
public interface MemoryHolder {
    /**
     * What this holds now, as one line naming the holder and its bytes, e.g. {@code model cache of worker 0: 2 models,
     * 100663296 bytes (1 in use by tasks)}; {@code null} or empty when it holds nothing worth naming.
     */
    String describeHolding();
}
