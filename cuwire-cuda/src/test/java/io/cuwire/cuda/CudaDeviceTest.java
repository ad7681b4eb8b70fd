package io.cuwire.cuda;

import static io.cuwire.cuda.CudaTestSupport.assumeCuda;
import static io.cuwire.cuda.CudaTestSupport.assumeGpus;
import static io.cuwire.cuda.CudaTestSupport.bytes;
import static io.cuwire.cuda.CudaTestSupport.downloadBytes;
import static io.cuwire.cuda.CudaTestSupport.fill;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.cuda.internal.CudaDevice;
import io.cuwire.cuda.internal.CudaStream;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyDirection;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.CopyException;
import io.cuwire.memory.Device;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.MemoryKind;
import io.cuwire.memory.Stream;
import io.cuwire.memory.TransferScope;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/** Allocation and copies of the CUDA platform through the memory layer's allocators and copy engine. */
@Tag("gpu")
class CudaDeviceTest {
    private static final int STAGING = 8 << 20;

    private Device gpu;
    private BufferAllocator<DeviceBuffer> memory;
    private BufferAllocator<HostBuffer> pinned;
    private BufferAllocator<HostBuffer> host;
    private Random random;

    @BeforeEach
    void setUp(TestInfo test) {
        assumeCuda();
        gpu = Cuda.device(0);
        memory = gpu.newAllocator("test/device", BufferAllocator.UNLIMITED);
        pinned = gpu.newPinnedAllocator("test/pinned", BufferAllocator.UNLIMITED);
        host = BufferAllocator.host("test/host", BufferAllocator.UNLIMITED);
        random = CudaTestSupport.random(test.getDisplayName());
    }

    @AfterEach
    void closeAllocatorsAndCheckForLeaks() {
        if (memory != null) {
            memory.close();
            pinned.close();
            host.close();
        }
    }

    @Test
    void shouldRoundTripThroughPinnedMemorySynchronously() {
        int n = 3 * (1 << 20) + 17;
        byte[] data = bytes(random, n);
        try (HostBuffer src = pinned.allocate(n); DeviceBuffer d = memory.allocate(n);
                HostBuffer back = pinned.allocate(n)) {
            assertEquals(MemoryKind.PINNED, src.kind());
            fill(src.segment(), data);

            CopyEngine.copy(src, d);
            CopyEngine.copy(d, back);

            assertArrayEquals(data, back.segment().toArray(JAVA_BYTE));
        }
    }

    @Test
    void shouldRoundTripThroughPageableAndPinnedMemoryOnAStream() {
        int n = 5 * (1 << 20) + 3;
        byte[] data = bytes(random, n);
        try (HostBuffer src = host.allocate(n); DeviceBuffer d = memory.allocate(n);
                HostBuffer viaPinned = pinned.allocate(n); HostBuffer back = host.allocate(n);
                Stream stream = gpu.newStream()) {
            fill(src.segment(), data);

            CopyEngine.copyAsync(src, 0, d, 0, n, stream);
            CopyEngine.copyAsync(d, 0, viaPinned, 0, n, stream);
            CopyEngine.copyAsync(viaPinned, 0, back, 0, n, stream);
            stream.synchronize();

            assertArrayEquals(data, back.segment().toArray(JAVA_BYTE));
        }
    }

    @Test
    void shouldStageHeapArraysLargerThanTheStagingBuffer() {
        int n = 2 * STAGING + 12_345;
        byte[] data = bytes(random, n);
        byte[] back = new byte[n];
        try (DeviceBuffer d = memory.allocate(n)) {
            CopyEngine.copyFromSegment(MemorySegment.ofArray(data), d, 0);
            CopyEngine.copyToSegment(d, 0, MemorySegment.ofArray(back));
        }
        assertArrayEquals(data, back);
    }

    @Test
    void shouldStageWrappedHeapMemoryOnAStream() {
        int n = STAGING + 999;
        byte[] data = bytes(random, n);
        byte[] back = new byte[n];
        try (DeviceBuffer d = memory.allocate(n); Stream stream = gpu.newStream()) {
            HostBuffer src = HostBuffer.wrap(MemorySegment.ofArray(data));
            HostBuffer dst = HostBuffer.wrap(MemorySegment.ofArray(back));

            CopyEngine.copyAsync(src, 0, d, 0, n, stream);
            CopyEngine.copyAsync(d, 0, dst, 0, n, stream);
            stream.synchronize();
        }
        assertArrayEquals(data, back);
    }

    @Test
    void shouldCopyBetweenSlicesAtOffsetsOnOneDevice() {
        int n = 1 << 20;
        byte[] data = bytes(random, n);
        try (DeviceBuffer a = memory.allocate(n + 300); DeviceBuffer b = memory.allocate(n + 700);
                Stream stream = gpu.newStream()) {
            CopyEngine.copyFromSegment(MemorySegment.ofArray(data), a.slice(300, n), 0);

            CopyEngine.copy(a, 300, b, 700, n);
            CopyEngine.copyAsync(b, 700, a, 0, n, stream);
            stream.synchronize();

            assertArrayEquals(data, Arrays.copyOfRange(downloadBytes(b), 700, 700 + n));
            assertArrayEquals(data, Arrays.copyOfRange(downloadBytes(a), 0, n));
        }
    }

