package io.cuwire.memory;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.cuwire.test.ChildJvm;
import io.cuwire.test.TestRandom;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.SplittableRandom;
import java.util.zip.CRC32;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * The contract every {@link Device} keeps, written once and run over each platform: the emulated device here
 * ({@code EmulatedDeviceTest}, in CI), the CUDA device in {@code cuwire-cuda} ({@code CudaDeviceTest}, tagged
 * {@code gpu}). It covers what the platform-neutral API offers: what the device says of itself, allocation, copies in
 * every direction (pageable, pinned and heap host memory, the same device, a peer) with their counts, streams,
 * slices, IPC handles across two processes, and the errors of each. The buffer contract itself (bounds, close policy,
 * leaks, limits) is {@link BufferConformanceSuite}'s.
 */
public abstract class DeviceConformanceSuite {
    /** Larger than any staging buffer a platform uses for heap memory (CUDA's is 8 MiB). */
    private static final int BEYOND_STAGING = 2 * (8 << 20) + 12_345;

    /** The device under test (skipping the test, with the reason, where it is not there). */
    protected abstract Device device();

    /** A second device of the same platform for peer copies, or {@code null} to skip those tests. */
    protected abstract Device peerDevice();

    private Device device;
    private BufferAllocator<DeviceBuffer> memory;
    private BufferAllocator<HostBuffer> pinned;
    private BufferAllocator<HostBuffer> host;
    private SplittableRandom random;

    @BeforeEach
    void openAllocators(TestInfo info) {
        device = device();
        memory = device.newAllocator(getClass().getSimpleName() + "/device", BufferAllocator.UNLIMITED);
        pinned = device.newPinnedAllocator(getClass().getSimpleName() + "/pinned", BufferAllocator.UNLIMITED);
        host = BufferAllocator.host(getClass().getSimpleName() + "/host", BufferAllocator.UNLIMITED);
        random = TestRandom.create(info);
    }

    @AfterEach
    void closeAllocatorsAndCheckForLeaks() {
        if (memory != null) {
            memory.close();
            pinned.close();
            host.close();
        }
    }

    private byte[] bytes(int n) {
        return TestRandom.bytes(random, n);
    }

    private static byte[] download(DeviceBuffer b) {
        byte[] out = new byte[Math.toIntExact(b.byteSize())];
        CopyEngine.copyToSegment(b, 0, MemorySegment.ofArray(out));
        return out;
    }

    private static void fill(HostBuffer b, byte[] data) {
        MemorySegment.copy(MemorySegment.ofArray(data), 0, b.segment(), 0, data.length);
    }

    @Test
    void shouldDescribeItselfAndItsMemory() {
        assertTrue(!device.platform().isBlank() && !device.name().isBlank(), device.name());
        assertEquals(device.platform() + device.ordinal(), device.toString());
        assertTrue(device.totalMemory() > 0, "total memory " + device.totalMemory());
        assertTrue(
                device.freeMemory() >= 0 && device.freeMemory() <= device.totalMemory(),
                "free " + device.freeMemory() + " of " + device.totalMemory());
    }

    @Test
    void shouldAllocateAccountedBuffersOfItsOwn() {
        try (DeviceBuffer d = memory.allocate(4096);
                DeviceBuffer empty = memory.allocate(0);
                HostBuffer p = pinned.allocate(4096)) {
            assertEquals(MemoryKind.DEVICE, d.kind());
            assertSame(device, d.device());
            assertEquals(device.ordinal(), d.deviceOrdinal());
            assertEquals(4096, memory.allocatedBytes());
            assertEquals(0, empty.byteSize());
            assertEquals(MemoryKind.PINNED, p.kind());
            CopyEngine.copy(p.slice(0, 0), empty);
        }
        assertEquals(0, memory.allocatedBytes());
    }

