package io.cuwire.cuda;

import static io.cuwire.cuda.CudaTestSupport.assumeCuda;
import static io.cuwire.cuda.CudaTestSupport.assumeGpus;
import static io.cuwire.cuda.CudaTestSupport.downloadBytes;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.Device;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.DeviceConformanceSuite;
import io.cuwire.memory.DeviceStream;
import io.cuwire.memory.IpcHandle;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The device contract ({@link DeviceConformanceSuite}) over CUDA device 0, with device 1 as the peer where there is
 * one; and what only CUDA has: memset, peer access turned on by a peer copy, the bus id in an IPC handle.
 */
@Tag("gpu")
class CudaDeviceTest extends DeviceConformanceSuite {
    @Override
    protected Device device() {
        assumeCuda();
        return Cuda.device(0);
    }

    @Override
    protected Device peerDevice() {
        return Cuda.deviceCount() > 1 ? Cuda.device(1) : null;
    }

    @Test
    void shouldFillARangeOfDeviceMemoryWithAByte() {
        CudaDevice cuda = (CudaDevice) device();
        try (BufferAllocator<DeviceBuffer> memory = cuda.newAllocator("memset", BufferAllocator.UNLIMITED);
                DeviceBuffer d = memory.allocate(256);
                DeviceStream stream = cuda.newStream()) {
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
    void shouldEnablePeerAccessBothWaysWithAPeerCopy() {
        assumeGpus(2);
        CudaDevice gpu0 = (CudaDevice) Cuda.device(0);
        CudaDevice gpu1 = (CudaDevice) Cuda.device(1);
        try (BufferAllocator<DeviceBuffer> m0 = gpu0.newAllocator("peer0", BufferAllocator.UNLIMITED);
                BufferAllocator<DeviceBuffer> m1 = gpu1.newAllocator("peer1", BufferAllocator.UNLIMITED);
                DeviceBuffer a = m0.allocate(4096);
                DeviceBuffer b = m1.allocate(4096)) {
            CopyEngine.copy(a, b);
            if (gpu0.canAccessPeer(gpu1)) {
                assertTrue(gpu0.peerAccessEnabled(gpu1));
                assertTrue(gpu1.peerAccessEnabled(gpu0));
            }
        }
    }

    @Test
    void shouldNameTheDevicesBusIdInAnIpcHandle() {
        CudaDevice gpu = (CudaDevice) device();
        try (BufferAllocator<DeviceBuffer> memory = gpu.newAllocator("ipc", BufferAllocator.UNLIMITED);
                DeviceBuffer buffer = memory.allocate(1 << 20)) {
            IpcHandle handle = gpu.exportHandle(buffer.slice(4096, 1000));
            String bus = new String(handle.handle(), 64, handle.handle().length - 64, StandardCharsets.US_ASCII);
            assertEquals(gpu.pciBusId(), bus);
            assertEquals(4096, handle.offset());
        }
    }
}
