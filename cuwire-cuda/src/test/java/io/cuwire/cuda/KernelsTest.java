package io.cuwire.cuda;

import static io.cuwire.cuda.CudaTestSupport.assumeCuda;
import static io.cuwire.cuda.CudaTestSupport.downloadDoubles;
import static io.cuwire.cuda.CudaTestSupport.downloadFloats;
import static io.cuwire.cuda.CudaTestSupport.upload;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.Device;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.DeviceStream;
import java.util.Random;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/** cuwire's CUDA kernels against the same computation on the CPU, on random data with a printed seed. */
@Tag("gpu")
class KernelsTest {
    private Device gpu;
    private BufferAllocator<DeviceBuffer> memory;
    private DeviceStream stream;
    private Random random;

    @BeforeEach
    void setUp(TestInfo test) {
        assumeCuda();
        gpu = Cuda.device(0);
        memory = gpu.newAllocator("test/kernels", BufferAllocator.UNLIMITED);
        stream = gpu.newStream();
        random = CudaTestSupport.random(test.getDisplayName());
    }

    @AfterEach
    void tearDown() {
        if (stream != null) {
            stream.close();
            memory.close();
        }
    }

    private float[] floats(int n) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = random.nextFloat() * 2 - 1;
        }
        return v;
    }

    private double[] doubles(int n) {
        double[] v = new double[n];
        for (int i = 0; i < n; i++) {
            v[i] = random.nextDouble() * 2 - 1;
        }
        return v;
    }

    @Test
    void shouldComputeAxpyInFloat32() {
        int n = 1_000_003;
        float a = 1.75f;
        float[] x = floats(n);
        float[] y = floats(n);
        try (DeviceBuffer dx = upload(memory.resource(), x);
                DeviceBuffer dy = upload(memory.resource(), y)) {
            Kernels.axpyF32(stream, a, dx, dy, n);
            stream.synchronize();

            float[] out = downloadFloats(dy, n);
            for (int i = 0; i < n; i++) {
                assertEquals(Math.fma(a, x[i], y[i]), out[i], 1e-6f, "element " + i);
            }
        }
    }

    @Test
    void shouldComputeAxpyInFloat64OnAPrefix() {
        int n = 70_001;
        double a = -0.3;
        double[] x = doubles(n);
        double[] y = doubles(n);
        int m = n - 1000;
        try (DeviceBuffer dx = upload(memory.resource(), x);
                DeviceBuffer dy = upload(memory.resource(), y)) {
            Kernels.axpyF64(stream, a, dx, dy, m);
            stream.synchronize();

            double[] out = downloadDoubles(dy, n);
            for (int i = 0; i < n; i++) {
                assertEquals(i < m ? Math.fma(a, x[i], y[i]) : y[i], out[i], 1e-12, "element " + i);
            }
        }
    }

    @Test
    void shouldFillAndScale() {
        int n = 12_345;
        try (DeviceBuffer f = memory.allocate(n * 4L);
                DeviceBuffer d = memory.allocate(n * 8L)) {
            Kernels.fillF32(stream, f, n, 2.5f);
            Kernels.scaleF32(stream, -2f, f, n);
            Kernels.fillF64(stream, d, n, 0.25);
            Kernels.scaleF64(stream, 4, d, n);
            stream.synchronize();

            float[] fs = downloadFloats(f, n);
            double[] ds = downloadDoubles(d, n);
            for (int i = 0; i < n; i++) {
                assertEquals(-5f, fs[i], "float element " + i);
                assertEquals(1.0, ds[i], "double element " + i);
            }
        }
    }

    @Test
    void shouldRefuseShortMisalignedOrForeignBuffersBeforeLaunching() {
        try (DeviceBuffer x = memory.allocate(400);
                DeviceBuffer y = memory.allocate(400)) {
            assertThrows(IndexOutOfBoundsException.class, () -> Kernels.axpyF32(stream, 1f, x, y, 101));
            assertThrows(IllegalArgumentException.class, () -> Kernels.axpyF32(stream, 1f, x.slice(2, 200), y, 10));
            assertThrows(IllegalArgumentException.class, () -> Kernels.fillF32(stream, y, -1, 0f));
        }
    }

    @Test
    void shouldRefuseArgumentsThatAreNotTheKernelsSignatureBeforeLaunching() {
        Kernel fill = Kernels.MODULE.kernel("fill_f32", KernelParam.I64, KernelParam.F32, KernelParam.PTR);
        try (DeviceBuffer y = memory.allocate(400)) {
            KernelArgs wrong = KernelArgs.on(stream).i64(10).f64(1.0).array("y", y, 10, Float.BYTES);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> fill.launch(10, wrong));
            assertEquals("kernel fill_f32: arguments [I64, F64, PTR] (expected: [I64, F32, PTR])", e.getMessage());
            KernelArgs right = KernelArgs.on(stream).i64(10).f32(1.0f).array("y", y, 10, Float.BYTES);
            assertEquals(
                    "kernel fill_f32 blocks: 0 (expected: 1 <= blocks <= 65535)",
                    assertThrows(IllegalArgumentException.class, () -> fill.launchBlocks(0, right))
                            .getMessage());
        }
    }

    @Test
    void shouldDoNothingForZeroElements() {
        try (DeviceBuffer y = memory.allocate(4 * Float.BYTES)) {
            io.cuwire.memory.CopyEngine.copyFromSegment(
                    java.lang.foreign.MemorySegment.ofArray(new float[] {7f, 7f, 7f, 7f}), y, 0);
            Kernels.fillF32(stream, y, 0, 1f);
            stream.synchronize();
            assertArrayEquals(new float[] {7f, 7f, 7f, 7f}, downloadFloats(y, 4), "no element was written");
        }
    }
}
