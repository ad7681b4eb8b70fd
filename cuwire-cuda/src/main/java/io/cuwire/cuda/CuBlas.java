package io.cuwire.cuda;

import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.DeviceStream;
import java.lang.foreign.MemorySegment;
import java.util.Locale;

/**
 * A cuBLAS handle bound to one CUDA {@link DeviceStream}: every routine is enqueued on that stream, so its result is
 * there after the stream's next {@code synchronize()}, and the buffers must stay open until then. Matrices are
 * column-major, as in BLAS; offsets, leading dimensions and increments count elements. Every operand is checked
 * (device, bounds, alignment) before anything is enqueued. {@code alpha} and {@code beta} are host values.
 *
 * <h2>Finding cuBLAS</h2>
 * The library is loaded on first use, from the first of:
 * <ol>
 *   <li>the file named by system property {@code cuwire.cublas.library}, or else by environment variable
 *       {@code CUWIRE_CUBLAS_LIBRARY} (when either is set, it is the only place tried);</li>
 *   <li>{@code libcublas.so.13}, then {@code libcublas.so.12}, on the dynamic linker's search path
 *       ({@code LD_LIBRARY_PATH}, {@code ldconfig});</li>
 *   <li>those names in {@code /usr/local/cuda/lib64}, then in {@code /usr/local/cuda/targets/x86_64-linux/lib}.</li>
 * </ol>
 * When none opens, {@link #create} throws a {@link CudaException} listing every place tried and why each failed.
 *
 * <h2>Ownership and threads</h2>
 * The creator owns the handle; {@link #close()} destroys it (a second close throws {@link IllegalStateException})
 * but leaves the stream alone. Routines are serialized on the handle, so several threads may share one, though
 * their work then runs in the order of the stream.
 */
public final class CuBlas implements AutoCloseable {
    private final CuBlasLibrary library;
    private final CudaStream stream;
    private final CudaDevice device;
    private MemorySegment handle;

    private CuBlas(CuBlasLibrary library, CudaStream stream) {
        this.library = library;
        this.stream = stream;
        this.device = stream.cudaDevice();
        MemorySegment h = library.create(device);
        try {
            library.setStream(device, h, stream.handle());
        } catch (RuntimeException e) {
            library.destroy(device, h);
            throw e;
        }
        this.handle = h;
    }

    /**
     * A handle whose routines run on {@code stream}, a CUDA stream.
     *
     * @throws CudaException when CUDA is unavailable, cuBLAS can't be found (naming every place tried), or
     *     {@code cublasCreate_v2} fails
     */
    public static CuBlas create(DeviceStream stream) {
        if (!Cuda.isAvailable()) {
            throw new CudaException("cuBLAS needs CUDA, which is not available: " + Cuda.unavailableReason(), null);
        }
        return new CuBlas(CuBlasLibrary.get(), CudaStream.of(stream));
    }

    /** Where cuBLAS was loaded from. */
    public String libraryLocation() {
        return library.location();
    }

    /** The stream the routines run on. */
    public DeviceStream stream() {
        return stream;
    }

    /** The address of the stream cuBLAS says this handle runs on ({@code cublasGetStream_v2}), for tests. */
    long boundStreamAddress() {
        return library.getStream(device, handle()).address();
    }

    private MemorySegment handle() {
        if (handle == null) {
            throw new IllegalStateException("CuBlas on " + stream + " is closed");
        }
        return handle;
    }

    /**
     * {@code C = alpha * op(A) * op(B) + beta * C} in float32, where {@code op(A)} is {@code m × k},
     * {@code op(B)} is {@code k × n} and {@code C} is {@code m × n}.
     */
    public synchronized void sgemm(
            Transpose transA,
            Transpose transB,
            int m,
            int n,
            int k,
            float alpha,
            DeviceBuffer a,
            long aOffset,
            int lda,
            DeviceBuffer b,
            long bOffset,
            int ldb,
            float beta,
            DeviceBuffer c,
            long cOffset,
            int ldc) {
        checkDims(m, n, k);
        long pa = matrix("A", a, aOffset, lda, rows(transA, m, k), cols(transA, m, k), Float.BYTES);
        long pb = matrix("B", b, bOffset, ldb, rows(transB, k, n), cols(transB, k, n), Float.BYTES);
        long pc = matrix("C", c, cOffset, ldc, m, n, Float.BYTES);
        library.sgemm(device, handle(), transA.code(), transB.code(), m, n, k, alpha, pa, lda, pb, ldb, beta, pc, ldc);
    }

    /** {@link #sgemm} in float64. */
    public synchronized void dgemm(
            Transpose transA,
            Transpose transB,
            int m,
            int n,
            int k,
            double alpha,
            DeviceBuffer a,
            long aOffset,
            int lda,
            DeviceBuffer b,
            long bOffset,
            int ldb,
            double beta,
            DeviceBuffer c,
            long cOffset,
            int ldc) {
        checkDims(m, n, k);
        long pa = matrix("A", a, aOffset, lda, rows(transA, m, k), cols(transA, m, k), Double.BYTES);
        long pb = matrix("B", b, bOffset, ldb, rows(transB, k, n), cols(transB, k, n), Double.BYTES);
        long pc = matrix("C", c, cOffset, ldc, m, n, Double.BYTES);
        library.dgemm(device, handle(), transA.code(), transB.code(), m, n, k, alpha, pa, lda, pb, ldb, beta, pc, ldc);
    }

