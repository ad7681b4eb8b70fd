package io.cuwire.cuda;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

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
 * zero-length {@link MemorySegment}s; device pointers ({@code CUdeviceptr}) are {@code long}s.
 *
 * <h2>Contexts: one gate</h2>
 * A CUDA context is current per OS thread. The functions that need none (initialization, error names, device
 * queries, primary context retention, {@code cuCtxSetCurrent} itself) are bound in {@code Api}. Every other
 * function is bound in {@code InContext}, and the method that calls it takes the {@link CudaDevice} whose primary
 * context it runs in and goes through the gate, {@code inContext}, which makes that context current on the calling
 * OS thread immediately before the downcall (its comment says why it must be one step). Callers never make a context
 * current themselves. The cost is one more downcall per call: {@code cuCtxSetCurrent}, which binds the context to the
 * calling thread.
 * A structural test ({@code DriverContextGateTest}) reads this class's bytecode and fails if a context-bound
 * function is called anywhere but through the gate.
 *
 * <p>Package-private, like the rest of the engine: nothing outside {@code io.cuwire.cuda} uses it. Thread-safe.
 */
@SuppressWarnings("restricted") // binding native code is this class's purpose
final class Driver {
    /** The driver library's name. */
    public static final String LIBRARY = "libcuda.so.1";
    /** The environment variable by which the driver hides GPUs from a process and renumbers the rest. */
    public static final String VISIBLE_DEVICES = "CUDA_VISIBLE_DEVICES";

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

    private Driver() {}

    /** Opens the library and initializes the driver on first use. */
    private static final class Holder {
        static final String FAILURE = load();

