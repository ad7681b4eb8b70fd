package io.cuwire.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.internal.EmulatedPlatform;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Device memory under pressure: a failed allocation names what holds the device's memory
 * ({@link DeviceMemoryReport}), and reclaimers free memory before an allocation fails.
 */
class DeviceMemoryPressureTest {
    private static final long MIB = 1L << 20;

    private static Device device(Path dir, long bytes) {
        return EmulatedPlatform.create(dir, 1, bytes).devices().getFirst();
    }

    @Test
    void shouldNameTheDevicesAllocatorsAndRegisteredHoldersWhenAnAllocationFails(@TempDir Path dir) {
        Device device = device(dir, 8 * MIB);
        try (BufferAllocator<DeviceBuffer> models = device.newAllocator("models", BufferAllocator.UNLIMITED);
                BufferAllocator<DeviceBuffer> tasks = device.newAllocator("tasks", BufferAllocator.UNLIMITED);
                BufferAllocator<DeviceBuffer> idle = device.newAllocator("idle", BufferAllocator.UNLIMITED);
                DeviceBuffer model = models.allocate(5 * MIB);
                DeviceBuffer scratch = tasks.allocate(2 * MIB)) {
            Registration cache = device.addMemoryHolder(() -> "model cache: 1 model, " + model.byteSize() + " bytes");
            AllocationLimitException e = assertThrows(AllocationLimitException.class, () -> tasks.allocate(2 * MIB));

            List<String> lines = e.getMessage().lines().toList();
            assertEquals("emulated device 0 cannot allocate 2097152 bytes: 7340032 of 8388608 allocated", lines.get(0));
            assertTrue(
                    lines.get(1)
                            .startsWith("memory of emulated0 (cuwire emulated device (shared memory in " + dir
                                    + ")): 8388608 bytes total, 1048576 free; held in this process by:"),
                    lines.get(1));
            assertTrue(
                    lines.contains("  - allocator 'models': 5242880 bytes, 1 open buffer(s) of its own"),
                    e.getMessage());
            assertTrue(
                    lines.contains("  - allocator 'tasks': 2097152 bytes, 1 open buffer(s) of its own"),
                    e.getMessage());
            assertTrue(lines.contains("  - model cache: 1 model, 5242880 bytes"), e.getMessage());
            assertTrue(
                    lines.stream()
                            .anyMatch(l -> l.startsWith(
                                    "  - emulated device 0: 7340032 of 8388608 bytes " + "allocated by this process")),
                    e.getMessage());
            assertFalse(e.getMessage().contains("'idle'"), "an allocator holding nothing is left out");
            assertInstanceOf(AllocationLimitException.class, e.getCause(), "the device's own refusal");
            assertEquals(2 * MIB, tasks.allocatedBytes(), "the refused allocation is not counted");

            cache.close();
            cache.close();
            String after = assertThrows(AllocationLimitException.class, () -> tasks.allocate(2 * MIB))
                    .getMessage();
            assertFalse(after.contains("model cache"), "a closed registration is off the report: " + after);
            assertTrue(idle.allocatedBytes() == 0 && scratch.isOpen());
        }
        assertEquals(List.of(), device.memoryReport().holders(), "closed allocators are off the report");
    }

    @Test
    void shouldNameAnAllocatorLimitAndTheChildrenHoldingItsBytes(@TempDir Path dir) {
        Device device = device(dir, 64 * MIB);
        try (BufferAllocator<DeviceBuffer> worker = device.newAllocator("worker", 3 * MIB);
                BufferAllocator<DeviceBuffer> recv = worker.newChild("recv", BufferAllocator.UNLIMITED);
                DeviceBuffer own = worker.allocate(MIB);
                DeviceBuffer received = recv.allocate(MIB)) {
            AllocationLimitException e = assertThrows(AllocationLimitException.class, () -> recv.allocate(2 * MIB));
            List<String> lines = e.getMessage().lines().toList();
            assertEquals(
                    "allocator 'worker' cannot allocate 2097152 bytes of DEVICE:emulated0: 2097152 allocated, "
                            + "limit 3145728",
                    lines.get(0));
            assertTrue(
                    lines.contains("  - allocator 'worker': 2097152 bytes, 1 open buffer(s) of its own, limit "
                            + "3145728; children 'worker/recv' 1048576 bytes"),
                    e.getMessage());
            assertTrue(own.isOpen() && received.isOpen());
        }
    }

