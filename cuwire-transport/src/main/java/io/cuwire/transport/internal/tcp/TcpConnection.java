package io.cuwire.transport.internal.tcp;

import io.cuwire.memory.Buffer;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.Device;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.MemoryKind;
import io.cuwire.serialize.Frame;
import io.cuwire.serialize.FrameDescriptor;
import io.cuwire.serialize.Serialized;
import io.cuwire.transport.ConnectionClosedException;
import io.cuwire.transport.Message;
import io.cuwire.transport.MessageMetrics;
import io.cuwire.transport.MessageRefusedException;
import io.cuwire.transport.PeerClosedException;
import io.cuwire.transport.ProtocolViolationException;
import io.cuwire.transport.ReceivedMessage;
import io.cuwire.transport.TransportConfig;
import io.cuwire.transport.TransportException;
import io.cuwire.transport.TransportTimeoutException;
import io.cuwire.transport.Transports;
import io.cuwire.transport.internal.AbstractConnection;
import io.cuwire.transport.internal.ConnectionState;
import io.cuwire.transport.internal.Frames;
import io.cuwire.transport.internal.Handshake;
import io.cuwire.transport.internal.HeapStaging;
import io.cuwire.transport.internal.MessageRecorder;
import io.cuwire.transport.internal.PendingSend;
import io.cuwire.transport.internal.SendQueue;
import io.cuwire.transport.internal.Timeline;
import io.cuwire.transport.internal.Timeline.Point;
import io.cuwire.transport.internal.socket.SocketIo;
import io.cuwire.transport.internal.socket.SocketListener;
import io.cuwire.transport.internal.socket.Sockets;
import io.cuwire.transport.internal.socket.TlsSession;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One TCP connection. After the handshake, each message is one record:
 * <pre>
 *   message: [type: 1 byte = 1][header length: int32][header: msgpack, with the frame descriptors][frame 0 bytes]...
 *   refused: [type: 1 byte = 2][reason length: int32][reason: UTF-8]   the last record of a side that refused a
 *            message of the other ({@link Frames#refusal}); it closes after it
 * </pre>
 *
 * <h2>Sending</h2>
 * A message of at most {@value #INLINE_HOST_BYTES} bytes whose frames the staging ring carries (device frames of a
 * GPU) hold at most {@value #SMALL_RUN_BYTES} bytes (host frames only, or a small GPU message) is written on the
 * caller's thread when nothing is queued ahead of it (no hand-off to the writer and no wake-up: most of a 1 MiB
 * message's latency);
 * should the socket take nothing for {@value #HAND_OFF_NANOS} ns meanwhile (a peer that does not read, perhaps
 * because it is sending to this side too), the writer thread writes the rest, so that the caller can go on to
 * receive. Every other message is written by the writer thread, in order. Either way a message is written as a run
 * of gathering writes ({@link Writing}): the record's start, the header and the small host frames that follow it
 * together; large host frames straight from their memory, or, when that is a heap array's, up to
 * {@value SocketIo#WRITE_SLOTS} staged chunks at a time ({@link SocketIo#stage}). Device frames go one of two ways:
 * memory the host addresses ({@link Device#hostAddressable()}: the emulated device) is written in place, as native
 * host frames are (small ones gathered with them, large ones straight from their memory), counted by the copy engine
 * as device-to-host bytes ({@link CopyEngine#readInPlace}); memory it does not (a CUDA GPU's) goes through a
 * {@link StagingRing} (device to pinned host, overlapped with the socket), consecutive frames of a device as one run
 * of bytes, so that many small frames share the ring's chunks, writes and waits; a run of at most
 * {@value #SMALL_RUN_BYTES} bytes is staged whole into one slot and gathered with the record's start and the host
 * frames around it, one copy wait and one write. A connection of
 * {@link TcpTransport#STAGING_DEVICE_FRAMES} takes the ring for both. The send completes once the last byte was handed
 * to the socket.
 *
 * <h2>Receiving</h2>
 * The receiving side reads on the caller's thread: the header is checked against the limits before any frame is
 * allocated, then each frame is allocated when its bytes begin ({@link Frames#allocate(FrameDescriptor, int,
 * TransportConfig, String, boolean, boolean)}) and filled: a frame whose descriptor names a primitive array type
 * as a fresh array of that type, through the socket's read buffer, which the decoder then keeps without a copy; other
 * host frames from the configured {@link io.cuwire.transport.FrameAllocator} straight from the socket; device frames
 * of a host-addressable device straight from the socket too ({@link CopyEngine#writeInPlace}, counted as host-to-device
 * bytes), a run of small ones ({@link Frames#runLength}) into one block with one read; other device frames through a
 * staging ring (host to device overlapped with the socket; a run of small ones into its block as one stream of bytes,
 * as the sender stages it), whose copies the message waits for once, after its last frame. The wire is the same
 * either way.
 *
 * <h2>TLS</h2>
 * With a {@link TlsSession} (see {@link io.cuwire.transport.TlsMode}) the same records run inside TLS 1.3: every
 * byte written or read above, staged device frames included, goes through the session's engine ({@link SocketIo}).
 */
final class TcpConnection extends AbstractConnection {
    static final byte TYPE_MESSAGE = 1;
    static final byte TYPE_REFUSED = 2;
    private static final long COALESCE_FRAME_BYTES = 64 << 10;
    private static final long COALESCE_TOTAL_BYTES = 1 << 20;
    /** The most bytes of native memory (host frames, device frames in place) one gathering write takes. */
    private static final long GATHER_BYTES = 8 << 20;
    /** The most buffers of one gathering write (the system's {@code IOV_MAX}). */
    private static final int GATHER_BUFFERS = 1024;
    /**
     * Messages of only host frames up to this many bytes are written on the caller's thread when nothing waits.
     * Larger ones go to the writer thread, so that a caller that sends several (a broadcast's chunks, a forwarder)
     * overlaps them with its own work, and a receive can run while a large message is being written.
     */
    private static final long INLINE_HOST_BYTES = 4 << 20;
    /**
     * A run of device frames that go through the staging ring and hold at most this many bytes (and at most one of
     * its chunks) is staged whole and gathered with the host buffers around it ({@link StagingRing#stageWhole}), and a
     * message whose staged device frames hold no more is written on the caller's thread like a host message: a small
     * GPU message then costs one copy wait and one write, without a hand-off to the writer thread.
     */
    private static final long SMALL_RUN_BYTES = 256 << 10;
    /** How long a caller writing its message waits for a socket that takes nothing before the writer takes over. */
    private static final long HAND_OFF_NANOS = 1_000_000;

    private static final AtomicInteger IDS = new AtomicInteger();

    /** A message waiting to be written, and how far it is; completed or failed exactly once. */
    private final class Outgoing extends PendingSend {
        final Message message;
        final byte[] header;
        final boolean inline;
        Writing writing;

        Outgoing(Message message) {
            super(state, message.totalBytes());
            this.message = message;
            this.header = message.header();
            long staged = 0;
            for (Buffer b : message.frames()) {
                staged += b instanceof HostBuffer || inPlace(b) ? 0 : b.byteSize();
            }
            this.inline = bytes <= INLINE_HOST_BYTES && staged <= smallRunBytes();
        }
    }

    /**
     * Where the writing of one message is: the batch being written (its buffers' positions say how far) and what
     * comes next, so that the writer thread can go on where the caller's thread stopped. Used under the write lock.
     */
    private final class Writing {
        private final List<Buffer> frames;
        /** The next frame to begin. */
        private int next;
        /** A large heap frame being written, and its next chunk to stage. */
        private HostBuffer heap;

        private long nextChunk;
        /** A large native frame (or device frame in place) being written, and its next byte. */
        private MemorySegment direct;

        private long nextByte;
        private ByteBuffer[] batch;

        Writing(Outgoing out) {
            this.frames = out.message.frames();
            List<ByteBuffer> start = new ArrayList<>();
            start.add(ByteBuffer.allocate(5).put(0, TYPE_MESSAGE).putInt(1, out.header.length));
            start.add(ByteBuffer.wrap(out.header));
            batch = gather(start, 5L + out.header.length);
        }

        /**
         * Writes on, or, with a hand-off, stops once the socket took nothing for {@code handOffNanos}.
         *
         * @return whether the whole message was written
         */
        boolean writeOn(long handOffNanos) {
            while (batch != null) {
                if (!io.write(batch, ioTimeoutNanos, SocketIo.NO_DEADLINE, handOffNanos)) {
                    return false;
                }
                batch = nextBatch();
            }
            return true;
        }

        /** The next buffers to write, {@code null} at the message's end; device frames are written here, whole. */
        private ByteBuffer[] nextBatch() {
            while (true) {
                if (heap != null) {
                    if (nextChunk < HeapStaging.chunks(heap.byteSize())) {
                        return new ByteBuffer[] {stageNext()};
                    }
                    heap = null;
                }
                if (direct != null) {
                    if (nextByte < direct.byteSize()) {
                        long n = Math.min(1L << 30, direct.byteSize() - nextByte);
                        ByteBuffer view = direct.asSlice(nextByte, n).asByteBuffer();
                        nextByte += n;
                        return new ByteBuffer[] {view};
                    }
                    direct = null;
                }
                if (next == frames.size()) {
                    return null;
                }
                Buffer frame = frames.get(next);
                if (gatherable(frame, 0, 0) || smallRun(0) > 0) {
                    return gather(new ArrayList<>(), 0);
                }
                next++;
                if (frame instanceof HostBuffer h && HeapStaging.needed(h)) {
                    beginHeap(h);
                } else if (frame instanceof HostBuffer h) {
                    direct = h.segment();
                    nextByte = 0;
                } else if (inPlace(frame)) {
                    direct = CopyEngine.readInPlace((DeviceBuffer) frame, 0, frame.byteSize());
                    nextByte = 0;
                } else {
                    // this frame and the device frames of its device right after it: staged as one run of bytes
                    next--;
                    List<DeviceBuffer> run = takeRun();
                    sendRing(run).send(run, io, ioTimeoutNanos);
                    Timeline.mark(Point.SEND_STAGED);
                }
            }
        }

        /**
         * Where the run of staged device frames at {@code from} ends: the first frame after it that is not a device
         * frame of the same device going through the ring; {@code from} itself when that frame is not one.
         */
        private int runEnd(int from) {
            if (from == frames.size() || !(frames.get(from) instanceof DeviceBuffer d) || inPlace(d)) {
                return from;
            }
            int end = from + 1;
            while (end < frames.size()
                    && frames.get(end) instanceof DeviceBuffer e
                    && e.device() == d.device()
                    && !inPlace(e)) {
                end++;
            }
            return end;
        }

        /** The run of device frames at {@link #next} ({@link #runEnd}, at least one frame), and moves past it. */
        private List<DeviceBuffer> takeRun() {
            int end = Math.max(runEnd(next), next + 1);
            List<DeviceBuffer> run = new ArrayList<>(end - next);
            for (; next < end; next++) {
                run.add((DeviceBuffer) frames.get(next));
            }
            return run;
        }

        private StagingRing sendRing(List<DeviceBuffer> run) {
            return sendRings.computeIfAbsent(run.get(0).device(), TcpConnection.this::newRing);
        }

        /**
         * The bytes of the run of staged device frames at {@link #next} if it is small enough to stage whole into a
         * gathering write that holds {@code gathered} bytes ({@link #SMALL_RUN_BYTES}, one chunk of the ring, and the
         * write's {@value #GATHER_BYTES}), else 0 (also when the next frame is not such a device frame).
         */
        private long smallRun(long gathered) {
            long bytes = 0;
            for (int i = next, end = runEnd(next); i < end; i++) {
                bytes += frames.get(i).byteSize();
                if (bytes > smallRunBytes() || gathered + bytes > GATHER_BYTES) {
                    return 0;
                }
            }
            return bytes;
        }

        /** Adds {@code devices}' memory, read in place, to {@code g}, and forgets them. */
        private void addInPlace(SocketIo.Gather g, List<DeviceBuffer> devices) {
            if (!devices.isEmpty()) {
                for (MemorySegment m : CopyEngine.readAllInPlace(devices)) {
                    g.add(m.asByteBuffer());
                }
                devices.clear();
            }
        }

        private void beginHeap(HostBuffer h) {
            heap = h;
            nextChunk = 0;
        }

        /** The next chunks of {@link #heap}, staged. */
        private ByteBuffer stageNext() {
            ByteBuffer staged = io.stage(heap, nextChunk);
            nextChunk += (staged.remaining() + HeapStaging.CHUNK_BYTES - 1) / HeapStaging.CHUNK_BYTES;
            return staged;
        }

        /**
         * Whether {@code frame} joins a gathering write that holds {@code gathered} bytes, {@code heapGathered} of
         * them staged heap frames: a small heap frame while the staged ones fit {@value #COALESCE_TOTAL_BYTES} bytes;
         * native memory (a native host frame, a device frame {@linkplain #inPlace in place}), which needs no copy,
         * while the write fits {@value #GATHER_BYTES} bytes; either way at least one frame.
         */
        private boolean gatherable(Buffer frame, long gathered, long heapGathered) {
            long n = frame.byteSize();
            if (frame instanceof HostBuffer h && HeapStaging.needed(h)) {
                return n <= COALESCE_FRAME_BYTES && (heapGathered + n <= COALESCE_TOTAL_BYTES || gathered == 0);
            }
            if (frame instanceof HostBuffer || inPlace(frame)) {
                return n <= GATHER_BYTES && (gathered + n <= GATHER_BYTES || gathered == 0);
            }
            return false;
        }

        /**
         * {@code start} and the frames from {@link #next} on that are {@link #gatherable} with {@code gathered}
         * bytes (at least one frame when {@code start} is empty), at most {@value #GATHER_BUFFERS} buffers; heap
         * frames among them staged, once each, device frames read in place. When they staged nothing and a large
         * heap frame comes next, its first staged chunks go along (so a message of a header and one array starts
         * with a single system call).
         */
        private ByteBuffer[] gather(List<ByteBuffer> start, long gathered) {
            SocketIo.Gather g = io.gather(ioTimeoutNanos);
            for (ByteBuffer b : start) {
                g.add(b);
            }
            long heapGathered = 0;
            int count = start.size();
            // device frames in place, their reads counted together (CopyEngine.readAllInPlace) as they end a stretch
            List<DeviceBuffer> inPlace = new ArrayList<>();
            // at most one small run of staged device frames (staged whole into the ring's next slot) per write
            boolean stagedRun = false;
            while (next < frames.size() && count < GATHER_BUFFERS) {
                if (!gatherable(frames.get(next), gathered, heapGathered)) {
                    long runBytes = stagedRun ? 0 : smallRun(gathered);
                    if (runBytes == 0) {
                        break;
                    }
                    addInPlace(g, inPlace);
                    List<DeviceBuffer> run = takeRun();
                    g.add(sendRing(run).stageWhole(run));
                    Timeline.mark(Point.SEND_STAGED);
                    gathered += runBytes;
                    count++;
                    stagedRun = true;
                    continue;
                }
                Buffer f = frames.get(next);
                if (f instanceof HostBuffer h) {
                    addInPlace(g, inPlace);
                    g.add(h);
                    heapGathered += HeapStaging.needed(h) ? h.byteSize() : 0;
                } else {
                    inPlace.add((DeviceBuffer) f);
                }
                gathered += f.byteSize();
                count++;
                next++;
            }
            addInPlace(g, inPlace);
            if (g.staged() == 0
                    && next < frames.size()
                    && frames.get(next) instanceof HostBuffer h
                    && HeapStaging.needed(h)) {
                next++;
                beginHeap(h);
                g.add(stageNext());
            }
            return g.buffers();
        }
    }

    private final SocketIo io;
    private final TransportConfig config;
    private final String name;
    private final long ioTimeoutNanos;
    private final ConnectionState state;
    private final ReentrantLock receiveLock = new ReentrantLock();
    private final Map<Device, StagingRing> sendRings = new HashMap<>();
    private final Map<Device, StagingRing> receiveRings = new HashMap<>();
    private final Handshake.Result handshake;
    private final SendQueue<Outgoing> sends;
    private final boolean overTls;
    /** Whether device memory the host addresses is read and written in place ({@link #inPlace}). */
    private final boolean deviceInPlace;

    /**
     * Wraps a connected socket whose handshake ({@link Sockets#handshake}, {@link SocketListener}) established
     * {@code handshake}, every byte through {@code tls} unless it is {@code null}; closes the socket if it cannot be
     * used. With {@code deviceInPlace} false every device frame goes through the staging ring, host-addressable or
     * not ({@link TcpTransport#STAGING_DEVICE_FRAMES}).
     */
    TcpConnection(
            SocketChannel channel,
            TransportConfig config,
            Handshake.Result handshake,
            boolean client,
            TlsSession tls,
            boolean deviceInPlace) {
        super(Transports.TCP);
        this.deviceInPlace = deviceInPlace;
        this.config = config;
        this.ioTimeoutNanos = config.ioTimeout().toNanos();
        this.handshake = handshake;
        this.overTls = tls != null;
        String peer;
        try {
            peer = String.valueOf(channel.getRemoteAddress());
            this.io = new SocketIo(channel, peer, tls, config.idle());
        } catch (IOException e) {
            closeQuietly(channel);
            throw new TransportException("cannot use the socket: " + e.getMessage(), e);
        }
        this.name = "tcp-" + IDS.incrementAndGet() + (client ? "-client" : "-server");
        this.state = new ConnectionState(name, peer, config.maxBytesInFlight(), config.idle());
        this.sends = new SendQueue<>(name, state, this::writeOrFail, this::closeSendRings);
    }

    private static void closeQuietly(SocketChannel channel) {
        try {
            channel.close();
        } catch (IOException ignored) {
            // nothing more to free
        }
    }

    // ---- sending

    @Override
    protected Handshake.Result handshake() {
        return handshake;
    }

    @Override
    protected String peerName() {
        return io.peer();
    }

    @Override
    public CompletableFuture<MessageMetrics> sendUnchecked(Message message) {
        Timeline.mark(Point.SEND_CALLED);
        state.checkUsable();
        Outgoing out = new Outgoing(message);
        state.acquire(out.bytes);
        return sends.submit(out, out.inline);
    }

    /** Frees the send staging; runs on the writer thread when it ends. */
    private void closeSendRings() {
        for (StagingRing ring : sendRings.values()) {
            closeRing(ring);
        }
        sendRings.clear();
    }

    /**
     * Writes one message (or, on the caller's thread, as much as the socket takes without a wait of
     * {@value #HAND_OFF_NANOS} ns) and completes it, or fails it and the connection; the caller holds the write lock.
     *
     * @return {@code false} if the writer thread is to write the rest
     */
    private boolean writeOrFail(Outgoing out, boolean onCaller) {
        try {
            if (out.writing == null) {
                Timeline.mark(Point.SEND_WRITING);
                out.record(Transports.TCP);
                out.writing = new Writing(out);
            }
            if (!out.writing.writeOn(onCaller ? HAND_OFF_NANOS : SocketIo.NO_HAND_OFF)) {
                return false;
            }
            Timeline.mark(Point.SEND_WRITTEN);
            out.complete(() -> out.recorder()
                    .finish(
                            out.header.length,
                            Frames.kinds(out.message.frames()),
                            Frames.lengths(out.message.frames())));
            Timeline.mark(Point.SEND_COMPLETED);
        } catch (RuntimeException e) {
            TransportException t = state.translate(e, "sending to");
            if (t instanceof PeerClosedException) {
                t = refusalOr(t);
            }
            out.fail(t);
            shutdown(t);
        }
        return true;
    }

    /**
     * Why the peer closed under a send, if it said so: its refusal, read by a receive in progress (waited for: the
     * peer's end makes it return soon) or, when none is, here; else {@code closed}. The caller holds the write lock.
     */
    private TransportException refusalOr(TransportException closed) {
        boolean locked = false;
        try {
            locked = receiveLock.tryLock(Frames.REFUSAL_LINGER_NANOS, TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (!locked) {
            return closed;
        }
        try {
            if (state.failure() instanceof MessageRefusedException r) {
                return state.copyOf(r);
            }
            if (state.isClosed()
                    || !io.awaitData(System.nanoTime())
                    || io.readByte(ioTimeoutNanos, SocketIo.NO_DEADLINE) != TYPE_REFUSED) {
                return closed; // the connection breaks either way: a message read into here is dropped with it
            }
            return io.readRefusal(ioTimeoutNanos);
        } catch (TransportException e) {
            return closed;
        } finally {
            receiveLock.unlock();
        }
    }

    /**
     * Whether {@code frame} is device memory the host addresses in place ({@link Device#hostAddressable()}, the
     * emulated device) and this connection uses that: the socket then writes and reads it without the staging ring's
     * bounce buffers, the copy engine counting those bytes as it counts the ring's copies.
     */
    private boolean inPlace(Buffer frame) {
        return deviceInPlace && frame instanceof DeviceBuffer d && d.device().hostAddressable();
    }

    /** {@link #SMALL_RUN_BYTES}, at most one chunk of this connection's staging ring. */
    private long smallRunBytes() {
        return Math.min(SMALL_RUN_BYTES, config.stagingChunkBytes());
    }

    private StagingRing newRing(Device device) {
        return new StagingRing(device, config.stagingChunkBytes(), config.stagingSlots(), name + "-staging-" + device);
    }

    // ---- receiving

    @Override
    public ReceivedMessage receive(Duration timeout) {
        Timeline.mark(Point.RECEIVE_CALLED);
        receiveLock.lock();
        try {
            state.checkUsable();
            long deadline = timeout == null ? SocketIo.NO_DEADLINE : System.nanoTime() + timeout.toNanos();
            boolean began;
            try {
                began = io.awaitData(deadline);
            } catch (RuntimeException e) {
                TransportException t = state.translate(e, "receiving from");
                shutdown(t);
                throw t;
            }
            if (!began) {
                throw new TransportTimeoutException("no message from " + io.peer() + " within " + timeout);
            }
            Timeline.mark(Point.READ_WOKE);
            ReceivedMessage m = readMessage();
            Timeline.mark(Point.RECEIVE_RETURNED);
            return m;
        } finally {
            receiveLock.unlock();
        }
    }

    private ReceivedMessage readMessage() {
        MessageRecorder recorder =
                MessageRecorder.start(MessageMetrics.Direction.RECEIVED, Transports.TCP, System.nanoTime(), true);
        List<Frame> frames = new ArrayList<>();
        long start = System.nanoTime();
        try {
            io.messageDeadline(start, 5, config);
            byte type = io.readByte(ioTimeoutNanos, SocketIo.NO_DEADLINE);
            if (type == TYPE_REFUSED) {
                throw io.readRefusal(ioTimeoutNanos);
            }
            if (type != TYPE_MESSAGE) {
                throw new ProtocolViolationException(
                        "peer " + io.peer() + " sent a record of type " + (type & 0xff) + ": not the cuwire protocol");
            }
            int headerLength = io.readInt(ioTimeoutNanos, SocketIo.NO_DEADLINE);
            Frames.checkHeaderLength(headerLength, config, io.peer());
            io.messageDeadline(start, 5L + headerLength, config);
            byte[] headerBytes = new byte[headerLength];
            io.readFully(ByteBuffer.wrap(headerBytes), ioTimeoutNanos, SocketIo.NO_DEADLINE);
            Timeline.mark(Point.READ_HEADER);
            Serialized.Header header = Frames.parseHeader(headerBytes, config, io.peer(), handshake.families());
            Timeline.mark(Point.READ_PARSED);
            io.messageDeadline(start, 5L + headerLength + header.totalFrameBytes(), config);
            List<MemoryKind> kinds = new ArrayList<>(header.frames().size());
            List<Long> lengths = new ArrayList<>(header.frames().size());
            List<StagingRing> staged = new ArrayList<>(1);
            List<FrameDescriptor> descriptors = header.frames();
            for (int i = 0; i < descriptors.size(); i++) {
                int run = Frames.runLength(descriptors, i);
                if (run > 1) {
                    // many small device frames: one block, read at once when the host addresses it in place
                    Buffer block = Frames.allocateRun(descriptors, i, run, config, io.peer(), false, frames);
                    Timeline.mark(Point.READ_ALLOCATED);
                    for (int k = i; k < i + run; k++) {
                        kinds.add(frames.get(k).kind());
                        lengths.add(frames.get(k).length());
                    }
                    if (block instanceof HostBuffer h) {
                        io.readFully(h, ioTimeoutNanos);
                    } else if (inPlace(block)) {
                        io.readFully(
                                CopyEngine.writeInPlace((DeviceBuffer) block, 0, block.byteSize()), ioTimeoutNanos);
                    } else {
                        // the run's bytes are consecutive on the wire and in the block: staged as one stream, a
                        // chunk of the ring holding many frames (one read, one copy to the device per chunk), not
                        // a chunk, a read through the socket's buffer and a copy per frame
                        receiveStaged((DeviceBuffer) block, staged);
                    }
                    i += run - 1;
                    continue;
                }
                // Allocated when its bytes begin: a peer gets no frame allocated for bytes it has not sent up to it
                // (a run of small device frames, above, at most Frames.RUN_BYTES ahead).
                Frame frame = Frames.allocate(descriptors.get(i), i, config, io.peer(), false, true);
                Timeline.mark(Point.READ_ALLOCATED);
                frames.add(frame);
                kinds.add(frame.kind());
                lengths.add(frame.length());
                if (frame.buffer() instanceof HostBuffer h) {
                    io.readFully(h, ioTimeoutNanos);
                } else if (inPlace(frame.buffer())) {
                    io.readFully(
                            CopyEngine.writeInPlace((DeviceBuffer) frame.buffer(), 0, frame.length()), ioTimeoutNanos);
                } else {
                    receiveStaged((DeviceBuffer) frame.buffer(), staged);
                }
            }
            Timeline.mark(Point.READ_FRAMES);
            for (StagingRing ring : staged) {
                ring.awaitCopies();
            }
            Timeline.mark(Point.READ_COPIED);
            Serialized value = Serialized.receivedFrames(header, frames);
            return new ReceivedMessage(value, recorder.finish(headerLength, kinds, lengths));
        } catch (RuntimeException e) {
            recorder.close();
            for (StagingRing ring : receiveRings.values()) {
                ring.quiesce(); // no copy may still run into a frame freed here
            }
            Frames.closeFrames(frames);
            TransportException t = state.translate(e, "receiving from");
            shutdown(t, Frames.refusal(t));
            closeReceiveRings();
            throw t;
        } finally {
            io.endMessage();
        }
    }

    /** Receives {@code d} through its device's staging ring, which joins {@code staged}. */
    private void receiveStaged(DeviceBuffer d, List<StagingRing> staged) {
        StagingRing ring = receiveRings.computeIfAbsent(d.device(), this::newRing);
        ring.receive(io, d, ioTimeoutNanos);
        Timeline.mark(Point.READ_STAGED);
        if (!staged.contains(ring)) {
            staged.add(ring);
        }
    }

    /** Frees the receive staging; the caller holds the receive lock. */
    private void closeReceiveRings() {
        for (StagingRing ring : receiveRings.values()) {
            closeRing(ring);
        }
        receiveRings.clear();
    }

    // ---- state

    /** Breaks the connection because of {@code cause} (a local close when it is a ConnectionClosedException). */
    private void shutdown(TransportException cause) {
        shutdown(cause, null);
    }

    /** As {@link #shutdown(TransportException)}, first telling the peer {@code refusal} if not {@code null}. */
    private void shutdown(TransportException cause, byte[] refusal) {
        if (!state.close(cause)) {
            return;
        }
        // after the message being written, if any (no other is written once the state is closed); io closes then
        if (refusal == null || !sends.runAtRecordBoundary(() -> io.refuse(TYPE_REFUSED, refusal))) {
            io.close();
        }
        sends.close();
    }

    @Override
    public long bytesInFlight() {
        return state.bytesInFlight();
    }

    @Override
    public boolean isOpen() {
        return !state.isClosed();
    }

    @Override
    public void close() {
        if (overTls) {
            // The peer may have sent TLS records of its own (key updates) that nobody reads: closing the socket now
            // could reset the connection under this side's last messages (SocketIo.closeAfterPeer).
            if (state.close(new ConnectionClosedException(name + " closed"))) {
                io.closeAfterPeer();
                sends.close();
            }
        } else {
            shutdown(new ConnectionClosedException(name + " closed"));
            io.close(); // a refusal's wait for the peer ends now too
        }
        sends.awaitEnd();
        ConnectionState.runLocked(receiveLock, this::closeReceiveRings);
    }

    private static void closeRing(StagingRing ring) {
        try {
            ring.close();
        } catch (RuntimeException ignored) {
            // a failed copy was already reported to the send or receive it belonged to
        }
    }

    @Override
    public String toString() {
        return "TcpConnection[" + name + " to " + io.peer() + (state.isClosed() ? ", closed" : "") + "]";
    }
}