    @Test
    void shouldCountEveryCopyByDirection() {
        int n = 4096;
        try (HostBuffer h = pinned.allocate(n); DeviceBuffer a = memory.allocate(n);
                DeviceBuffer b = memory.allocate(n); TransferScope scope = CopyEngine.openScope("cuda-counts")) {
            CopyEngine.copy(h, a);
            CopyEngine.copy(a, b);
            CopyEngine.copy(b, h);

            assertEquals(n, scope.bytes(CopyDirection.H2D));
            assertEquals(n, scope.bytes(CopyDirection.D2D));
            assertEquals(n, scope.bytes(CopyDirection.D2H));
            assertEquals(0, scope.bytes(CopyDirection.PEER));
        }
    }

    @Test
    void shouldFillARangeOfDeviceMemoryWithAByte() {
        try (DeviceBuffer d = memory.allocate(256); Stream stream = gpu.newStream()) {
            CudaDevice cuda = (CudaDevice) gpu;
            cuda.memset(d, 0, 256, (byte) 0);
            cuda.memset(d, 10, 100, (byte) 7);
            cuda.memsetAsync(d, 200, 56, (byte) -1, (CudaStream) stream);
            stream.synchronize();

            byte[] back = downloadBytes(d);
            for (int i = 0; i < 256; i++) {
                byte expected = i >= 200 ? (byte) -1 : i >= 10 && i < 110 ? (byte) 7 : 0;
                assertEquals(expected, back[i], "byte " + i);
            }
            assertThrows(IndexOutOfBoundsException.class, () -> cuda.memset(d, 200, 57, (byte) 0));
        }
    }

    @Test
    void shouldAllocateAndCopyZeroBytes() {
        try (DeviceBuffer d = memory.allocate(0); HostBuffer p = pinned.allocate(0)) {
            CopyEngine.copy(p, d);
            CopyEngine.copy(d, p);
            assertEquals(0, d.byteSize());
        }
    }

    @Test
    void shouldFailToUsePinnedMemoryAfterClose() {
        HostBuffer p = pinned.allocate(1024);
        MemorySegment segment = p.segment();
        segment.set(JAVA_BYTE, 0, (byte) 7);
        p.close();

        assertThrows(IllegalStateException.class, () -> segment.get(JAVA_BYTE, 0));
        assertThrows(IllegalStateException.class, p::segment);
    }

    @Test
    void shouldRefuseAClosedStreamAndAllowClosingItTwice() {
        try (HostBuffer h = pinned.allocate(64); DeviceBuffer d = memory.allocate(64)) {
            Stream stream = gpu.newStream();
            stream.close();
            stream.close();

            assertThrows(IllegalStateException.class, () -> CopyEngine.copyAsync(h, 0, d, 0, 64, stream));
            assertThrows(IllegalStateException.class, stream::synchronize);
        }
    }

    @Test
    void shouldCopyBetweenTwoGpusAndEnablePeerAccess() {
        assumeGpus(2);
        Device gpu1 = Cuda.device(1);
        int n = 3 * (1 << 20) + 5;
        byte[] data = bytes(random, n);
        try (BufferAllocator<DeviceBuffer> memory1 = gpu1.newAllocator("test/device1", BufferAllocator.UNLIMITED);
                DeviceBuffer a = memory.allocate(n); DeviceBuffer b = memory1.allocate(n);
                DeviceBuffer c = memory.allocate(n); Stream stream1 = gpu1.newStream();
                TransferScope scope = CopyEngine.openScope("peer")) {
            CopyEngine.copyFromSegment(MemorySegment.ofArray(data), a, 0);

            CopyEngine.copy(a, b);
            CopyEngine.copyAsync(b, 0, c, 0, n, stream1);
            stream1.synchronize();

            assertArrayEquals(data, downloadBytes(b));
            assertArrayEquals(data, downloadBytes(c));
            assertEquals(2L * n, scope.bytes(CopyDirection.PEER));
            if (gpu.canAccessPeer(gpu1)) {
                assertTrue(((CudaDevice) gpu).peerAccessEnabled((CudaDevice) gpu1));
                assertTrue(((CudaDevice) gpu1).peerAccessEnabled((CudaDevice) gpu));
            }
        }
    }

    @Test
    void shouldRefuseAStreamOfAnotherDevice() {
        assumeGpus(2);
        try (HostBuffer h = pinned.allocate(64); DeviceBuffer d = memory.allocate(64);
                Stream other = Cuda.device(1).newStream()) {
            CopyException e = assertThrows(CopyException.class, () -> CopyEngine.copyAsync(h, 0, d, 0, 64, other));
            assertTrue(e.getMessage().contains("cannot carry a copy for DEVICE:cuda0"), e.getMessage());
        }
    }
}
