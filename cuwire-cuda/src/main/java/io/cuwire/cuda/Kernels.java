package io.cuwire.cuda;

import io.cuwire.cuda.internal.CudaDevice;
import io.cuwire.cuda.internal.CudaStream;
import io.cuwire.cuda.internal.KernelModules;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Stream;

/**
 * cuwire's element-wise and distance kernels on CUDA device buffers. Every method enqueues one kernel on a CUDA
 * {@link Stream} and returns; the result is there after the stream's next {@code synchronize()}, and the buffers
 * must stay open until then. Buffers must be on the stream's device, aligned to their element size, and hold the
 * elements the call names (checked: a violation throws before anything is enqueued). Arrays are dense and
 * row-major; counts are elements, not bytes.
 *
 * <p>The kernels are compiled by nvcc at build time into the class path resource
 * {@code io/cuwire/cuda/kernels.fatbin} (sm_80, sm_90 and compute_90 PTX, so newer GPUs JIT them) and loaded once per
 * device. A build without nvcc has no such resource; the first launch then throws a {@link CudaException} saying so.
 * Thread-safe.
 */
public final class Kernels {
    private Kernels() {
    }

    /** {@code y[i] = a * x[i] + y[i]} for {@code i < n}, in float32. */
    public static void axpyF32(Stream stream, float a, DeviceBuffer x, DeviceBuffer y, long n) {
        CudaStream s = CudaStream.of(stream);
        long px = array(s, "x", x, n, Float.BYTES);
        long py = array(s, "y", y, n, Float.BYTES);
        KernelModules.launch(s, "axpy_f32", n, n, a, px, py);
    }

    /** {@code y[i] = a * x[i] + y[i]} for {@code i < n}, in float64. */
    public static void axpyF64(Stream stream, double a, DeviceBuffer x, DeviceBuffer y, long n) {
        CudaStream s = CudaStream.of(stream);
        long px = array(s, "x", x, n, Double.BYTES);
        long py = array(s, "y", y, n, Double.BYTES);
        KernelModules.launch(s, "axpy_f64", n, n, a, px, py);
    }

    /** {@code y[i] = value} for {@code i < n}, in float32. */
    public static void fillF32(Stream stream, DeviceBuffer y, long n, float value) {
        CudaStream s = CudaStream.of(stream);
        long py = array(s, "y", y, n, Float.BYTES);
        KernelModules.launch(s, "fill_f32", n, n, value, py);
    }

    /** {@code y[i] = value} for {@code i < n}, in float64. */
    public static void fillF64(Stream stream, DeviceBuffer y, long n, double value) {
        CudaStream s = CudaStream.of(stream);
        long py = array(s, "y", y, n, Double.BYTES);
        KernelModules.launch(s, "fill_f64", n, n, value, py);
    }

    /** {@code y[i] = a * y[i]} for {@code i < n}, in float32. */
    public static void scaleF32(Stream stream, float a, DeviceBuffer y, long n) {
        CudaStream s = CudaStream.of(stream);
        long py = array(s, "y", y, n, Float.BYTES);
        KernelModules.launch(s, "scale_f32", n, n, a, py);
    }

    /** {@code y[i] = a * y[i]} for {@code i < n}, in float64. */
    public static void scaleF64(Stream stream, double a, DeviceBuffer y, long n) {
        CudaStream s = CudaStream.of(stream);
        long py = array(s, "y", y, n, Double.BYTES);
        KernelModules.launch(s, "scale_f64", n, n, a, py);
    }

    /**
     * Squared Euclidean distances between every row of {@code x} ({@code rows × dims}) and every row of
     * {@code centers} ({@code k × dims}), into {@code out} ({@code rows × k}), in float32.
     */
    public static void squaredDistancesF32(Stream stream, DeviceBuffer x, DeviceBuffer centers, DeviceBuffer out,
            long rows, long k, long dims) {
        CudaStream s = CudaStream.of(stream);
        long px = array(s, "x", x, Math.multiplyExact(rows, dims), Float.BYTES);
        long pc = array(s, "centers", centers, Math.multiplyExact(k, dims), Float.BYTES);
        long po = array(s, "out", out, Math.multiplyExact(rows, k), Float.BYTES);
        KernelModules.launch(s, "sq_dist_rows_f32", rows * k, rows, k, dims, px, pc, po);
    }

