package io.cuwire.memory.internal;

import io.cuwire.memory.AllocationLimitException;
import io.cuwire.memory.Buffer;
import io.cuwire.memory.Device;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.DeviceStream;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.HostMemory;
import io.cuwire.memory.InvalidHandleException;
import io.cuwire.memory.IpcHandle;
import io.cuwire.memory.MemoryKind;
import io.cuwire.memory.MemoryResource;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.BitSet;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/** One emulated device; see {@link EmulatedPlatform}. */
final class EmulatedDevice extends Device {
    /** The smallest block of device memory. */
    static final long MIN_BLOCK = 256;
    /** The largest allocation served from a slab; larger ones get a file of their own. */
    static final long SMALL_MAX = 1L << 20;
    /** Bytes of one slab: 4 blocks of the largest size, 16,384 of the smallest. */
    static final long SLAB_BYTES = 4L << 20;

    private final EmulatedPlatform platform;
    private final long totalMemory;
    private final AtomicLong allocated = new AtomicLong();
    private final Memory memory = new Memory();
    private final MemoryResource<HostBuffer> pinned = HostMemory.labelledPinned();

    EmulatedDevice(EmulatedPlatform platform, int ordinal, long totalMemory) {
        super(ordinal);
        this.platform = platform;
        this.totalMemory = totalMemory;
        addMemoryHolder(this::describeHolding);
    }

    /** The device's line in its memory report: what this process allocated, and the room left for files. */
    private String describeHolding() {
        long used = allocated.get();
        long cached = memory.cachedBytes();
        if (used == 0 && cached == 0) {
            return null;
        }
        return "emulated device " + ordinal() + ": " + used + " of " + totalMemory + " bytes allocated by this process"
                + " (in blocks)" + (cached == 0 ? "" : " and " + cached + " bytes of freed memory kept for reuse")
                + ", in shared-memory files in " + platform.directory() + " (" + platform.usableSpace()
                + " bytes free there; " + platform.mappedFiles() + " files of this platform mapped)";
    }

    @Override
    public String platform() {
        return EmulatedPlatform.NAME;
    }

    @Override
    public String name() {
        return "cuwire emulated device (shared memory in " + platform.directory() + ")";
    }

    @Override
    public long totalMemory() {
        return totalMemory;
    }

    @Override
    public long freeMemory() {
        return Math.max(0, Math.min(totalMemory - allocated.get(), platform.usableSpace()));
    }

    @Override
    public MemoryResource<DeviceBuffer> memory() {
        return memory;
    }

    @Override
    public MemoryResource<HostBuffer> pinnedMemory() {
        return pinned;
    }

    @Override
    public DeviceStream newStream() {
        return new EmulatedStream(this);
    }

    @Override
    public boolean canAccessPeer(Device other) {
        return other instanceof EmulatedDevice && other != this;
    }

    @Override
    public IpcHandle exportHandle(DeviceBuffer buffer) {
        if (buffer.device() != this) {
            throw new IllegalArgumentException(buffer.describe() + " is not on " + this);
        }
        EmulatedAllocation a = buffer.allocation(EmulatedAllocation.class);
        return new IpcHandle(
                EmulatedPlatform.NAME,
                ordinal(),
                a.file().handleBytes(),
                a.fileOffset() + buffer.rootOffset(),
                buffer.byteSize());
    }

    /** {@inheritDoc} The allocation is the buffer's file: a slab that small buffers share, or its own. */
    @Override
    public IpcHandle exportAllocation(DeviceBuffer buffer) {
        if (buffer.device() != this) {
            throw new IllegalArgumentException(buffer.describe() + " is not on " + this);
        }
        ShmFile file = buffer.allocation(EmulatedAllocation.class).file();
        return new IpcHandle(EmulatedPlatform.NAME, ordinal(), file.handleBytes(), 0, file.size());
    }

    @Override
    public long allocationOffset(DeviceBuffer buffer) {
        return buffer.allocation(EmulatedAllocation.class).fileOffset() + buffer.rootOffset();
    }

    @Override
    public OptionalLong exportingProcess(IpcHandle handle) {
        checkPlatform(handle);
        return OptionalLong.of(ShmFile.pid(handle));
    }

