package io.cuwire.cuda;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_DOUBLE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * cuBLAS, found at run time and bound through the Foreign Function and Memory API. Where it is looked for, in order:
 * the path in system property {@value #PROPERTY}, else the path in environment variable {@value #ENV} (either one,
 * when set, is the only place tried), else {@code libcublas.so.13} and {@code libcublas.so.12} on the dynamic
 * linker's search path, else those names in {@code /usr/local/cuda/lib64} and
 * {@code /usr/local/cuda/targets/x86_64-linux/lib}. Device pointers are passed as 64-bit integers (the same
 * registers as pointers on the platforms CUDA supports). Every routine takes the {@link CudaDevice} of its handle
 * and runs in that device's context, set by {@link Driver}'s gate. Package-private. Thread-safe.
 */
@SuppressWarnings("restricted") // binding native code is this class's purpose
final class CuBlasLibrary {
    /** System property naming the cuBLAS library file. */
    public static final String PROPERTY = "cuwire.cublas.library";
    /** Environment variable naming the cuBLAS library file. */
    public static final String ENV = "CUWIRE_CUBLAS_LIBRARY";

    static final List<String> NAMES = List.of("libcublas.so.13", "libcublas.so.12");
    static final List<String> DIRECTORIES =
            List.of("/usr/local/cuda/lib64", "/usr/local/cuda/targets/x86_64-linux/lib");

    private static final int CUBLAS_STATUS_SUCCESS = 0;

    private final String location;
    private final MethodHandle create;
    private final MethodHandle destroy;
    private final MethodHandle setStream;
    private final MethodHandle getStream;
    private final MethodHandle sgemm;
    private final MethodHandle dgemm;
    private final MethodHandle sgemv;
    private final MethodHandle dgemv;

    private CuBlasLibrary(String location, SymbolLookup lib) {
        this.location = location;
        this.create = bind(lib, "cublasCreate_v2", ADDRESS);
        this.destroy = bind(lib, "cublasDestroy_v2", ADDRESS);
        this.setStream = bind(lib, "cublasSetStream_v2", ADDRESS, ADDRESS);
        this.getStream = bind(lib, "cublasGetStream_v2", ADDRESS, ADDRESS);
        this.sgemm = bind(
                lib,
                "cublasSgemm_v2",
                ADDRESS,
                JAVA_INT,
                JAVA_INT,
                JAVA_INT,
                JAVA_INT,
                JAVA_INT,
                ADDRESS,
                JAVA_LONG,
                JAVA_INT,
                JAVA_LONG,
                JAVA_INT,
                ADDRESS,
                JAVA_LONG,
                JAVA_INT);
        this.dgemm = bind(
                lib,
                "cublasDgemm_v2",
                ADDRESS,
                JAVA_INT,
                JAVA_INT,
                JAVA_INT,
                JAVA_INT,
                JAVA_INT,
                ADDRESS,
                JAVA_LONG,
                JAVA_INT,
                JAVA_LONG,
                JAVA_INT,
                ADDRESS,
                JAVA_LONG,
                JAVA_INT);
        this.sgemv = bind(
                lib,
                "cublasSgemv_v2",
                ADDRESS,
                JAVA_INT,
                JAVA_INT,
                JAVA_INT,
                ADDRESS,
                JAVA_LONG,
                JAVA_INT,
                JAVA_LONG,
                JAVA_INT,
                ADDRESS,
                JAVA_LONG,
                JAVA_INT);
        this.dgemv = bind(
                lib,
                "cublasDgemv_v2",
                ADDRESS,
                JAVA_INT,
                JAVA_INT,
                JAVA_INT,
                ADDRESS,
                JAVA_LONG,
                JAVA_INT,
                JAVA_LONG,
                JAVA_INT,
                ADDRESS,
                JAVA_LONG,
                JAVA_INT);
    }

    private MethodHandle bind(SymbolLookup lib, String name, MemoryLayout... args) {
        MemorySegment symbol = lib.find(name)
                .orElseThrow(() -> new CudaException("cuBLAS at " + location + " has no symbol " + name, null));
        return Linker.nativeLinker().downcallHandle(symbol, FunctionDescriptor.of(JAVA_INT, args));
    }

    /** Loads cuBLAS on first use (from the system property, environment and default locations). */
    private static final class Holder {
        static final CuBlasLibrary LIBRARY;
        static final CudaException FAILURE;

