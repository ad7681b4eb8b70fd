package io.cuwire.memory;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * The one way bytes move between buffers. Every copy — host to host, host to device, device to host, within a
 * device, between devices — goes through here, is checked (open buffers, ranges in bounds, a pair of devices that
 * can talk), is counted per {@link CopyDirection} in the process-wide totals and in every open
 * {@link TransferScope} that counts the calling thread's copies, and is then handed to the device platform that
 * performs it.
 *
 * <p>Synchronous copies return when the bytes have arrived. Asynchronous copies are enqueued on a {@link DeviceStream}
 * and counted when enqueued; they finish by the stream's next {@code synchronize()}. Buffers must stay open until
 * then. Thread-safe.
 */
public final class CopyEngine {
    private static final int N = CopyDirection.values().length;
    private static final AtomicLongArray BYTES = new AtomicLongArray(N);
    private static final AtomicLongArray COPIES = new AtomicLongArray(N);
    private static final CopyOnWriteArrayList<TransferScope> SCOPES = new CopyOnWriteArrayList<>();

    private CopyEngine() {}

    /** Copies all of {@code src} to the start of {@code dst}, synchronously. */
    public static void copy(Buffer src, Buffer dst) {
        copy(src, 0, dst, 0, src.byteSize());
    }

    /** Copies {@code bytes} from {@code src} at {@code srcOffset} to {@code dst} at {@code dstOffset}; synchronous. */
    public static void copy(Buffer src, long srcOffset, Buffer dst, long dstOffset, long bytes) {
        dispatch(src, srcOffset, dst, dstOffset, bytes, null);
    }

    /** Enqueues the copy on {@code stream}; it has finished by the stream's next {@code synchronize()}. */
    public static void copyAsync(
            Buffer src, long srcOffset, Buffer dst, long dstOffset, long bytes, DeviceStream stream) {
        if (stream == null) {
            throw new NullPointerException("stream");
        }
        dispatch(src, srcOffset, dst, dstOffset, bytes, stream);
    }

    /**
     * Enqueues on {@code stream} the copy of each of {@code sources} (device buffers of the stream's device), whole,
     * into the start of the matching one of {@code targets} (device buffers of that platform, each at least as large),
     * in order; they have finished by the stream's next {@code synchronize()}. Each is checked as
     * {@link #copyAsync} checks it (nothing is enqueued if one fails), and they are counted together: per direction
     * (device to device, peer) one update of the counters with their number and bytes. A platform that runs a
     * stream's copies on a thread of its own (the emulated device) takes them as one piece of work, not one each: a
     * receiver of 10,000 small device frames enqueues a few batches of copies instead of 10,000.
     *
     * @throws IllegalArgumentException if the lists differ in length
     */
    public static void copyAllAsync(
            List<? extends DeviceBuffer> sources, List<? extends DeviceBuffer> targets, DeviceStream stream) {
        if (stream == null) {
            throw new NullPointerException("stream");
        }
        if (sources.size() != targets.size()) {
            throw new IllegalArgumentException(
                    sources.size() + " sources, " + targets.size() + " targets (expected: as many of each)");
        }
        long[] bytes = new long[N];
        long[] copies = new long[N];
        for (int i = 0; i < sources.size(); i++) {
            DeviceBuffer s = sources.get(i);
            DeviceBuffer d = targets.get(i);
            checkRange("src", s, 0, s.byteSize());
            checkRange("dst", d, 0, s.byteSize());
            if (!s.device().platform().equals(d.device().platform())) {
                throw new CopyException("cannot copy between platforms: " + s.describe() + " -> " + d.describe());
            }
            checkStream(stream, s);
            CopyDirection direction = CopyDirection.of(s.kind(), s.deviceOrdinal(), d.kind(), d.deviceOrdinal());
            bytes[direction.ordinal()] += s.byteSize();
            copies[direction.ordinal()]++;
        }
        for (CopyDirection direction : CopyDirection.values()) {
            if (copies[direction.ordinal()] > 0) {
                count(direction, bytes[direction.ordinal()], copies[direction.ordinal()]);
            }
        }
        if (!sources.isEmpty()) {
            stream.device().copyDevicesToDevices(sources, targets, stream);
        }
    }

