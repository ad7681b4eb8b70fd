package io.cuwire.memory;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class CopyEngineTest {
    private BufferAllocator<DeviceBuffer> device;
    private BufferAllocator<HostBuffer> host;

    @BeforeEach
    void open() {
        device = Devices.get(0).newAllocator("copy-engine-test", BufferAllocator.UNLIMITED);
        host = BufferAllocator.host("copy-engine-test-host", BufferAllocator.UNLIMITED);
    }

    @AfterEach
    void close() {
        device.close();
        host.close();
    }

    @Test
    void shouldCatchASingleStrayDeviceToHostCopyInAScope() {
        try (DeviceBuffer a = device.allocate(1 << 20);
                DeviceBuffer b = device.allocate(1 << 20);
                HostBuffer h = host.allocate(1)) {
            CopyEngine.copyFromSegment(MemorySegment.ofArray(new byte[1 << 20]), a, 0);
            try (TransferScope scope = CopyEngine.openScope("device-only work")) {
                CopyEngine.copy(a, b);
                assertEquals(0, scope.bytes(CopyDirection.D2H), "device-to-device work touched the host");
                CopyEngine.copy(b, 12_345, h, 0, 1);
                assertEquals(1, scope.bytes(CopyDirection.D2H), "the stray one-byte D2H copy is caught");
                assertEquals(1, scope.copies(CopyDirection.D2H));
                assertEquals(1 << 20, scope.bytes(CopyDirection.D2D));
                assertEquals(0, scope.bytes(CopyDirection.H2D));
            }
        }
    }

    @Test
    void shouldCountCopiesMadeByOtherThreadsWhileTheScopeIsOpen() throws Exception {
        try (DeviceBuffer a = device.allocate(4096);
                HostBuffer h = host.allocate(4096);
                TransferScope scope = CopyEngine.openScope("other threads")) {
            Thread t = Thread.ofPlatform().start(() -> CopyEngine.copy(a, h));
            t.join();
            assertEquals(4096, scope.bytes(CopyDirection.D2H));
        }
    }

    @Test
    void shouldCountOnlyItsOwnThreadsCopiesInAThreadScopeEnqueuedOnesIncluded() throws Exception {
        try (DeviceBuffer a = device.allocate(4096);
                HostBuffer h = host.allocate(4096);
                DeviceStream stream = Devices.get(0).newStream();
                TransferScope mine = CopyEngine.openThreadScope("this side");
                TransferScope everyone = CopyEngine.openScope("the process")) {
            Thread other = Thread.ofPlatform().start(() -> CopyEngine.copy(a, h));
            other.join();
            assertEquals(0, mine.bytes(CopyDirection.D2H), "another thread's copy is the other side's: " + mine);
            assertEquals(4096, everyone.bytes(CopyDirection.D2H));
            CopyEngine.copyAsync(h, 0, a, 0, 100, stream);
            stream.synchronize();
            assertEquals(100, mine.bytes(CopyDirection.H2D), "a copy this thread enqueued counts, wherever it runs");
            assertEquals(1, mine.copies(CopyDirection.H2D));
            assertEquals(100, everyone.bytes(CopyDirection.H2D));
        }
    }

    @Test
    void shouldStopCountingWhenClosedAndLetScopesNest() {
        try (DeviceBuffer a = device.allocate(100);
                HostBuffer h = host.allocate(100)) {
            TransferScope outer = CopyEngine.openScope("outer");
            try (TransferScope inner = CopyEngine.openScope("inner")) {
                CopyEngine.copy(h, a);
                assertEquals(100, inner.bytes(CopyDirection.H2D));
            }
            CopyEngine.copy(h, a);
            outer.close();
            assertFalse(outer.isOpen());
            CopyEngine.copy(h, a);
            assertEquals(200, outer.bytes(CopyDirection.H2D), "outer saw both copies made while open, not the third");
            outer.close();
        }
    }

    @Test
    void shouldCountAsynchronousCopiesWhenEnqueued() {
        try (DeviceBuffer a = device.allocate(1 << 16);
                DeviceBuffer b = device.allocate(1 << 16);
                DeviceStream stream = Devices.get(0).newStream();
                TransferScope scope = CopyEngine.openScope("async")) {
            CopyEngine.copyAsync(a, 0, b, 0, 1 << 16, stream);
            assertEquals(1 << 16, scope.bytes(CopyDirection.D2D));
            stream.synchronize();
        }
    }

    @Test
    void shouldReadManyBuffersInPlaceCountedTogether() {
        try (DeviceBuffer a = device.allocate(100);
                DeviceBuffer b = device.allocate(3000)) {
            CopyEngine.copyFromSegment(MemorySegment.ofArray(new byte[] {7, 8}), a, 0);
            CopyEngine.copyFromSegment(MemorySegment.ofArray(new byte[] {9}), b, 2999);
            try (TransferScope scope = CopyEngine.openScope("in place")) {
                MemorySegment[] views = CopyEngine.readAllInPlace(java.util.List.of(a, b.slice(1000, 2000)));
                assertEquals(2, views.length);
                assertEquals(100, views[0].byteSize());
                assertEquals(8, views[0].get(java.lang.foreign.ValueLayout.JAVA_BYTE, 1));
                assertEquals(9, views[1].get(java.lang.foreign.ValueLayout.JAVA_BYTE, 1999), "the slice's own bytes");
                assertEquals(2100, scope.bytes(CopyDirection.D2H));
                assertEquals(2, scope.copies(CopyDirection.D2H), "a copy counted per buffer, in one update");
            }
        }
    }

    @Test
    void shouldMoveHeapArraysInAndOut() {
        byte[] data = {1, 2, 3, 4, 5, 6, 7, 8};
        try (DeviceBuffer a = device.allocate(8)) {
            CopyEngine.copyFromSegment(MemorySegment.ofArray(data), a, 0);
            long[] out = new long[1];
            CopyEngine.copyToSegment(a, 0, MemorySegment.ofArray(out));
            assertEquals(0x0807060504030201L, out[0], "little-endian bytes of the array");
            byte[] back = new byte[4];
            CopyEngine.copyToSegment(a, 4, MemorySegment.ofArray(back));
            assertArrayEquals(new byte[] {5, 6, 7, 8}, back);
        }
    }

    @Test
    void shouldNameTheDirectionOfEveryKindPair() {
        assertEquals(CopyDirection.H2H, CopyDirection.of(MemoryKind.HOST, -1, MemoryKind.PINNED, -1));
        assertEquals(CopyDirection.H2D, CopyDirection.of(MemoryKind.PINNED, -1, MemoryKind.DEVICE, 0));
        assertEquals(CopyDirection.D2H, CopyDirection.of(MemoryKind.DEVICE, 1, MemoryKind.HOST, -1));
        assertEquals(CopyDirection.D2D, CopyDirection.of(MemoryKind.DEVICE, 1, MemoryKind.DEVICE, 1));
        assertEquals(CopyDirection.PEER, CopyDirection.of(MemoryKind.DEVICE, 0, MemoryKind.DEVICE, 1));
    }

    @Test
    void shouldReportAFailedAsynchronousCopyAtSynchronize() {
        DeviceBuffer a = device.allocate(1 << 16);
        try (DeviceBuffer b = device.allocate(1 << 16);
                DeviceStream stream = Devices.get(0).newStream()) {
            CopyEngine.copyAsync(a, 0, b, 0, 1 << 16, stream);
            stream.synchronize();
            a.close();
            assertThrows(IllegalStateException.class, () -> CopyEngine.copyAsync(a, 0, b, 0, 1, stream));
        }
    }
}
