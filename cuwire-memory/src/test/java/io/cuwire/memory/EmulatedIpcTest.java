package io.cuwire.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * What only the emulated device's stand-in for CUDA IPC does: map a handle in the process that exported it, and refuse
 * a handle that names a file. Across two processes, its IPC is {@link DeviceConformanceSuite}'s.
 */
class EmulatedIpcTest {
    @Test
    void shouldMapInTheSameProcessAndUnmapWithoutFreeingTheExportersMemory() {
        Device device = Devices.get(0);
        assumeTrue(device.platform().equals("emulated"), "runs on the emulated platform");
        try (BufferAllocator<DeviceBuffer> alloc = device.newAllocator("ipc-local", BufferAllocator.UNLIMITED);
                DeviceBuffer buffer = alloc.allocate(64)) {
            CopyEngine.copyFromSegment(MemorySegment.ofArray(new byte[] {9, 8, 7}), buffer, 0);
            DeviceBuffer mapped = device.openHandle(device.exportHandle(buffer));
            assertEquals(null, mapped.allocator(), "an imported mapping is not the allocator's");
            mapped.close();
            byte[] back = new byte[3];
            CopyEngine.copyToSegment(buffer, 0, MemorySegment.ofArray(back));
            assertEquals(9, back[0]);
        }
    }

    @Test
    void shouldRefuseHandlesOfOtherPlatformsAndFiles() {
        Device device = Devices.get(0);
        assumeTrue(device.platform().equals("emulated"), "runs on the emulated platform");
        assertThrows(
                InvalidHandleException.class, () -> device.openHandle(new IpcHandle("cuda", 0, new byte[64], 0, 8)));
        assertThrows(
                InvalidHandleException.class,
                () -> device.openHandle(
                        new IpcHandle("emulated", 0, "/etc/passwd".getBytes(StandardCharsets.UTF_8), 0, 8)));
    }
}