    /**
     * Copies from plain host memory (for instance a Java array's segment) into {@code dst}, synchronously: the way
     * data enters the memory layer from the heap.
     */
    public static void copyFromSegment(MemorySegment src, Buffer dst, long dstOffset) {
        checkRange("dst", dst, dstOffset, src.byteSize());
        CopyDirection direction = dst.kind() == MemoryKind.DEVICE ? CopyDirection.H2D : CopyDirection.H2H;
        count(direction, src.byteSize());
        if (dst instanceof DeviceBuffer d) {
            d.device().copyHostToDevice(src, d, dstOffset, null);
        } else {
            MemorySegment.copy(src, 0, ((HostBuffer) dst).segment(), dstOffset, src.byteSize());
        }
    }

    /** Copies from {@code src} into plain host memory (for instance a Java array's segment), synchronously. */
    public static void copyToSegment(Buffer src, long srcOffset, MemorySegment dst) {
        checkRange("src", src, srcOffset, dst.byteSize());
        CopyDirection direction = src.kind() == MemoryKind.DEVICE ? CopyDirection.D2H : CopyDirection.H2H;
        count(direction, dst.byteSize());
        if (src instanceof DeviceBuffer d) {
            d.device().copyDeviceToHost(d, srcOffset, dst, null);
        } else {
            MemorySegment.copy(((HostBuffer) src).segment(), srcOffset, dst, 0, dst.byteSize());
        }
    }

    /**
     * {@code bytes} of {@code src} from {@code srcOffset}, a buffer of a {@linkplain Device#hostAddressable()
     * host-addressable} device, as host memory for the caller to read once, in place (a socket writing device frames
     * without a bounce buffer): counted as a copy of that many bytes device to host, as the copy into a bounce buffer
     * would have been. The segment is valid while {@code src} is open.
     *
     * @throws UnsupportedOperationException if the device's memory is not host-addressable
     */
    public static MemorySegment readInPlace(DeviceBuffer src, long srcOffset, long bytes) {
        return inPlace(src, srcOffset, bytes, CopyDirection.D2H);
    }

    /**
     * As {@link #readInPlace}, for the caller to write {@code dst}'s bytes in place (a socket reading device frames
     * without a bounce buffer): counted as a copy host to device.
     *
     * @throws UnsupportedOperationException if the device's memory is not host-addressable
     */
    public static MemorySegment writeInPlace(DeviceBuffer dst, long dstOffset, long bytes) {
        return inPlace(dst, dstOffset, bytes, CopyDirection.H2D);
    }

    /**
     * As {@link #readInPlace} for the whole of each of {@code sources}, counted at once: as {@code sources.size()}
     * copies device to host of their bytes together, one update of the counters (and of each open scope) instead of
     * one per buffer. For a socket that writes a run of many small device frames in place: on the 2-core VM a
     * count per frame took 28 % of the TCP writer thread's samples for a message of 10,000 frames of 100 KiB
     * (2026-12-07).
     *
     * @return each buffer's memory, in order, valid while it is open
     * @throws UnsupportedOperationException if a device's memory is not host-addressable (nothing is counted)
     */
    public static MemorySegment[] readAllInPlace(List<? extends DeviceBuffer> sources) {
        MemorySegment[] segments = new MemorySegment[sources.size()];
        long bytes = 0;
        for (int i = 0; i < segments.length; i++) {
            DeviceBuffer src = sources.get(i);
            src.checkOpen();
            if (!src.device().hostAddressable()) {
                throw new UnsupportedOperationException(src.describe() + " cannot be addressed by the host: copy it");
            }
            segments[i] = src.device().hostSegment(src, 0, src.byteSize());
            bytes += src.byteSize();
        }
        if (segments.length > 0) {
            count(CopyDirection.D2H, bytes, segments.length);
        }
        return segments;
    }

    private static MemorySegment inPlace(DeviceBuffer buffer, long offset, long bytes, CopyDirection direction) {
        checkRange(direction == CopyDirection.D2H ? "src" : "dst", buffer, offset, bytes);
        if (!buffer.device().hostAddressable()) {
            throw new UnsupportedOperationException(buffer.describe() + " cannot be addressed by the host: copy it");
        }
        MemorySegment segment = buffer.device().hostSegment(buffer, offset, bytes);
        count(direction, bytes);
        return segment;
    }

