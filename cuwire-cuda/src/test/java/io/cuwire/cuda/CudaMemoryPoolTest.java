package io.cuwire.cuda;

import static io.cuwire.cuda.CudaTestSupport.assumeCuda;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.cuwire.memory.AllocationLimitException;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.MemoryLeakException;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

class CudaMemoryPoolTest {
    private static final long MIB = 1L << 20;

    @Test
    void shouldRoundSmallRequestsToPowersOfTwoFrom256Bytes() {
        assertEquals(256, CudaMemoryPool.blockSize(0));
        assertEquals(256, CudaMemoryPool.blockSize(1));
        assertEquals(256, CudaMemoryPool.blockSize(256));
        assertEquals(512, CudaMemoryPool.blockSize(257));
        assertEquals(4096, CudaMemoryPool.blockSize(4000));
        assertEquals(MIB, CudaMemoryPool.blockSize(MIB));
    }

    @Test
    void shouldRoundLargeRequestsTo2MiB() {
        assertEquals(2 * MIB, CudaMemoryPool.blockSize(MIB + 1));
        assertEquals(2 * MIB, CudaMemoryPool.blockSize(2 * MIB));
        assertEquals(4 * MIB, CudaMemoryPool.blockSize(3 * MIB));
        assertEquals((1L << 30) + 2 * MIB, CudaMemoryPool.blockSize((1L << 30) + 1));
    }

    @Test
    void shouldRefuseNegativeSizes() {
        assertThrows(IllegalArgumentException.class, () -> CudaMemoryPool.blockSize(-1));
    }

    private static CudaMemoryPool pool() throws Exception {
        assumeCuda();
        CudaMemoryPool pool = CudaPlatform.get().device(0).pool();
        pool.trim();
        return pool;
    }

    @Test
    @Tag("gpu")
    void shouldServeARepeatedSizeFromTheCacheWithoutCuMemAlloc() throws Exception {
        CudaMemoryPool pool = pool();
        PoolStats before = pool.stats();

        DeviceBuffer first = pool.allocate(1000);
        long firstPointer = CudaDevice.pointer(first, 0);
        first.close();
        DeviceBuffer second = pool.allocate(900);
        long secondPointer = CudaDevice.pointer(second, 0);
        second.close();

        PoolStats after = pool.stats();
        assertEquals(firstPointer, secondPointer);
        assertEquals(before.driverAllocations() + 1, after.driverAllocations());
        assertEquals(before.requests() + 2, after.requests());
        assertEquals(before.hits() + 1, after.hits());
        assertEquals(1024, after.cachedBytes());
        assertEquals(before.inUseBytes(), after.inUseBytes());
    }

    @Test
    @Tag("gpu")
    void shouldFreeCachedBlocksOnTrim() throws Exception {
        CudaMemoryPool pool = pool();
        pool.allocate(3 * MIB).close();
        pool.allocate(100).close();
        PoolStats before = pool.stats();
        assertEquals(4 * MIB + 256, before.cachedBytes());

        long freed = pool.trim();

        PoolStats after = pool.stats();
        assertEquals(4 * MIB + 256, freed);
        assertEquals(0, after.cachedBytes());
        assertEquals(0, after.cachedBlocks());
        assertEquals(before.driverFrees() + 2, after.driverFrees());
    }

    @Test
    @Tag("gpu")
    void shouldReportLeakedDeviceBuffersWhenTheAllocatorCloses() throws Exception {
        assumeCuda();
        CudaDevice device = CudaPlatform.get().device(0);
        BufferAllocator<DeviceBuffer> allocator = device.newAllocator("leaky", BufferAllocator.UNLIMITED);
        DeviceBuffer leaked = allocator.allocate(4096);

        MemoryLeakException e = assertThrows(MemoryLeakException.class, allocator::close);

        assertEquals(4096, e.leakedBytes());
        assertTrue(e.getMessage().contains("allocator 'leaky' closed with 4096 bytes outstanding"), e.getMessage());
        assertTrue(e.getMessage().contains("DEVICE:cuda0[4096 bytes]"), e.getMessage());
        leaked.close();
    }

    @Test
    @Tag("gpu")
    void shouldFreeCachedBlocksAndRetryWhenCuMemAllocRunsOutOfMemory() throws Exception {
        CudaMemoryPool pool = pool();
        CudaDevice device = CudaPlatform.get().device(0);
        long free = device.freeMemory();
        long big = CudaMemoryPool.blockSize(free / 5 * 3);
        assumeTrue(big > 2 * CudaMemoryPool.LARGE_GRANULE, "too little free memory: " + free);
        pool.allocate(big).close();
        PoolStats before = pool.stats();
        assertEquals(big, before.cachedBytes());

        // A different size class: the cached block can't serve it, and both don't fit at once.
        try (DeviceBuffer other = pool.allocate(big + CudaMemoryPool.LARGE_GRANULE)) {
            PoolStats after = pool.stats();
            assertEquals(
                    big + CudaMemoryPool.LARGE_GRANULE,
                    other.allocation(CudaAllocation.class).byteSize());
            assertEquals(before.driverFrees() + 1, after.driverFrees());
            assertEquals(before.driverAllocations() + 2, after.driverAllocations());
        }
        pool.trim();
    }