    @Test
    void shouldAskTheReclaimersAndRetryUntilTheAllocationFits(@TempDir Path dir) {
        Device device = device(dir, 64 * MIB);
        try (BufferAllocator<DeviceBuffer> worker = device.newAllocator("worker", 8 * MIB);
                BufferAllocator<DeviceBuffer> tasks = worker.newChild("tasks", BufferAllocator.UNLIMITED)) {
            Deque<DeviceBuffer> cached = new ArrayDeque<>();
            for (int i = 0; i < 3; i++) {
                cached.add(worker.allocate(2 * MIB));
            }
            AtomicInteger asked = new AtomicInteger();
            List<Long> sizes = new ArrayList<>();
            Registration r = worker.addReclaimer(bytes -> {
                asked.incrementAndGet();
                sizes.add(bytes);
                DeviceBuffer oldest = cached.pollFirst();
                if (oldest == null) {
                    return false;
                }
                oldest.close();
                return true;
            });
            // 6 MiB held of 8: a 5 MiB allocation in the child fits once two of the three cached buffers went.
            try (DeviceBuffer big = tasks.allocate(5 * MIB)) {
                assertEquals(5 * MIB, big.byteSize());
                assertEquals(2, asked.get(), "asked until it fit, no more");
                assertEquals(List.of(5 * MIB, 5 * MIB), sizes);
                assertEquals(1, cached.size());
                assertEquals(7 * MIB, worker.allocatedBytes());

                AllocationLimitException e =
                        assertThrows(AllocationLimitException.class, () -> tasks.allocate(4 * MIB));
                assertEquals(4, asked.get(), "one more freed, then nothing left to free");
                assertTrue(
                        e.getMessage().startsWith("allocator 'worker' cannot allocate 4194304 bytes"), e.getMessage());
                assertTrue(
                        e.getMessage()
                                .contains("\n  - allocator 'worker': 5242880 bytes, 0 open buffer(s) of its "
                                        + "own, limit 8388608; children 'worker/tasks' 5242880 bytes"),
                        e.getMessage());
            }
            r.close();
            worker.allocate(2 * MIB).close();
            DeviceBuffer a = worker.allocate(4 * MIB);
            DeviceBuffer b = worker.allocate(4 * MIB);
            assertThrows(AllocationLimitException.class, () -> worker.allocate(MIB));
            assertEquals(4, asked.get(), "a closed registration is not asked");
            a.close();
            b.close();
        }
    }

    @Test
    void shouldNotReclaimAgainForAnAllocationAReclaimerMakes(@TempDir Path dir) {
        Device device = device(dir, 64 * MIB);
        try (BufferAllocator<DeviceBuffer> worker = device.newAllocator("worker", 2 * MIB)) {
            AtomicInteger asked = new AtomicInteger();
            List<Throwable> inner = new ArrayList<>();
            worker.addReclaimer(bytes -> {
                asked.incrementAndGet();
                try {
                    worker.allocate(4 * MIB).close();
                } catch (AllocationLimitException e) {
                    inner.add(e);
                }
                return false;
            });
            assertThrows(AllocationLimitException.class, () -> worker.allocate(3 * MIB));
            assertEquals(1, asked.get(), "the reclaimer's own allocation fails without asking it again");
            assertEquals(1, inner.size());
            assertEquals(0, worker.allocatedBytes());
        }
    }
}
