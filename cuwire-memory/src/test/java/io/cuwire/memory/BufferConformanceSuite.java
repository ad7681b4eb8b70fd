package io.cuwire.memory;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.cuwire.test.TestRandom;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * The contract every kind of buffer keeps, written once and run over each memory kind: host, pinned and
 * emulated-device memory here, CUDA memory in {@code cuwire-cuda}. A subclass names the memory under test.
 */
public abstract class BufferConformanceSuite {
    /** The memory under test. */
    protected abstract MemoryResource<? extends Buffer> resource();

    /** A device on whose streams asynchronous copies of this memory run, or {@code null} to skip those tests. */
    protected abstract Device streamDevice();

    /** A second device of the same platform for peer copies, or {@code null} to skip those tests. */
    protected Device peerDevice() {
        return null;
    }

    private BufferAllocator<? extends Buffer> allocator;
    private SplittableRandom random;
    private TransferStats before;

    @BeforeEach
    void openAllocator(TestInfo info) {
        allocator = BufferAllocator.root(getClass().getSimpleName(), BufferAllocator.UNLIMITED, resource());
        random = TestRandom.create(info);
        before = CopyEngine.totals();
    }

    @AfterEach
    void closeAllocatorWithoutLeaks() {
        if (allocator == null) {
            return;
        }
        if (!allocator.isClosed()) {
            allocator.close();
        }
        assertEquals(0, allocator.allocatedBytes(), "bytes still accounted after every buffer was closed");
    }

    private Buffer allocate(long bytes) {
        return allocator.allocate(bytes);
    }

    private CopyDirection intoDirection() {
        return resource().kind() == MemoryKind.DEVICE ? CopyDirection.H2D : CopyDirection.H2H;
    }

    private CopyDirection outOfDirection() {
        return resource().kind() == MemoryKind.DEVICE ? CopyDirection.D2H : CopyDirection.H2H;
    }

    private void write(Buffer buffer, long offset, byte[] data) {
        CopyEngine.copyFromSegment(MemorySegment.ofArray(data), buffer, offset);
    }

    private byte[] read(Buffer buffer, long offset, int length) {
        byte[] out = new byte[length];
        CopyEngine.copyToSegment(buffer, offset, MemorySegment.ofArray(out));
        return out;
    }

    @Test
    void shouldReportKindDeviceAndSize() {
        try (Buffer b = allocate(4096)) {
            assertEquals(resource().kind(), b.kind());
            assertEquals(resource().deviceOrdinal(), b.deviceOrdinal());
            assertEquals(4096, b.byteSize());
            assertTrue(b.isOpen());
            assertFalse(b.isSlice());
            assertEquals(allocator, b.allocator());
            assertEquals(4096, allocator.allocatedBytes());
        }
        assertEquals(0, allocator.allocatedBytes());
    }

    @Test
    void shouldAllocateZeroBytes() {
        try (Buffer b = allocate(0)) {
            assertEquals(0, b.byteSize());
            CopyEngine.copyFromSegment(MemorySegment.ofArray(new byte[0]), b, 0);
        }
    }

    @Test
    void shouldRoundTripRandomBytesThroughTheCopyEngine() {
        for (int size : new int[] {1, 7, 4095, 65_543, 1 + random.nextInt(1 << 20)}) {
            byte[] data = TestRandom.bytes(random, size);
            try (Buffer b = allocate(size)) {
                write(b, 0, data);
                assertArrayEquals(data, read(b, 0, size), "round trip of " + size + " bytes");
            }
        }
    }

    @Test
    void shouldCountEveryCopyInItsDirection() {
        int size = 10_000 + random.nextInt(10_000);
        try (Buffer a = allocate(size);
                Buffer b = allocate(size);
                TransferScope scope = CopyEngine.openScope("conformance")) {
            write(a, 0, TestRandom.bytes(random, size));
            CopyEngine.copy(a, b);
            read(b, 0, size);
            TransferStats s = scope.stats();
            if (resource().kind() == MemoryKind.DEVICE) {
                assertEquals(size, s.bytes(CopyDirection.H2D));
                assertEquals(size, s.bytes(CopyDirection.D2D));
                assertEquals(size, s.bytes(CopyDirection.D2H));
                assertEquals(0, s.bytes(CopyDirection.H2H));
            } else {
                assertEquals(3L * size, s.bytes(CopyDirection.H2H));
                assertEquals(0, s.hostDeviceBytes());
            }
            long copies = 0;
            for (CopyDirection d : CopyDirection.values()) {
                copies += s.copies(d);
            }
            assertEquals(3, copies);
            assertEquals(3L * size, s.totalBytes());
        }
        TransferStats global = CopyEngine.totals().minus(before);
        assertTrue(global.totalBytes() >= 3L * size, "global counters include this test's copies: " + global);
    }