    /**
     * {@inheritDoc}
     *
     * <p>The handle's bytes are the exporter's pid and its file's token; the file is found and checked as
     * {@link ShmFile} describes (in this platform's directory only, no links, a regular file of this user, holding the
     * handle's range), and only the handle's range is mapped.
     */
    @Override
    public DeviceBuffer openHandle(IpcHandle handle) {
        checkPlatform(handle);
        Device owner;
        try {
            owner = platform.device(handle.deviceOrdinal());
        } catch (InvalidHandleException e) {
            throw new InvalidHandleException(handle + " names no device of this platform: " + e.getMessage(), e);
        }
        ShmFile file = ShmFile.open(platform, handle);
        return DeviceBuffer.owning(
                owner, new EmulatedAllocation(file, handle.offset(), file.segment()), handle.length(), file::close);
    }

    private static void checkPlatform(IpcHandle handle) {
        if (!EmulatedPlatform.NAME.equals(handle.platform())) {
            throw new InvalidHandleException(handle + " was not made by the emulated platform");
        }
    }

    @Override
    public boolean hostAddressable() {
        return true;
    }

    @Override
    protected MemorySegment hostSegment(DeviceBuffer buffer, long offset, long bytes) {
        return seg(buffer, offset, bytes);
    }

    private static MemorySegment seg(DeviceBuffer b, long offset, long bytes) {
        return b.allocation(EmulatedAllocation.class).segment().asSlice(b.rootOffset() + offset, bytes);
    }

    private static void run(DeviceStream stream, Runnable copy) {
        if (stream == null) {
            copy.run();
        } else {
            ((EmulatedStream) stream).enqueue(copy);
        }
    }

    @Override
    protected void copyHostToDevice(MemorySegment src, DeviceBuffer dst, long dstOffset, DeviceStream stream) {
        MemorySegment d = seg(dst, dstOffset, src.byteSize());
        run(stream, () -> MemorySegment.copy(src, 0, d, 0, src.byteSize()));
    }

    @Override
    protected void copyDeviceToHost(DeviceBuffer src, long srcOffset, MemorySegment dst, DeviceStream stream) {
        MemorySegment s = seg(src, srcOffset, dst.byteSize());
        run(stream, () -> MemorySegment.copy(s, 0, dst, 0, dst.byteSize()));
    }

    @Override
    protected void copyDeviceToDevice(
            DeviceBuffer src, long srcOffset, DeviceBuffer dst, long dstOffset, long bytes, DeviceStream stream) {
        MemorySegment s = seg(src, srcOffset, bytes);
        MemorySegment d = seg(dst, dstOffset, bytes);
        run(stream, () -> MemorySegment.copy(s, 0, d, 0, bytes));
    }

    /** {@inheritDoc} One piece of work on the stream's thread for all of them (a copy each on the caller's without). */
    @Override
    protected void copyDevicesToDevices(
            List<? extends DeviceBuffer> sources, List<? extends DeviceBuffer> targets, DeviceStream stream) {
        MemorySegment[] s = new MemorySegment[sources.size()];
        MemorySegment[] d = new MemorySegment[s.length];
        for (int i = 0; i < s.length; i++) {
            DeviceBuffer src = sources.get(i);
            s[i] = seg(src, 0, src.byteSize());
            d[i] = seg(targets.get(i), 0, src.byteSize());
        }
        run(stream, () -> {
            for (int i = 0; i < s.length; i++) {
                MemorySegment.copy(s[i], 0, d[i], 0, s[i].byteSize());
            }
        });
    }

    @Override
    protected void copyHostToHost(MemorySegment src, MemorySegment dst, DeviceStream stream) {
        run(stream, () -> MemorySegment.copy(src, 0, dst, 0, src.byteSize()));
    }

    /** The block size that serves {@code bytes}: as {@code CudaMemoryPool} rounds, up to {@link #SMALL_MAX}. */
    static long blockSize(long bytes) {
        return bytes <= MIN_BLOCK ? MIN_BLOCK : Long.highestOneBit(bytes - 1) << 1;
    }

