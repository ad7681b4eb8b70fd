package io.cuwire.memory;

import java.lang.foreign.MemorySegment;
import java.util.Objects;

/** Host ({@link MemoryKind#HOST}) or pinned ({@link MemoryKind#PINNED}) memory the host reads as a segment. */
public final class HostBuffer extends Buffer {
    private final MemorySegment segment;

    private HostBuffer(MemoryKind kind, MemorySegment segment, Releaser releaser) {
        super(kind, segment.byteSize(), releaser);
        this.segment = segment;
    }

    private HostBuffer(HostBuffer parent, long offset, long length) {
        super(parent, offset, length);
        this.segment = parent.segment.asSlice(offset, length);
    }

    private HostBuffer(HostBuffer lender, Releaser onReturn) {
        super(lender, onReturn, null);
        this.segment = lender.segment;
    }

    /**
     * A buffer owning {@code segment}; {@code releaser} frees it on close. For {@link MemoryResource}
     * implementations: users get owned buffers from a {@link BufferAllocator}.
     */
    public static HostBuffer owning(MemoryKind kind, MemorySegment segment, Releaser releaser) {
        if (kind == MemoryKind.DEVICE) {
            throw new IllegalArgumentException("a HostBuffer holds HOST or PINNED memory, not " + kind);
        }
        return new HostBuffer(kind, segment, Objects.requireNonNull(releaser, "releaser"));
    }

    /**
     * Wraps memory that cuwire does not own (a heap array's segment, a mapped file): {@code close()} only ends this
     * buffer's use. The copy engine treats it as pageable host memory. A heap segment has no native address: a
     * transport sending it as a frame copies it chunk by chunk through native staging memory of its own (never whole),
     * and receivers get their frames in native memory.
     */
    public static HostBuffer wrap(MemorySegment segment) {
        return new HostBuffer(MemoryKind.HOST, segment, Releaser.NONE);
    }

    /** The memory, valid until this buffer (or the buffer it was sliced from) is closed. */
    public MemorySegment segment() {
        checkOpen();
        return segment;
    }

    @Override
    public int deviceOrdinal() {
        return HOST_ORDINAL;
    }

    @Override
    public HostBuffer slice(long offset, long length) {
        checkSlice(offset, length);
        return new HostBuffer(this, offset, length);
    }

    @Override
    public HostBuffer lend(Releaser onReturn) {
        checkOpen();
        return new HostBuffer(this, onReturn);
    }

    @Override
    public String describe() {
        return kind() + "[" + byteSize() + " bytes]";
    }
}