    private static void dispatch(
            Buffer src, long srcOffset, Buffer dst, long dstOffset, long bytes, DeviceStream stream) {
        checkRange("src", src, srcOffset, bytes);
        checkRange("dst", dst, dstOffset, bytes);
        CopyDirection direction = CopyDirection.of(src.kind(), src.deviceOrdinal(), dst.kind(), dst.deviceOrdinal());
        if (src instanceof DeviceBuffer s
                && dst instanceof DeviceBuffer d
                && !s.device().platform().equals(d.device().platform())) {
            throw new CopyException("cannot copy between platforms: " + src.describe() + " -> " + dst.describe());
        }
        Device streamDevice = stream == null ? null : stream.device();
        count(direction, bytes);
        switch (direction) {
            case H2H -> {
                MemorySegment s = ((HostBuffer) src).segment().asSlice(srcOffset, bytes);
                MemorySegment d = ((HostBuffer) dst).segment().asSlice(dstOffset, bytes);
                if (stream == null) {
                    MemorySegment.copy(s, 0, d, 0, bytes);
                } else {
                    streamDevice.copyHostToHost(s, d, stream);
                }
            }
            case H2D -> {
                DeviceBuffer d = (DeviceBuffer) dst;
                checkStream(stream, d);
                d.device()
                        .copyHostToDevice(((HostBuffer) src).segment().asSlice(srcOffset, bytes), d, dstOffset, stream);
            }
            case D2H -> {
                DeviceBuffer s = (DeviceBuffer) src;
                checkStream(stream, s);
                s.device()
                        .copyDeviceToHost(
                                s, srcOffset, ((HostBuffer) dst).segment().asSlice(dstOffset, bytes), stream);
            }
            case D2D, PEER -> {
                DeviceBuffer s = (DeviceBuffer) src;
                checkStream(stream, s);
                s.device().copyDeviceToDevice(s, srcOffset, (DeviceBuffer) dst, dstOffset, bytes, stream);
            }
            default -> throw new AssertionError(direction);
        }
    }

    /** A stream carries the copies of its own device (for copies between devices, the source's), on every platform. */
    private static void checkStream(DeviceStream stream, DeviceBuffer buffer) {
        if (stream != null && stream.device() != buffer.device()) {
            throw new CopyException("stream " + stream + " cannot carry a copy for " + buffer.describe()
                    + ": a stream carries copies of its own device (for copies between devices, the source's)");
        }
    }

    private static void checkRange(String what, Buffer buffer, long offset, long bytes) {
        buffer.checkOpen();
        if (offset < 0 || bytes < 0 || offset > buffer.byteSize() - bytes) {
            throw new IndexOutOfBoundsException(what + "Offset: " + offset + ", bytes: " + bytes + " (expected: 0 <= "
                    + what + "Offset <= " + what + "Offset + bytes <= " + what + ".byteSize() = " + buffer.byteSize()
                    + ", " + what + " = " + buffer.describe() + ")");
        }
    }

    private static void count(CopyDirection direction, long bytes) {
        count(direction, bytes, 1);
    }

    /** Counts {@code copies} copies of {@code bytes} bytes together in {@code direction}. */
    private static void count(CopyDirection direction, long bytes, long copies) {
        BYTES.addAndGet(direction.ordinal(), bytes);
        COPIES.addAndGet(direction.ordinal(), copies);
        if (!SCOPES.isEmpty()) {
            Thread by = Thread.currentThread();
            for (TransferScope scope : SCOPES) {
                scope.record(by, direction, bytes, copies);
            }
        }
    }

    /** Opens a scope that counts every copy made by any thread of this process until it is closed. */
    public static TransferScope openScope(String name) {
        return add(new TransferScope(name, null));
    }

    /**
     * Opens a scope that counts only the copies the calling thread makes (an asynchronous one when it is enqueued)
     * until it is closed: one side's copies, when the other side of the transfer runs in this process too.
     */
    public static TransferScope openThreadScope(String name) {
        return add(new TransferScope(name, Thread.currentThread()));
    }

    private static TransferScope add(TransferScope scope) {
        SCOPES.add(scope);
        return scope;
    }

    static void removeScope(TransferScope scope) {
        SCOPES.remove(scope);
    }

    /** The process-wide totals since start. */
    public static TransferStats totals() {
        long[] b = new long[N];
        long[] c = new long[N];
        for (int i = 0; i < N; i++) {
            b[i] = BYTES.get(i);
            c[i] = COPIES.get(i);
        }
        return new TransferStats(b, c);
    }
}