    @Test
    void shouldRoundTripInEveryDirectionAndCountEachCopy() {
        int n = 3 * (1 << 20) + 17;
        byte[] data = bytes(n);
        try (HostBuffer pageable = host.allocate(n);
                HostBuffer pin = pinned.allocate(n);
                DeviceBuffer a = memory.allocate(n);
                DeviceBuffer b = memory.allocate(n);
                HostBuffer back = pinned.allocate(n);
                TransferScope scope = CopyEngine.openScope("device-suite")) {
            fill(pageable, data);
            CopyEngine.copy(pageable, a);
            CopyEngine.copy(a, b);
            CopyEngine.copy(b, back);
            assertArrayEquals(data, back.segment().toArray(JAVA_BYTE), "pageable -> device -> device -> pinned");
            fill(pin, bytes(n));
            CopyEngine.copy(pin, a);
            CopyEngine.copy(a, pageable);
            assertArrayEquals(
                    pin.segment().toArray(JAVA_BYTE),
                    pageable.segment().toArray(JAVA_BYTE),
                    "pinned -> device -> pageable");

            assertEquals(2L * n, scope.bytes(CopyDirection.H2D));
            assertEquals(n, scope.bytes(CopyDirection.D2D));
            assertEquals(2L * n, scope.bytes(CopyDirection.D2H));
            assertEquals(0, scope.bytes(CopyDirection.PEER));
        }
    }

    @Test
    void shouldStageHeapArraysLargerThanAnyStagingBuffer() {
        byte[] data = bytes(BEYOND_STAGING);
        byte[] back = new byte[BEYOND_STAGING];
        byte[] again = new byte[BEYOND_STAGING];
        try (DeviceBuffer d = memory.allocate(BEYOND_STAGING);
                DeviceStream stream = device.newStream()) {
            CopyEngine.copyFromSegment(MemorySegment.ofArray(data), d, 0);
            CopyEngine.copyToSegment(d, 0, MemorySegment.ofArray(back));
            CopyEngine.copyAsync(d, 0, HostBuffer.wrap(MemorySegment.ofArray(again)), 0, BEYOND_STAGING, stream);
            stream.synchronize();
        }
        assertArrayEquals(data, back);
        assertArrayEquals(data, again, "wrapped heap memory on a stream");
    }

    @Test
    void shouldCopyOnAStreamInTheOrderEnqueued() {
        int n = 5 * (1 << 20) + 3;
        byte[] data = bytes(n);
        try (HostBuffer src = host.allocate(n);
                DeviceBuffer d = memory.allocate(n);
                HostBuffer viaPinned = pinned.allocate(n);
                HostBuffer back = host.allocate(n);
                DeviceStream stream = device.newStream()) {
            assertSame(device, stream.device());
            fill(src, data);
            CopyEngine.copyAsync(src, 0, d, 0, n, stream);
            CopyEngine.copyAsync(d, 0, viaPinned, 0, n, stream);
            CopyEngine.copyAsync(viaPinned, 0, back, 0, n, stream);
            stream.synchronize();
            assertArrayEquals(data, back.segment().toArray(JAVA_BYTE));
        }
    }

    @Test
    void shouldCopyBetweenSlicesAtOffsets() {
        int n = 1 << 20;
        byte[] data = bytes(n);
        try (DeviceBuffer a = memory.allocate(n + 300);
                DeviceBuffer b = memory.allocate(n + 700);
                DeviceStream stream = device.newStream()) {
            DeviceBuffer view = a.slice(300, n);
            assertTrue(view.isSlice());
            assertSame(device, view.device());
            CopyEngine.copyFromSegment(MemorySegment.ofArray(data), view, 0);
            assertArrayEquals(Arrays.copyOfRange(data, 10, 20), download(view.slice(10, 10)), "a slice of a slice");
            CopyEngine.copy(a, 300, b, 700, n);
            CopyEngine.copyAsync(b.slice(700, n), 0, a, 0, n, stream);
            stream.synchronize();
            assertArrayEquals(data, Arrays.copyOfRange(download(b), 700, 700 + n));
            assertArrayEquals(data, Arrays.copyOfRange(download(a), 0, n));
        }
    }

    @Test
    void shouldRefuseAClosedStreamAndClosingItTwice() {
        try (HostBuffer h = pinned.allocate(64);
                DeviceBuffer d = memory.allocate(64)) {
            DeviceStream stream = device.newStream();
            stream.close();
            assertThrows(IllegalStateException.class, stream::close, "a second close of a stream");
            assertThrows(IllegalStateException.class, () -> CopyEngine.copyAsync(h, 0, d, 0, 64, stream));
            assertThrows(IllegalStateException.class, stream::synchronize);
        }
    }

