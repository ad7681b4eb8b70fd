package io.cuwire.cuda;

/**
 * Counters of one CUDA device's memory pool ({@link Cuda#poolStats}).
 *
 * @param cachedBytes bytes of freed blocks kept for reuse
 * @param cachedBlocks number of those blocks
 * @param inUseBytes bytes of blocks held by open buffers (block sizes, not requested sizes)
 * @param requests allocations asked of the pool
 * @param hits requests served from cached blocks, without {@code cuMemAlloc}
 * @param driverAllocations {@code cuMemAlloc} calls (including failed ones)
 * @param driverFrees {@code cuMemFree} calls (by trimming)
 */
public record PoolStats(
        long cachedBytes,
        long cachedBlocks,
        long inUseBytes,
        long requests,
        long hits,
        long driverAllocations,
        long driverFrees) {}