        private static String load() {
            try {
                String failure = Api.initialize();
                if (failure == null) {
                    InContext.bind();
                }
                return failure;
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

    /**
     * The functions that need no current context. Initialized only through {@link Holder}; a missing library or
     * symbol fails it. A function added here must need no context (the CUDA driver API documents the context each
     * function works in); {@code DriverContextGateTest} holds the list of those it allows.
     */
    private static final class Api {
        private static final SymbolLookup LIB = SymbolLookup.libraryLookup(LIBRARY, Arena.global());
        private static final Linker LINKER = Linker.nativeLinker();

        static final MethodHandle INIT = bind("cuInit", JAVA_INT);
        static final MethodHandle DRIVER_GET_VERSION = bind("cuDriverGetVersion", ADDRESS);
        static final MethodHandle GET_ERROR_NAME = bind("cuGetErrorName", JAVA_INT, ADDRESS);
        static final MethodHandle DEVICE_GET_COUNT = bind("cuDeviceGetCount", ADDRESS);
        static final MethodHandle DEVICE_GET = bind("cuDeviceGet", ADDRESS, JAVA_INT);
        static final MethodHandle DEVICE_GET_NAME = bind("cuDeviceGetName", ADDRESS, JAVA_INT, JAVA_INT);
        static final MethodHandle DEVICE_TOTAL_MEM = bind("cuDeviceTotalMem_v2", ADDRESS, JAVA_INT);
        static final MethodHandle DEVICE_GET_ATTRIBUTE = bind("cuDeviceGetAttribute", ADDRESS, JAVA_INT, JAVA_INT);
        static final MethodHandle DEVICE_GET_PCI_BUS_ID = bind("cuDeviceGetPCIBusId", ADDRESS, JAVA_INT, JAVA_INT);
        static final MethodHandle DEVICE_CAN_ACCESS_PEER = bind("cuDeviceCanAccessPeer", ADDRESS, JAVA_INT, JAVA_INT);
        static final MethodHandle PRIMARY_CTX_RETAIN = bind("cuDevicePrimaryCtxRetain", ADDRESS, JAVA_INT);
        static final MethodHandle CTX_SET_CURRENT = bind("cuCtxSetCurrent", ADDRESS);
        static final MethodHandle CTX_GET_CURRENT = bind("cuCtxGetCurrent", ADDRESS);

        private Api() {}

        static MethodHandle bind(String name, MemoryLayout... args) {
            return bindFirst(new String[] {name}, args);
        }

        static MethodHandle bindFirst(String[] names, MemoryLayout... args) {
            for (String name : names) {
                Optional<MemorySegment> symbol = LIB.find(name);
                if (symbol.isPresent()) {
                    return LINKER.downcallHandle(symbol.get(), FunctionDescriptor.of(JAVA_INT, args));
                }
            }
            throw new IllegalStateException(
                    LIBRARY + " has no symbol " + String.join(" or ", names) + " (driver older than CUDA 12?)");
        }

        /** Calls {@code cuInit(0)} and counts devices; returns why CUDA can't be used, or {@code null}. */
        static String initialize() {
            int rc = invoke(() -> (int) INIT.invokeExact(0));
            if (rc != CUDA_SUCCESS) {
                String hint = rc == CUDA_ERROR_NO_DEVICE
                        ? ": no CUDA-capable device is visible to this process ("
                                + visibleDevices(System.getenv(VISIBLE_DEVICES)) + ")"
                        : "";
                return CudaException.message("cuInit(0)", rc, errorName(rc)) + hint;
            }
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment count = arena.allocate(JAVA_INT);
                rc = invoke(() -> (int) DEVICE_GET_COUNT.invokeExact(count));
                if (rc != CUDA_SUCCESS) {
                    return CudaException.message("cuDeviceGetCount", rc, errorName(rc));
                }
                if (count.get(JAVA_INT, 0) == 0) {
                    return "no CUDA device: cuDeviceGetCount returned 0 ("
                            + visibleDevices(System.getenv(VISIBLE_DEVICES)) + ")";
                }
            }
            return null;
        }
    }

    /**
     * The functions that work in the current context: every one is called through {@link #inContext} alone, from a
     * lambda that does nothing but the downcall. Bound by {@link Holder} once {@code cuInit} succeeded.
     */
    private static final class InContext {
        private static final String[] ELAPSED_TIME_NAMES = {"cuEventElapsedTime_v2", "cuEventElapsedTime"};

        static final MethodHandle CTX_ENABLE_PEER_ACCESS = Api.bind("cuCtxEnablePeerAccess", ADDRESS, JAVA_INT);
        static final MethodHandle MEM_GET_INFO = Api.bind("cuMemGetInfo_v2", ADDRESS, ADDRESS);
        static final MethodHandle MEM_ALLOC = Api.bind("cuMemAlloc_v2", ADDRESS, JAVA_LONG);
        static final MethodHandle MEM_FREE = Api.bind("cuMemFree_v2", JAVA_LONG);
        static final MethodHandle MEM_HOST_ALLOC = Api.bind("cuMemHostAlloc", ADDRESS, JAVA_LONG, JAVA_INT);
        static final MethodHandle MEM_FREE_HOST = Api.bind("cuMemFreeHost", ADDRESS);
        static final MethodHandle MEMCPY_HTOD = Api.bind("cuMemcpyHtoD_v2", JAVA_LONG, ADDRESS, JAVA_LONG);
        static final MethodHandle MEMCPY_DTOH = Api.bind("cuMemcpyDtoH_v2", ADDRESS, JAVA_LONG, JAVA_LONG);
        static final MethodHandle MEMCPY_DTOD = Api.bind("cuMemcpyDtoD_v2", JAVA_LONG, JAVA_LONG, JAVA_LONG);
        static final MethodHandle MEMCPY_HTOD_ASYNC =
                Api.bind("cuMemcpyHtoDAsync_v2", JAVA_LONG, ADDRESS, JAVA_LONG, ADDRESS);
        static final MethodHandle MEMCPY_DTOH_ASYNC =
                Api.bind("cuMemcpyDtoHAsync_v2", ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS);
        static final MethodHandle MEMCPY_DTOD_ASYNC =
                Api.bind("cuMemcpyDtoDAsync_v2", JAVA_LONG, JAVA_LONG, JAVA_LONG, ADDRESS);
        static final MethodHandle MEMCPY_PEER =
                Api.bind("cuMemcpyPeer", JAVA_LONG, ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG);
        static final MethodHandle MEMCPY_PEER_ASYNC =
                Api.bind("cuMemcpyPeerAsync", JAVA_LONG, ADDRESS, JAVA_LONG, ADDRESS, JAVA_LONG, ADDRESS);
        static final MethodHandle MEMSET_D8 = Api.bind("cuMemsetD8_v2", JAVA_LONG, JAVA_BYTE, JAVA_LONG);
        static final MethodHandle MEMSET_D8_ASYNC =
                Api.bind("cuMemsetD8Async", JAVA_LONG, JAVA_BYTE, JAVA_LONG, ADDRESS);
        static final MethodHandle POINTER_GET_ATTRIBUTE =
                Api.bind("cuPointerGetAttribute", ADDRESS, JAVA_INT, JAVA_LONG);
        static final MethodHandle STREAM_CREATE = Api.bind("cuStreamCreate", ADDRESS, JAVA_INT);
        static final MethodHandle STREAM_DESTROY = Api.bind("cuStreamDestroy_v2", ADDRESS);
        static final MethodHandle STREAM_SYNCHRONIZE = Api.bind("cuStreamSynchronize", ADDRESS);
        static final MethodHandle EVENT_CREATE = Api.bind("cuEventCreate", ADDRESS, JAVA_INT);
        static final MethodHandle EVENT_RECORD = Api.bind("cuEventRecord", ADDRESS, ADDRESS);
        static final MethodHandle EVENT_SYNCHRONIZE = Api.bind("cuEventSynchronize", ADDRESS);
        static final MethodHandle EVENT_ELAPSED_TIME = Api.bindFirst(ELAPSED_TIME_NAMES, ADDRESS, ADDRESS, ADDRESS);
        static final MethodHandle EVENT_DESTROY = Api.bind("cuEventDestroy_v2", ADDRESS);
        static final MethodHandle IPC_GET_MEM_HANDLE = Api.bind("cuIpcGetMemHandle", ADDRESS, JAVA_LONG);
        static final MethodHandle IPC_OPEN_MEM_HANDLE =
                Api.bind("cuIpcOpenMemHandle_v2", ADDRESS, IPC_HANDLE, JAVA_INT);
        static final MethodHandle IPC_CLOSE_MEM_HANDLE = Api.bind("cuIpcCloseMemHandle", JAVA_LONG);
        static final MethodHandle MODULE_LOAD_DATA = Api.bind("cuModuleLoadData", ADDRESS, ADDRESS);
        static final MethodHandle MODULE_GET_FUNCTION = Api.bind("cuModuleGetFunction", ADDRESS, ADDRESS, ADDRESS);
        static final MethodHandle LAUNCH_KERNEL = Api.bind(
                "cuLaunchKernel",
                ADDRESS,
                JAVA_INT,
                JAVA_INT,
                JAVA_INT,
                JAVA_INT,
                JAVA_INT,
                JAVA_INT,
                JAVA_INT,
                ADDRESS,
                ADDRESS,
                ADDRESS);

        private InContext() {}

        /**
         * Binds these functions now, from {@link Holder}: a missing symbol then makes the driver unavailable, and no
         * gated call initializes this class between setting the context and its downcall.
         */
        static void bind() {
            // initializing the class is the point
        }
    }

    /** One native call, returning its status code ({@code CUresult}, or {@code cublasStatus_t} for cuBLAS). */
    @FunctionalInterface
    interface Downcall {
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

    /**
     * The gate: makes {@code device}'s primary context current on the calling OS thread, then makes {@code call},
     * with nothing in between; returns the call's status.
     *
     * <p>Why it is one step: a CUDA context is current per OS thread, but a virtual thread runs on whichever carrier
     * (OS) thread is free when it resumes. It leaves its carrier only at a blocking point (parking on a
     * {@code java.util.concurrent} lock, waiting for a contended monitor since JDK 24's JEP 491, blocking socket
     * I/O, sleeping); an FFM downcall keeps it on its carrier for the call's duration. Making the context current in
     * one step and calling the driver in a later one let a blocking point fall in between:
     * {@code CudaDevice.copyDeviceToHost} made the context current and then took the staging buffer's
     * {@code ReentrantLock}; a virtual thread of the cluster's worker that parked there resumed on a carrier with no
     * context (or another device's) and its {@code cuMemcpyDtoHAsync_v2} failed with
     * {@code CUDA_ERROR_INVALID_CONTEXT} (the demo's 8-byte read of a scalar after the forest fit). Here only an int
     * comparison lies between the two downcalls, so both run on one OS thread. The context is looked up first:
     * retaining it the first time may block, before anything is set.
     *
     * <p>Package-private for cuBLAS ({@link CuBlasLibrary}), whose routines run in the current context too.
     */
    static int inContext(CudaDevice device, Downcall call) {
        MemorySegment ctx = device.context();
        int set;
        try {
            set = (int) Api.CTX_SET_CURRENT.invokeExact(ctx);
            if (set == CUDA_SUCCESS) {
                return call.invoke();
            }
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("downcall failed: " + t, t);
        }
        throw error("cuCtxSetCurrent(" + device + ")", set);
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

    /**
     * {@value #VISIBLE_DEVICES} as it limits this process, for messages: {@code CUDA_VISIBLE_DEVICES=0,1}, or
     * {@code CUDA_VISIBLE_DEVICES=""} (no GPU visible), or {@code CUDA_VISIBLE_DEVICES not set} (every GPU visible).
     *
     * @param value the variable's value, {@code null} when it is not set
     */
    public static String visibleDevices(String value) {
        return value == null ? VISIBLE_DEVICES + " not set" : VISIBLE_DEVICES + "=\"" + value + "\"";
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

    /**
     * {@code cuDevicePrimaryCtxRetain}. {@link CudaDevice} retains its device's once and never releases it: a primary
     * context is shared by every CUDA user in the process (the CUDA runtime and libraries built on it use the same
     * one), so nothing here releases or resets one (no {@code cuDevicePrimaryCtxRelease} or {@code ...Reset}).
     */
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

    /**
     * {@code cuCtxGetCurrent}: the calling thread's context, {@link MemorySegment#NULL} if none. For tests: nothing
     * here depends on which context is current between calls.
     */
    static MemorySegment ctxGetCurrent() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            check(invoke(() -> (int) Api.CTX_GET_CURRENT.invokeExact(out)), "cuCtxGetCurrent");
            return out.get(ADDRESS, 0);
        }
    }

    /**
     * {@code cuCtxSetCurrent} of {@code ctx} ({@link MemorySegment#NULL}: none) on the calling thread. For tests
     * that leave a thread in the wrong context on purpose; driver work goes through {@link #inContext}.
     */
    static void ctxSetCurrent(MemorySegment ctx) {
        check(invoke(() -> (int) Api.CTX_SET_CURRENT.invokeExact(ctx)), "cuCtxSetCurrent");
    }

    /**
     * Makes {@code device}'s primary context current on the calling OS thread and leaves it there, for a native
     * library of another's that calls the driver in whatever context is current (UCX's CUDA transports, on a UCX
     * worker's progress thread). The one place besides the gate that sets a context; cuwire's own driver calls never
     * rely on what it leaves.
     */
    static void makeCurrentForNativeLibraries(CudaDevice device) {
        MemorySegment ctx = device.context();
        check(invoke(() -> (int) Api.CTX_SET_CURRENT.invokeExact(ctx)), "cuCtxSetCurrent(" + device + ")");
    }

    // ---- everything below runs in a device's context, through the gate

    /**
     * {@code cuCtxEnablePeerAccess} in {@code device}'s context: lets it reach {@code peer}'s memory. Returns
     * {@code false} if it already could ({@code CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED}).
     */
    static boolean ctxEnablePeerAccess(CudaDevice device, CudaDevice peer) {
        MemorySegment peerCtx = peer.context();
        int rc = inContext(device, () -> (int) InContext.CTX_ENABLE_PEER_ACCESS.invokeExact(peerCtx, 0));
        if (rc == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) {
            return false;
        }
        if (rc != CUDA_SUCCESS) {
            throw error("cuCtxEnablePeerAccess(" + device + " -> " + peer + ")", rc);
        }
        return true;
    }

    // ---- memory

    /** {@code cuMemGetInfo_v2} of {@code device}: {free, total}. */
    static long[] memGetInfo(CudaDevice device) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment free = arena.allocate(JAVA_LONG);
            MemorySegment total = arena.allocate(JAVA_LONG);
            check(inContext(device, () -> (int) InContext.MEM_GET_INFO.invokeExact(free, total)), "cuMemGetInfo_v2");
            return new long[] {free.get(JAVA_LONG, 0), total.get(JAVA_LONG, 0)};
        }
    }

