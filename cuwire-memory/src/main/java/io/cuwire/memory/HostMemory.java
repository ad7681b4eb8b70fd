package io.cuwire.memory;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Ordinary host memory outside the Java heap: one shared arena per buffer (closed by the buffer's close, after which
 * its segment can no longer be used), 64-byte aligned and zeroed, so its pages are touched when it is handed out.
 */
public final class HostMemory implements MemoryResource<HostBuffer> {
    /** Alignment of every host buffer: a cache line, enough for any element type and vector loads. */
    public static final long ALIGNMENT = 64;

    private static final HostMemory INSTANCE = new HostMemory(MemoryKind.HOST);

    private final MemoryKind kind;

    private HostMemory(MemoryKind kind) {
        this.kind = kind;
    }

    /** The process's host memory. */
    public static MemoryResource<HostBuffer> resource() {
        return INSTANCE;
    }

    /**
     * Host memory labelled {@link MemoryKind#PINNED}, for device platforms that have no page-locking of their own
     * (the emulated device): the copy engine treats and counts it as pinned.
     */
    public static MemoryResource<HostBuffer> labelledPinned() {
        return new HostMemory(MemoryKind.PINNED);
    }

    @Override
    public MemoryKind kind() {
        return kind;
    }

    @Override
    public int deviceOrdinal() {
        return Buffer.HOST_ORDINAL;
    }

    @Override
    public HostBuffer allocate(long bytes) {
        Arena arena = Arena.ofShared();
        MemorySegment segment;
        try {
            segment = arena.allocate(bytes, ALIGNMENT);
        } catch (OutOfMemoryError e) {
            arena.close();
            throw new AllocationLimitException("cannot allocate " + bytes + " bytes of " + kind + " memory", e);
        }
        return HostBuffer.owning(kind, segment, arena::close);
    }

    @Override
    public String describe() {
        return kind.name();
    }
}