        static {
            CuBlasLibrary lib = null;
            CudaException failure = null;
            try {
                lib = load(System.getProperty(PROPERTY), System.getenv(ENV));
            } catch (CudaException e) {
                failure = e;
            }
            LIBRARY = lib;
            FAILURE = failure;
        }
    }

    /**
     * The library, loaded on first call.
     *
     * @throws CudaException naming every location tried when cuBLAS can't be found
     */
    public static CuBlasLibrary get() {
        if (Holder.FAILURE != null) {
            throw new CudaException(Holder.FAILURE.getMessage(), Holder.FAILURE);
        }
        return Holder.LIBRARY;
    }

    /** The places to look, in order, each a file path or a bare name for the dynamic linker. */
    static List<String> candidates(String property, String env) {
        if (property != null && !property.isBlank()) {
            return List.of(property);
        }
        if (env != null && !env.isBlank()) {
            return List.of(env);
        }
        List<String> list = new ArrayList<>(NAMES);
        for (String dir : DIRECTORIES) {
            for (String name : NAMES) {
                list.add(dir + "/" + name);
            }
        }
        return list;
    }

    /** Loads cuBLAS from the first candidate that opens. */
    static CuBlasLibrary load(String property, String env) {
        List<String> tried = new ArrayList<>();
        for (String candidate : candidates(property, env)) {
            String problem;
            try {
                if (candidate.contains("/")) {
                    Path path = Path.of(candidate);
                    if (!Files.exists(path)) {
                        tried.add(candidate + " (no such file)");
                        continue;
                    }
                    return new CuBlasLibrary(candidate, SymbolLookup.libraryLookup(path, Arena.global()));
                }
                return new CuBlasLibrary(candidate, SymbolLookup.libraryLookup(candidate, Arena.global()));
            } catch (IllegalArgumentException e) {
                problem = candidate.contains("/")
                        ? "cannot be loaded: " + e.getMessage()
                        : "not found by the dynamic linker";
            } catch (CudaException e) {
                problem = e.getMessage();
            }
            tried.add(candidate + " (" + problem + ")");
        }
        throw new CudaException(notFoundMessage(property, env, tried), null);
    }

    static String notFoundMessage(String property, String env, List<String> tried) {
        String source = property != null && !property.isBlank()
                ? " named by -D" + PROPERTY
                : env != null && !env.isBlank() ? " named by $" + ENV : "";
        return "cuBLAS not found" + source + "; tried: " + String.join(", ", tried) + ". Install the CUDA toolkit's"
                + " cuBLAS (libcublas.so.13 or .12) or name the library with -D" + PROPERTY
                + "=/path/to/libcublas.so.13 or $" + ENV;
    }

    /** Where the library was loaded from. */
    public String location() {
        return location;
    }

    /** Throws a {@link CudaException} naming {@code what} unless {@code status} is {@code CUBLAS_STATUS_SUCCESS}. */
    private static void check(int status, String what) {
        if (status != CUBLAS_STATUS_SUCCESS) {
            throw new CudaException(what, status, statusName(status));
        }
    }

    /** The name of a {@code cublasStatus_t}. */
    public static String statusName(int status) {
        return switch (status) {
            case 0 -> "CUBLAS_STATUS_SUCCESS";
            case 1 -> "CUBLAS_STATUS_NOT_INITIALIZED";
            case 3 -> "CUBLAS_STATUS_ALLOC_FAILED";
            case 7 -> "CUBLAS_STATUS_INVALID_VALUE";
            case 8 -> "CUBLAS_STATUS_ARCH_MISMATCH";
            case 11 -> "CUBLAS_STATUS_MAPPING_ERROR";
            case 13 -> "CUBLAS_STATUS_EXECUTION_FAILED";
            case 14 -> "CUBLAS_STATUS_INTERNAL_ERROR";
            case 15 -> "CUBLAS_STATUS_NOT_SUPPORTED";
            case 16 -> "CUBLAS_STATUS_LICENSE_ERROR";
            default -> "unknown cublasStatus_t";
        };
    }

    // Every routine runs in the context of the device the handle was created on (cuBLAS ties a handle to the device
    // current at cublasCreate and expects it current at every later call): each goes through Driver's gate.