    /** {@link #squaredDistancesF32} in float64. */
    public static void squaredDistancesF64(Stream stream, DeviceBuffer x, DeviceBuffer centers, DeviceBuffer out,
            long rows, long k, long dims) {
        CudaStream s = CudaStream.of(stream);
        long px = array(s, "x", x, Math.multiplyExact(rows, dims), Double.BYTES);
        long pc = array(s, "centers", centers, Math.multiplyExact(k, dims), Double.BYTES);
        long po = array(s, "out", out, Math.multiplyExact(rows, k), Double.BYTES);
        KernelModules.launch(s, "sq_dist_rows_f64", rows * k, rows, k, dims, px, pc, po);
    }

    /**
     * For each row of {@code d} ({@code rows × cols}, {@code cols >= 1}), the column of its smallest value (the
     * first, on ties) into {@code index} (int32) and that value into {@code minimum}, in float32.
     */
    public static void argminRowsF32(Stream stream, DeviceBuffer d, long rows, long cols, DeviceBuffer index,
            DeviceBuffer minimum) {
        CudaStream s = CudaStream.of(stream);
        checkColumns(cols);
        long pd = array(s, "d", d, Math.multiplyExact(rows, cols), Float.BYTES);
        long pi = array(s, "index", index, rows, Integer.BYTES);
        long pm = array(s, "minimum", minimum, rows, Float.BYTES);
        KernelModules.launch(s, "argmin_rows_f32", rows, rows, cols, pd, pi, pm);
    }

    /** {@link #argminRowsF32} in float64 ({@code index} stays int32). */
    public static void argminRowsF64(Stream stream, DeviceBuffer d, long rows, long cols, DeviceBuffer index,
            DeviceBuffer minimum) {
        CudaStream s = CudaStream.of(stream);
        checkColumns(cols);
        long pd = array(s, "d", d, Math.multiplyExact(rows, cols), Double.BYTES);
        long pi = array(s, "index", index, rows, Integer.BYTES);
        long pm = array(s, "minimum", minimum, rows, Double.BYTES);
        KernelModules.launch(s, "argmin_rows_f64", rows, rows, cols, pd, pi, pm);
    }

    private static void checkColumns(long cols) {
        if (cols < 1 || cols > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("cols: " + cols + " (expected: 1 <= cols <= " + Integer.MAX_VALUE
                    + ")");
        }
    }

    /** The device pointer of {@code buffer} after checking it holds {@code n} aligned elements on the device. */
    static long array(CudaStream stream, String name, DeviceBuffer buffer, long n, int elementSize) {
        if (n < 0) {
            throw new IllegalArgumentException(name + " elements: " + n + " (expected: >= 0)");
        }
        CudaDevice device = stream.cudaDevice();
        if (buffer.device() != device) {
            throw new IllegalArgumentException(name + ": " + buffer.describe() + " is not on " + device
                    + ", the device of " + stream);
        }
        long bytes = Math.multiplyExact(n, (long) elementSize);
        if (bytes > buffer.byteSize()) {
            throw new IndexOutOfBoundsException(name + ": " + n + " elements of " + elementSize + " bytes need "
                    + bytes + " bytes (expected: <= " + name + ".byteSize() = " + buffer.byteSize() + ")");
        }
        long ptr = CudaDevice.pointer(buffer, 0);
        if (ptr % elementSize != 0) {
            throw new IllegalArgumentException(name + ": " + buffer.describe() + " starts at an address not aligned"
                    + " to its " + elementSize + "-byte elements");
        }
        return ptr;
    }
}
