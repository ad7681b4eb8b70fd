package io.cuwire.cuda;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.MemoryResource;
import java.lang.foreign.MemorySegment;
import java.util.Random;

/** Shared helpers of the CUDA tests: the GPU assumption, printed seeds, uploads and downloads. */
public final class CudaTestSupport {
    private CudaTestSupport() {}

    /**
     * Skips the calling test, with the reason, where no CUDA device is usable — or fails it, when the run forces
     * the CUDA platform ({@code -Dcuwire.device.platform=cuda}, as the GPU bundle's {@code bin/gpu-tests} does), so
     * that a GPU run on a host without a working driver cannot pass by skipping everything.
     */
    public static void assumeCuda() {
        if (!Cuda.isAvailable() && "cuda".equals(System.getProperty(Devices.PLATFORM_PROPERTY))) {
            fail("-D" + Devices.PLATFORM_PROPERTY + "=cuda, but no CUDA device: " + Cuda.unavailableReason());
        }
        assumeTrue(Cuda.isAvailable(), () -> "no CUDA device: " + Cuda.unavailableReason());
    }

    /** Skips the calling test unless at least {@code n} GPUs are visible. */
    public static void assumeGpus(int n) {
        assumeCuda();
        assumeTrue(Cuda.deviceCount() >= n, () -> "needs " + n + " GPUs; " + Cuda.deviceCount() + " visible");
    }

    /** A seeded random source ({@link io.cuwire.test.TestRandom}: fixed by default, printed). */
    public static Random random(String test) {
        return io.cuwire.test.TestRandom.random("CudaTestSupport." + test);
    }

    /** {@code n} random bytes. */
    public static byte[] bytes(Random random, int n) {
        byte[] b = new byte[n];
        random.nextBytes(b);
        return b;
    }

    /** A new device buffer holding {@code values}. */
    public static DeviceBuffer upload(MemoryResource<DeviceBuffer> memory, float[] values) {
        DeviceBuffer b = memory.allocate((long) values.length * Float.BYTES);
        CopyEngine.copyFromSegment(MemorySegment.ofArray(values), b, 0);
        return b;
    }

    /** A new device buffer holding {@code values}. */
    public static DeviceBuffer upload(MemoryResource<DeviceBuffer> memory, double[] values) {
        DeviceBuffer b = memory.allocate((long) values.length * Double.BYTES);
        CopyEngine.copyFromSegment(MemorySegment.ofArray(values), b, 0);
        return b;
    }

    /** The first {@code n} floats of {@code buffer}. */
    public static float[] downloadFloats(DeviceBuffer buffer, int n) {
        float[] out = new float[n];
        CopyEngine.copyToSegment(buffer, 0, MemorySegment.ofArray(out));
        return out;
    }

    /** The first {@code n} doubles of {@code buffer}. */
    public static double[] downloadDoubles(DeviceBuffer buffer, int n) {
        double[] out = new double[n];
        CopyEngine.copyToSegment(buffer, 0, MemorySegment.ofArray(out));
        return out;
    }

    /** The first {@code n} ints of {@code buffer}. */
    public static int[] downloadInts(DeviceBuffer buffer, int n) {
        int[] out = new int[n];
        CopyEngine.copyToSegment(buffer, 0, MemorySegment.ofArray(out));
        return out;
    }

    /** The bytes of {@code buffer}. */
    public static byte[] downloadBytes(DeviceBuffer buffer) {
        byte[] out = new byte[Math.toIntExact(buffer.byteSize())];
        CopyEngine.copyToSegment(buffer, 0, MemorySegment.ofArray(out));
        return out;
    }

    /** Copies {@code data} into a native segment's start. */
    public static void fill(MemorySegment segment, byte[] data) {
        MemorySegment.copy(data, 0, segment, JAVA_BYTE, 0, data.length);
    }
}
