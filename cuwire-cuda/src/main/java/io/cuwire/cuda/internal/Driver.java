package io.cuwire.cuda.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.cuwire.cuda.CudaException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The CUDA driver API of {@code libcuda.so.1}, through the Foreign Function and Memory API: the one class that
 * binds it. The library is opened and {@code cuInit} called on first use; when either fails, {@link #failure()}
 * says why and every call throws a {@link CudaException} naming it. Every {@code CUresult} is checked: a failed call
 * throws a {@link CudaException} naming the function, its main arguments and the driver's {@code cuGetErrorName}.
 *
 * <p>Handles ({@code CUcontext}, {@code CUstream}, {@code CUevent}, {@code CUmodule}, {@code CUfunction}) are
 * zero-length {@link MemorySegment}s; device pointers ({@code CUdeviceptr}) are {@code long}s. Calls that need a
 * context use the calling thread's current one: callers make it current first ({@link CudaDevice#makeCurrent()}).
 * Internal: nothing outside {@code io.cuwire.cuda} uses it. Thread-safe.
 */
@SuppressWarnings("restricted") // binding native code is this class's purpose
public final class Driver {
    /** The driver library's name. */
    public static final String LIBRARY = "libcuda.so.1";

    public static final int CUDA_SUCCESS = 0;
    public static final int CUDA_ERROR_OUT_OF_MEMORY = 2;
    public static final int CUDA_ERROR_NO_DEVICE = 100;
    public static final int CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704;

    static final int CU_MEMHOSTALLOC_PORTABLE = 0x1;
    static final int CU_STREAM_NON_BLOCKING = 0x1;
    static final int CU_EVENT_DEFAULT = 0x0;
    static final int CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 0x1;
    static final int CU_POINTER_ATTRIBUTE_RANGE_START_ADDR = 11;
    static final int CU_POINTER_ATTRIBUTE_RANGE_SIZE = 12;
    static final int CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
    static final int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
    static final int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;

    /** Size of a {@code CUipcMemHandle}. */
    public static final int IPC_HANDLE_SIZE = 64;

    /** {@code CUipcMemHandle}: 64 opaque bytes, passed by value to {@code cuIpcOpenMemHandle_v2}. */
    static final StructLayout IPC_HANDLE = MemoryLayout.structLayout(
            MemoryLayout.sequenceLayout(IPC_HANDLE_SIZE, JAVA_BYTE).withName("reserved"));

    private static final Map<Integer, String> ERROR_NAMES = new ConcurrentHashMap<>();

    private Driver() {
    }

    /** Opens the library and initializes the driver on first use. */
    private static final class Holder {
        static final String FAILURE = load();

        private static String load() {
            try {
                return Api.initialize();
            } catch (ExceptionInInitializerError e) {
                Throwable cause = e.getCause() == null ? e : e.getCause();
                if (cause instanceof IllegalArgumentException) {
                    return LIBRARY + " cannot be loaded (is the NVIDIA driver installed?): " + cause.getMessage();
                }
                return LIBRARY + " cannot be bound: " + cause;
            } catch (LinkageError | RuntimeException e) {
                return LIBRARY + " cannot be bound: " + e;
            }
        }
    }

    /** The bound functions. Initialized only through {@link Holder}; a missing library or symbol fails it. */
    private static final class Api {
        private static final SymbolLookup LIB = SymbolLookup.libraryLookup(LIBRARY, Arena.global());
        private static final Linker LINKER = Linker.nativeLinker();
        private static final String[] ELAPSED_TIME_NAMES = {"cuEventElapsedTime_v2", "cuEventElapsedTime"};

        static final MethodHandle INIT = bind("cuInit", JAVA_INT);
        static final MethodHandle DRIVER_GET_VERSION = bind("cuDriverGetVersion", ADDRESS);
        static final MethodHandle GET_ERROR_NAME = bind("cuGetErrorName", JAVA_INT, ADDRESS);
        static final MethodHandle DEVICE_GET_COUNT = bind("cuDeviceGetCount", ADDRESS);
        static final MethodHandle DEVICE_GET = bind("cuDeviceGet", ADDRESS, JAVA_INT);
        static final MethodHandle DEVICE_GET_NAME = bind("cuDeviceGetName", ADDRESS, JAVA_INT, JAVA_INT);
        static final MethodHandle DEVICE_TOTAL_MEM = bind("cuDeviceTotalMem_v2", ADDRESS, JAVA_INT);
        static final MethodHandle DEVICE_GET_ATTRIBUTE = bind("cuDeviceGetAttribute", ADDRESS, JAVA_INT, JAVA_INT);
        static final MethodHandle DEVICE_GET_PCI_BUS_ID = bind("cuDeviceGetPCIBusId", ADDRESS, JAVA_INT, JAVA_INT);
        static final MethodHandle DEVICE_CAN_ACCESS_PEER = bind("cuDeviceCanAccessPeer", ADDRESS, JAVA_INT,
                JAVA_INT);
        static final MethodHandle PRIMARY_CTX_RETAIN = bind("cuDevicePrimaryCtxRetain", ADDRESS, JAVA_INT);
        static final MethodHandle PRIMARY_CTX_RELEASE = bind("cuDevicePrimaryCtxRelease_v2", JAVA_INT);
        static final MethodHandle CTX_SET_CURRENT = bind("cuCtxSetCurrent", ADDRESS);
        static final MethodHandle CTX_GET_CURRENT = bind("cuCtxGetCurrent", ADDRESS);
        static final MethodHandle CTX_ENABLE_PEER_ACCESS = bind("cuCtxEnablePeerAccess", ADDRESS, JAVA_INT);
        static final MethodHandle MEM_GET_INFO = bind("cuMemGetInfo_v2", ADDRESS, ADDRESS);
        static final MethodHandle MEM_ALLOC = bind("cuMemAlloc_v2", ADDRESS, JAVA_LONG);
        static final MethodHandle MEM_FREE = bind("cuMemFree_v2", JAVA_LONG);
        static final MethodHandle MEM_HOST_ALLOC = bind("cuMemHostAlloc", ADDRESS, JAVA_LONG, JAVA_INT);
        static final MethodHandle MEM_FREE_HOST = bind("cuMemFreeHost", ADDRESS);
        static final MethodHandle MEMCPY_HTOD = bind("cuMemcpyHtoD_v2", JAVA_LONG, ADDRESS, JAVA_LONG);
        static final MethodHandle MEMCPY_DTOH = bind("cuMemcpyDtoH_v2", ADDRESS, JAVA_LONG, JAVA_LONG);
        static final MethodHandle MEMCPY_DTOD = bind("cuMemcpyDtoD_v2", JAVA_LONG, JAVA_LONG, JAVA_LONG);
        static final MethodHandle MEMCPY_HTOD_ASYNC = bind("cuMemcpyHtoDAsync_v2", JAVA_LONG, ADDRESS, JAVA_LONG,
                ADDRESS);
        static final MethodHandle MEMCPY_DTOH_ASYNC = bind("cuMemcpyDtoHAsync_v2", ADDRESS, JAVA_LONG, JAVA_LONG,
                ADDRESS);
        static final MethodHandle MEMCPY_DTOD_ASYNC = bind("cuMemcpyDtoDAsync_v2", JAVA_LONG, JAVA_LONG, JAVA_LONG,
                ADDRESS);
        static final MethodHandle MEMCPY_PEER = bind("cuMemcpyPeer", JAVA_LONG, ADDRESS, JAVA_LONG, ADDRESS,
                JAVA_LONG);
        static final MethodHandle MEMCPY_PEER_ASYNC = bind("cuMemcpyPeerAsync", JAVA_LONG, ADDRESS, JAVA_LONG,
                ADDRESS, JAVA_LONG, ADDRESS);
        static final MethodHandle MEMSET_D8 = bind("cuMemsetD8_v2", JAVA_LONG, JAVA_BYTE, JAVA_LONG);
        static final MethodHandle MEMSET_D8_ASYNC = bind("cuMemsetD8Async", JAVA_LONG, JAVA_BYTE, JAVA_LONG,
                ADDRESS);
        static final MethodHandle POINTER_GET_ATTRIBUTE = bind("cuPointerGetAttribute", ADDRESS, JAVA_INT,
                JAVA_LONG);
        static final MethodHandle STREAM_CREATE = bind("cuStreamCreate", ADDRESS, JAVA_INT);
        static final MethodHandle STREAM_DESTROY = bind("cuStreamDestroy_v2", ADDRESS);
        static final MethodHandle STREAM_SYNCHRONIZE = bind("cuStreamSynchronize", ADDRESS);
        static final MethodHandle EVENT_CREATE = bind("cuEventCreate", ADDRESS, JAVA_INT);
        static final MethodHandle EVENT_RECORD = bind("cuEventRecord", ADDRESS, ADDRESS);
        static final MethodHandle EVENT_SYNCHRONIZE = bind("cuEventSynchronize", ADDRESS);
        static final MethodHandle EVENT_ELAPSED_TIME = bindFirst(ELAPSED_TIME_NAMES, ADDRESS, ADDRESS, ADDRESS);
        static final MethodHandle EVENT_DESTROY = bind("cuEventDestroy_v2", ADDRESS);
        static final MethodHandle IPC_GET_MEM_HANDLE = bind("cuIpcGetMemHandle", ADDRESS, JAVA_LONG);
        static final MethodHandle IPC_OPEN_MEM_HANDLE = bind("cuIpcOpenMemHandle_v2", ADDRESS, IPC_HANDLE,
                JAVA_INT);
        static final MethodHandle IPC_CLOSE_MEM_HANDLE = bind("cuIpcCloseMemHandle", JAVA_LONG);
        static final MethodHandle MODULE_LOAD_DATA = bind("cuModuleLoadData", ADDRESS, ADDRESS);
        static final MethodHandle MODULE_GET_FUNCTION = bind("cuModuleGetFunction", ADDRESS, ADDRESS, ADDRESS);
        static final MethodHandle MODULE_UNLOAD = bind("cuModuleUnload", ADDRESS);
        static final MethodHandle LAUNCH_KERNEL = bind("cuLaunchKernel", ADDRESS, JAVA_INT, JAVA_INT, JAVA_INT,
                JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS, ADDRESS);

        private Api() {
        }

        private static MethodHandle bind(String name, MemoryLayout... args) {
            return bindFirst(new String[] {name}, args);
        }

        private static MethodHandle bindFirst(String[] names, MemoryLayout... args) {
            for (String name : names) {
                Optional<MemorySegment> symbol = LIB.find(name);
                if (symbol.isPresent()) {
                    return LINKER.downcallHandle(symbol.get(), FunctionDescriptor.of(JAVA_INT, args));
                }
            }
            throw new IllegalStateException(LIBRARY + " has no symbol " + String.join(" or ", names)
                    + " (driver older than CUDA 12?)");
        }

        /** Calls {@code cuInit(0)} and counts devices; returns why CUDA can't be used, or {@code null}. */
        static String initialize() {
            int rc = invoke(() -> (int) INIT.invokeExact(0));
            if (rc != CUDA_SUCCESS) {
                String hint = rc == CUDA_ERROR_NO_DEVICE ? ": no CUDA-capable device is visible to this process"
                        + " (check CUDA_VISIBLE_DEVICES)" : "";
                return CudaException.message("cuInit(0)", rc, errorName(rc)) + hint;
            }
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment count = arena.allocate(JAVA_INT);
                rc = invoke(() -> (int) DEVICE_GET_COUNT.invokeExact(count));
                if (rc != CUDA_SUCCESS) {
                    return CudaException.message("cuDeviceGetCount", rc, errorName(rc));
                }
                if (count.get(JAVA_INT, 0) == 0) {
                    return "no CUDA device: cuDeviceGetCount returned 0";
                }
            }
            return null;
        }
    }

    @FunctionalInterface
    private interface Downcall {
        int invoke() throws Throwable;
    }

    private static int invoke(Downcall call) {
        try {
            return call.invoke();
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("downcall failed: " + t, t);
        }
    }

    /** Why the driver can't be used here, or {@code null} if it can. Never throws. */
    public static String failure() {
        return Holder.FAILURE;
    }

    /** Whether the driver loaded, initialized and sees at least one device. */
    public static boolean isAvailable() {
        return Holder.FAILURE == null;
    }

    private static void checkAvailable() {
        String failure = Holder.FAILURE;
        if (failure != null) {
            throw new CudaException("CUDA is not available: " + failure, null);
        }
    }

    /** The driver's name for {@code result}, e.g. {@code CUDA_ERROR_OUT_OF_MEMORY}. */
    public static String errorName(int result) {
        return ERROR_NAMES.computeIfAbsent(result, Driver::lookUpErrorName);
    }

    private static String lookUpErrorName(int result) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment name = arena.allocate(ADDRESS);
            int rc = invoke(() -> (int) Api.GET_ERROR_NAME.invokeExact(result, name));
            if (rc != CUDA_SUCCESS || name.get(ADDRESS, 0).equals(MemorySegment.NULL)) {
                return "unknown CUresult";
            }
            return name.get(ADDRESS, 0).reinterpret(Integer.MAX_VALUE).getString(0);
        }
    }

    /** A {@link CudaException} for {@code call} returning {@code result}. */
    public static CudaException error(String call, int result) {
        return new CudaException(call, result, errorName(result));
    }

    private static void check(int result, String function) {
        if (result != CUDA_SUCCESS) {
            throw error(function, result);
        }
    }

    // ---- version, devices, contexts

    /** {@code cuDriverGetVersion}, e.g. 13000 for CUDA 13.0. */
    public static int driverVersion() {
        checkAvailable();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_INT);
            check(invoke(() -> (int) Api.DRIVER_GET_VERSION.invokeExact(out)), "cuDriverGetVersion");
            return out.get(JAVA_INT, 0);
        }
    }

    /** {@code cuDeviceGetCount}. */
    public static int deviceCount() {
        checkAvailable();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_INT);
            check(invoke(() -> (int) Api.DEVICE_GET_COUNT.invokeExact(out)), "cuDeviceGetCount");
            return out.get(JAVA_INT, 0);
        }
    }

    /** {@code cuDeviceGet}: the {@code CUdevice} of {@code ordinal}. */
    static int device(int ordinal) {
        checkAvailable();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_INT);
            int rc = invoke(() -> (int) Api.DEVICE_GET.invokeExact(out, ordinal));
            if (rc != CUDA_SUCCESS) {
                throw error("cuDeviceGet(ordinal " + ordinal + ")", rc);
            }
            return out.get(JAVA_INT, 0);
        }
    }

    /** {@code cuDeviceGetName}. */
    static String deviceName(int device) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(256);
            int rc = invoke(() -> (int) Api.DEVICE_GET_NAME.invokeExact(out, 256, device));
            if (rc != CUDA_SUCCESS) {
                throw error("cuDeviceGetName(device " + device + ")", rc);
            }
            return out.getString(0);
        }
    }

    /** {@code cuDeviceGetPCIBusId}, e.g. {@code 0000:1B:00.0}. */
    static String devicePciBusId(int device) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(64);
            int rc = invoke(() -> (int) Api.DEVICE_GET_PCI_BUS_ID.invokeExact(out, 64, device));
            if (rc != CUDA_SUCCESS) {
                throw error("cuDeviceGetPCIBusId(device " + device + ")", rc);
            }
            return out.getString(0);
        }
    }

    /** {@code cuDeviceTotalMem_v2}. */
    static long deviceTotalMem(int device) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_LONG);
            int rc = invoke(() -> (int) Api.DEVICE_TOTAL_MEM.invokeExact(out, device));
            if (rc != CUDA_SUCCESS) {
                throw error("cuDeviceTotalMem_v2(device " + device + ")", rc);
            }
            return out.get(JAVA_LONG, 0);
        }
    }

    /** {@code cuDeviceGetAttribute}. */
    static int deviceAttribute(int device, int attribute) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_INT);
            int rc = invoke(() -> (int) Api.DEVICE_GET_ATTRIBUTE.invokeExact(out, attribute, device));
            if (rc != CUDA_SUCCESS) {
                throw error("cuDeviceGetAttribute(attribute " + attribute + ", device " + device + ")", rc);
            }
            return out.get(JAVA_INT, 0);
        }
    }

    /** {@code cuDeviceCanAccessPeer}. */
    static boolean deviceCanAccessPeer(int device, int peer) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_INT);
            int rc = invoke(() -> (int) Api.DEVICE_CAN_ACCESS_PEER.invokeExact(out, device, peer));
            if (rc != CUDA_SUCCESS) {
                throw error("cuDeviceCanAccessPeer(device " + device + ", peer " + peer + ")", rc);
            }
            return out.get(JAVA_INT, 0) != 0;
        }
    }

    /** {@code cuDevicePrimaryCtxRetain}. */
    static MemorySegment primaryCtxRetain(int device) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            int rc = invoke(() -> (int) Api.PRIMARY_CTX_RETAIN.invokeExact(out, device));
            if (rc != CUDA_SUCCESS) {
                throw error("cuDevicePrimaryCtxRetain(device " + device + ")", rc);
            }
            return out.get(ADDRESS, 0);
        }
    }

    /** {@code cuDevicePrimaryCtxRelease_v2}. */
    static void primaryCtxRelease(int device) {
        int rc = invoke(() -> (int) Api.PRIMARY_CTX_RELEASE.invokeExact(device));
        if (rc != CUDA_SUCCESS) {
            throw error("cuDevicePrimaryCtxRelease_v2(device " + device + ")", rc);
        }
    }

    /** {@code cuCtxSetCurrent}. */
    static void ctxSetCurrent(MemorySegment ctx) {
        check(invoke(() -> (int) Api.CTX_SET_CURRENT.invokeExact(ctx)), "cuCtxSetCurrent");
    }

    /** {@code cuCtxGetCurrent}: the calling thread's context, {@link MemorySegment#NULL} if none. */
    static MemorySegment ctxGetCurrent() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            check(invoke(() -> (int) Api.CTX_GET_CURRENT.invokeExact(out)), "cuCtxGetCurrent");
            return out.get(ADDRESS, 0);
        }
    }

    /**
     * {@code cuCtxEnablePeerAccess}: lets the current context reach {@code peerCtx}'s memory. Returns {@code false}
     * if it already could ({@code CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED}).
     */
    static boolean ctxEnablePeerAccess(MemorySegment peerCtx, String what) {
        int rc = invoke(() -> (int) Api.CTX_ENABLE_PEER_ACCESS.invokeExact(peerCtx, 0));
        if (rc == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) {
            return false;
        }
        if (rc != CUDA_SUCCESS) {
            throw error("cuCtxEnablePeerAccess(" + what + ")", rc);
        }
        return true;
    }

    // ---- memory

    /** {@code cuMemGetInfo_v2} for the current context: {free, total}. */
    static long[] memGetInfo() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment free = arena.allocate(JAVA_LONG);
            MemorySegment total = arena.allocate(JAVA_LONG);
            check(invoke(() -> (int) Api.MEM_GET_INFO.invokeExact(free, total)), "cuMemGetInfo_v2");
            return new long[] {free.get(JAVA_LONG, 0), total.get(JAVA_LONG, 0)};
        }
    }

    /** {@code cuMemAlloc_v2}. */
    static long memAlloc(long bytes) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_LONG);
            int rc = invoke(() -> (int) Api.MEM_ALLOC.invokeExact(out, bytes));
            if (rc != CUDA_SUCCESS) {
                throw error("cuMemAlloc_v2(" + bytes + " bytes)", rc);
            }
            return out.get(JAVA_LONG, 0);
        }
    }

    /** {@code cuMemFree_v2}. */
    static void memFree(long ptr) {
        int rc = invoke(() -> (int) Api.MEM_FREE.invokeExact(ptr));
        if (rc != CUDA_SUCCESS) {
            throw error("cuMemFree_v2(0x" + Long.toHexString(ptr) + ")", rc);
        }
    }

    /** {@code cuMemHostAlloc}: page-locked host memory, as a zero-length segment at its address. */
    static MemorySegment memHostAlloc(long bytes, int flags) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            int rc = invoke(() -> (int) Api.MEM_HOST_ALLOC.invokeExact(out, bytes, flags));
            if (rc != CUDA_SUCCESS) {
                throw error("cuMemHostAlloc(" + bytes + " bytes, flags " + flags + ")", rc);
            }
            return out.get(ADDRESS, 0);
        }
    }

    /** {@code cuMemFreeHost}. */
    static void memFreeHost(MemorySegment ptr) {
        int rc = invoke(() -> (int) Api.MEM_FREE_HOST.invokeExact(ptr));
        if (rc != CUDA_SUCCESS) {
            throw error("cuMemFreeHost(0x" + Long.toHexString(ptr.address()) + ")", rc);
        }
    }

    /** {@code cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_RANGE_SIZE)}: the size of ptr's allocation. */
    static long allocationSize(long ptr) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_LONG);
            int rc = invoke(() -> (int) Api.POINTER_GET_ATTRIBUTE.invokeExact(out,
                    CU_POINTER_ATTRIBUTE_RANGE_SIZE, ptr));
            if (rc != CUDA_SUCCESS) {
                throw error("cuPointerGetAttribute(RANGE_SIZE, 0x" + Long.toHexString(ptr) + ")", rc);
            }
            return out.get(JAVA_LONG, 0);
        }
    }

    /** {@code cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_RANGE_START_ADDR)}: the base of ptr's allocation. */
    static long allocationBase(long ptr) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_LONG);
            int rc = invoke(() -> (int) Api.POINTER_GET_ATTRIBUTE.invokeExact(out,
                    CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, ptr));
            if (rc != CUDA_SUCCESS) {
                throw error("cuPointerGetAttribute(RANGE_START_ADDR, 0x" + Long.toHexString(ptr) + ")", rc);
            }
            return out.get(JAVA_LONG, 0);
        }
    }

    /** {@code cuMemsetD8_v2}. */
    static void memsetD8(long dst, byte value, long bytes) {
        int rc = invoke(() -> (int) Api.MEMSET_D8.invokeExact(dst, value, bytes));
        if (rc != CUDA_SUCCESS) {
            throw error("cuMemsetD8_v2(" + bytes + " bytes)", rc);
        }
    }

    /** {@code cuMemsetD8Async}. */
    static void memsetD8Async(long dst, byte value, long bytes, MemorySegment stream) {
        int rc = invoke(() -> (int) Api.MEMSET_D8_ASYNC.invokeExact(dst, value, bytes, stream));
        if (rc != CUDA_SUCCESS) {
            throw error("cuMemsetD8Async(" + bytes + " bytes)", rc);
        }
    }

    // ---- copies

    /** {@code cuMemcpyHtoD_v2}: {@code bytes} from {@code src} (native memory) to {@code dst}. */
    static void memcpyHtoD(long dst, MemorySegment src, long bytes) {
        int rc = invoke(() -> (int) Api.MEMCPY_HTOD.invokeExact(dst, src, bytes));
        if (rc != CUDA_SUCCESS) {
            throw error("cuMemcpyHtoD_v2(" + bytes + " bytes)", rc);
        }
    }

    /** {@code cuMemcpyDtoH_v2}. */
    static void memcpyDtoH(MemorySegment dst, long src, long bytes) {
        int rc = invoke(() -> (int) Api.MEMCPY_DTOH.invokeExact(dst, src, bytes));
        if (rc != CUDA_SUCCESS) {
            throw error("cuMemcpyDtoH_v2(" + bytes + " bytes)", rc);
        }
    }

    /** {@code cuMemcpyDtoD_v2}. */
    static void memcpyDtoD(long dst, long src, long bytes) {
        int rc = invoke(() -> (int) Api.MEMCPY_DTOD.invokeExact(dst, src, bytes));
        if (rc != CUDA_SUCCESS) {
            throw error("cuMemcpyDtoD_v2(" + bytes + " bytes)", rc);
        }
    }

    /** {@code cuMemcpyHtoDAsync_v2}. */
    static void memcpyHtoDAsync(long dst, MemorySegment src, long bytes, MemorySegment stream) {
        int rc = invoke(() -> (int) Api.MEMCPY_HTOD_ASYNC.invokeExact(dst, src, bytes, stream));
        if (rc != CUDA_SUCCESS) {
            throw error("cuMemcpyHtoDAsync_v2(" + bytes + " bytes)", rc);
        }
    }

    /** {@code cuMemcpyDtoHAsync_v2}. */
    static void memcpyDtoHAsync(MemorySegment dst, long src, long bytes, MemorySegment stream) {
        int rc = invoke(() -> (int) Api.MEMCPY_DTOH_ASYNC.invokeExact(dst, src, bytes, stream));
        if (rc != CUDA_SUCCESS) {
            throw error("cuMemcpyDtoHAsync_v2(" + bytes + " bytes)", rc);
        }
    }

    /** {@code cuMemcpyDtoDAsync_v2}. */
    static void memcpyDtoDAsync(long dst, long src, long bytes, MemorySegment stream) {
        int rc = invoke(() -> (int) Api.MEMCPY_DTOD_ASYNC.invokeExact(dst, src, bytes, stream));
        if (rc != CUDA_SUCCESS) {
            throw error("cuMemcpyDtoDAsync_v2(" + bytes + " bytes)", rc);
        }
    }

    /** {@code cuMemcpyPeer}. */
    static void memcpyPeer(long dst, MemorySegment dstCtx, long src, MemorySegment srcCtx, long bytes) {
        int rc = invoke(() -> (int) Api.MEMCPY_PEER.invokeExact(dst, dstCtx, src, srcCtx, bytes));
        if (rc != CUDA_SUCCESS) {
            throw error("cuMemcpyPeer(" + bytes + " bytes)", rc);
        }
    }

    /** {@code cuMemcpyPeerAsync}. */
    static void memcpyPeerAsync(long dst, MemorySegment dstCtx, long src, MemorySegment srcCtx, long bytes,
            MemorySegment stream) {
        int rc = invoke(() -> (int) Api.MEMCPY_PEER_ASYNC.invokeExact(dst, dstCtx, src, srcCtx, bytes, stream));
        if (rc != CUDA_SUCCESS) {
            throw error("cuMemcpyPeerAsync(" + bytes + " bytes)", rc);
        }
    }

    // ---- streams and events

    /** {@code cuStreamCreate}. */
    static MemorySegment streamCreate(int flags) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            check(invoke(() -> (int) Api.STREAM_CREATE.invokeExact(out, flags)), "cuStreamCreate");
            return out.get(ADDRESS, 0);
        }
    }

    /** {@code cuStreamDestroy_v2}. */
    static void streamDestroy(MemorySegment stream) {
        check(invoke(() -> (int) Api.STREAM_DESTROY.invokeExact(stream)), "cuStreamDestroy_v2");
    }

    /** {@code cuStreamSynchronize}; {@link MemorySegment#NULL} is the context's legacy default stream. */
    static void streamSynchronize(MemorySegment stream) {
        check(invoke(() -> (int) Api.STREAM_SYNCHRONIZE.invokeExact(stream)), "cuStreamSynchronize");
    }

    /** {@code cuEventCreate} with timing enabled. */
    public static MemorySegment eventCreate() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            check(invoke(() -> (int) Api.EVENT_CREATE.invokeExact(out, CU_EVENT_DEFAULT)), "cuEventCreate");
            return out.get(ADDRESS, 0);
        }
    }

    /** {@code cuEventRecord}. */
    public static void eventRecord(MemorySegment event, MemorySegment stream) {
        check(invoke(() -> (int) Api.EVENT_RECORD.invokeExact(event, stream)), "cuEventRecord");
    }

    /** {@code cuEventSynchronize}. */
    public static void eventSynchronize(MemorySegment event) {
        check(invoke(() -> (int) Api.EVENT_SYNCHRONIZE.invokeExact(event)), "cuEventSynchronize");
    }

    /** {@code cuEventElapsedTime_v2}: milliseconds from {@code start} to {@code end}. */
    public static float eventElapsedTime(MemorySegment start, MemorySegment end) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_FLOAT);
            check(invoke(() -> (int) Api.EVENT_ELAPSED_TIME.invokeExact(out, start, end)), "cuEventElapsedTime");
            return out.get(JAVA_FLOAT, 0);
        }
    }

    /** {@code cuEventDestroy_v2}. */
    public static void eventDestroy(MemorySegment event) {
        check(invoke(() -> (int) Api.EVENT_DESTROY.invokeExact(event)), "cuEventDestroy_v2");
    }

    // ---- IPC

    /** {@code cuIpcGetMemHandle} of the allocation based at {@code base}: 64 bytes. */
    static byte[] ipcGetMemHandle(long base) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(IPC_HANDLE);
            int rc = invoke(() -> (int) Api.IPC_GET_MEM_HANDLE.invokeExact(out, base));
            if (rc != CUDA_SUCCESS) {
                throw error("cuIpcGetMemHandle(0x" + Long.toHexString(base) + ")", rc);
            }
            return out.toArray(JAVA_BYTE);
        }
    }

    /** {@code cuIpcOpenMemHandle_v2} with lazy peer access, into the current context: the mapped base. */
    static long ipcOpenMemHandle(byte[] handle) {
        if (handle.length != IPC_HANDLE_SIZE) {
            throw new IllegalArgumentException("CUipcMemHandle: " + handle.length + " bytes (expected: "
                    + IPC_HANDLE_SIZE + ")");
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment value = arena.allocate(IPC_HANDLE);
            MemorySegment.copy(handle, 0, value, JAVA_BYTE, 0, IPC_HANDLE_SIZE);
            MemorySegment out = arena.allocate(JAVA_LONG);
            int rc = invoke(() -> (int) Api.IPC_OPEN_MEM_HANDLE.invokeExact(out, value,
                    CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
            if (rc != CUDA_SUCCESS) {
                throw error("cuIpcOpenMemHandle_v2", rc);
            }
            return out.get(JAVA_LONG, 0);
        }
    }

    /** {@code cuIpcCloseMemHandle}. */
    static void ipcCloseMemHandle(long base) {
        int rc = invoke(() -> (int) Api.IPC_CLOSE_MEM_HANDLE.invokeExact(base));
        if (rc != CUDA_SUCCESS) {
            throw error("cuIpcCloseMemHandle(0x" + Long.toHexString(base) + ")", rc);
        }
    }

    // ---- modules and kernels

    /** {@code cuModuleLoadData} of a fatbin, cubin or PTX image in native memory. */
    static MemorySegment moduleLoadData(MemorySegment image, String what) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            int rc = invoke(() -> (int) Api.MODULE_LOAD_DATA.invokeExact(out, image));
            if (rc != CUDA_SUCCESS) {
                throw error("cuModuleLoadData(" + what + ")", rc);
            }
            return out.get(ADDRESS, 0);
        }
    }

    /** {@code cuModuleGetFunction}. */
    static MemorySegment moduleGetFunction(MemorySegment module, String name) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            MemorySegment cName = arena.allocateFrom(name);
            int rc = invoke(() -> (int) Api.MODULE_GET_FUNCTION.invokeExact(out, module, cName));
            if (rc != CUDA_SUCCESS) {
                throw error("cuModuleGetFunction(" + name + ")", rc);
            }
            return out.get(ADDRESS, 0);
        }
    }

    /** {@code cuModuleUnload}. */
    static void moduleUnload(MemorySegment module) {
        check(invoke(() -> (int) Api.MODULE_UNLOAD.invokeExact(module)), "cuModuleUnload");
    }

    /**
     * {@code cuLaunchKernel} on a one-dimensional grid; {@code params} is the array of pointers to each argument
     * (the driver copies the arguments before returning).
     */
    static void launchKernel(MemorySegment function, String name, int gridX, int blockX, int sharedMemBytes,
            MemorySegment stream, MemorySegment params) {
        int rc = invoke(() -> (int) Api.LAUNCH_KERNEL.invokeExact(function, gridX, 1, 1, blockX, 1, 1, sharedMemBytes,
                stream, params, MemorySegment.NULL));
        if (rc != CUDA_SUCCESS) {
            throw error("cuLaunchKernel(" + name + ", grid " + gridX + ", block " + blockX + ")", rc);
        }
    }
}