    /**
     * {@code y = alpha * op(A) * x + beta * y} in float32, where {@code A} is {@code m × n} (as stored), {@code x}
     * has {@code n} elements ({@code m} if transposed) at stride {@code incx > 0} and {@code y} has {@code m}
     * ({@code n} if transposed) at stride {@code incy > 0}.
     */
    public synchronized void sgemv(
            Transpose trans,
            int m,
            int n,
            float alpha,
            DeviceBuffer a,
            long aOffset,
            int lda,
            DeviceBuffer x,
            long xOffset,
            int incx,
            float beta,
            DeviceBuffer y,
            long yOffset,
            int incy) {
        checkDims(m, n, 0);
        long pa = matrix("A", a, aOffset, lda, m, n, Float.BYTES);
        long px = vector("x", x, xOffset, trans == Transpose.NONE ? n : m, incx, Float.BYTES);
        long py = vector("y", y, yOffset, trans == Transpose.NONE ? m : n, incy, Float.BYTES);
        library.sgemv(device, handle(), trans.code(), m, n, alpha, pa, lda, px, incx, beta, py, incy);
    }

    /** {@link #sgemv} in float64. */
    public synchronized void dgemv(
            Transpose trans,
            int m,
            int n,
            double alpha,
            DeviceBuffer a,
            long aOffset,
            int lda,
            DeviceBuffer x,
            long xOffset,
            int incx,
            double beta,
            DeviceBuffer y,
            long yOffset,
            int incy) {
        checkDims(m, n, 0);
        long pa = matrix("A", a, aOffset, lda, m, n, Double.BYTES);
        long px = vector("x", x, xOffset, trans == Transpose.NONE ? n : m, incx, Double.BYTES);
        long py = vector("y", y, yOffset, trans == Transpose.NONE ? m : n, incy, Double.BYTES);
        library.dgemv(device, handle(), trans.code(), m, n, alpha, pa, lda, px, incx, beta, py, incy);
    }

    private static int rows(Transpose t, int r, int c) {
        return t == Transpose.NONE ? r : c;
    }

    private static int cols(Transpose t, int r, int c) {
        return t == Transpose.NONE ? c : r;
    }

    private static void checkDims(int m, int n, int k) {
        if (m < 0 || n < 0 || k < 0) {
            throw new IllegalArgumentException("m: " + m + ", n: " + n + ", k: " + k + " (expected: >= 0)");
        }
    }

    /** The device pointer of a column-major {@code rows × cols} matrix at {@code offset}, leading dim {@code ld}. */
    private long matrix(String name, DeviceBuffer buffer, long offset, int ld, int rows, int cols, int elementSize) {
        if (ld < Math.max(1, rows)) {
            throw new IllegalArgumentException("ld" + name.toLowerCase(Locale.ROOT) + ": " + ld
                    + " (expected: >= max(1, rows of " + name + ") = " + Math.max(1, rows) + ")");
        }
        long elements = rows == 0 || cols == 0 ? 0 : (long) ld * (cols - 1) + rows;
        return operand(name, buffer, offset, elements, elementSize);
    }

    private long vector(String name, DeviceBuffer buffer, long offset, int length, int inc, int elementSize) {
        if (inc <= 0) {
            throw new IllegalArgumentException("inc" + name + ": " + inc + " (expected: > 0)");
        }
        long elements = length == 0 ? 0 : (long) inc * (length - 1) + 1;
        return operand(name, buffer, offset, elements, elementSize);
    }

    private long operand(String name, DeviceBuffer buffer, long offset, long elements, int elementSize) {
        if (buffer.device() != device) {
            throw new IllegalArgumentException(
                    name + ": " + buffer.describe() + " is not on " + device + ", the device of " + stream);
        }
        long capacity = buffer.byteSize() / elementSize;
        if (offset < 0 || offset > capacity - elements) {
            throw new IndexOutOfBoundsException(name + ": offset " + offset + " + " + elements + " elements (expected:"
                    + " <= " + capacity + " elements of " + elementSize + " bytes in " + buffer.describe() + ")");
        }
        long ptr = CudaDevice.pointer(buffer, offset * elementSize);
        if (ptr % elementSize != 0) {
            throw new IllegalArgumentException(name + ": element " + offset + " of " + buffer.describe()
                    + " is not aligned to " + elementSize + " bytes");
        }
        return ptr;
    }

    /**
     * Destroys the handle.
     *
     * @throws IllegalStateException if the handle was closed already
     */
    @Override
    public synchronized void close() {
        if (handle == null) {
            throw new IllegalStateException("CuBlas on " + stream + " is already closed");
        }
        MemorySegment h = handle;
        handle = null;
        library.destroy(device, h);
    }
}