    /**
     * Device memory: blocks of at most {@link #SMALL_MAX} bytes from slabs of their block size (one file each), larger
     * allocations a file each; see {@link EmulatedPlatform}. A file goes when its last allocation is freed, unless the
     * platform keeps freed large files ({@link EmulatedPlatform#CACHE_PROPERTY}): then one goes back to the cache
     * while it has room, and an allocation takes a cached file of at least its size and at most twice it before it
     * makes a new one (a reused file is already touched: no page faults); a slab whose last block is freed stays, as
     * long as the same bound has room. Freed blocks and kept files are zeroed, so that new memory reads as zero, as a
     * new file does.
     */
    private final class Memory implements MemoryResource<DeviceBuffer> {
        private final Map<Long, SizeClass> classes = new ConcurrentHashMap<>();
        /** Freed large files kept for reuse, by size ({@link EmulatedPlatform#CACHE_PROPERTY}); guarded by itself. */
        private final TreeMap<Long, ArrayDeque<ShmFile>> freed = new TreeMap<>();
        /** Bytes of {@link #freed}'s files, counted before they are in it; guarded by {@link #freed}. */
        private long cachedBytes;

        private boolean cleanupRegistered;

        @Override
        public MemoryKind kind() {
            return MemoryKind.DEVICE;
        }

        @Override
        public int deviceOrdinal() {
            return ordinal();
        }

        @Override
        public DeviceBuffer allocate(long bytes) {
            if (bytes < 0) {
                throw new IllegalArgumentException("bytes: " + bytes + " (expected: >= 0)");
            }
            boolean small = bytes <= SMALL_MAX;
            long size = small ? blockSize(bytes) : bytes;
            long now = allocated.addAndGet(size);
            if (now > totalMemory || now < 0) {
                allocated.addAndGet(-size);
                throw new AllocationLimitException("emulated device " + ordinal() + " cannot allocate " + bytes
                        + " bytes: " + (now - size) + " of " + totalMemory + " allocated");
            }
            try {
                return small ? classes.computeIfAbsent(size, SizeClass::new).allocate(bytes) : ownFile(bytes);
            } catch (RuntimeException e) {
                allocated.addAndGet(-size);
                if (e instanceof AllocationLimitException a) {
                    throw new AllocationLimitException(
                            "emulated device " + ordinal() + " cannot allocate " + bytes + " bytes: " + a.getMessage(),
                            a);
                }
                throw e;
            }
        }

        private DeviceBuffer ownFile(long bytes) {
            ShmFile cachedFile = takeCached(bytes);
            ShmFile file = cachedFile != null ? cachedFile : ShmFile.create(platform, bytes);
            long size = file.size();
            if (size != bytes) {
                allocated.addAndGet(size - bytes); // the cached file is larger: its whole size counts
            }
            Buffer.Releaser free = () -> {
                try {
                    if (!keep(file, bytes)) {
                        file.close();
                    }
                } finally {
                    allocated.addAndGet(-size);
                }
            };
            return DeviceBuffer.owning(
                    EmulatedDevice.this, new EmulatedAllocation(file, 0, file.segment()), bytes, free);
        }

        /** A cached file of at least {@code bytes} and at most twice that, or {@code null}. */
        private ShmFile takeCached(long bytes) {
            synchronized (freed) {
                var entry = freed.ceilingEntry(bytes);
                if (entry == null || entry.getKey() > 2 * bytes) {
                    return null;
                }
                ShmFile f = entry.getValue().pop();
                if (entry.getValue().isEmpty()) {
                    freed.remove(entry.getKey());
                }
                cachedBytes -= f.size();
                return f;
            }
        }

        /**
         * Keeps a freed file for reuse if the cache has room: its first {@code used} bytes zeroed first (new memory
         * reads as zero; the rest still is), which also keeps its pages touched.
         */
        private boolean keep(ShmFile file, long used) {
            if (!reserveCache(file.size())) {
                return false;
            }
            file.segment().asSlice(0, used).fill((byte) 0);
            synchronized (freed) {
                freed.computeIfAbsent(file.size(), k -> new ArrayDeque<>()).push(file);
            }
            return true;
        }

