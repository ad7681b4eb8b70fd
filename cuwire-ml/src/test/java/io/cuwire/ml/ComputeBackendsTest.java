package io.cuwire.ml;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyDirection;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.DType;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import io.cuwire.memory.TransferScope;
import io.cuwire.ml.internal.CpuBackend;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class ComputeBackendsTest {
    private BufferAllocator<DeviceBuffer> device;
    private BufferAllocator<HostBuffer> host;

    @BeforeEach
    void open() {
        MlTesting.assumeEmulatedDevices();
        device = MlTesting.device("backends-device");
        host = MlTesting.host("backends-host");
    }

    @AfterEach
    void close() {
        if (device != null) {
            device.close();
            host.close();
        }
    }

    @Test
    void shouldPickTheCpuBackendForHostAndEmulatedDeviceMemory() {
        try (NdArray h = NdArray.zeros(host, DType.FLOAT64, Order.C, 2);
                NdArray d = NdArray.zeros(device, DType.FLOAT64, Order.C, 2)) {
            assertSame(CpuBackend.instance(), ComputeBackends.forArray(h));
            assertSame(CpuBackend.instance(), ComputeBackends.forArray(d));
            assertSame(CpuBackend.instance(), ComputeBackends.forDevice(Devices.get(0)));
        }
    }

    @Test
    void shouldRefuseNoCpuThreads() {
        int threads = ComputeBackends.cpuThreads();
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> ComputeBackends.setCpuThreads(0));
        assertEquals("CPU backend threads: 0 (expected: >= 1)", e.getMessage());
        assertEquals(threads, ComputeBackends.cpuThreads(), "unchanged");
    }

    @Test
    void shouldRefuseOperandsInTwoPlaces() {
        try (NdArray h = NdArray.zeros(host, DType.FLOAT64, Order.C, 3);
                NdArray d = NdArray.zeros(device, DType.FLOAT64, Order.C, 3)) {
            IllegalArgumentException e = assertThrows(
                    IllegalArgumentException.class, () -> CpuBackend.instance().axpy(1, h, d));
            assertEquals(
                    "axpy: y is on DEVICE:emulated0 but x is on HOST (expected: every operand in one place)",
                    e.getMessage());
        }
    }

    @Test
    void shouldCountEveryStagedByteOnTheEmulatedDeviceAndNoneOnTheHost() {
        ComputeBackend b = CpuBackend.instance();
        for (BufferAllocator<?> mem : new BufferAllocator<?>[] {host, device}) {
            try (NdArray a = NdArray.zeros(mem, DType.FLOAT32, Order.C, 10, 20);
                    NdArray x = NdArray.zeros(mem, DType.FLOAT32, Order.C, 20, 5);
                    NdArray c = NdArray.zeros(mem, DType.FLOAT32, Order.C, 10, 5);
                    TransferScope scope = CopyEngine.openScope("gemm")) {
                b.gemm(false, false, 1, a, x, 0, c);
                boolean dev = mem == device;
                assertEquals(dev ? a.byteSize() + x.byteSize() : 0, scope.bytes(CopyDirection.D2H), "read");
                assertEquals(dev ? c.byteSize() : 0, scope.bytes(CopyDirection.H2D), "written");
                assertEquals(0, scope.bytes(CopyDirection.H2H), "host operands are used in place");
                b.gemm(false, false, 1, a, x, 1, c);
                assertEquals(
                        dev ? 2 * (a.byteSize() + x.byteSize()) + c.byteSize() : 0,
                        scope.bytes(CopyDirection.D2H),
                        "beta != 0 reads c too");
            }
        }
    }
}
