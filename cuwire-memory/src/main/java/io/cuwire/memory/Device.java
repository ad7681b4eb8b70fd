package io.cuwire.memory;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * One device of a platform: a CUDA GPU, or an emulated device backed by shared-memory files. Devices are made by
 * their platform ({@link Devices}) and live as long as the process.
 *
 * <p>The {@code protected} copy methods are the platform's half of the {@link CopyEngine}: the engine checks
 * ranges, counts bytes and then calls them; nothing else may. A {@code null} stream means "synchronously".
 *
 * <p>Owners of the device's memory register a {@link MemoryHolder} ({@link #addMemoryHolder}), so that
 * {@link #memoryReport()} — which the message of a failed allocation through {@link #newAllocator}'s allocators
 * includes — names what holds the memory.
 */
public abstract class Device {
    private final int ordinal;
    /** The registered holders, each in a holder of its own (so that equal holders register apart). */
    private final List<MemoryHolder[]> holders = new CopyOnWriteArrayList<>();

    protected Device(int ordinal) {
        this.ordinal = ordinal;
    }

    /** The device's number in this process, from 0. */
    public final int ordinal() {
        return ordinal;
    }

    /** The platform's name: {@code cuda} or {@code emulated}. */
    public abstract String platform();

    /** A human-readable name, e.g. {@code NVIDIA H200}. */
    public abstract String name();

    /** Total memory in bytes. */
    public abstract long totalMemory();

    /** Memory not yet allocated, in bytes, as the platform reports it. */
    public abstract long freeMemory();

    /** The device's memory (a pool on CUDA). */
    public abstract MemoryResource<DeviceBuffer> memory();

    /** Pinned host memory usable for fast copies to and from this device. */
    public abstract MemoryResource<HostBuffer> pinnedMemory();

    /** A new stream on this device, owned by the caller. */
    public abstract DeviceStream newStream();

    /** Whether copies from this device straight to {@code other} are possible (peer access). */
    public abstract boolean canAccessPeer(Device other);

    /**
     * A handle by which another process on this host can map {@code buffer} ({@link #openHandle}). The buffer must
     * stay open while any process has it mapped.
     */
    public abstract IpcHandle exportHandle(DeviceBuffer buffer);

    /**
     * Maps a buffer exported by another process. The result is owned by the caller; closing it unmaps the memory
     * and leaves the exporter's buffer alone.
     *
     * <p>A handle comes from a peer and is checked before anything is mapped: it must be of this device's platform,
     * well formed, name an allocation that a device of the platform issued, and its range must lie within that
     * allocation ({@link IpcHandle#checkWithin}).
     *
     * @throws InvalidHandleException if it is not, saying which check failed
     */
    public abstract DeviceBuffer openHandle(IpcHandle handle);

    /**
     * A handle of the whole allocation that holds {@code buffer}: offset 0, length the allocation's size. An importer
     * maps the allocation once ({@link #openHandle}) and reaches this and every later buffer in it by
     * {@link #allocationOffset}, instead of opening a handle per buffer. The allocation is the platform's unit of
     * shared memory — a CUDA pool block; on the emulated device a shared-memory file, which for small buffers is a
     * slab that many of them share — and an importer of it can reach all of it. Equal allocations give equal handles;
     * new memory (even at a freed allocation's address) gives a new handle.
     */
    public abstract IpcHandle exportAllocation(DeviceBuffer buffer);

    /**
     * The process that exported {@code handle}, where the platform's handles name it (the emulated device's do;
     * CUDA's do not): an importer checks it against the peer that sent the handle.
     *
     * @throws InvalidHandleException if the handle is not one of this platform's, or malformed
     */
    public OptionalLong exportingProcess(IpcHandle handle) {
        return OptionalLong.empty();
    }

    /** Where {@code buffer} starts within the allocation of {@link #exportAllocation}. */
    public abstract long allocationOffset(DeviceBuffer buffer);

    /**
     * A root allocator of this device's memory. It is one of the device's {@link MemoryHolder}s until it is closed,
     * and an allocation of it (or of its children) that fails says what holds the device's memory
     * ({@link #memoryReport()}) in its message.
     */
    public final BufferAllocator<DeviceBuffer> newAllocator(String name, long limit) {
        return BufferAllocator.ofDevice(name, limit, memory(), this);
    }

    /**
     * Registers {@code holder} as holding memory of this device, until the registration is closed: its line goes into
     * every {@link #memoryReport()}.
     */
    public final Registration addMemoryHolder(MemoryHolder holder) {
        MemoryHolder[] entry = {Objects.requireNonNull(holder, "holder")};
        holders.add(entry);
        return () -> holders.remove(entry);
    }

    /**
     * What holds this device's memory now: its total and free memory and a line from each registered holder that
     * holds something (a holder that fails to describe itself is named with its failure). Never throws.
     */
    public final DeviceMemoryReport memoryReport() {
        long free;
        try {
            free = freeMemory();
        } catch (RuntimeException e) {
            free = -1;
        }
        List<String> lines = new ArrayList<>();
        for (MemoryHolder[] entry : holders) {
            MemoryHolder h = entry[0];
            try {
                String line = h.describeHolding();
                if (line != null && !line.isEmpty()) {
                    lines.add(line);
                }
            } catch (RuntimeException e) {
                lines.add(h.getClass().getName() + " could not say what it holds: " + e);
            }
        }
        String what;
        try {
            what = this + " (" + name() + ")";
        } catch (RuntimeException e) {
            what = toString();
        }
        return new DeviceMemoryReport(what, totalMemory(), free, lines);
    }

    /** A root allocator of pinned host memory for this device. */
    public final BufferAllocator<HostBuffer> newPinnedAllocator(String name, long limit) {
        return BufferAllocator.root(name, limit, pinnedMemory());
    }

    /**
     * Whether the host can address this device's memory in place ({@link CopyEngine#readInPlace},
     * {@link CopyEngine#writeInPlace}): the emulated device, whose memory is shared-memory files, can; a CUDA GPU's
     * memory cannot, and byte streams stage it through pinned memory instead.
     */
    public boolean hostAddressable() {
        return false;
    }

    /**
     * Makes this device's context current on the calling platform thread, for a native library of another's that
     * calls the device's driver in whatever context is current (UCX's CUDA transports, on their progress thread).
     * cuwire's own driver calls never rely on it: each goes through its device's gate. Call it on a platform thread
     * that stays its own OS thread (not a virtual thread, which may change carriers). A no-op for a device without
     * contexts (the emulated device).
     */
    public void makeCurrentForNativeLibraries() {}

    /**
     * {@code bytes} of {@code buffer}'s memory from {@code offset} as host memory, for a device that is
     * {@link #hostAddressable()}. For the {@link CopyEngine} only, which counts what is read or written through it.
     *
     * @throws UnsupportedOperationException if this device's memory is not host-addressable
     */
    protected MemorySegment hostSegment(DeviceBuffer buffer, long offset, long bytes) {
        throw new UnsupportedOperationException(this + " memory cannot be addressed by the host");
    }

    /** Host (native or heap) memory to this device. For the {@link CopyEngine} only. */
    protected abstract void copyHostToDevice(MemorySegment src, DeviceBuffer dst, long dstOffset, DeviceStream stream);

    /** This device to host memory (native or heap). For the {@link CopyEngine} only. */
    protected abstract void copyDeviceToHost(DeviceBuffer src, long srcOffset, MemorySegment dst, DeviceStream stream);

    /**
     * This device's memory to {@code dst} on this device or a peer of the same platform. For the {@link CopyEngine}
     * only; {@code stream} belongs to the source device.
     */
    protected abstract void copyDeviceToDevice(
            DeviceBuffer src, long srcOffset, DeviceBuffer dst, long dstOffset, long bytes, DeviceStream stream);

    /**
     * Each of {@code sources} (this device's memory, whole) into the start of the matching one of {@code targets}
     * (this device or a peer of the same platform), enqueued on {@code stream} in order; checked by the caller. As
     * many {@link #copyDeviceToDevice} calls by default (a GPU's copies are a driver call each); a platform that runs
     * a stream's copies on a thread of its own enqueues them as one piece of work. For the {@link CopyEngine} only.
     */
    protected void copyDevicesToDevices(
            List<? extends DeviceBuffer> sources, List<? extends DeviceBuffer> targets, DeviceStream stream) {
        for (int i = 0; i < sources.size(); i++) {
            DeviceBuffer src = sources.get(i);
            copyDeviceToDevice(src, 0, targets.get(i), 0, src.byteSize(), stream);
        }
    }

    /** Host to host, ordered on {@code stream} (never {@code null} here). For the {@link CopyEngine} only. */
    protected abstract void copyHostToHost(MemorySegment src, MemorySegment dst, DeviceStream stream);

    @Override
    public String toString() {
        return platform() + ordinal;
    }
}
