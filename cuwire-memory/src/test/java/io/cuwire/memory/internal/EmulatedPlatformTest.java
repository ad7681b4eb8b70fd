package io.cuwire.memory.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.AllocationLimitException;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.Device;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class EmulatedPlatformTest {
    @Test
    void shouldRemoveFilesLeftByDeadProcessesAndKeepThoseOfLiveOnes(@TempDir Path dir) throws Exception {
        Process gone = new ProcessBuilder("true").start();
        assertTrue(gone.waitFor(10, TimeUnit.SECONDS));
        Path stale = Files.createFile(dir.resolve(EmulatedPlatform.FILE_PREFIX + gone.pid() + "-0-1"));
        Path live = Files.createFile(dir.resolve(EmulatedPlatform.FILE_PREFIX + ProcessHandle.current().pid()
                + "-0-1"));
        Path other = Files.createFile(dir.resolve("unrelated"));
        EmulatedPlatform.create(dir, 1, 1 << 20);
        assertFalse(Files.exists(stale), "a dead process's file is removed");
        assertTrue(Files.exists(live));
        assertTrue(Files.exists(other));
    }

    @Test
    void shouldKeepOneFilePerAllocationAndDeleteItOnClose(@TempDir Path dir) throws Exception {
        Device device = EmulatedPlatform.create(dir, 2, 1 << 20).devices().get(1);
        assertEquals(1, device.ordinal());
        try (BufferAllocator<DeviceBuffer> alloc = device.newAllocator("files", BufferAllocator.UNLIMITED)) {
            DeviceBuffer b = alloc.allocate(1000);
            try (var files = Files.list(dir)) {
                assertEquals(1, files.count());
            }
            assertEquals((1 << 20) - 1000, device.freeMemory());
            b.close();
            try (var files = Files.list(dir)) {
                assertEquals(0, files.count());
            }
        }
    }

    @Test
    void shouldRefuseAllocationsPastTheDevicesMemory(@TempDir Path dir) {
        Device device = EmulatedPlatform.create(dir, 1, 4096).devices().get(0);
        try (BufferAllocator<DeviceBuffer> alloc = device.newAllocator("small", BufferAllocator.UNLIMITED);
                DeviceBuffer b = alloc.allocate(4000)) {
            AllocationLimitException e = assertThrows(AllocationLimitException.class, () -> alloc.allocate(100));
            assertTrue(e.getMessage().contains("emulated device 0 cannot allocate 100 bytes"), e.getMessage());
            assertEquals(4000, b.byteSize());
        }
    }

    @Test
    void shouldChooseThePlatformOnceForTheProcess() {
        Devices.Selection first = Devices.selection();
        assertSame(first, Devices.selection());
        assertEquals(first.devices().size(), Devices.all().size());
        assertThrows(IllegalArgumentException.class, () -> Devices.get(first.devices().size()));
    }
}
