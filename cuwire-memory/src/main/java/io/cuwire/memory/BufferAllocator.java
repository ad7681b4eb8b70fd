package io.cuwire.memory;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Hands out buffers of one {@link MemoryResource} and keeps their accounts: bytes outstanding, peak, a limit, and the
 * live buffers themselves, so that closing an allocator that still has buffers out fails with a report of them.
 *
 * <p>Allocators form a tree: {@link #newChild} makes a named child whose allocations also count against every
 * ancestor's limit. A child's name is its path ({@code worker/recv}).
 *
 * <p>Closing: {@link #close()} with open buffers or open children throws {@link MemoryLeakException} naming the
 * allocator, the bytes and every open buffer (its own and its open children's). Set the system property
 * {@value #TRACK_PROPERTY}{@code =true} to record a stack for every allocation; the leak report then shows where each
 * leaked buffer was allocated. The report names the property either way. Buffers released after the allocator was
 * closed still return their bytes. Closing twice is an error.
 *
 * <h2>Memory pressure</h2>
 * An allocation that fails with {@link AllocationLimitException} — this allocator's or an ancestor's limit, or the
 * memory itself exhausted — first asks the {@link Reclaimer}s registered with this allocator and its ancestors
 * ({@link #addReclaimer}, nearest first) to free memory, and tries again after each one that freed some, until one
 * succeeds or none has anything left to free. An allocator of a device's memory made by {@link Device#newAllocator}
 * (and its children) then fails with the device's {@link DeviceMemoryReport} appended to the message: what holds the
 * device's memory. Such a root allocator is itself one of the device's {@link MemoryHolder}s until it is closed.
 *
 * <p>Thread-safe.
 *
 * @param <B> the buffer type
 */
public final class BufferAllocator<B extends Buffer> implements AutoCloseable {
    /** System property: {@code true} records an allocation stack for every buffer, shown in leak reports. */
    public static final String TRACK_PROPERTY = "cuwire.memory.trackAllocations";

    /** No limit beyond the memory itself. */
    public static final long UNLIMITED = Long.MAX_VALUE;

    private static final Object NO_STACK = new Object();
    /** Set while this thread runs reclaimers: an allocation they make does not reclaim in turn. */
    private static final ThreadLocal<Boolean> RECLAIMING = ThreadLocal.withInitial(() -> Boolean.FALSE);

    /**
     * Frees memory when an allocation would fail: a cache that can drop what it keeps (a worker's unused models).
     * Called on the allocating thread, with no lock of the allocator held, possibly by several threads at once.
     */
    @FunctionalInterface
    public interface Reclaimer {
        /**
         * Frees some memory that allocations of this allocator's tree (or of its device) could use, so that an
         * allocation of {@code bytes} may succeed; the allocation is then tried again.
         *
         * @return whether anything was freed; {@code false} when there is nothing (more) to free, which ends the tries
         */
        boolean reclaim(long bytes);
    }

    private final String name;
    private final long limit;
    private final BufferAllocator<B> parent;
    private final MemoryResource<B> resource;
    private final boolean track;
    private final AtomicLong allocated = new AtomicLong();
    private final AtomicLong peak = new AtomicLong();
    private final Map<Buffer, Object> live = new ConcurrentHashMap<>();
    private final Map<BufferAllocator<B>, Boolean> children = new ConcurrentHashMap<>();
    private final List<Reclaimer> reclaimers = new CopyOnWriteArrayList<>();
    /** The device whose memory this is, when made by {@link Device#newAllocator}; else {@code null}. */
    private final Device device;
    /** A root's registration as a holder of its device's memory; {@code null} for children and other memory. */
    private final Registration holding;

    private volatile boolean closed;

    private BufferAllocator(
            String name, long limit, BufferAllocator<B> parent, MemoryResource<B> resource, Device device) {
        if (limit < 0) {
            throw new IllegalArgumentException("limit: " + limit + " (expected: >= 0)");
        }
        this.name = Objects.requireNonNull(name, "name");
        this.limit = limit;
        this.parent = parent;
        this.resource = Objects.requireNonNull(resource, "resource");
        this.track = Boolean.getBoolean(TRACK_PROPERTY);
        this.device = device;
        this.holding = device != null && parent == null ? device.addMemoryHolder(this::describeHolding) : null;
    }

    /**
     * A root allocator over {@code resource} that refuses to hold more than {@code limit} bytes at once. For a
     * device's memory prefer {@link Device#newAllocator}, whose failures name what holds the device's memory.
     */
    public static <B extends Buffer> BufferAllocator<B> root(String name, long limit, MemoryResource<B> resource) {
        return new BufferAllocator<>(name, limit, null, resource, null);
    }

    /** A root allocator of {@code device}'s memory {@code resource}: see {@link Device#newAllocator}. */
    static BufferAllocator<DeviceBuffer> ofDevice(
            String name, long limit, MemoryResource<DeviceBuffer> resource, Device device) {
        return new BufferAllocator<>(name, limit, null, resource, Objects.requireNonNull(device, "device"));
    }

    /** A root allocator of ordinary host memory. */
    public static BufferAllocator<HostBuffer> host(String name, long limit) {
        return root(name, limit, HostMemory.resource());
    }

    /** A child counting against this allocator's (and its ancestors') limits as well as its own. */
    public BufferAllocator<B> newChild(String childName, long childLimit) {
        checkNotClosed();
        BufferAllocator<B> child = new BufferAllocator<>(name + "/" + childName, childLimit, this, resource, device);
        children.put(child, Boolean.TRUE);
        return child;
    }

    /**
     * Allocates {@code bytes} of this allocator's memory; under pressure the {@link Reclaimer}s are asked first (see
     * the class comment).
     *
     * @throws AllocationLimitException if this allocator or an ancestor would pass its limit, or the memory is
     *     not there, and the reclaimers could not free enough; for a device allocator of {@link Device#newAllocator}
     *     the message ends with the device's {@link DeviceMemoryReport}
     * @throws IllegalStateException if the allocator is closed
     */
    public B allocate(long bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("bytes: " + bytes + " (expected: >= 0)");
        }
        checkNotClosed();
        AllocationLimitException refused;
        try {
            return allocateOnce(bytes);
        } catch (AllocationLimitException e) {
            refused = e;
        }
        while (reclaim(bytes)) {
            try {
                return allocateOnce(bytes);
            } catch (AllocationLimitException e) {
                refused = e;
            }
        }
        if (device == null) {
            throw refused;
        }
        throw new AllocationLimitException(refused.getMessage() + "\n" + device.memoryReport(), refused);
    }

    /**
     * Registers {@code reclaimer}, asked to free memory when an allocation of this allocator or of a descendant would
     * fail, until the registration is closed.
     */
    public Registration addReclaimer(Reclaimer reclaimer) {
        Reclaimer r = Objects.requireNonNull(reclaimer, "reclaimer");
        reclaimers.add(r);
        return () -> reclaimers.remove(r);
    }

    /** Asks the reclaimers of this allocator and its ancestors, nearest first, until one frees something. */
    private boolean reclaim(long bytes) {
        if (RECLAIMING.get()) {
            return false;
        }
        RECLAIMING.set(Boolean.TRUE);
        try {
            for (BufferAllocator<B> a = this; a != null; a = a.parent) {
                for (Reclaimer r : a.reclaimers) {
                    if (r.reclaim(bytes)) {
                        return true;
                    }
                }
            }
            return false;
        } finally {
            RECLAIMING.set(Boolean.FALSE);
        }
    }

    private B allocateOnce(long bytes) {
        reserve(bytes);
        B buffer;
        try {
            buffer = resource.allocate(bytes);
        } catch (RuntimeException | Error e) {
            unreserve(bytes);
            throw e;
        }
        buffer.attachOwner(this);
        live.put(buffer, track ? new Throwable("allocated here") : NO_STACK);
        return buffer;
    }

    private void reserve(long bytes) {
        BufferAllocator<B> a = this;
        while (a != null) {
            long now = a.allocated.addAndGet(bytes);
            if (now > a.limit || now < 0) {
                a.allocated.addAndGet(-bytes);
                for (BufferAllocator<B> b = this; b != a; b = b.parent) {
                    b.allocated.addAndGet(-bytes);
                }
                throw new AllocationLimitException("allocator '" + a.name + "' cannot allocate " + bytes + " bytes of "
                        + resource.describe() + ": " + (now - bytes) + " allocated, limit " + a.limit);
            }
            a.peak.accumulateAndGet(now, Math::max);
            a = a.parent;
        }
    }

    private void unreserve(long bytes) {
        for (BufferAllocator<B> a = this; a != null; a = a.parent) {
            a.allocated.addAndGet(-bytes);
        }
    }

    void released(Buffer buffer) {
        if (live.remove(buffer) != null) {
            unreserve(buffer.byteSize());
        }
    }

    /** The allocator's path, e.g. {@code client/recv}. */
    public String name() {
        return name;
    }

    /** The limit in bytes. */
    public long limit() {
        return limit;
    }

    /** Bytes held by open buffers of this allocator and its children. */
    public long allocatedBytes() {
        return allocated.get();
    }

    /** The most bytes held at once. */
    public long peakBytes() {
        return peak.get();
    }

    /** Open buffers allocated here (not counting children's). */
    public int openBuffers() {
        return live.size();
    }

    /** The memory this allocator hands out. */
    public MemoryResource<B> resource() {
        return resource;
    }

    /** Whether {@link #close()} was called. */
    public boolean isClosed() {
        return closed;
    }

    private void checkNotClosed() {
        if (closed) {
            throw new IllegalStateException("allocator '" + name + "' is closed");
        }
    }

    /**
     * Closes the allocator.
     *
     * @throws MemoryLeakException if buffers or children are still open; the message names this allocator, the
     *     leaked bytes, each open buffer (this allocator's and its open children's, with its allocation stack when
     *     {@value #TRACK_PROPERTY} is set) and, when there are open buffers, that property
     * @throws IllegalStateException if already closed
     */
    @Override
    public void close() {
        checkNotClosed();
        closed = true;
        if (parent != null) {
            parent.children.remove(this);
        }
        if (holding != null) {
            holding.close();
        }
        List<String> openChildren = new ArrayList<>();
        for (BufferAllocator<B> child : children.keySet()) {
            openChildren.add("'" + child.name + "' (" + child.allocatedBytes() + " bytes)");
        }
        Map<Buffer, Leak> leaked = new LinkedHashMap<>();
        collectLive(leaked);
        if (leaked.isEmpty() && openChildren.isEmpty()) {
            return;
        }
        long leakedBytes = allocated.get();
        StringBuilder msg = new StringBuilder("allocator '")
                .append(name)
                .append("' closed with ")
                .append(leakedBytes)
                .append(" bytes outstanding in ")
                .append(leaked.size())
                .append(" open buffer(s)");
        if (!openChildren.isEmpty()) {
            msg.append(" and open child allocator(s) ").append(String.join(", ", openChildren));
        }
        boolean withoutStack = false;
        for (Map.Entry<Buffer, Leak> e : leaked.entrySet()) {
            msg.append("\n  leaked ").append(e.getKey().describe());
            if (e.getValue().allocator() != this) {
                msg.append(" of '").append(e.getValue().allocator().name).append("'");
            }
            if (e.getValue().stack() instanceof Throwable stack) {
                for (StackTraceElement frame : stack.getStackTrace()) {
                    msg.append("\n      at ").append(frame);
                }
            } else {
                withoutStack = true;
            }
        }
        if (withoutStack) {
            msg.append("\n  (run with -D").append(TRACK_PROPERTY).append("=true to record allocation stacks)");
        } else if (!leaked.isEmpty()) {
            msg.append("\n  (allocation stacks recorded by -D")
                    .append(TRACK_PROPERTY)
                    .append("=true)");
        }
        throw new MemoryLeakException(msg.toString(), leakedBytes);
    }

    /** An open buffer in a leak report: the allocator that handed it out and its stack (or {@link #NO_STACK}). */
    private record Leak(BufferAllocator<?> allocator, Object stack) {}

    /** Adds the open buffers of this allocator and of its open descendants to {@code into}. */
    private void collectLive(Map<Buffer, Leak> into) {
        for (Map.Entry<Buffer, Object> e : Map.copyOf(live).entrySet()) {
            into.put(e.getKey(), new Leak(this, e.getValue()));
        }
        for (BufferAllocator<B> child : children.keySet()) {
            child.collectLive(into);
        }
    }

    /**
     * This allocator's line in its device's report: its bytes and open buffers, and its children that hold bytes;
     * {@code null} when it holds nothing.
     */
    private String describeHolding() {
        long bytes = allocated.get();
        if (bytes == 0) {
            return null;
        }
        StringBuilder b = new StringBuilder("allocator '")
                .append(name)
                .append("': ")
                .append(bytes)
                .append(" bytes, ")
                .append(live.size())
                .append(" open buffer(s) of its own");
        if (limit != UNLIMITED) {
            b.append(", limit ").append(limit);
        }
        List<String> holdingChildren = new ArrayList<>();
        for (BufferAllocator<B> child : children.keySet()) {
            if (child.allocatedBytes() > 0) {
                holdingChildren.add("'" + child.name + "' " + child.allocatedBytes() + " bytes");
            }
        }
        if (!holdingChildren.isEmpty()) {
            b.append("; children ").append(String.join(", ", holdingChildren));
        }
        return b.toString();
    }

    @Override
    public String toString() {
        return "BufferAllocator[" + name + ", " + resource.describe() + ", " + allocated.get() + "/" + limit + "]";
    }
}
