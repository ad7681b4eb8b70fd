package io.cuwire.memory.internal;

import io.cuwire.memory.AllocationLimitException;
import io.cuwire.memory.Buffer;
import io.cuwire.memory.Device;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.HostMemory;
import io.cuwire.memory.IpcHandle;
import io.cuwire.memory.MemoryException;
import io.cuwire.memory.MemoryKind;
import io.cuwire.memory.MemoryResource;
import io.cuwire.memory.Stream;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.atomic.AtomicLong;

/** One emulated device; see {@link EmulatedPlatform}. */
final class EmulatedDevice extends Device {
    private final EmulatedPlatform platform;
    private final long totalMemory;
    private final AtomicLong allocated = new AtomicLong();
    private final MemoryResource<DeviceBuffer> memory = new Memory();
    private final MemoryResource<HostBuffer> pinned = HostMemory.labelledPinned();

    EmulatedDevice(EmulatedPlatform platform, int ordinal, long totalMemory) {
        super(ordinal);
        this.platform = platform;
        this.totalMemory = totalMemory;
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
        long left = totalMemory - allocated.get();
        try {
            left = Math.min(left, Files.getFileStore(platform.directory()).getUsableSpace());
        } catch (IOException e) {
            // report what the accounts say
        }
        return Math.max(0, left);
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
    public Stream newStream() {
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
        return new IpcHandle(EmulatedPlatform.NAME, ordinal(), a.file().toString().getBytes(StandardCharsets.UTF_8),
                a.fileOffset() + buffer.rootOffset(), buffer.byteSize());
    }

    @Override
    public IpcHandle exportAllocation(DeviceBuffer buffer) {
        if (buffer.device() != this) {
            throw new IllegalArgumentException(buffer.describe() + " is not on " + this);
        }
        EmulatedAllocation a = buffer.allocation(EmulatedAllocation.class);
        long size;
        try {
            size = Files.size(a.file());
        } catch (IOException e) {
            throw new MemoryException("cannot export " + buffer.describe() + ": " + e, e);
        }
        return new IpcHandle(EmulatedPlatform.NAME, ordinal(), a.file().toString().getBytes(StandardCharsets.UTF_8),
                0, size);
    }

    @Override
    public long allocationOffset(DeviceBuffer buffer) {
        return buffer.allocation(EmulatedAllocation.class).fileOffset() + buffer.rootOffset();
    }

    @Override
    public DeviceBuffer openHandle(IpcHandle handle) {
        if (!EmulatedPlatform.NAME.equals(handle.platform())) {
            throw new IllegalArgumentException(handle + " was not made by the emulated platform");
        }
        Device owner = platform.device(handle.deviceOrdinal());
        Path file = Path.of(new String(handle.handle(), StandardCharsets.UTF_8));
        if (!file.getFileName().toString().startsWith(EmulatedPlatform.FILE_PREFIX)) {
            throw new IllegalArgumentException(handle + " does not name an emulated allocation");
        }
        Arena arena = Arena.ofShared();
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            if (ch.size() < handle.offset() + handle.length()) {
                throw new MemoryException(handle + " is past the end of " + file + " (" + ch.size() + " bytes)");
            }
            MemorySegment segment = ch.map(FileChannel.MapMode.READ_WRITE, handle.offset(), handle.length(), arena);
            return DeviceBuffer.owning(owner, new EmulatedAllocation(file, handle.offset(), segment), handle.length(),
                    arena::close);
        } catch (IOException | RuntimeException e) {
            arena.close();
            if (e instanceof MemoryException m) {
                throw m;
            }
            throw new MemoryException("cannot open " + handle + ": " + e, e);
        }
    }

    private static MemorySegment seg(DeviceBuffer b, long offset, long bytes) {
        return b.allocation(EmulatedAllocation.class).segment().asSlice(b.rootOffset() + offset, bytes);
    }

    private static void run(Stream stream, Runnable copy) {
        if (stream == null) {
            copy.run();
        } else {
            ((EmulatedStream) stream).enqueue(copy);
        }
    }

    @Override
    protected void copyHostToDevice(MemorySegment src, DeviceBuffer dst, long dstOffset, Stream stream) {
        MemorySegment d = seg(dst, dstOffset, src.byteSize());
        run(stream, () -> MemorySegment.copy(src, 0, d, 0, src.byteSize()));
    }

    @Override
    protected void copyDeviceToHost(DeviceBuffer src, long srcOffset, MemorySegment dst, Stream stream) {
        MemorySegment s = seg(src, srcOffset, dst.byteSize());
        run(stream, () -> MemorySegment.copy(s, 0, dst, 0, dst.byteSize()));
    }

    @Override
    protected void copyDeviceToDevice(DeviceBuffer src, long srcOffset, DeviceBuffer dst, long dstOffset, long bytes,
            Stream stream) {
        MemorySegment s = seg(src, srcOffset, bytes);
        MemorySegment d = seg(dst, dstOffset, bytes);
        run(stream, () -> MemorySegment.copy(s, 0, d, 0, bytes));
    }

    @Override
    protected void copyHostToHost(MemorySegment src, MemorySegment dst, Stream stream) {
        run(stream, () -> MemorySegment.copy(src, 0, dst, 0, src.byteSize()));
    }

    /** Device memory: a new shared-memory file per allocation, mapped, deleted on free. */
    private final class Memory implements MemoryResource<DeviceBuffer> {
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
            long now = allocated.addAndGet(bytes);
            long space = now > totalMemory ? -1 : freeSpace();
            if (now > totalMemory || bytes > space) {
                allocated.addAndGet(-bytes);
                throw new AllocationLimitException("emulated device " + ordinal() + " cannot allocate " + bytes
                        + " bytes: " + (now - bytes) + " of " + totalMemory + " allocated" + (space < 0 ? ""
                        : ", " + space + " bytes free in " + platform.directory()));
            }
            Path file = platform.newFile(ordinal());
            Arena arena = Arena.ofShared();
            try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.READ,
                    StandardOpenOption.WRITE)) {
                MemorySegment segment = ch.map(FileChannel.MapMode.READ_WRITE, 0, bytes, arena);
                Buffer.Releaser free = () -> {
                    try {
                        arena.close();
                    } finally {
                        allocated.addAndGet(-bytes);
                        deleteQuietly(file);
                    }
                };
                return DeviceBuffer.owning(EmulatedDevice.this, new EmulatedAllocation(file, 0, segment), bytes, free);
            } catch (IOException | RuntimeException e) {
                arena.close();
                allocated.addAndGet(-bytes);
                deleteQuietly(file);
                throw new AllocationLimitException("emulated device " + ordinal() + " cannot allocate " + bytes
                        + " bytes in " + file + ": " + e, e);
            }
        }

        private long freeSpace() {
            try {
                return Files.getFileStore(platform.directory()).getUsableSpace();
            } catch (IOException e) {
                return 0;
            }
        }

        @Override
        public String describe() {
            return "DEVICE:" + EmulatedDevice.this;
        }
    }

    private static void deleteQuietly(Path file) {
        try {
            Files.deleteIfExists(file);
        } catch (IOException ignored) {
            // the file system went away; nothing to free
        }
    }
}
