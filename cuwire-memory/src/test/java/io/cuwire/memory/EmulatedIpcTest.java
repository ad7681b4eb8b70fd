package io.cuwire.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The emulated device's stand-in for CUDA IPC, across two real processes. */
class EmulatedIpcTest {
    @Test
    void shouldLetAnotherProcessMapReadAndWriteABufferByItsHandle() throws Exception {
        assumeTrue(Devices.platform().equals("emulated"), "runs on the emulated platform");
        Device device = Devices.get(Devices.all().size() - 1);
        int size = 1 << 20;
        try (BufferAllocator<DeviceBuffer> alloc = device.newAllocator("ipc", BufferAllocator.UNLIMITED);
                DeviceBuffer whole = alloc.allocate(size + 4096L)) {
            DeviceBuffer buffer = whole.slice(4096, size);
            byte[] data = new byte[size / 2];
            for (int i = 0; i < data.length; i++) {
                data[i] = (byte) (i * 7);
            }
            CopyEngine.copyFromSegment(MemorySegment.ofArray(data), buffer, 0);
            IpcHandle handle = device.exportHandle(buffer);
            assertEquals(4096, handle.offset());
            assertEquals(size, handle.length());

            List<String> cmd = new ArrayList<>();
            cmd.add(ProcessHandle.current().info().command().orElseThrow());
            cmd.add("--enable-native-access=ALL-UNNAMED");
            cmd.add("-cp");
            cmd.add(System.getProperty("java.class.path"));
            cmd.add(EmulatedIpcChild.class.getName());
            cmd.add(handle.platform());
            cmd.add(Integer.toString(handle.deviceOrdinal()));
            cmd.add(HexFormat.of().formatHex(handle.handle()));
            cmd.add(Long.toString(handle.offset()));
            cmd.add(Long.toString(handle.length()));
            Process child = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            assertTrue(child.waitFor(60, TimeUnit.SECONDS), "child process did not finish");
            String output = new String(child.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertEquals(0, child.exitValue(), "child failed: " + output);

            byte[] answer = new byte[size / 2];
            CopyEngine.copyToSegment(buffer, size / 2, MemorySegment.ofArray(answer));
            for (int i = 0; i < answer.length; i++) {
                assertEquals((byte) (i * 13), answer[i], "byte " + i + " written by the other process");
            }
        }
    }

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
        assertThrows(InvalidHandleException.class,
                () -> device.openHandle(new IpcHandle("cuda", 0, new byte[64], 0, 8)));
        assertThrows(InvalidHandleException.class, () -> device.openHandle(
                new IpcHandle("emulated", 0, "/etc/passwd".getBytes(StandardCharsets.UTF_8), 0, 8)));
    }
}