    /** {@code cuMemAlloc_v2} on {@code device}. */
    static long memAlloc(CudaDevice device, long bytes) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_LONG);
            int rc = inContext(device, () -> (int) InContext.MEM_ALLOC.invokeExact(out, bytes));
            if (rc != CUDA_SUCCESS) {
                throw error("cuMemAlloc_v2(" + bytes + " bytes)", rc);
            }
            return out.get(JAVA_LONG, 0);
        }
    }

    /** {@code cuMemFree_v2} of memory {@link #memAlloc} gave on {@code device}. */
    static void memFree(CudaDevice device, long ptr) {
        int rc = inContext(device, () -> (int) InContext.MEM_FREE.invokeExact(ptr));
        if (rc != CUDA_SUCCESS) {
            throw error("cuMemFree_v2(0x" + Long.toHexString(ptr) + ")", rc);
        }
    }

    /** {@code cuMemHostAlloc} in {@code device}'s context: page-locked host memory, as a zero-length segment. */
    static MemorySegment memHostAlloc(CudaDevice device, long bytes, int flags) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            int rc = inContext(device, () -> (int) InContext.MEM_HOST_ALLOC.invokeExact(out, bytes, flags));
            if (rc != CUDA_SUCCESS) {
                throw error("cuMemHostAlloc(" + bytes + " bytes, flags " + flags + ")", rc);
            }
            return out.get(ADDRESS, 0);
        }
    }

    /** {@code cuMemFreeHost} in {@code device}'s context. */
    static void memFreeHost(CudaDevice device, MemorySegment ptr) {
        int rc = inContext(device, () -> (int) InContext.MEM_FREE_HOST.invokeExact(ptr));
        if (rc != CUDA_SUCCESS) {
            throw error("cuMemFreeHost(0x" + Long.toHexString(ptr.address()) + ")", rc);
        }
    }

    /** {@code cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_RANGE_SIZE)}: the size of ptr's allocation. */
    static long allocationSize(CudaDevice device, long ptr) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_LONG);
            int rc = inContext(device, () ->
                    (int) InContext.POINTER_GET_ATTRIBUTE.invokeExact(out, CU_POINTER_ATTRIBUTE_RANGE_SIZE, ptr));
            if (rc != CUDA_SUCCESS) {
                throw error("cuPointerGetAttribute(RANGE_SIZE, 0x" + Long.toHexString(ptr) + ")", rc);
            }
            return out.get(JAVA_LONG, 0);
        }
    }

    /** {@code cuPointerGetAttribute(CU_POINTER_ATTRIBUTE_RANGE_START_ADDR)}: the base of ptr's allocation. */
    static long allocationBase(CudaDevice device, long ptr) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_LONG);
            int rc = inContext(device, () ->
                    (int) InContext.POINTER_GET_ATTRIBUTE.invokeExact(out, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, ptr));
            if (rc != CUDA_SUCCESS) {
                throw error("cuPointerGetAttribute(RANGE_START_ADDR, 0x" + Long.toHexString(ptr) + ")", rc);
            }
            return out.get(JAVA_LONG, 0);
        }
    }

    /** {@code cuMemsetD8_v2}, on {@code device}'s legacy default stream. */
    static void memsetD8(CudaDevice device, long dst, byte value, long bytes) {
        int rc = inContext(device, () -> (int) InContext.MEMSET_D8.invokeExact(dst, value, bytes));
        if (rc != CUDA_SUCCESS) {
            throw error("cuMemsetD8_v2(" + bytes + " bytes)", rc);
        }
    }

    /** {@code cuMemsetD8Async} on {@code stream}, a stream of {@code device}. */
    static void memsetD8Async(CudaDevice device, long dst, byte value, long bytes, MemorySegment stream) {
        int rc = inContext(device, () -> (int) InContext.MEMSET_D8_ASYNC.invokeExact(dst, value, bytes, stream));
        if (rc != CUDA_SUCCESS) {
            throw error("cuMemsetD8Async(" + bytes + " bytes)", rc);
        }
    }

    // ---- copies

    /** {@code cuMemcpyHtoD_v2}: {@code bytes} from {@code src} (native memory) to {@code dst} on {@code device}. */
    static void memcpyHtoD(CudaDevice device, long dst, MemorySegment src, long bytes) {
        int rc = inContext(device, () -> (int) InContext.MEMCPY_HTOD.invokeExact(dst, src, bytes));
        if (rc != CUDA_SUCCESS) {
            throw error("cuMemcpyHtoD_v2(" + bytes + " bytes)", rc);
        }
    }

    /** {@code cuMemcpyDtoH_v2}: {@code bytes} from {@code src} on {@code device} to {@code dst}. */
    static void memcpyDtoH(CudaDevice device, MemorySegment dst, long src, long bytes) {
        int rc = inContext(device, () -> (int) InContext.MEMCPY_DTOH.invokeExact(dst, src, bytes));
        if (rc != CUDA_SUCCESS) {
            throw error("cuMemcpyDtoH_v2(" + bytes + " bytes)", rc);
        }
    }

    /** {@code cuMemcpyDtoD_v2} within {@code device}. */
    static void memcpyDtoD(CudaDevice device, long dst, long src, long bytes) {
        int rc = inContext(device, () -> (int) InContext.MEMCPY_DTOD.invokeExact(dst, src, bytes));
        if (rc != CUDA_SUCCESS) {
            throw error("cuMemcpyDtoD_v2(" + bytes + " bytes)", rc);
        }
    }

    /** {@code cuMemcpyHtoDAsync_v2} on {@code stream}, a stream of {@code device} (or NULL, its legacy one). */
    static void memcpyHtoDAsync(CudaDevice device, long dst, MemorySegment src, long bytes, MemorySegment stream) {
        int rc = inContext(device, () -> (int) InContext.MEMCPY_HTOD_ASYNC.invokeExact(dst, src, bytes, stream));
        if (rc != CUDA_SUCCESS) {
            throw error("cuMemcpyHtoDAsync_v2(" + bytes + " bytes)", rc);
        }
    }

    /** {@code cuMemcpyDtoHAsync_v2} on {@code stream}, a stream of {@code device} (or NULL, its legacy one). */
    static void memcpyDtoHAsync(CudaDevice device, MemorySegment dst, long src, long bytes, MemorySegment stream) {
        int rc = inContext(device, () -> (int) InContext.MEMCPY_DTOH_ASYNC.invokeExact(dst, src, bytes, stream));
        if (rc != CUDA_SUCCESS) {
            throw error("cuMemcpyDtoHAsync_v2(" + bytes + " bytes)", rc);
        }
    }

    /** {@code cuMemcpyDtoDAsync_v2} on {@code stream}, a stream of {@code device}. */
    static void memcpyDtoDAsync(CudaDevice device, long dst, long src, long bytes, MemorySegment stream) {
        int rc = inContext(device, () -> (int) InContext.MEMCPY_DTOD_ASYNC.invokeExact(dst, src, bytes, stream));
        if (rc != CUDA_SUCCESS) {
            throw error("cuMemcpyDtoDAsync_v2(" + bytes + " bytes)", rc);
        }
    }

    /** {@code cuMemcpyPeer}: {@code src} on {@code source} to {@code dst} on {@code target}, in source's context. */
    static void memcpyPeer(CudaDevice source, long dst, CudaDevice target, long src, long bytes) {
        MemorySegment dstCtx = target.context();
        MemorySegment srcCtx = source.context();
        int rc = inContext(source, () -> (int) InContext.MEMCPY_PEER.invokeExact(dst, dstCtx, src, srcCtx, bytes));
        if (rc != CUDA_SUCCESS) {
            throw error("cuMemcpyPeer(" + bytes + " bytes)", rc);
        }
    }

    /** {@code cuMemcpyPeerAsync} as {@link #memcpyPeer}, on {@code stream}, a stream of {@code source}. */
    static void memcpyPeerAsync(
            CudaDevice source, long dst, CudaDevice target, long src, long bytes, MemorySegment stream) {
        MemorySegment dstCtx = target.context();
        MemorySegment srcCtx = source.context();
        int rc = inContext(
                source, () -> (int) InContext.MEMCPY_PEER_ASYNC.invokeExact(dst, dstCtx, src, srcCtx, bytes, stream));
        if (rc != CUDA_SUCCESS) {
            throw error("cuMemcpyPeerAsync(" + bytes + " bytes)", rc);
        }
    }

    // ---- streams and events

    /** {@code cuStreamCreate} on {@code device}. */
    static MemorySegment streamCreate(CudaDevice device, int flags) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            check(inContext(device, () -> (int) InContext.STREAM_CREATE.invokeExact(out, flags)), "cuStreamCreate");
            return out.get(ADDRESS, 0);
        }
    }

    /** {@code cuStreamDestroy_v2} of a stream of {@code device}. */
    static void streamDestroy(CudaDevice device, MemorySegment stream) {
        check(inContext(device, () -> (int) InContext.STREAM_DESTROY.invokeExact(stream)), "cuStreamDestroy_v2");
    }

    /** {@code cuStreamSynchronize} of a stream of {@code device}; {@link MemorySegment#NULL} is its legacy one. */
    static void streamSynchronize(CudaDevice device, MemorySegment stream) {
        check(inContext(device, () -> (int) InContext.STREAM_SYNCHRONIZE.invokeExact(stream)), "cuStreamSynchronize");
    }

    /** {@code cuEventCreate} on {@code device}, with timing enabled. */
    public static MemorySegment eventCreate(CudaDevice device) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            check(
                    inContext(device, () -> (int) InContext.EVENT_CREATE.invokeExact(out, CU_EVENT_DEFAULT)),
                    "cuEventCreate");
            return out.get(ADDRESS, 0);
        }
    }

    /** {@code cuEventRecord} of an event of {@code device} on a stream of {@code device}. */
    public static void eventRecord(CudaDevice device, MemorySegment event, MemorySegment stream) {
        check(inContext(device, () -> (int) InContext.EVENT_RECORD.invokeExact(event, stream)), "cuEventRecord");
    }

    /** {@code cuEventSynchronize} of an event of {@code device}. */
    public static void eventSynchronize(CudaDevice device, MemorySegment event) {
        check(inContext(device, () -> (int) InContext.EVENT_SYNCHRONIZE.invokeExact(event)), "cuEventSynchronize");
    }

    /** {@code cuEventElapsedTime_v2}: milliseconds from {@code start} to {@code end}, two events of {@code device}. */
    public static float eventElapsedTime(CudaDevice device, MemorySegment start, MemorySegment end) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(JAVA_FLOAT);
            check(
                    inContext(device, () -> (int) InContext.EVENT_ELAPSED_TIME.invokeExact(out, start, end)),
                    "cuEventElapsedTime");
            return out.get(JAVA_FLOAT, 0);
        }
    }

    /** {@code cuEventDestroy_v2} of an event of {@code device}. */
    public static void eventDestroy(CudaDevice device, MemorySegment event) {
        check(inContext(device, () -> (int) InContext.EVENT_DESTROY.invokeExact(event)), "cuEventDestroy_v2");
    }

    // ---- IPC

    /** {@code cuIpcGetMemHandle} of the allocation based at {@code base} on {@code device}: 64 bytes. */
    static byte[] ipcGetMemHandle(CudaDevice device, long base) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(IPC_HANDLE);
            int rc = inContext(device, () -> (int) InContext.IPC_GET_MEM_HANDLE.invokeExact(out, base));
            if (rc != CUDA_SUCCESS) {
                throw error("cuIpcGetMemHandle(0x" + Long.toHexString(base) + ")", rc);
            }
            return out.toArray(JAVA_BYTE);
        }
    }

    /** {@code cuIpcOpenMemHandle_v2} with lazy peer access, into {@code device}'s context: the mapped base. */
    static long ipcOpenMemHandle(CudaDevice device, byte[] handle) {
        if (handle.length != IPC_HANDLE_SIZE) {
            throw new IllegalArgumentException(
                    "CUipcMemHandle: " + handle.length + " bytes (expected: " + IPC_HANDLE_SIZE + ")");
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment value = arena.allocate(IPC_HANDLE);
            MemorySegment.copy(handle, 0, value, JAVA_BYTE, 0, IPC_HANDLE_SIZE);
            MemorySegment out = arena.allocate(JAVA_LONG);
            int rc = inContext(device, () ->
                    (int) InContext.IPC_OPEN_MEM_HANDLE.invokeExact(out, value, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
            if (rc != CUDA_SUCCESS) {
                throw error("cuIpcOpenMemHandle_v2", rc);
            }
            return out.get(JAVA_LONG, 0);
        }
    }

    /** {@code cuIpcCloseMemHandle} of a mapping {@link #ipcOpenMemHandle} made in {@code device}'s context. */
    static void ipcCloseMemHandle(CudaDevice device, long base) {
        int rc = inContext(device, () -> (int) InContext.IPC_CLOSE_MEM_HANDLE.invokeExact(base));
        if (rc != CUDA_SUCCESS) {
            throw error("cuIpcCloseMemHandle(0x" + Long.toHexString(base) + ")", rc);
        }
    }

    // ---- modules and kernels

    /** {@code cuModuleLoadData} of a fatbin, cubin or PTX image in native memory, into {@code device}'s context. */
    static MemorySegment moduleLoadData(CudaDevice device, MemorySegment image, String what) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            int rc = inContext(device, () -> (int) InContext.MODULE_LOAD_DATA.invokeExact(out, image));
            if (rc != CUDA_SUCCESS) {
                throw error("cuModuleLoadData(" + what + ")", rc);
            }
            return out.get(ADDRESS, 0);
        }
    }

    /** {@code cuModuleGetFunction} of a module loaded on {@code device}. */
    static MemorySegment moduleGetFunction(CudaDevice device, MemorySegment module, String name) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            MemorySegment cName = arena.allocateFrom(name);
            int rc = inContext(device, () -> (int) InContext.MODULE_GET_FUNCTION.invokeExact(out, module, cName));
            if (rc != CUDA_SUCCESS) {
                throw error("cuModuleGetFunction(" + name + ")", rc);
            }
            return out.get(ADDRESS, 0);
        }
    }

    /**
     * {@code cuLaunchKernel} of a function of {@code device} on a one-dimensional grid, on {@code stream}, a stream of
     * {@code device}; {@code params} is the array of pointers to each argument (the driver copies the arguments
     * before returning).
     */
    static void launchKernel(
            CudaDevice device,
            MemorySegment function,
            String name,
            int gridX,
            int blockX,
            int sharedMemBytes,
            MemorySegment stream,
            MemorySegment params) {
        MemorySegment extra = MemorySegment.NULL;
        int rc = inContext(device, () -> (int) InContext.LAUNCH_KERNEL.invokeExact(
                function, gridX, 1, 1, blockX, 1, 1, sharedMemBytes, stream, params, extra));
        if (rc != CUDA_SUCCESS) {
            throw error("cuLaunchKernel(" + name + ", grid " + gridX + ", block " + blockX + ")", rc);
        }
    }
}
