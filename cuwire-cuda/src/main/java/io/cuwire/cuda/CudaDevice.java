package io.cuwire.cuda;

import io.cuwire.memory.CopyException;
import io.cuwire.memory.Device;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.DeviceStream;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.InvalidHandleException;
import io.cuwire.memory.IpcHandle;
import io.cuwire.memory.MemoryResource;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One CUDA GPU. It lives as long as the process and holds the device's primary context (retained on first use),
 * its memory pool ({@link CudaMemoryPool}), its pinned memory and an 8 MiB pinned staging buffer for copies to and
 * from heap memory.
 *
 * <p>Every driver call that needs a context runs in this device's primary context: {@link Driver}'s gate makes it
 * current on the calling OS thread right before the call, so any thread (platform or virtual, parked and resumed on
 * another carrier in between) may use any device, and nothing here depends on the context a thread was left in.
 *
 * <p>Copies with a {@code null} stream are synchronous: they return once the bytes have arrived (the legacy
 * default stream is synchronized after copies the driver would otherwise let run on). Copies with a stream are
 * enqueued on it, except those from or to heap memory, which go through the staging buffer and have finished when
 * the call returns. A stream carries copies of its own device only; for a copy between two devices that is the
 * source device. The first copy between two devices that can reach each other enables peer access in both
 * directions; otherwise the driver stages peer copies itself. Thread-safe.
 */
final class CudaDevice extends Device {
    /** Size of the pinned staging buffer for copies from and to heap memory. */
    static final long STAGING_BYTES = 8L << 20;

    private final int handle;
    private final String name;
    private final long totalMemory;
    private final String pciBusId;
    private final int multiprocessors;
    private final CudaMemoryPool pool;
    private final CudaPinnedMemory pinned;
    private final ReentrantLock stagingLock = new ReentrantLock();
    private final Map<Integer, Boolean> canAccessPeer = new ConcurrentHashMap<>();
    private final Set<Integer> peersEnabled = ConcurrentHashMap.newKeySet();
    private final Set<Integer> peersChecked = ConcurrentHashMap.newKeySet();
    private final Map<Long, IpcHandle> exported = new ConcurrentHashMap<>();
    private volatile CudaPlatform platform;
    private volatile MemorySegment context;
    private MemorySegment staging;