    @Test
    void shouldCopyBetweenBuffersAtOffsets() {
        int size = 8192;
        byte[] data = TestRandom.bytes(random, size);
        try (Buffer a = allocate(size);
                Buffer b = allocate(2L * size)) {
            write(a, 0, data);
            write(b, 0, new byte[2 * size]);
            CopyEngine.copy(a, 100, b, 5000, 3000);
            byte[] out = read(b, 0, 2 * size);
            for (int i = 0; i < 2 * size; i++) {
                byte expected = i >= 5000 && i < 8000 ? data[100 + i - 5000] : 0;
                assertEquals(expected, out[i], "byte " + i);
            }
        }
    }

    @Test
    void shouldSliceWithoutCopyingAndSeeTheParentsBytes() {
        byte[] data = TestRandom.bytes(random, 1000);
        try (Buffer b = allocate(1000);
                TransferScope scope = CopyEngine.openScope("slice")) {
            write(b, 0, data);
            Buffer s = b.slice(100, 800).slice(50, 100);
            assertTrue(s.isSlice());
            assertEquals(150, s.rootOffset());
            assertEquals(100, s.byteSize());
            assertEquals(b.kind(), s.kind());
            assertEquals(b.deviceOrdinal(), s.deviceOrdinal());
            long copiesBefore = scope.stats().totalBytes();
            assertEquals(1000, copiesBefore, "slicing copies nothing");
            byte[] expected = new byte[100];
            System.arraycopy(data, 150, expected, 0, 100);
            assertArrayEquals(expected, read(s, 0, 100));
            write(s, 10, new byte[] {42});
            assertEquals(42, read(b, 160, 1)[0], "a write through a slice lands in the parent");
        }
    }

    @Test
    void shouldRefuseOutOfBoundsSlicesAndCopiesWithExactMessages() {
        try (Buffer a = allocate(64);
                Buffer b = allocate(64)) {
            IndexOutOfBoundsException e = assertThrows(IndexOutOfBoundsException.class, () -> a.slice(60, 8));
            assertTrue(e.getMessage().contains("offset: 60, length: 8"), e.getMessage());
            assertTrue(e.getMessage().contains("<= 64"), e.getMessage());
            assertThrows(IndexOutOfBoundsException.class, () -> a.slice(-1, 1));
            e = assertThrows(IndexOutOfBoundsException.class, () -> CopyEngine.copy(a, 0, b, 32, 33));
            assertTrue(e.getMessage().contains("dstOffset: 32, bytes: 33"), e.getMessage());
            assertThrows(IndexOutOfBoundsException.class, () -> CopyEngine.copy(a, 63, b, 0, 2));
            assertThrows(IndexOutOfBoundsException.class, () -> write(a, 60, new byte[5]));
            assertThrows(IndexOutOfBoundsException.class, () -> read(a, 1, 64));
        }
    }

    @Test
    void shouldRefuseUseAfterCloseAndClosingTwice() {
        Buffer a = allocate(128);
        Buffer slice = a.slice(0, 64);
        try (Buffer b = allocate(128)) {
            a.close();
            assertFalse(a.isOpen());
            assertFalse(slice.isOpen());
            assertThrows(IllegalStateException.class, () -> CopyEngine.copy(a, b));
            assertThrows(IllegalStateException.class, () -> CopyEngine.copy(slice, 0, b, 0, 64));
            assertThrows(IllegalStateException.class, () -> read(a, 0, 1));
            assertThrows(IllegalStateException.class, () -> a.slice(0, 1));
            IllegalStateException e = assertThrows(IllegalStateException.class, a::close);
            assertTrue(e.getMessage().contains("already closed"), e.getMessage());
        }
    }

    @Test
    void shouldRefuseClosingASlice() {
        try (Buffer a = allocate(128)) {
            IllegalStateException e = assertThrows(
                    IllegalStateException.class, () -> a.slice(0, 8).close());
            assertTrue(e.getMessage().contains("slice"), e.getMessage());
            assertTrue(a.isOpen());
        }
    }

