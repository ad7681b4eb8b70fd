package io.cuwire.cuda.internal;

import io.cuwire.cuda.CudaException;
import io.cuwire.cuda.PoolStats;
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
 * frees the cached blocks. Thread-safe.
 */
public final class CudaMemoryPool implements MemoryResource<DeviceBuffer> {
    /** Smallest block. */
    public static final long MIN_BLOCK = 256;
    /** Largest block size rounded up to a power of two; larger ones round up to {@link #LARGE_GRANULE}. */
    public static final long SMALL_MAX = 1L << 20;
    /** Granularity of large blocks. */
    public static final long LARGE_GRANULE = 2L << 20;

    private final CudaDevice device;
    private final Map<Long, Deque<Long>> free = new ConcurrentHashMap<>();
    private final AtomicLong cachedBytes = new AtomicLong();
    private final AtomicLong cachedBlocks = new AtomicLong();
    private final AtomicLong inUseBytes = new AtomicLong();
    private final AtomicLong requests = new AtomicLong();
    private final AtomicLong hits = new AtomicLong();
    private final AtomicLong driverAllocations = new AtomicLong();
    private final AtomicLong driverFrees = new AtomicLong();
    private final Set<Long> driverBlocks = ConcurrentHashMap.newKeySet();

    CudaMemoryPool(CudaDevice device) {
        this.device = device;
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
            ptr = allocateBlock(size, bytes);
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

    private void recycle(long ptr, long size) {
        inUseBytes.addAndGet(-size);
        free.computeIfAbsent(size, s -> new ConcurrentLinkedDeque<>()).addFirst(ptr);
        cachedBytes.addAndGet(size);
        cachedBlocks.incrementAndGet();
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
        throw new AllocationLimitException(describe() + " cannot allocate " + bytes + " bytes (a block of " + size
                + "): " + failure.getMessage() + "; " + freeNow + ", " + inUseBytes.get() + " bytes in use from"
                + " this pool, " + released + " cached bytes freed before retrying", failure);
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
                driverFrees.incrementAndGet();
                device.forgetExport(ptr);
                driverBlocks.remove(ptr);
                Driver.memFree(device, ptr);
                released += size;
            }
        }
        return released;
    }

    /** The pool's counters now. */
    public PoolStats stats() {
        return new PoolStats(cachedBytes.get(), cachedBlocks.get(), inUseBytes.get(), requests.get(), hits.get(),
                driverAllocations.get(), driverFrees.get());
    }

    @Override
    public String describe() {
        return "DEVICE:" + device + " pool";
    }
}
