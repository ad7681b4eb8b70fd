package io.cuwire.memory;

import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A range of memory of one {@link MemoryKind} on one device, with one owner.
 *
 * <h2>Kinds and devices</h2>
 * A buffer is either a {@link HostBuffer} ({@link MemoryKind#HOST} or {@link MemoryKind#PINNED}; the host reads it
 * through {@link HostBuffer#segment()}) or a {@link DeviceBuffer} ({@link MemoryKind#DEVICE}; the host never reads it:
 * every byte that enters or leaves goes through the {@link CopyEngine}, which counts it). {@link #deviceOrdinal()} is
 * the device the bytes live on, or {@link #HOST_ORDINAL} for host and pinned memory. Sizes and offsets are
 * {@code long}: buffers over 2 GiB are ordinary.
 *
 * <h2>Ownership and close policy</h2>
 * <table>
 *   <caption>Who closes what</caption>
 *   <tr><th>buffer</th><th>made by</th><th>{@code close()}</th></tr>
 *   <tr><td>owned</td><td>{@link BufferAllocator#allocate}, {@link MemoryResource#allocate}</td>
 *       <td>frees the memory and returns its bytes to the allocator's accounts</td></tr>
 *   <tr><td>wrapped</td><td>{@link HostBuffer#wrap}</td>
 *       <td>ends this buffer's use; the memory stays with whoever owns it</td></tr>
 *   <tr><td>imported</td><td>{@link Device#openHandle}</td><td>unmaps the memory of another process</td></tr>
 *   <tr><td>slice</td><td>{@link #slice}</td><td>refused: a slice lives exactly as long as its parent</td></tr>
 *   <tr><td>loan</td><td>{@link #lend}</td>
 *       <td>gives the memory back to the lender (runs its callback); frees nothing</td></tr>
 * </table>
 * Closing a buffer twice is an error ({@link IllegalStateException}): it means two parties thought they owned it.
 * Using a closed buffer, or a slice of one, throws {@link IllegalStateException}.
 *
 * <h2>Threads</h2>
 * Buffers are safe to share between threads; {@code close()} must not race with copies still using the buffer.
 */
public abstract sealed class Buffer implements AutoCloseable permits HostBuffer, DeviceBuffer {
    /** The {@link #deviceOrdinal()} of host and pinned memory. */
    public static final int HOST_ORDINAL = -1;

    /** Frees the memory behind an owned buffer; called once, by {@link #close()}. */
    @FunctionalInterface
    public interface Releaser {
        /** A releaser for memory that the buffer does not own. */
        Releaser NONE = () -> {};

        void release();
    }

    private final MemoryKind kind;
    private final long byteSize;
    private final Buffer root;
    private final long rootOffset;
    private final Releaser releaser;
    private final AtomicBoolean closed;
    private final AtomicBoolean lenderClosed;
    private volatile BufferAllocator<?> owner;
    /** For a loan made with one: the allocator its borrower takes more such memory from ({@link #allocator()}). */
    private final BufferAllocator<?> lentFor;

    /** An owning (or wrapping) root buffer. */
    Buffer(MemoryKind kind, long byteSize, Releaser releaser) {
        if (byteSize < 0) {
            throw new IllegalArgumentException("byteSize: " + byteSize + " (expected: >= 0)");
        }
        this.kind = kind;
        this.byteSize = byteSize;
        this.root = this;
        this.rootOffset = 0;
        this.releaser = releaser;
        this.closed = new AtomicBoolean();
        this.lenderClosed = null;
        this.lentFor = null;
    }

    /**
     * A loan of {@code lender}'s memory: a root buffer of its own that frees nothing; {@code lentFor} (or
     * {@code null}) is what its {@link #allocator()} reports.
     */
    Buffer(Buffer lender, Releaser onReturn, BufferAllocator<?> lentFor) {
        this.kind = lender.kind;
        this.byteSize = lender.byteSize;
        this.root = this;
        this.rootOffset = lender.rootOffset;
        this.releaser = Objects.requireNonNull(onReturn, "onReturn");
        this.closed = new AtomicBoolean();
        this.lenderClosed = lender.root.closed;
        this.lentFor = lentFor;
    }

    /** A slice of {@code parent}: no memory of its own. */
    Buffer(Buffer parent, long offset, long length) {
        this.kind = parent.kind;
        this.byteSize = length;
        this.root = parent.root;
        this.rootOffset = parent.rootOffset + offset;
        this.releaser = Releaser.NONE;
        this.closed = parent.root.closed;
        this.lenderClosed = parent.root.lenderClosed;
        this.lentFor = null;
    }

    /** Where the bytes live. */
    public final MemoryKind kind() {
        return kind;
    }

    /** The ordinal of the device holding the bytes, or {@link #HOST_ORDINAL} for host and pinned memory. */
    public abstract int deviceOrdinal();

    /** Length in bytes. */
    public final long byteSize() {
        return byteSize;
    }

    /** Whether this buffer (or, for a slice, its parent) is still open. */
    public final boolean isOpen() {
        return !closed.get() && (lenderClosed == null || !lenderClosed.get());
    }

    /** Whether this buffer is a slice of another, living as long as it. */
    public final boolean isSlice() {
        return root != this;
    }

    /** Offset of this buffer's first byte within the buffer that owns the memory (0 unless a slice). */
    public final long rootOffset() {
        return rootOffset;
    }

    /** A view of {@code length} bytes from {@code offset}; it lives as long as this buffer and cannot be closed. */
    public abstract Buffer slice(long offset, long length);

    /**
     * Lends this buffer's memory to a borrower: the loan is a buffer of its own over the same bytes (no copy) that
     * the borrower owns and closes; closing it frees nothing and runs {@code onReturn} once, which is how the
     * lender learns that it may reuse or free the memory. The lender keeps this buffer open until then; a loan
     * whose lender was closed reports itself closed. Loans are not accounted by any allocator: their bytes are the
     * lender's ({@link DeviceBuffer#lend(Releaser, BufferAllocator)} names an allocator for the borrower's own).
     */
    public abstract Buffer lend(Releaser onReturn);

    /** Throws {@link IllegalStateException} if this buffer is closed. */
    public final void checkOpen() {
        if (closed.get()) {
            throw new IllegalStateException(describe() + " is closed");
        }
        if (lenderClosed != null && lenderClosed.get()) {
            throw new IllegalStateException(describe() + " is a loan whose lender closed its buffer");
        }
    }

    final void checkSlice(long offset, long length) {
        checkOpen();
        if (offset < 0 || length < 0 || offset > byteSize - length) {
            throw new IndexOutOfBoundsException("slice(offset: " + offset + ", length: " + length + ") of " + describe()
                    + " (expected: 0 <= offset <= offset + length <= " + byteSize + ")");
        }
    }

    final void attachOwner(BufferAllocator<?> allocator) {
        if (owner != null || isSlice()) {
            throw new IllegalStateException(describe() + " already belongs to allocator '" + owner.name() + "'");
        }
        owner = allocator;
    }

    /**
     * The allocator that accounts for this buffer, or {@code null} for wrapped, imported and unaccounted ones; for a
     * loan made with an allocator, that allocator (where its borrower takes more such memory from, though the loan's
     * bytes stay counted where the lender's are).
     */
    public final BufferAllocator<?> allocator() {
        BufferAllocator<?> a = root.owner;
        return a != null ? a : root.lentFor;
    }

    /**
     * Frees an owned buffer (returning its bytes to its allocator), ends a wrapped one, unmaps an imported one.
     *
     * @throws IllegalStateException if the buffer is a slice or is already closed
     */
    @Override
    public final void close() {
        if (isSlice()) {
            throw new IllegalStateException(describe() + " is a slice; close the buffer it was sliced from");
        }
        if (!closed.compareAndSet(false, true)) {
            throw new IllegalStateException(describe() + " is already closed");
        }
        try {
            releaser.release();
        } finally {
            BufferAllocator<?> allocator = owner;
            if (allocator != null) {
                allocator.released(this);
            }
        }
    }

    /** A short description: kind, device, size, e.g. {@code DEVICE:emulated0[1048576 bytes]}. */
    public abstract String describe();

    @Override
    public String toString() {
        return describe() + (isOpen() ? "" : " (closed)");
    }
}