    /** {@code cublasCreate_v2} on {@code device}. */
    public MemorySegment create(CudaDevice device) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            check(Driver.inContext(device, () -> (int) create.invokeExact(out)), "cublasCreate_v2");
            return out.get(ADDRESS, 0);
        }
    }

    /** {@code cublasDestroy_v2} of a handle created on {@code device}. */
    public void destroy(CudaDevice device, MemorySegment handle) {
        check(Driver.inContext(device, () -> (int) destroy.invokeExact(handle)), "cublasDestroy_v2");
    }

    /** {@code cublasSetStream_v2}: {@code stream} must be a stream of {@code device}, the handle's. */
    public void setStream(CudaDevice device, MemorySegment handle, MemorySegment stream) {
        check(Driver.inContext(device, () -> (int) setStream.invokeExact(handle, stream)), "cublasSetStream_v2");
    }

    /** {@code cublasGetStream_v2}: the stream the handle's routines run on. */
    public MemorySegment getStream(CudaDevice device, MemorySegment handle) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            check(Driver.inContext(device, () -> (int) getStream.invokeExact(handle, out)), "cublasGetStream_v2");
            return out.get(ADDRESS, 0);
        }
    }

    /** {@code cublasSgemm_v2}: C = alpha op(A) op(B) + beta C, column-major, alpha and beta on the host. */
    public void sgemm(
            CudaDevice device,
            MemorySegment handle,
            int transA,
            int transB,
            int m,
            int n,
            int k,
            float alpha,
            long a,
            int lda,
            long b,
            int ldb,
            float beta,
            long c,
            int ldc) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment pa = arena.allocateFrom(JAVA_FLOAT, alpha);
            MemorySegment pb = arena.allocateFrom(JAVA_FLOAT, beta);
            check(
                    Driver.inContext(device, () ->
                            (int) sgemm.invokeExact(handle, transA, transB, m, n, k, pa, a, lda, b, ldb, pb, c, ldc)),
                    "cublasSgemm_v2(m " + m + ", n " + n + ", k " + k + ")");
        }
    }

    /** {@code cublasDgemm_v2}. */
    public void dgemm(
            CudaDevice device,
            MemorySegment handle,
            int transA,
            int transB,
            int m,
            int n,
            int k,
            double alpha,
            long a,
            int lda,
            long b,
            int ldb,
            double beta,
            long c,
            int ldc) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment pa = arena.allocateFrom(JAVA_DOUBLE, alpha);
            MemorySegment pb = arena.allocateFrom(JAVA_DOUBLE, beta);
            check(
                    Driver.inContext(device, () ->
                            (int) dgemm.invokeExact(handle, transA, transB, m, n, k, pa, a, lda, b, ldb, pb, c, ldc)),
                    "cublasDgemm_v2(m " + m + ", n " + n + ", k " + k + ")");
        }
    }

    /** {@code cublasSgemv_v2}: y = alpha op(A) x + beta y. */
    public void sgemv(
            CudaDevice device,
            MemorySegment handle,
            int trans,
            int m,
            int n,
            float alpha,
            long a,
            int lda,
            long x,
            int incx,
            float beta,
            long y,
            int incy) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment pa = arena.allocateFrom(JAVA_FLOAT, alpha);
            MemorySegment pb = arena.allocateFrom(JAVA_FLOAT, beta);
            check(
                    Driver.inContext(device, () ->
                            (int) sgemv.invokeExact(handle, trans, m, n, pa, a, lda, x, incx, pb, y, incy)),
                    "cublasSgemv_v2(m " + m + ", n " + n + ")");
        }
    }

    /** {@code cublasDgemv_v2}. */
    public void dgemv(
            CudaDevice device,
            MemorySegment handle,
            int trans,
            int m,
            int n,
            double alpha,
            long a,
            int lda,
            long x,
            int incx,
            double beta,
            long y,
            int incy) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment pa = arena.allocateFrom(JAVA_DOUBLE, alpha);
            MemorySegment pb = arena.allocateFrom(JAVA_DOUBLE, beta);
            check(
                    Driver.inContext(device, () ->
                            (int) dgemv.invokeExact(handle, trans, m, n, pa, a, lda, x, incx, pb, y, incy)),
                    "cublasDgemv_v2(m " + m + ", n " + n + ")");
        }
    }
}
