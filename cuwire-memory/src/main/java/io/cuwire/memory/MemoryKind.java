package io.cuwire.memory;

/** Where the bytes of a {@link Buffer} live. */
public enum MemoryKind {
    /** Ordinary (pageable) host memory. */
    HOST,
    /** Page-locked host memory that a device can reach by DMA; readable on the host like {@link #HOST}. */
    PINNED,
    /** Memory of one device; never read or written by the host except through the {@link CopyEngine}. */
    DEVICE;

    /** Whether the host can read this kind of memory directly. */
    public boolean isHostAccessible() {
        return this != DEVICE;
    }
}