    @Test
    void shouldRefuseUseOfAClosedBufferAndPinnedMemory() {
        DeviceBuffer d = memory.allocate(64);
        HostBuffer p = pinned.allocate(64);
        MemorySegment segment = p.segment();
        d.close();
        p.close();
        assertThrows(
                IllegalStateException.class,
                () -> CopyEngine.copyFromSegment(MemorySegment.ofArray(new byte[1]), d, 0));
        assertThrows(IllegalStateException.class, () -> segment.get(JAVA_BYTE, 0));
        assertThrows(IllegalStateException.class, p::segment);
    }

    @Test
    void shouldCopyToAPeerAndCountItAsPeer() {
        Device peer = peerDevice();
        assumeTrue(peer != null, "one device of the platform: no peer");
        int n = 3 * (1 << 20) + 5;
        byte[] data = bytes(n);
        try (BufferAllocator<DeviceBuffer> memory1 = peer.newAllocator("peer", BufferAllocator.UNLIMITED);
                DeviceBuffer a = memory.allocate(n);
                DeviceBuffer b = memory1.allocate(n);
                DeviceBuffer c = memory.allocate(n);
                DeviceStream stream1 = peer.newStream();
                TransferScope scope = CopyEngine.openScope("peer")) {
            CopyEngine.copyFromSegment(MemorySegment.ofArray(data), a, 0);
            CopyEngine.copy(a, b);
            CopyEngine.copyAsync(b, 0, c, 0, n, stream1);
            stream1.synchronize();
            assertArrayEquals(data, download(b));
            assertArrayEquals(data, download(c));
            assertEquals(2L * n, scope.bytes(CopyDirection.PEER));
        }
    }

    /**
     * A batch of device-to-device copies on one stream ({@link CopyEngine#copyAllAsync}): every buffer arrives whole
     * (slices as sources and targets, a target larger than its source), within the device and to a peer, and the
     * batch is counted together per direction, its copies' number and bytes; a batch with one bad pair enqueues and
     * counts nothing.
     */
    @Test
    void shouldCopyABatchOfDeviceBuffersInOrderAndCountItPerDirection() {
        Device peer = peerDevice();
        int[] sizes = {1, 4096, 100 * 1024 + 3, 8, 1 << 20};
        List<DeviceBuffer> held = new ArrayList<>();
        BufferAllocator<DeviceBuffer> peerMemory =
                peer == null ? null : peer.newAllocator("batch-peer", BufferAllocator.UNLIMITED);
        try (DeviceStream stream = device.newStream();
                TransferScope scope = CopyEngine.openScope("batch")) {
            List<DeviceBuffer> sources = new ArrayList<>();
            List<DeviceBuffer> targets = new ArrayList<>();
            List<byte[]> data = new ArrayList<>();
            long local = 0;
            long toPeer = 0;
            for (int i = 0; i < sizes.length; i++) {
                DeviceBuffer src = memory.allocate(sizes[i] + 16);
                held.add(src);
                byte[] bytes = bytes(sizes[i]);
                DeviceBuffer source = src.slice(16, sizes[i]);
                CopyEngine.copyFromSegment(MemorySegment.ofArray(bytes), source, 0);
                boolean remote = peerMemory != null && i % 2 == 1;
                DeviceBuffer dst = remote ? peerMemory.allocate(sizes[i] + 5) : memory.allocate(sizes[i] + 5);
                held.add(dst);
                sources.add(source);
                targets.add(i == 0 ? dst : dst.slice(5, sizes[i]));
                data.add(bytes);
                if (remote) {
                    toPeer += sizes[i];
                } else {
                    local += sizes[i];
                }
            }
            CopyEngine.copyAllAsync(sources, targets, stream);
            stream.synchronize();
            for (int i = 0; i < sizes.length; i++) {
                assertArrayEquals(
                        data.get(i), Arrays.copyOf(download(targets.get(i)), sizes[i]), "buffer " + i + " whole");
            }
            assertEquals(local, scope.bytes(CopyDirection.D2D), scope.toString());
            assertEquals(toPeer, scope.bytes(CopyDirection.PEER), scope.toString());
            assertEquals(
                    sizes.length,
                    scope.copies(CopyDirection.D2D) + scope.copies(CopyDirection.PEER),
                    "one copy counted per buffer: " + scope);
            DeviceBuffer closed = memory.allocate(8);
            closed.close();
            TransferStats before = scope.stats();
            assertThrows(
                    IllegalStateException.class,
                    () -> CopyEngine.copyAllAsync(
                            List.of(sources.get(0), closed), List.of(targets.get(0), targets.get(3)), stream));
            assertThrows(
                    IllegalArgumentException.class,
                    () -> CopyEngine.copyAllAsync(sources, targets.subList(0, 2), stream));
            assertEquals(before, scope.stats(), "nothing counted for a refused batch");
        } finally {
            Closeables.closeAll(held.reversed());
            if (peerMemory != null) {
                peerMemory.close();
            }
        }
    }

