package io.cuwire.memory;

import java.util.ArrayDeque;
import java.util.Objects;
import java.util.TreeMap;

/**
 * Host (or pinned) memory that is kept after use and handed out again: a receiver that takes its frames from a pool
 * writes into pages that are already touched. On the virtual machines we run on, fresh memory is faulted in at
 * about 0.42 GB/s, slower than a loopback socket, so a transport receiving large frames needs this.
 *
 * <p>An allocation takes the smallest cached block of at least the requested size and at most twice it, else a new
 * block from the upstream resource; the buffer handed out is a view of exactly the requested size. Closing that
 * buffer returns its block to the pool, which keeps at most {@code maxCachedBytes} and frees the rest. Put a
 * {@link BufferAllocator} on top for accounts and limits, as with any resource.
 *
 * <p>{@link #close()} frees the cached blocks; blocks handed out before then are freed when they come back.
 * A second close throws {@link IllegalStateException}. Thread-safe.
 */
public final class HostMemoryPool implements MemoryResource<HostBuffer>, AutoCloseable {
    private final MemoryResource<HostBuffer> upstream;
    private final long maxCachedBytes;
    private final TreeMap<Long, ArrayDeque<HostBuffer>> cached = new TreeMap<>();
    private long cachedBytes;
    private boolean closed;

    /** A pool over {@code upstream} (ordinary or pinned host memory) keeping up to {@code maxCachedBytes}. */
    public HostMemoryPool(MemoryResource<HostBuffer> upstream, long maxCachedBytes) {
        this.upstream = Objects.requireNonNull(upstream, "upstream");
        if (maxCachedBytes < 0) {
            throw new IllegalArgumentException("maxCachedBytes: " + maxCachedBytes + " (expected: >= 0)");
        }
        this.maxCachedBytes = maxCachedBytes;
    }

    @Override
    public MemoryKind kind() {
        return upstream.kind();
    }

    @Override
    public int deviceOrdinal() {
        return Buffer.HOST_ORDINAL;
    }

    @Override
    public HostBuffer allocate(long bytes) {
        HostBuffer block = take(bytes);
        if (block == null) {
            block = upstream.allocate(bytes);
        }
        HostBuffer b = block;
        return HostBuffer.owning(kind(), b.segment().asSlice(0, bytes), () -> giveBack(b));
    }

    private synchronized HostBuffer take(long bytes) {
        var entry = cached.ceilingEntry(bytes);
        if (entry == null || entry.getKey() > Math.max(bytes * 2, bytes + 4096)) {
            return null;
        }
        HostBuffer block = entry.getValue().pop();
        if (entry.getValue().isEmpty()) {
            cached.remove(entry.getKey());
        }
        cachedBytes -= block.byteSize();
        return block;
    }

    private void giveBack(HostBuffer block) {
        synchronized (this) {
            if (!closed && cachedBytes + block.byteSize() <= maxCachedBytes) {
                cached.computeIfAbsent(block.byteSize(), k -> new ArrayDeque<>())
                        .push(block);
                cachedBytes += block.byteSize();
                return;
            }
        }
        block.close();
    }

    /** Bytes held in the pool, not handed out. */
    public synchronized long cachedBytes() {
        return cachedBytes;
    }

    /**
     * Frees the cached blocks; blocks still handed out are freed when they come back.
     *
     * @throws IllegalStateException if the pool was closed already
     */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                throw new IllegalStateException(describe() + " is already closed");
            }
            closed = true;
        }
        while (true) {
            HostBuffer block;
            synchronized (this) {
                var entry = cached.firstEntry();
                if (entry == null) {
                    cachedBytes = 0;
                    return;
                }
                block = entry.getValue().pop();
                if (entry.getValue().isEmpty()) {
                    cached.remove(entry.getKey());
                }
                cachedBytes -= block.byteSize();
            }
            block.close();
        }
    }

    @Override
    public String describe() {
        return upstream.describe() + " pool";
    }
}
