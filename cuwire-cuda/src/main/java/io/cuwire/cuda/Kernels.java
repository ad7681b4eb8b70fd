package io.cuwire.cuda;

import static io.cuwire.cuda.KernelParam.F32;
import static io.cuwire.cuda.KernelParam.F64;
import static io.cuwire.cuda.KernelParam.I64;
import static io.cuwire.cuda.KernelParam.PTR;

import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.DeviceStream;

/**
 * The platform's own element-wise kernels on CUDA device buffers ({@code src/main/cuda/kernels.cu}). Every method
 * enqueues one kernel on a CUDA {@link DeviceStream} and returns; the result is there after the stream's next
 * {@code synchronize()}, and the buffers must stay open until then. Buffers must be on the stream's device, aligned
 * to their element size, and hold the elements the call names (checked: a violation throws before anything is
 * enqueued). Counts are elements, not bytes.
 *
 * <p>The kernels are compiled by nvcc at build time into the class path resource {@value #RESOURCE} (sm_80, sm_90 and
 * compute_90 PTX, so newer GPUs JIT them) and loaded once per device ({@link KernelModule}). A build without nvcc has
 * no such resource; the first launch then throws a {@link CudaException} saying so. Thread-safe.
 */
public final class Kernels {
    /** The fatbin's class path resource. */
    public static final String RESOURCE = "META-INF/cuwire/kernels.fatbin";
    /** The module of these kernels. */
    public static final KernelModule MODULE =
            KernelModule.of(Kernels.class.getClassLoader(), RESOURCE, "sm_80, sm_90, compute_90 PTX", "cuwire-cuda");

    private static final Kernel AXPY_F32 = MODULE.kernel("axpy_f32", I64, F32, PTR, PTR);
    private static final Kernel AXPY_F64 = MODULE.kernel("axpy_f64", I64, F64, PTR, PTR);
    private static final Kernel FILL_F32 = MODULE.kernel("fill_f32", I64, F32, PTR);
    private static final Kernel FILL_F64 = MODULE.kernel("fill_f64", I64, F64, PTR);
    private static final Kernel SCALE_F32 = MODULE.kernel("scale_f32", I64, F32, PTR);
    private static final Kernel SCALE_F64 = MODULE.kernel("scale_f64", I64, F64, PTR);

    private Kernels() {}

    /** {@code y[i] = a * x[i] + y[i]} for {@code i < n}, in float32. */
    public static void axpyF32(DeviceStream stream, float a, DeviceBuffer x, DeviceBuffer y, long n) {
        AXPY_F32.launch(
                n,
                KernelArgs.on(stream)
                        .i64(n)
                        .f32(a)
                        .array("x", x, n, Float.BYTES)
                        .array("y", y, n, Float.BYTES));
    }

    /** {@code y[i] = a * x[i] + y[i]} for {@code i < n}, in float64. */
    public static void axpyF64(DeviceStream stream, double a, DeviceBuffer x, DeviceBuffer y, long n) {
        AXPY_F64.launch(
                n,
                KernelArgs.on(stream)
                        .i64(n)
                        .f64(a)
                        .array("x", x, n, Double.BYTES)
                        .array("y", y, n, Double.BYTES));
    }

    /** {@code y[i] = value} for {@code i < n}, in float32. */
    public static void fillF32(DeviceStream stream, DeviceBuffer y, long n, float value) {
        FILL_F32.launch(n, KernelArgs.on(stream).i64(n).f32(value).array("y", y, n, Float.BYTES));
    }

    /** {@code y[i] = value} for {@code i < n}, in float64. */
    public static void fillF64(DeviceStream stream, DeviceBuffer y, long n, double value) {
        FILL_F64.launch(n, KernelArgs.on(stream).i64(n).f64(value).array("y", y, n, Double.BYTES));
    }

    /** {@code y[i] = a * y[i]} for {@code i < n}, in float32. */
    public static void scaleF32(DeviceStream stream, float a, DeviceBuffer y, long n) {
        SCALE_F32.launch(n, KernelArgs.on(stream).i64(n).f32(a).array("y", y, n, Float.BYTES));
    }

    /** {@code y[i] = a * y[i]} for {@code i < n}, in float64. */
    public static void scaleF64(DeviceStream stream, double a, DeviceBuffer y, long n) {
        SCALE_F64.launch(n, KernelArgs.on(stream).i64(n).f64(a).array("y", y, n, Double.BYTES));
    }
}