        /** Counts {@code bytes} more of kept memory, if they fit the platform's bound. */
        boolean reserveCache(long bytes) {
            synchronized (freed) {
                if (cachedBytes + bytes > platform.maxCachedBytes()) {
                    return false;
                }
                if (!cleanupRegistered) {
                    // the files are the system's memory until deleted: a process that ends deletes what it kept
                    Runtime.getRuntime().addShutdownHook(new Thread(this::dropCached, "cuwire-emulated-cache-drop"));
                    cleanupRegistered = true;
                }
                cachedBytes += bytes;
                return true;
            }
        }

        /** Kept memory of {@code bytes} is in use again. */
        void releaseCache(long bytes) {
            synchronized (freed) {
                cachedBytes -= bytes;
            }
        }

        /** Deletes the kept files and empty slabs. */
        private void dropCached() {
            synchronized (freed) {
                for (ArrayDeque<ShmFile> files : freed.values()) {
                    for (ShmFile f : files) {
                        f.close();
                    }
                }
                cachedBytes -= freed.values().stream()
                        .flatMap(ArrayDeque::stream)
                        .mapToLong(ShmFile::size)
                        .sum();
                freed.clear();
            }
            for (SizeClass c : classes.values()) {
                c.dropKept();
            }
        }

        /** Bytes of the freed files and empty slabs kept for reuse. */
        long cachedBytes() {
            synchronized (freed) {
                return cachedBytes;
            }
        }

        @Override
        public String describe() {
            return "DEVICE:" + EmulatedDevice.this;
        }
    }

    /** The slabs of one block size; guarded by itself. */
    private final class SizeClass {
        private final long block;
        private final int slots;
        /** Slabs with a free block, the most recently filled first. */
        private final ArrayDeque<Slab> partial = new ArrayDeque<>();

        SizeClass(long block) {
            this.block = block;
            this.slots = (int) (SLAB_BYTES / block);
        }

        synchronized DeviceBuffer allocate(long bytes) {
            Slab slab = partial.peekFirst();
            if (slab == null) {
                slab = new Slab(ShmFile.create(platform, SLAB_BYTES), slots);
                partial.addFirst(slab);
            }
            if (slab.kept) {
                slab.kept = false;
                memory.releaseCache(SLAB_BYTES);
            }
            int slot = slab.used.nextClearBit(0);
            slab.used.set(slot);
            slab.count++;
            if (slab.count == slots) {
                partial.removeFirst();
            }
            long offset = slot * block;
            Slab taken = slab;
            MemorySegment segment = slab.file.segment().asSlice(offset, bytes);
            return DeviceBuffer.owning(
                    EmulatedDevice.this,
                    new EmulatedAllocation(slab.file, offset, segment),
                    bytes,
                    () -> free(taken, slot, segment));
        }

        /** Deletes the empty slabs kept for reuse. */
        synchronized void dropKept() {
            for (var it = partial.iterator(); it.hasNext(); ) {
                Slab slab = it.next();
                if (slab.kept) {
                    it.remove();
                    slab.file.close();
                    memory.releaseCache(SLAB_BYTES);
                }
            }
        }

        private synchronized void free(Slab slab, int slot, MemorySegment segment) {
            try {
                if (slab.count == slots) {
                    partial.addLast(slab);
                }
                slab.used.clear(slot);
                slab.count--;
                if (slab.count == 0 && !memory.reserveCache(SLAB_BYTES)) {
                    partial.remove(slab);
                    slab.file.close();
                } else {
                    segment.fill((byte) 0);
                    slab.kept = slab.count == 0; // an empty slab kept for reuse, as a freed large file is
                }
            } finally {
                allocated.addAndGet(-block);
            }
        }
    }

    /** One slab: its file and which of its blocks are taken. */
    private static final class Slab {
        final ShmFile file;
        final BitSet used;
        int count;
        /** Empty, and counted among the device's kept memory. */
        boolean kept;

        Slab(ShmFile file, int slots) {
            this.file = file;
            this.used = new BitSet(slots);
        }
    }
}