    @Test
    void shouldRefuseAStreamOfAnotherDevice() {
        Device peer = peerDevice();
        assumeTrue(peer != null, "one device of the platform: no other device's stream");
        try (HostBuffer h = pinned.allocate(64);
                DeviceBuffer d = memory.allocate(64);
                DeviceStream other = peer.newStream()) {
            CopyException e = assertThrows(CopyException.class, () -> CopyEngine.copyAsync(h, 0, d, 0, 64, other));
            assertTrue(e.getMessage().contains("cannot carry a copy for DEVICE:" + device), e.getMessage());
        }
    }

    @Test
    void shouldLetAnotherProcessReadAndWriteAnExportedSlice() throws Exception {
        int n = 3 * (1 << 20) + 11;
        int offset = 4096 + 256;
        byte[] data = bytes(n);
        try (DeviceBuffer buffer = memory.allocate(offset + n)) {
            DeviceBuffer slice = buffer.slice(offset, n);
            CopyEngine.copyFromSegment(MemorySegment.ofArray(data), slice, 0);
            IpcHandle handle = device.exportHandle(slice);
            assertEquals(device.platform(), handle.platform());
            assertEquals(device.ordinal(), handle.deviceOrdinal());
            assertEquals(n, handle.length());

            try (ChildJvm child = ChildJvm.builder(DeviceIpcChild.class)
                    .property(Devices.PLATFORM_PROPERTY, device.platform())
                    .args(
                            handle.platform(),
                            Integer.toString(handle.deviceOrdinal()),
                            HexFormat.of().formatHex(handle.handle()),
                            Long.toString(handle.offset()),
                            Long.toString(handle.length()))
                    .start()) {
                assertEquals(0, child.awaitExit(Duration.ofSeconds(120)), child.output());
                CRC32 crc = new CRC32();
                crc.update(data);
                assertTrue(child.lines().contains("CHECKSUM " + crc.getValue() + " DEVICE " + device), child.output());
                assertTrue(child.lines().contains("CLOSED"), child.output());
            }
            byte[] back = download(slice);
            for (int i = 0; i < n; i++) {
                assertEquals((byte) ~data[i], back[i], "byte " + i + " written by the other process");
            }
        }
    }

    @Test
    void shouldExportTheWholeAllocationAndEachBuffersOffsetInIt() {
        try (DeviceBuffer buffer = memory.allocate(1 << 20)) {
            DeviceBuffer slice = buffer.slice(4096, 1000);
            IpcHandle whole = device.exportAllocation(slice);
            assertEquals(0, whole.offset());
            assertTrue(whole.length() >= device.allocationOffset(slice) + 1000, whole.toString());
            assertEquals(device.allocationOffset(buffer) + 4096, device.allocationOffset(slice));
            assertEquals(whole, device.exportAllocation(buffer), "equal allocations give equal handles");
        }
    }

    @Test
    void shouldRefuseAHandleOfAnotherPlatformBeforeMappingIt() {
        String other = device.platform().equals("cuda") ? "emulated" : "cuda";
        InvalidHandleException e = assertThrows(
                InvalidHandleException.class, () -> device.openHandle(new IpcHandle(other, 0, new byte[64], 0, 16)));
        assertTrue(e.getMessage().contains(other), e.getMessage());
    }
}
