package io.cuwire.cuda;

import static io.cuwire.cuda.CudaTestSupport.assumeCuda;
import static io.cuwire.cuda.CudaTestSupport.bytes;
import static io.cuwire.cuda.CudaTestSupport.downloadBytes;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.cuda.internal.CudaDevice;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.Device;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.InvalidHandleException;
import io.cuwire.memory.IpcHandle;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/** CUDA IPC between this JVM and a child JVM ({@link IpcChild}) on the same GPU. */
@Tag("gpu")
class CudaIpcTest {
    @Test
    void shouldLetAnotherProcessReadAndWriteAnExportedSlice() throws IOException, InterruptedException {
        assumeCuda();
        Device gpu = Cuda.device(0);
        Random random = CudaTestSupport.random("ipc");
        int n = 3 * (1 << 20) + 11;
        int offset = 4096 + 256;
        byte[] data = bytes(random, n);
        try (BufferAllocator<DeviceBuffer> memory = gpu.newAllocator("test/ipc", BufferAllocator.UNLIMITED);
                DeviceBuffer buffer = memory.allocate(offset + n)) {
            DeviceBuffer slice = buffer.slice(offset, n);
            CopyEngine.copyFromSegment(MemorySegment.ofArray(data), slice, 0);

            IpcHandle handle = gpu.exportHandle(slice);

            assertEquals("cuda", handle.platform());
            assertEquals(n, handle.length());
            assertEquals(offset, handle.offset());
            String bus = new String(handle.handle(), 64, handle.handle().length - 64, StandardCharsets.US_ASCII);
            assertEquals(((CudaDevice) gpu).pciBusId(), bus);

            String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
            Process child = new ProcessBuilder(List.of(java, "--enable-native-access=ALL-UNNAMED", "-cp",
                    System.getProperty("java.class.path"), IpcChild.class.getName(),
                    HexFormat.of().formatHex(handle.handle()), String.valueOf(handle.deviceOrdinal()),
                    String.valueOf(handle.offset()), String.valueOf(handle.length())))
                    .redirectErrorStream(true).start();
            String output = new String(child.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(child.waitFor(120, TimeUnit.SECONDS), "child did not finish: " + output);
            System.out.println("child output:\n" + output);

            assertEquals(0, child.exitValue(), output);
            CRC32 crc = new CRC32();
            crc.update(data);
            assertTrue(output.contains("CHECKSUM " + crc.getValue() + " DEVICE cuda0"), output);
            assertTrue(output.contains("CLOSED"), output);
            byte[] expected = data.clone();
            for (int i = 0; i < n; i++) {
                expected[i] = (byte) ~expected[i];
            }
            byte[] all = downloadBytes(buffer);
            byte[] back = new byte[n];
            System.arraycopy(all, offset, back, 0, n);
            assertArrayEquals(expected, back);
        }
    }

    @Test
    void shouldRefuseHandlesOfAnotherPlatform() {
        assumeCuda();
        IpcHandle foreign = new IpcHandle("emulated", 0, new byte[64], 0, 16);

        assertThrows(InvalidHandleException.class, () -> Cuda.device(0).openHandle(foreign));
    }
}
