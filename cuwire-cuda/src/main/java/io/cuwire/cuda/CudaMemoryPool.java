package io.cuwire.cuda;

import io.cuwire.memory.AllocationLimitException;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.MemoryKind;
import io.cuwire.memory.MemoryResource;
import java.util.Deque;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A {@link CudaDevice}'s memory: a caching pool over {@code cuMemAlloc}. A request is rounded up to a block size
 * ({@link #blockSize}: a power of two from 256 bytes up to 1 MiB, then a multiple of 2 MiB); a closed buffer's
 * block goes back to the pool for the next request of that size, so steady-state allocation makes no driver call.
 * Every block is a whole {@code cuMemAlloc} allocation, so an IPC handle of a buffer refers to that block alone.
 * When {@code cuMemAlloc} runs out of memory the pool frees its cached blocks and tries once more. {@link #trim()}
 * frees the cached blocks.
 *
 * <h2>Limits</h2>
 * {@link Limits}: the most bytes the pool holds from the driver, in use and cached together
 * ({@value #MAX_BYTES_PROPERTY}; an allocation past it frees the cached blocks first, then is refused), and the most
 * bytes of freed blocks it keeps for reuse ({@value #MAX_CACHED_BYTES_PROPERTY}; a closed buffer's block that would
 * pass it goes back to the driver).
 * Both count block sizes; by default neither is limited but by the device's memory. The first bounds what one process
 * takes of a GPU that several share (two workers on one device); the second what it keeps idle.
 *
 * <p>The pool is one of its device's {@link io.cuwire.memory.MemoryHolder}s: a failed allocation's report names its
 * bytes in use and cached. Thread-safe.
 */
final class CudaMemoryPool implements MemoryResource<DeviceBuffer> {
    /** Smallest block. */
    public static final long MIN_BLOCK = 256;
    /** Largest block size rounded up to a power of two; larger ones round up to {@link #LARGE_GRANULE}. */
    public static final long SMALL_MAX = 1L << 20;
    /** Granularity of large blocks. */
    public static final long LARGE_GRANULE = 2L << 20;
    /** System property: the most bytes a device's pool holds, in use and cached (block sizes). */
    public static final String MAX_BYTES_PROPERTY = "cuwire.cuda.pool.maxBytes";
    /** System property: the most bytes of freed blocks a device's pool keeps for reuse. */
    public static final String MAX_CACHED_BYTES_PROPERTY = "cuwire.cuda.pool.maxCachedBytes";

    /**
     * A pool's limits, in bytes of blocks; {@link Long#MAX_VALUE} is none.
     *
     * @param maxBytes the most bytes held from the driver, in use and cached
     * @param maxCachedBytes the most bytes of freed blocks kept for reuse
     */
    public record Limits(long maxBytes, long maxCachedBytes) {
        /** No limit but the device's memory. */
        public static final Limits NONE = new Limits(Long.MAX_VALUE, Long.MAX_VALUE);

        public Limits {
            if (maxBytes < 1 || maxCachedBytes < 0) {
                throw new IllegalArgumentException("maxBytes: " + maxBytes + ", maxCachedBytes: " + maxCachedBytes
                        + " (expected: maxBytes >= 1, maxCachedBytes >= 0)");
            }
        }

        /**
         * The limits {@value #MAX_BYTES_PROPERTY} and {@value #MAX_CACHED_BYTES_PROPERTY} set.
         *
         * @throws IllegalArgumentException naming the property when one is not a number of bytes
         */
        public static Limits fromSystemProperties() {
            return parse(System.getProperty(MAX_BYTES_PROPERTY), System.getProperty(MAX_CACHED_BYTES_PROPERTY));
        }

        /** The limits of the two properties' values ({@code null}: not set). */
        static Limits parse(String maxBytes, String maxCachedBytes) {
            return new Limits(
                    bytes(MAX_BYTES_PROPERTY, maxBytes, 1), bytes(MAX_CACHED_BYTES_PROPERTY, maxCachedBytes, 0));
        }

        private static long bytes(String property, String value, long min) {
            if (value == null) {
                return Long.MAX_VALUE;
            }
            try {
                long v = Long.parseLong(value.strip());
                if (v >= min) {
                    return v;
                }
            } catch (NumberFormatException e) {
                // refused below
            }
            throw new IllegalArgumentException(
                    "-D" + property + "=" + value + " (expected: a number of bytes >= " + min + ")");
        }

        private static String describe(long limit, String property) {
            return limit == Long.MAX_VALUE ? "none" : limit + " (-D" + property + ")";
        }
    }

    private final CudaDevice device;
    private final Limits limits;
    private final Map<Long, Deque<Long>> free = new ConcurrentHashMap<>();
    private final AtomicLong cachedBytes = new AtomicLong();
    private final AtomicLong cachedBlocks = new AtomicLong();
    private final AtomicLong inUseBytes = new AtomicLong();
    /** Bytes of blocks held from the driver (in use, cached, or being allocated), against {@code maxBytes}. */
    private final AtomicLong heldBytes = new AtomicLong();

    private final AtomicLong requests = new AtomicLong();
    private final AtomicLong hits = new AtomicLong();
    private final AtomicLong driverAllocations = new AtomicLong();
    private final AtomicLong driverFrees = new AtomicLong();
    private final Set<Long> driverBlocks = ConcurrentHashMap.newKeySet();

    CudaMemoryPool(CudaDevice device, Limits limits) {
        this.device = device;
        this.limits = limits;
    }

    /** The block size that serves a request of {@code bytes}. */
    public static long blockSize(long bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("bytes: " + bytes + " (expected: >= 0)");
        }
        if (bytes <= MIN_BLOCK) {
            return MIN_BLOCK;
        }
        if (bytes <= SMALL_MAX) {
            return Long.highestOneBit(bytes - 1) << 1;
        }
        if (bytes > Long.MAX_VALUE - LARGE_GRANULE) {
            throw new AllocationLimitException("cannot allocate " + bytes + " bytes of CUDA memory");
        }
        return (bytes + LARGE_GRANULE - 1) / LARGE_GRANULE * LARGE_GRANULE;
    }

    @Override
    public MemoryKind kind() {
        return MemoryKind.DEVICE;
    }

    @Override
    public int deviceOrdinal() {
        return device.ordinal();
    }

    @Override
    public DeviceBuffer allocate(long bytes) {
        long size = blockSize(bytes);
        requests.incrementAndGet();
        Long cached = take(size);
        long ptr;
        if (cached != null) {
            hits.incrementAndGet();
            ptr = cached;
        } else {
            hold(size, bytes);
            try {
                ptr = allocateBlock(size, bytes);
            } catch (RuntimeException e) {
                heldBytes.addAndGet(-size);
                throw e;
            }
        }
        inUseBytes.addAndGet(size);
        return DeviceBuffer.owning(device, new CudaAllocation(ptr, size), bytes, () -> recycle(ptr, size));
    }

    private Long take(long size) {
        Deque<Long> blocks = free.get(size);
        Long ptr = blocks == null ? null : blocks.pollFirst();
        if (ptr != null) {
            cachedBytes.addAndGet(-size);
            cachedBlocks.decrementAndGet();
        }
        return ptr;
    }

    /**
     * Counts a new block of {@code size} against {@code maxBytes}, freeing the cached blocks first if it would pass.
     *
     * @throws AllocationLimitException if it passes the limit even then
     */
    private void hold(long size, long bytes) {
        if (heldBytes.addAndGet(size) <= limits.maxBytes()) {
            return;
        }
        heldBytes.addAndGet(-size);
        long released = trim();
        if (heldBytes.addAndGet(size) <= limits.maxBytes()) {
            return;
        }
        long held = heldBytes.addAndGet(-size);
        throw new AllocationLimitException(describe() + " cannot allocate " + bytes + " bytes (a block of " + size
                + "): it holds " + held + " bytes (" + inUseBytes.get() + " in use, " + cachedBytes.get() + " cached, "
                + released + " cached bytes freed before this), and its limit is " + limits.maxBytes() + " (-D"
                + MAX_BYTES_PROPERTY + ")");
    }

    private void recycle(long ptr, long size) {
        inUseBytes.addAndGet(-size);
        if (cachedBytes.addAndGet(size) > limits.maxCachedBytes()) {
            cachedBytes.addAndGet(-size);
            release(ptr, size);
            return;
        }
        free.computeIfAbsent(size, s -> new ConcurrentLinkedDeque<>()).addFirst(ptr);
        cachedBlocks.incrementAndGet();
    }

    /** Gives a block that is neither cached nor in use back to the driver. */
    private void release(long ptr, long size) {
        driverFrees.incrementAndGet();
        device.forgetExport(ptr);
        driverBlocks.remove(ptr);
        heldBytes.addAndGet(-size);
        Driver.memFree(device, ptr);
    }

    private long allocateBlock(long size, long bytes) {
        CudaException failure;
        try {
            driverAllocations.incrementAndGet();
            return block(Driver.memAlloc(device, size));
        } catch (CudaException e) {
            if (e.result() != Driver.CUDA_ERROR_OUT_OF_MEMORY) {
                throw e;
            }
            failure = e;
        }
        long released = trim();
        if (released > 0) {
            try {
                driverAllocations.incrementAndGet();
                return block(Driver.memAlloc(device, size));
            } catch (CudaException e) {
                if (e.result() != Driver.CUDA_ERROR_OUT_OF_MEMORY) {
                    throw e;
                }
                failure = e;
            }
        }
        String freeNow;
        try {
            freeNow = Driver.memGetInfo(device)[0] + " of " + device.totalMemory() + " bytes free on the device";
        } catch (CudaException e) {
            freeNow = "free memory unknown (" + e.getMessage() + ")";
        }
        throw new AllocationLimitException(
                describe() + " cannot allocate " + bytes + " bytes (a block of " + size
                        + "): " + failure.getMessage() + "; " + freeNow + ", " + inUseBytes.get() + " bytes in use from"
                        + " this pool, " + released + " cached bytes freed before retrying",
                failure);
    }

    private long block(long ptr) {
        driverBlocks.add(ptr);
        return ptr;
    }

    /** Whether {@code ptr} is the start of one of this pool's blocks (a whole {@code cuMemAlloc} allocation). */
    boolean isBlock(long ptr) {
        return driverBlocks.contains(ptr);
    }

    /** Frees every cached block; returns the bytes freed. */
    public long trim() {
        long released = 0;
        for (Map.Entry<Long, Deque<Long>> e : free.entrySet()) {
            long size = e.getKey();
            Long ptr;
            while ((ptr = e.getValue().pollFirst()) != null) {
                cachedBytes.addAndGet(-size);
                cachedBlocks.decrementAndGet();
                release(ptr, size);
                released += size;
            }
        }
        return released;
    }

    /** The pool's counters now. */
    public PoolStats stats() {
        return new PoolStats(
                cachedBytes.get(),
                cachedBlocks.get(),
                inUseBytes.get(),
                requests.get(),
                hits.get(),
                driverAllocations.get(),
                driverFrees.get());
    }

    /** The pool's limits. */
    public Limits limits() {
        return limits;
    }

    /** The pool's line in its device's memory report; {@code null} when it holds nothing. */
    String describeHolding() {
        long inUse = inUseBytes.get();
        long cached = cachedBytes.get();
        if (inUse == 0 && cached == 0) {
            return null;
        }
        return "CUDA memory pool of " + device + ": " + inUse + " bytes of blocks in use, " + cached + " cached in "
                + cachedBlocks.get() + " block(s) (freed to the driver before an allocation fails); limits: total "
                + Limits.describe(limits.maxBytes(), MAX_BYTES_PROPERTY) + ", cached "
                + Limits.describe(limits.maxCachedBytes(), MAX_CACHED_BYTES_PROPERTY);
    }

    @Override
    public String describe() {
        return "DEVICE:" + device + " pool";
    }
}