    @Test
    void shouldReadTheLimitsFromTheirPropertiesAndRefuseWhatIsNotANumberOfBytes() {
        assertEquals(CudaMemoryPool.Limits.NONE, CudaMemoryPool.Limits.parse(null, null));
        assertEquals(new CudaMemoryPool.Limits(8L << 30, 0), CudaMemoryPool.Limits.parse("8589934592", " 0 "));
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> CudaMemoryPool.Limits.parse("8g", null));
        assertEquals("-Dcuwire.cuda.pool.maxBytes=8g (expected: a number of bytes >= 1)", e.getMessage());
        e = assertThrows(IllegalArgumentException.class, () -> CudaMemoryPool.Limits.parse(null, "-1"));
        assertEquals("-Dcuwire.cuda.pool.maxCachedBytes=-1 (expected: a number of bytes >= 0)", e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> CudaMemoryPool.Limits.parse("0", null));
    }

    @Test
    @Tag("gpu")
    void shouldFreeItsCacheThenRefuseABlockPastItsTotalLimit() throws Exception {
        assumeCuda();
        CudaDevice device = CudaPlatform.get().device(0);
        CudaMemoryPool pool = new CudaMemoryPool(device, new CudaMemoryPool.Limits(8 * MIB, Long.MAX_VALUE));
        try {
            DeviceBuffer a = pool.allocate(4 * MIB);
            pool.allocate(2 * MIB).close();
            assertEquals(2 * MIB, pool.stats().cachedBytes());
            // 4 in use + 2 cached + 4 new > 8: the cached block goes, then the new one fits.
            DeviceBuffer b = pool.allocate(3 * MIB + 1);
            PoolStats s = pool.stats();
            assertEquals(0, s.cachedBytes());
            assertEquals(8 * MIB, s.inUseBytes());
            AllocationLimitException e = assertThrows(AllocationLimitException.class, () -> pool.allocate(1));
            assertEquals(
                    "DEVICE:cuda0 pool cannot allocate 1 bytes (a block of 256): it holds 8388608 bytes (8388608 "
                            + "in use, 0 cached, 0 cached bytes freed before this), and its limit is 8388608 "
                            + "(-Dcuwire.cuda.pool.maxBytes)",
                    e.getMessage());
            assertEquals(s.driverAllocations(), pool.stats().driverAllocations(), "refused before cuMemAlloc");
            a.close();
            b.close();
            assertEquals(8 * MIB, pool.stats().cachedBytes());
        } finally {
            pool.trim();
        }
        assertEquals(0, pool.stats().cachedBytes());
    }

    @Test
    @Tag("gpu")
    void shouldGiveABlockPastItsCacheLimitBackToTheDriver() throws Exception {
        assumeCuda();
        CudaDevice device = CudaPlatform.get().device(0);
        CudaMemoryPool pool = new CudaMemoryPool(device, new CudaMemoryPool.Limits(Long.MAX_VALUE, 3 * MIB));
        try {
            DeviceBuffer a = pool.allocate(2 * MIB);
            DeviceBuffer b = pool.allocate(2 * MIB);
            a.close();
            PoolStats kept = pool.stats();
            assertEquals(2 * MIB, kept.cachedBytes());
            b.close();
            PoolStats after = pool.stats();
            assertEquals(2 * MIB, after.cachedBytes(), "a second block would pass 3 MiB cached");
            assertEquals(1, after.cachedBlocks());
            assertEquals(kept.driverFrees() + 1, after.driverFrees());
            assertEquals(0, after.inUseBytes());
        } finally {
            pool.trim();
        }
    }

    @Test
    @Tag("gpu")
    void shouldNameThePoolInTheReportOfAFailedAllocation() throws Exception {
        assumeCuda();
        CudaDevice device = CudaPlatform.get().device(0);
        try (BufferAllocator<DeviceBuffer> alloc = device.newAllocator("reported", 4 * MIB);
                DeviceBuffer held = alloc.allocate(3 * MIB)) {
            device.pool().allocate(MIB).close();
            AllocationLimitException e = assertThrows(AllocationLimitException.class, () -> alloc.allocate(2 * MIB));
            assertTrue(
                    e.getMessage()
                            .startsWith("allocator 'reported' cannot allocate 2097152 bytes of DEVICE:cuda0 "
                                    + "pool: 3145728 allocated, limit 4194304\nmemory of cuda0 ("),
                    e.getMessage());
            assertTrue(
                    e.getMessage()
                            .contains("\n  - allocator 'reported': 3145728 bytes, 1 open buffer(s) of its "
                                    + "own, limit 4194304"),
                    e.getMessage());
            assertTrue(e.getMessage().contains("\n  - CUDA memory pool of cuda0: "), e.getMessage());
            assertTrue(e.getMessage().contains("cached in "), e.getMessage());
            assertEquals(3 * MIB, held.byteSize());
        } finally {
            device.pool().trim();
        }
    }
}