    CudaDevice(int ordinal, int handle) {
        super(ordinal);
        this.handle = handle;
        this.name = Driver.deviceName(handle);
        this.totalMemory = Driver.deviceTotalMem(handle);
        this.pciBusId = Driver.devicePciBusId(handle);
        this.multiprocessors = Driver.deviceAttribute(handle, Driver.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
        this.pool = new CudaMemoryPool(this, CudaMemoryPool.Limits.fromSystemProperties());
        this.pinned = new CudaPinnedMemory(this);
        addMemoryHolder(pool::describeHolding);
    }

    void attach(CudaPlatform owner) {
        this.platform = owner;
    }

    /** The device's primary context, retained on first call, never released (see {@link Driver#primaryCtxRetain}). */
    MemorySegment context() {
        MemorySegment ctx = context;
        if (ctx == null) {
            synchronized (this) {
                ctx = context;
                if (ctx == null) {
                    ctx = Driver.primaryCtxRetain(handle);
                    context = ctx;
                }
            }
        }
        return ctx;
    }

    /** Makes this device's primary context current on the calling thread ({@code cuCtxSetCurrent}). */
    @Override
    public void makeCurrentForNativeLibraries() {
        Driver.makeCurrentForNativeLibraries(this);
    }

    /** The device pointer of {@code buffer}'s byte at {@code offset}, for the platform's own calls. */
    public static long pointer(DeviceBuffer buffer, long offset) {
        return buffer.allocation(CudaAllocation.class).pointer() + buffer.rootOffset() + offset;
    }

    /**
     * The device pointer of {@code buffer}'s byte at {@code offset}, after checking that {@code bytes} from there lie
     * within the buffer and that the buffer is on this device.
     */
    public long checkedPointer(DeviceBuffer buffer, long offset, long bytes) {
        if (buffer.device() != this) {
            throw new IllegalArgumentException(buffer.describe() + " is not on " + this);
        }
        if (offset < 0 || bytes < 0 || offset > buffer.byteSize() - bytes) {
            throw new IndexOutOfBoundsException("offset: " + offset + ", bytes: " + bytes + " (expected: 0 <= offset"
                    + " <= offset + bytes <= " + buffer.byteSize() + " of " + buffer.describe() + ")");
        }
        return pointer(buffer, offset);
    }

    /** {@code buffer}'s device as a CUDA device. */
    public static CudaDevice of(DeviceBuffer buffer) {
        if (buffer.device() instanceof CudaDevice d) {
            return d;
        }
        throw new IllegalArgumentException(buffer.describe() + " is not CUDA memory");
    }

    /** The PCI bus id, e.g. {@code 0000:1B:00.0}. */
    public String pciBusId() {
        return pciBusId;
    }

    /** Compute capability as {@code major * 10 + minor}, e.g. 90 for an H100 or H200. */
    public int computeCapability() {
        return Driver.deviceAttribute(handle, Driver.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) * 10
                + Driver.deviceAttribute(handle, Driver.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    }

    /** The streaming multiprocessors (132 on an H200), for kernels that size their grid to the device. */
    public int multiprocessors() {
        return multiprocessors;
    }

    /** The memory pool. */
    public CudaMemoryPool pool() {
        return pool;
    }

    @Override
    public String platform() {
        return Cuda.PLATFORM;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public long totalMemory() {
        return totalMemory;
    }

    @Override
    public long freeMemory() {
        return Driver.memGetInfo(this)[0];
    }

    @Override
    public MemoryResource<DeviceBuffer> memory() {
        return pool;
    }

    @Override
    public MemoryResource<HostBuffer> pinnedMemory() {
        return pinned;
    }

    @Override
    public CudaStream newStream() {
        return new CudaStream(this);
    }

    @Override
    public boolean canAccessPeer(Device other) {
        if (!(other instanceof CudaDevice peer) || peer == this) {
            return false;
        }
        return canAccessPeer.computeIfAbsent(peer.ordinal(), o -> Driver.deviceCanAccessPeer(handle, peer.handle));
    }

    /** Whether peer access from this device to {@code peer} has been enabled in this process. */
    public boolean peerAccessEnabled(CudaDevice peer) {
        return peersEnabled.contains(peer.ordinal());
    }

    /**
     * Enables peer access between this device and {@code peer} in both directions, once, if they can reach each
     * other and the platform allows it ({@link CudaPlatform#setAutoPeerAccess}).
     */
    void ensurePeerAccess(CudaDevice peer) {
        if (peersChecked.contains(peer.ordinal()) || !platform.autoPeerAccess()) {
            return;
        }
        synchronized (CudaDevice.class) {
            if (peersChecked.contains(peer.ordinal())) {
                return;
            }
            if (canAccessPeer(peer) && peer.canAccessPeer(this)) {
                Driver.ctxEnablePeerAccess(this, peer);
                Driver.ctxEnablePeerAccess(peer, this);
                peersEnabled.add(peer.ordinal());
                peer.peersEnabled.add(ordinal());
            }
            peersChecked.add(peer.ordinal());
            peer.peersChecked.add(ordinal());
        }
    }

    /**
     * {@inheritDoc}
     *
     * <p>The handle's bytes are the 64-byte {@code CUipcMemHandle} of the allocation holding the buffer, followed
     * by this GPU's PCI bus id, by which the importing process finds the same GPU whatever its device numbering.
     */
    @Override
    public IpcHandle exportHandle(DeviceBuffer buffer) {
        if (buffer.device() != this) {
            throw new IllegalArgumentException(buffer.describe() + " is not on " + this);
        }
        long ptr = buffer.allocation(CudaAllocation.class).pointer();
        long base = Driver.allocationBase(this, ptr);
        byte[] ipc = Driver.ipcGetMemHandle(this, base);
        byte[] bus = pciBusId.getBytes(StandardCharsets.US_ASCII);
        byte[] bytes = Arrays.copyOf(ipc, ipc.length + bus.length);
        System.arraycopy(bus, 0, bytes, ipc.length, bus.length);
        return new IpcHandle(Cuda.PLATFORM, ordinal(), bytes, ptr - base + buffer.rootOffset(), buffer.byteSize());
    }

    /**
     * {@inheritDoc}
     *
     * <p>The handle's bytes are as {@link #exportHandle}'s. Handles of the pool's blocks are kept per block (the
     * pool forgets one when it frees the block), so exporting a recycled block again makes no driver call.
     */
    @Override
    public IpcHandle exportAllocation(DeviceBuffer buffer) {
        if (buffer.device() != this) {
            throw new IllegalArgumentException(buffer.describe() + " is not on " + this);
        }
        long ptr = buffer.allocation(CudaAllocation.class).pointer();
        IpcHandle cached = exported.get(ptr);
        if (cached != null) {
            return cached;
        }
        long base = Driver.allocationBase(this, ptr);
        long size = Driver.allocationSize(this, base);
        byte[] ipc = Driver.ipcGetMemHandle(this, base);
        byte[] bus = pciBusId.getBytes(StandardCharsets.US_ASCII);
        byte[] bytes = Arrays.copyOf(ipc, ipc.length + bus.length);
        System.arraycopy(bus, 0, bytes, ipc.length, bus.length);
        IpcHandle handle = new IpcHandle(Cuda.PLATFORM, ordinal(), bytes, 0, size);
        if (base == ptr && pool.isBlock(ptr)) {
            exported.put(ptr, handle);
        }
        return handle;
    }

    @Override
    public long allocationOffset(DeviceBuffer buffer) {
        long ptr = buffer.allocation(CudaAllocation.class).pointer();
        if (exported.containsKey(ptr)) {
            return buffer.rootOffset();
        }
        return ptr - Driver.allocationBase(this, ptr) + buffer.rootOffset();
    }

    /** Forgets the exported handle of a block the pool is about to free. */
    void forgetExport(long ptr) {
        exported.remove(ptr);
    }

    /**
     * {@inheritDoc}
     *
     * <p>The memory is mapped into the context of the GPU that holds it when that GPU is visible here (found by PCI
     * bus id), and the buffer belongs to that device; otherwise it is mapped into this device's context with lazy
     * peer access, and belongs to this device. Each open costs milliseconds: cache mappings, don't open per copy.
     *
     * <p>The handle's bytes are checked before the driver sees them, and its range (offset, length) against the
     * size the driver reports for the allocation it opened; a range that reaches past it is closed again and
     * refused, so no copy can read or write beyond the exporter's allocation ({@link CudaIpcHandles}).
     *
     * @throws InvalidHandleException if the handle is malformed or its range lies outside its allocation
     * @throws CudaException if the driver cannot open it (a handle no process exported, of a process gone)
     */
    @Override
    public DeviceBuffer openHandle(IpcHandle handle) {
        String bus = CudaIpcHandles.busId(handle);
        CudaDevice found = bus.isEmpty() ? null : platform.deviceByPciBusId(bus);
        CudaDevice owner = found == null ? this : found;
        long base;
        try {
            base = Driver.ipcOpenMemHandle(owner, CudaIpcHandles.memHandle(handle));
        } catch (CudaException e) {
            throw new CudaException(
                    "cuIpcOpenMemHandle_v2(" + handle + " on " + owner + ")", e.result(), e.errorName());
        }
        try {
            CudaIpcHandles.checkOpened(handle, Driver.allocationSize(owner, base));
        } catch (RuntimeException e) {
            try {
                Driver.ipcCloseMemHandle(owner, base);
            } catch (CudaException c) {
                e.addSuppressed(c);
            }
            throw e;
        }
        return DeviceBuffer.owning(
                owner,
                new CudaAllocation(base + handle.offset(), handle.length()),
                handle.length(),
                () -> Driver.ipcCloseMemHandle(owner, base));
    }

    // ---- copies

    private CudaStream streamFor(DeviceStream stream, DeviceBuffer buffer) {
        if (stream == null) {
            return null;
        }
        if (stream instanceof CudaStream s && s.device() == this) {
            return s;
        }
        throw new CopyException("stream " + stream + " cannot carry a copy for " + buffer.describe()
                + ": a CUDA stream carries copies of its own device (for copies between devices, the source's)");
    }

    private static CopyException failed(String what, long bytes, DeviceBuffer buffer, CudaException e) {
        return new CopyException(
                what + " of " + bytes + " bytes with " + buffer.describe() + " failed: " + e.getMessage(), e);
    }

    @Override
    protected void copyHostToDevice(MemorySegment src, DeviceBuffer dst, long dstOffset, DeviceStream stream) {
        long bytes = src.byteSize();
        CudaStream s = streamFor(stream, dst);
        long dptr = pointer(dst, dstOffset);
        if (bytes == 0) {
            return;
        }
        try {
            if (!src.isNative()) {
                stagedHostToDevice(src, dptr, s);
            } else if (s == null) {
                Driver.memcpyHtoD(this, dptr, src, bytes);
                Driver.streamSynchronize(this, MemorySegment.NULL);
            } else {
                Driver.memcpyHtoDAsync(this, dptr, src, bytes, s.handle());
            }
        } catch (CudaException e) {
            throw failed("host-to-device copy", bytes, dst, e);
        }
    }

    @Override
    protected void copyDeviceToHost(DeviceBuffer src, long srcOffset, MemorySegment dst, DeviceStream stream) {
        long bytes = dst.byteSize();
        CudaStream s = streamFor(stream, src);
        long sptr = pointer(src, srcOffset);
        if (bytes == 0) {
            return;
        }
        try {
            if (!dst.isNative()) {
                stagedDeviceToHost(sptr, dst, s);
            } else if (s == null) {
                Driver.memcpyDtoH(this, dst, sptr, bytes);
            } else {
                Driver.memcpyDtoHAsync(this, dst, sptr, bytes, s.handle());
            }
        } catch (CudaException e) {
            throw failed("device-to-host copy", bytes, src, e);
        }
    }

    @Override
    protected void copyDeviceToDevice(
            DeviceBuffer src, long srcOffset, DeviceBuffer dst, long dstOffset, long bytes, DeviceStream stream) {
        CudaStream s = streamFor(stream, src);
        if (!(dst.device() instanceof CudaDevice target)) {
            throw new CopyException("cannot copy from " + src.describe() + " to " + dst.describe());
        }
        long sptr = pointer(src, srcOffset);
        long dptr = pointer(dst, dstOffset);
        if (bytes == 0) {
            return;
        }
        try {
            if (target == this) {
                if (s == null) {
                    Driver.memcpyDtoD(this, dptr, sptr, bytes);
                    Driver.streamSynchronize(this, MemorySegment.NULL);
                } else {
                    Driver.memcpyDtoDAsync(this, dptr, sptr, bytes, s.handle());
                }
            } else {
                ensurePeerAccess(target);
                if (s == null) {
                    Driver.memcpyPeer(this, dptr, target, sptr, bytes);
                    Driver.streamSynchronize(this, MemorySegment.NULL);
                } else {
                    Driver.memcpyPeerAsync(this, dptr, target, sptr, bytes, s.handle());
                }
            }
        } catch (CudaException e) {
            throw failed(target == this ? "device-to-device copy" : "peer copy to " + dst.describe(), bytes, src, e);
        }
    }

    @Override
    protected void copyHostToHost(MemorySegment src, MemorySegment dst, DeviceStream stream) {
        stream.synchronize();
        MemorySegment.copy(src, 0, dst, 0, src.byteSize());
    }

    /** The staging buffer; the caller holds {@link #stagingLock}. Lives as long as the process. */
    @SuppressWarnings("restricted") // the address and size come from cuMemHostAlloc
    private MemorySegment staging() {
        if (staging == null) {
            staging = Driver.memHostAlloc(this, STAGING_BYTES, Driver.CU_MEMHOSTALLOC_PORTABLE)
                    .reinterpret(STAGING_BYTES);
        }
        return staging;
    }

    private void stagedHostToDevice(MemorySegment src, long dptr, CudaStream s) {
        MemorySegment stream = s == null ? MemorySegment.NULL : s.handle();
        stagingLock.lock();
        try {
            MemorySegment stage = staging();
            long n = src.byteSize();
            for (long off = 0; off < n; off += STAGING_BYTES) {
                long len = Math.min(STAGING_BYTES, n - off);
                MemorySegment.copy(src, off, stage, 0, len);
                Driver.memcpyHtoDAsync(this, dptr + off, stage, len, stream);
                Driver.streamSynchronize(this, stream);
            }
        } finally {
            stagingLock.unlock();
        }
    }

    private void stagedDeviceToHost(long sptr, MemorySegment dst, CudaStream s) {
        MemorySegment stream = s == null ? MemorySegment.NULL : s.handle();
        stagingLock.lock();
        try {
            MemorySegment stage = staging();
            long n = dst.byteSize();
            for (long off = 0; off < n; off += STAGING_BYTES) {
                long len = Math.min(STAGING_BYTES, n - off);
                Driver.memcpyDtoHAsync(this, stage, sptr + off, len, stream);
                Driver.streamSynchronize(this, stream);
                MemorySegment.copy(stage, 0, dst, off, len);
            }
        } finally {
            stagingLock.unlock();
        }
    }

    /** Fills {@code bytes} of {@code buffer} from {@code offset} with {@code value}, synchronously. */
    public void memset(DeviceBuffer buffer, long offset, long bytes, byte value) {
        long ptr = checkedPointer(buffer, offset, bytes);
        Driver.memsetD8(this, ptr, value, bytes);
        Driver.streamSynchronize(this, MemorySegment.NULL);
    }

    /** Enqueues a fill of {@code bytes} of {@code buffer} from {@code offset} with {@code value} on {@code stream}. */
    public void memsetAsync(DeviceBuffer buffer, long offset, long bytes, byte value, CudaStream stream) {
        if (stream.device() != this) {
            throw new IllegalArgumentException(stream + " is not a stream of " + this);
        }
        long ptr = checkedPointer(buffer, offset, bytes);
        Driver.memsetD8Async(this, ptr, value, bytes, stream.handle());
    }
}