    @Test
    void shouldReportLeakedBytesAndTheTrackingPropertyWhenClosedWithOpenBuffers() {
        BufferAllocator<? extends Buffer> child = allocator.newChild("leaky", BufferAllocator.UNLIMITED);
        Buffer leaked = child.allocate(12_345);
        MemoryLeakException e = assertThrows(MemoryLeakException.class, child::close);
        assertEquals(12_345, e.leakedBytes());
        assertTrue(e.getMessage().contains("'" + allocator.name() + "/leaky'"), e.getMessage());
        assertTrue(e.getMessage().contains("12345 bytes"), e.getMessage());
        assertTrue(e.getMessage().contains(BufferAllocator.TRACK_PROPERTY), e.getMessage());
        leaked.close();
        assertEquals(0, allocator.allocatedBytes(), "a late close still returns the bytes to the ancestors");
    }

    @Test
    void shouldEnforceLimitsOfChildrenAndAncestors() {
        BufferAllocator<? extends Buffer> parent = allocator.newChild("parent", 10_000);
        BufferAllocator<? extends Buffer> child = parent.newChild("child", 8_000);
        try (Buffer a = child.allocate(6_000)) {
            assertEquals(6_000, a.byteSize());
            AllocationLimitException e = assertThrows(AllocationLimitException.class, () -> child.allocate(3_000));
            assertTrue(e.getMessage().contains("'" + child.name() + "'"), e.getMessage());
            e = assertThrows(AllocationLimitException.class, () -> parent.allocate(5_000));
            assertTrue(e.getMessage().contains("'" + parent.name() + "'"), e.getMessage());
            assertEquals(6_000, parent.allocatedBytes());
            assertEquals(6_000, allocator.allocatedBytes());
            try (Buffer b = parent.allocate(4_000)) {
                assertEquals(10_000, parent.peakBytes());
                assertEquals(4_000, b.byteSize());
            }
        }
        child.close();
        parent.close();
    }

    @Test
    void shouldKeepAccountsUnderConcurrentAllocation() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            List<Future<?>> futures = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                futures.add(pool.submit(() -> {
                    for (int i = 0; i < 50; i++) {
                        try (Buffer b = allocator.allocate(1 + i * 100L)) {
                            write(b, 0, new byte[] {(byte) i});
                        }
                    }
                }));
            }
            for (Future<?> f : futures) {
                f.get();
            }
        } finally {
            pool.shutdown();
        }
        assertEquals(0, allocator.allocatedBytes());
        assertTrue(allocator.peakBytes() > 0);
    }

    @Test
    void shouldCopyAsynchronouslyOnAStreamInOrder() {
        Device device = streamDevice();
        assumeTrue(device != null, "no stream device for " + resource().describe());
        int size = 1 << 20;
        byte[] data = TestRandom.bytes(random, size);
        try (Buffer a = allocate(size);
                Buffer b = allocate(size);
                Buffer c = allocate(size);
                DeviceStream stream = device.newStream()) {
            write(a, 0, data);
            CopyEngine.copyAsync(a, 0, b, 0, size, stream);
            CopyEngine.copyAsync(b, 0, c, 0, size, stream);
            stream.synchronize();
            assertArrayEquals(data, read(c, 0, size));
        }
    }

    @Test
    void shouldCopyToAPeerDeviceAndCountItAsPeer() {
        Device peer = peerDevice();
        assumeTrue(peer != null, "no second device for " + resource().describe());
        int size = 3 << 20;
        byte[] data = TestRandom.bytes(random, size);
        try (BufferAllocator<DeviceBuffer> peerAlloc = peer.newAllocator("peer", BufferAllocator.UNLIMITED);
                Buffer a = allocate(size);
                DeviceBuffer b = peerAlloc.allocate(size);
                TransferScope scope = CopyEngine.openScope("peer")) {
            write(a, 0, data);
            CopyEngine.copy(a, b);
            assertEquals(peer.ordinal(), b.deviceOrdinal());
            assertEquals(size, scope.bytes(CopyDirection.PEER));
            assertArrayEquals(data, read(b, 0, size));
        }
    }

    @Test
    void shouldAddressBuffersPastTwoGibibytesWithLongOffsets() {
        long size = (2L << 30) + 4096;
        byte[] data = TestRandom.bytes(random, 64);
        try (Buffer b = allocate(size)) {
            long offset = (2L << 30) + 1000;
            write(b, offset, data);
            assertArrayEquals(data, read(b, offset, 64));
            Buffer tail = b.slice(offset, 64);
            assertArrayEquals(data, read(tail, 0, 64));
        }
    }
}
