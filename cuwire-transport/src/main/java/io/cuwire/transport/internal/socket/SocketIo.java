package io.cuwire.transport.internal.socket;

import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.HostBuffer;
import io.cuwire.transport.ConnectionClosedException;
import io.cuwire.transport.IdleStrategy;
import io.cuwire.transport.MessageRefusedException;
import io.cuwire.transport.PeerClosedException;
import io.cuwire.transport.ProtocolViolationException;
import io.cuwire.transport.TransportConfig;
import io.cuwire.transport.TransportException;
import io.cuwire.transport.TransportTimeoutException;
import io.cuwire.transport.internal.Frames;
import io.cuwire.transport.internal.HeapStaging;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import javax.net.ssl.SSLException;

/**
 * Moves bytes over one non-blocking socket with timeouts: every wait is a {@code select} bounded by a stall timeout
 * (no progress for that long fails) and, where given, a hard deadline. A wait in the middle of a transfer (the socket
 * full under a write, a frame's next bytes not in yet) first retries for the connection's spin
 * ({@link IdleStrategy#spinNanos}; with cores to spare the bytes or the room often come within microseconds while the
 * peer works at the other end, and a thread that parks in {@code select} pays a wake-up each time). Reads go through
 * a buffer of {@value #READ_BUFFER_BYTES} bytes, so that a message's type, header and small frames cost few system
 * calls, while large reads of native memory land straight in their destination. Host frames that are not native
 * memory (heap arrays) are written through a staging buffer of the writer's, several chunks per write
 * ({@link HeapStaging}), and read through the read buffer, a buffer's worth at a time. One thread reads and one
 * thread writes at a time; {@link #close()} may come from any thread and wakes both.
 *
 * <p>With a {@link TlsSession} every byte read or written goes through it (its engine's records in and out of the
 * socket, everything above unchanged); without one, the socket's own reads and writes, as before.
 *
 * <p>Failures: the peer's end of the stream or a reset is {@link PeerClosedException}; a stall is
 * {@link TransportTimeoutException}; a local close is {@link ConnectionClosedException}; a TLS record that does not
 * verify is {@link ProtocolViolationException}.
 */
public final class SocketIo implements AutoCloseable {
    public static final long NO_DEADLINE = Long.MAX_VALUE;
    /** {@link #write(ByteBuffer[], long, long, long)} with this waits as long as the stall timeout allows. */
    public static final long NO_HAND_OFF = Long.MAX_VALUE;
    /** The most bytes one NIO call moves of a memory segment (a ByteBuffer holds at most 2 GiB). */
    private static final long SEGMENT_CHUNK_BYTES = 1L << 30;

    /**
     * The read buffer: a read system call takes up to this many bytes, and a heap frame's bytes cross it. Allocated
     * (and so touched) with the connection.
     */
    public static final int READ_BUFFER_BYTES = 1 << 20;
    /** Reads of native memory at least this large go straight into their destination. */
    private static final int DIRECT_READ_BYTES = 256 << 10;

    /**
     * The most bytes one read takes into the read buffer for a heap frame ({@link #readFully(HostBuffer, long)}): the
     * sender's chunk ({@link HeapStaging#CHUNK_BYTES}), so that what the kernel wrote is still in the core's cache
     * when it is copied into the array. With the whole read buffer (1 MiB, the L2 of a core of the 2-core VM) a
     * 512 MiB {@code float[]} came in at 0.72-0.85 x the raw socket's ceiling; with 256 KiB reads at 0.98-1.01 x
     * (model-transfer bench, same run, alternated).
     */
    private static final int HEAP_READ_BYTES = HeapStaging.CHUNK_BYTES;
    /** The bytes of buffers one gathering write system call is given ({@link #callBuffers}). */
    private static final long WRITE_CALL_BYTES = 2 << 20;
    /** Staging slots of the writer: chunks of a heap frame staged per write. */
    static final int WRITE_SLOTS = 4;

    private final SocketChannel channel;
    /** The TLS session every byte goes through, or {@code null}: plain TCP. */
    private final TlsSession tls;

    private final String peer;
    private final IdleStrategy idle;
    private final Selector readSelector;
    private final Selector writeSelector;
    private final ByteBuffer in = ByteBuffer.allocateDirect(READ_BUFFER_BYTES).flip();
    /** All of {@link #in}'s memory, for copies out of it. */
    private final MemorySegment inMemory = MemorySegment.ofBuffer(in.duplicate().clear());

    private final ByteBuffer scratch = ByteBuffer.allocate(8);
    /** The writer's staging of host frames that are not native memory; made on first use. */
    private HeapStaging staging;
    /** The deadline of the message being read ({@link #messageDeadline}), and how it was reckoned; reader only. */
    private long readDeadlineNanos = NO_DEADLINE;

    private long deadlineBytes;
    private long deadlineAllowedNanos;
    private long deadlineRate;
    private volatile boolean closed;

    /**
     * Takes over {@code channel} (made non-blocking) for a connection's messages: a 256 KiB direct read buffer and a
     * selector each way, so made only once the peer has authenticated; spinning as {@code idle} says before either
     * selector blocks.
     */
    public SocketIo(SocketChannel channel, String peer, IdleStrategy idle) throws IOException {
        this(channel, peer, null, idle);
    }

    /**
     * As {@link #SocketIo(SocketChannel, String, IdleStrategy)}, every byte through {@code tls} if it is not
     * {@code null}.
     */
    public SocketIo(SocketChannel channel, String peer, TlsSession tls, IdleStrategy idle) throws IOException {
        this.channel = channel;
        this.tls = tls;
        this.peer = peer;
        this.idle = idle;
        if (tls != null) {
            tls.streaming();
        }
        channel.configureBlocking(false);
        readSelector = Selector.open();
        writeSelector = Selector.open();
        channel.register(readSelector, SelectionKey.OP_READ);
        channel.register(writeSelector, SelectionKey.OP_WRITE);
    }

    public String peer() {
        return peer;
    }

    // ---- writing

    /**
     * Writes all of {@code frame} with no deadline: native memory straight from the frame, a gigabyte at a time;
     * other memory (a heap array's segment) through this socket's {@link HeapStaging}, up to {@value #WRITE_SLOTS}
     * chunks per write ({@link #stage}).
     */
    public void write(HostBuffer frame, long stallNanos) {
        if (!HeapStaging.needed(frame)) {
            write(frame.segment(), stallNanos);
            return;
        }
        long chunks = HeapStaging.chunks(frame.byteSize());
        for (long k = 0; k < chunks; k += WRITE_SLOTS) {
            write(stage(frame, k), stallNanos, NO_DEADLINE);
        }
    }

    private void write(MemorySegment src, long stallNanos) {
        for (long off = 0; off < src.byteSize(); off += SEGMENT_CHUNK_BYTES) {
            long n = Math.min(SEGMENT_CHUNK_BYTES, src.byteSize() - off);
            write(src.asSlice(off, n).asByteBuffer(), stallNanos, NO_DEADLINE);
        }
    }

    /**
     * Copies chunks {@code first}, {@code first + 1}, ... of {@code frame}, a heap frame, into this socket's staging,
     * as many as it holds ({@value #WRITE_SLOTS}) and the frame has, each with one copy, side by side; writer only.
     *
     * @return the staged chunks as one buffer, to write before the next use of the staging
     */
    public ByteBuffer stage(HostBuffer frame, long first) {
        HeapStaging s = staging();
        int n = (int) Math.min(s.slots(), HeapStaging.chunks(frame.byteSize()) - first);
        long bytes = 0;
        for (int i = 0; i < n; i++) {
            bytes += s.stageChunk(frame, first + i, i).byteSize();
        }
        return s.memory().asSlice(0, bytes).asByteBuffer();
    }

    private HeapStaging staging() {
        if (staging == null) {
            staging = new HeapStaging(WRITE_SLOTS);
        }
        return staging;
    }

    /**
     * Starts a gathering write: what is added goes out in as few system calls as possible when it is flushed.
     * Writer only.
     */
    public Gather gather(long stallNanos) {
        return new Gather(stallNanos);
    }

    /**
     * One gathering write being assembled: buffers as they are, small host frames from their own memory, or, when
     * that is not native memory, copied into this socket's staging first (what was gathered goes out whenever the
     * staging is full). Writer only; flush before the next write of the socket.
     */
    public final class Gather {
        private final long stallNanos;
        private final List<ByteBuffer> buffers = new ArrayList<>();
        private long staged;
        private boolean flushed;

        private Gather(long stallNanos) {
            this.stallNanos = stallNanos;
        }

        /** Adds {@code buffer}'s remaining bytes. */
        public Gather add(ByteBuffer buffer) {
            buffers.add(buffer);
            return this;
        }

        /** Adds all of {@code frame}, a frame small enough to gather (at most a gigabyte). */
        public Gather add(HostBuffer frame) {
            if (!HeapStaging.needed(frame)) {
                buffers.add(frame.segment().asByteBuffer());
                return this;
            }
            HeapStaging s = staging();
            long n = frame.byteSize();
            if (n > s.capacity()) {
                flush();
                write(frame, stallNanos);
                return this;
            }
            if (staged + n > s.capacity()) {
                flush();
            }
            buffers.add(s.stage(frame, 0, n, staged).asByteBuffer());
            staged += n;
            return this;
        }

        /** Bytes of this socket's staging the frames added so far took. */
        public long staged() {
            return staged;
        }

        /** Writes everything added so far. */
        public void flush() {
            if (!buffers.isEmpty()) {
                write(buffers.toArray(ByteBuffer[]::new), stallNanos, NO_DEADLINE);
                buffers.clear();
                flushed = true;
            }
            staged = 0;
        }

        /**
         * Everything added, for the caller to write (before the next use of this socket's staging), instead of
         * {@link #flush()}.
         *
         * @throws IllegalStateException if this gather had to write some of it already (its heap frames did not fit
         *     the staging)
         */
        public ByteBuffer[] buffers() {
            if (flushed) {
                throw new IllegalStateException("this gather wrote some of its buffers already");
            }
            return buffers.toArray(ByteBuffer[]::new);
        }
    }

    public void write(ByteBuffer buffer, long stallNanos, long deadlineNanos) {
        write(new ByteBuffer[] {buffer}, stallNanos, deadlineNanos);
    }

    /** Writes every remaining byte of {@code buffers} (a gathering write where the system allows). */
    public void write(ByteBuffer[] buffers, long stallNanos, long deadlineNanos) {
        write(buffers, stallNanos, deadlineNanos, NO_HAND_OFF);
    }

    /**
     * Writes the remaining bytes of {@code buffers}, or stops early once the socket has taken nothing for
     * {@code handOffNanos} (what is left then stays in the buffers, from their positions on, to write later).
     *
     * @return whether every byte was written
     */
    public boolean write(ByteBuffer[] buffers, long stallNanos, long deadlineNanos, long handOffNanos) {
        int first = 0;
        long progressAt = System.nanoTime();
        while (true) {
            while (first < buffers.length && !buffers[first].hasRemaining()) {
                first++;
            }
            if (first == buffers.length && (tls == null || !tls.pending())) {
                return true;
            }
            long n;
            try {
                if (tls != null) {
                    n = tls.write(buffers, first, Math.min(buffers.length - first, 1024));
                } else {
                    // One buffer left: the plain write, not the gathering one (less work per call in the JDK and
                    // kernel).
                    n = first == buffers.length - 1
                            ? channel.write(buffers[first])
                            : channel.write(buffers, first, callBuffers(buffers, first));
                }
            } catch (SSLException e) {
                throw tlsFailure(e);
            } catch (IOException e) {
                throw failure("writing to", e);
            }
            if (n > 0) {
                progressAt = System.nanoTime();
                continue;
            }
            long waited = System.nanoTime() - progressAt;
            if (waited >= handOffNanos) {
                return false;
            }
            if (waited < idle.spinNanos()) {
                Thread.onSpinWait();
                continue;
            }
            long wait = handOffNanos == NO_HAND_OFF ? Long.MAX_VALUE : handOffNanos - waited;
            await(writeSelector, progressAt + stallNanos, deadlineNanos, "writing to", stallNanos, wait);
        }
    }

    /**
     * How many of {@code buffers} from {@code first} one gathering write passes: those that hold the next
     * {@value #WRITE_CALL_BYTES} bytes (at least one, at most 1,024, the system's {@code IOV_MAX}). The kernel takes
     * no more than the socket's send buffer per call (~1.5 MB a call over loopback on the 2-core VM), and the JDK
     * readies every buffer passed on every call (its memory session acquired and released, an I/O vector entry): a
     * write of 80 frames of 100 KiB handed all 80 to each of its several calls.
     */
    private static int callBuffers(ByteBuffer[] buffers, int first) {
        int n = 0;
        long bytes = 0;
        while (first + n < buffers.length && n < 1024 && (n == 0 || bytes < WRITE_CALL_BYTES)) {
            bytes += buffers[first + n].remaining();
            n++;
        }
        return n;
    }

    /**
     * Writes a refusal record, {@code [type][reason length: int32][reason]}, the last this side sends, ends this
     * side's stream, and closes: at once if that failed, else on a thread of its own once the peer closed or
     * {@link Frames#REFUSAL_LINGER_NANOS} passed, reading and dropping what the peer still sends meanwhile (closing
     * with unread bytes would reset the connection, and a reset can lose the record on its way or cut the peer's sends
     * short before it read it). Best effort. The caller holds the write lock and reads nothing more; {@link #close}
     * cuts the wait short.
     */
    public void refuse(byte type, byte[] reason) {
        long deadline = System.nanoTime() + Frames.REFUSAL_LINGER_NANOS;
        try {
            write(
                    ByteBuffer.allocate(5 + reason.length)
                            .put(type)
                            .putInt(reason.length)
                            .put(reason)
                            .flip(),
                    Frames.REFUSAL_LINGER_NANOS,
                    deadline);
            channel.shutdownOutput();
        } catch (IOException | TransportException e) {
            close(); // the peer is gone or this side closed: nothing more to tell
            return;
        }
        Thread.ofVirtual().name("cuwire-refused-" + peer).start(() -> {
            try {
                while (readOnce(in.clear()) >= 0) {
                    long left = deadline - System.nanoTime();
                    if (left <= 0) {
                        break;
                    }
                    selectOnce(readSelector, left);
                }
            } catch (TransportException e) {
                // the peer reset the connection, or this side closed it
            } finally {
                close();
            }
        });
    }

    // ---- reading

    /**
     * Bounds every read until {@link #endMessage} by the deadline of a message that began at {@code startNanos} and
     * declares {@code declaredBytes} ({@link TransportConfig#receiveDeadlineNanos}), whatever deadline a read has of
     * its own: the deadline does not move as bytes arrive, so a peer that drips its bytes cannot hold the reader (and
     * what it allocated for the message) longer. Called again as more of the message is declared. Reader only;
     * waiting for a message to begin ({@link #awaitData}) is not bounded by it.
     */
    public void messageDeadline(long startNanos, long declaredBytes, TransportConfig config) {
        long allowed = config.receiveDeadlineNanos(declaredBytes);
        readDeadlineNanos = allowed == Long.MAX_VALUE ? NO_DEADLINE : startNanos + allowed;
        deadlineBytes = declaredBytes;
        deadlineAllowedNanos = allowed;
        deadlineRate = config.minReceiveRate();
    }

    /** The message is read: reads are no longer bounded by its deadline. */
    public void endMessage() {
        readDeadlineNanos = NO_DEADLINE;
    }

    /** Reads the rest of a refusal record after its type: what the peer's refusal makes here. */
    public MessageRefusedException readRefusal(long stallNanos) {
        int length = readInt(stallNanos, NO_DEADLINE);
        Frames.checkRefusalLength(length, peer);
        byte[] reason = new byte[length];
        readFully(ByteBuffer.wrap(reason), stallNanos, NO_DEADLINE);
        return Frames.refused(peer, reason);
    }

    /**
     * Waits until at least one byte is buffered or {@code deadlineNanos} passes.
     *
     * @return {@code false} if nothing arrived by then (nothing consumed)
     * @throws PeerClosedException if the peer closed the connection
     */
    public boolean awaitData(long deadlineNanos) {
        return awaitData(deadlineNanos, null);
    }

    /**
     * As {@link #awaitData(long)}, but first reads without blocking as long as {@link IdleStrategy#keepSpinning}
     * says (with {@code busy} telling whether bytes are known to be on their way): bytes that come meanwhile skip the
     * selector's thread wake-up. {@code busy} {@code null}: no spin.
     */
    public boolean awaitData(long deadlineNanos, BooleanSupplier busy) {
        if (in.hasRemaining()) {
            return true;
        }
        in.clear();
        try {
            long spinStart = busy != null ? System.nanoTime() : 0;
            while (true) {
                int n = readOnce(in);
                if (n > 0) {
                    return true;
                }
                if (n < 0) {
                    throw new PeerClosedException("peer " + peer + " closed the connection");
                }
                if (busy != null && idle.keepSpinning(System.nanoTime() - spinStart, busy)) {
                    Thread.onSpinWait();
                    continue;
                }
                long left = deadlineNanos == NO_DEADLINE ? Long.MAX_VALUE : deadlineNanos - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                selectOnce(readSelector, left);
            }
        } finally {
            in.flip();
        }
    }

    public byte readByte(long stallNanos, long deadlineNanos) {
        scratch.clear().limit(1);
        readFully(scratch, stallNanos, deadlineNanos);
        return scratch.get(0);
    }

    public int readInt(long stallNanos, long deadlineNanos) {
        scratch.clear().limit(4);
        readFully(scratch, stallNanos, deadlineNanos);
        return scratch.getInt(0);
    }

    public long readLong(long stallNanos, long deadlineNanos) {
        scratch.clear().limit(8);
        readFully(scratch, stallNanos, deadlineNanos);
        return scratch.getLong(0);
    }

    /** Fills all of {@code dst} from the connection, a gigabyte at a time, with no deadline. */
    public void readFully(MemorySegment dst, long stallNanos) {
        for (long off = 0; off < dst.byteSize(); off += SEGMENT_CHUNK_BYTES) {
            long n = Math.min(SEGMENT_CHUNK_BYTES, dst.byteSize() - off);
            readFully(dst.asSlice(off, n).asByteBuffer(), stallNanos, NO_DEADLINE);
        }
    }

    /**
     * Fills all of {@code frame} from the connection with no deadline: native memory as
     * {@link #readFully(MemorySegment, long)} does, other memory (a heap array's) through the read buffer: each
     * read takes what has come, up to {@link #HEAP_READ_BYTES} bytes, and what of it belongs to the
     * frame is copied into place at once (through the {@link CopyEngine}, counted host to host), so no copy moves
     * more than the buffer holds.
     */
    public void readFully(HostBuffer frame, long stallNanos) {
        if (!HeapStaging.needed(frame)) {
            readFully(frame.segment(), stallNanos);
            return;
        }
        long length = frame.byteSize();
        long off = 0;
        long progressAt = System.nanoTime();
        while (off < length) {
            if (!in.hasRemaining()) {
                int got;
                try {
                    got = readOnce(in.clear().limit(HEAP_READ_BYTES));
                } finally {
                    in.flip();
                }
                progressAt = progressed(got, progressAt, NO_DEADLINE, stallNanos);
                continue;
            }
            int n = (int) Math.min(in.remaining(), length - off);
            CopyEngine.copyFromSegment(inMemory.asSlice(in.position(), n), frame, off);
            in.position(in.position() + n);
            off += n;
        }
    }

    /** Fills {@code dst} from the connection. */
    public void readFully(ByteBuffer dst, long stallNanos, long deadlineNanos) {
        long progressAt = System.nanoTime();
        while (dst.hasRemaining()) {
            if (in.hasRemaining()) {
                int n = Math.min(in.remaining(), dst.remaining());
                dst.put(dst.position(), in, in.position(), n);
                dst.position(dst.position() + n);
                in.position(in.position() + n);
                continue;
            }
            ByteBuffer target = dst.isDirect() && dst.remaining() >= DIRECT_READ_BYTES ? dst : in.clear();
            int got;
            try {
                got = readOnce(target);
            } finally {
                if (target == in) {
                    in.flip();
                }
            }
            progressAt = progressed(got, progressAt, deadlineNanos, stallNanos);
        }
    }

    /**
     * After a read in the middle of a message that got {@code got} bytes: the new time of the last progress, after
     * a wait if it got none (the connection's spin, {@link IdleStrategy#spinNanos}, since the last progress, then
     * {@code select}).
     *
     * @throws PeerClosedException if the stream ended
     */
    private long progressed(int got, long progressAt, long deadlineNanos, long stallNanos) {
        if (got < 0) {
            throw new PeerClosedException("peer " + peer + " closed the connection in the middle of a message");
        }
        if (got > 0) {
            return System.nanoTime();
        }
        if (System.nanoTime() - progressAt < idle.spinNanos()) {
            Thread.onSpinWait();
        } else {
            await(readSelector, progressAt + stallNanos, deadlineNanos, "reading from", stallNanos, Long.MAX_VALUE);
        }
        return progressAt;
    }

    private int readOnce(ByteBuffer target) {
        try {
            if (tls == null) {
                return channel.read(target);
            }
            checkOpen(); // after closeAfterPeer the socket is open a while, but not for this connection's reads
            return tls.read(target);
        } catch (SSLException e) {
            throw tlsFailure(e);
        } catch (IOException e) {
            throw failure("reading from", e);
        }
    }

    /** A TLS record that is not valid (tampered with, or not TLS at all): the peer broke the protocol. */
    private TransportException tlsFailure(SSLException e) {
        if (closed) {
            return new ConnectionClosedException("connection to " + peer + " is closed", e);
        }
        return new ProtocolViolationException("TLS with " + peer + " failed: " + e.getMessage(), e);
    }

    /**
     * Waits on {@code selector} at most {@code maxWait} ns, failing first if the stall time {@code stallAt} or the
     * deadline has passed.
     */
    private void await(
            Selector selector, long stallAt, long deadlineNanos, String what, long stallNanos, long maxWait) {
        long now = System.nanoTime();
        if (selector == readSelector && readDeadlineNanos != NO_DEADLINE && now - readDeadlineNanos >= 0) {
            throw new TransportTimeoutException(what + " " + peer + " did not finish in time: a message declaring "
                    + deadlineBytes + " bytes must arrive within " + TimeUnit.NANOSECONDS.toMillis(deadlineAllowedNanos)
                    + " ms of its first byte (ioTimeout, and its bytes at minReceiveRate " + deadlineRate
                    + " bytes/s)");
        }
        if (selector == readSelector
                && readDeadlineNanos != NO_DEADLINE
                && (deadlineNanos == NO_DEADLINE || readDeadlineNanos - deadlineNanos < 0)) {
            deadlineNanos = readDeadlineNanos;
        }
        if (deadlineNanos != NO_DEADLINE && now - deadlineNanos >= 0) {
            throw new TransportTimeoutException(what + " " + peer + " did not finish in time");
        }
        if (now - stallAt >= 0) {
            throw new TransportTimeoutException(what + " " + peer + " stalled: no progress for "
                    + TimeUnit.NANOSECONDS.toMillis(stallNanos) + " ms");
        }
        long wait = Math.min(stallAt - now, maxWait);
        if (deadlineNanos != NO_DEADLINE) {
            wait = Math.min(wait, deadlineNanos - now);
        }
        selectOnce(selector, wait);
    }

    private void selectOnce(Selector selector, long nanos) {
        checkOpen();
        try {
            selector.select(Math.max(1, TimeUnit.NANOSECONDS.toMillis(Math.min(nanos, Long.MAX_VALUE / 2))));
            selector.selectedKeys().clear();
        } catch (IOException | ClosedSelectorException e) {
            throw failure("waiting for", e);
        }
        checkOpen();
    }

    private void checkOpen() {
        if (closed) {
            throw new ConnectionClosedException("connection to " + peer + " is closed");
        }
    }

    private TransportException failure(String what, Exception e) {
        if (closed) {
            return new ConnectionClosedException("connection to " + peer + " is closed", e);
        }
        return new PeerClosedException(what + " " + peer + " failed: " + e.getMessage(), e);
    }

    public boolean isClosed() {
        return closed;
    }

    /**
     * Closes as {@link #close()} does for this side's reads and writes (both wake, and fail from now on), but first
     * ends this side's stream and keeps the socket open on a thread of its own until the peer closed or
     * {@link Frames#REFUSAL_LINGER_NANOS} passed, dropping what the peer still sends. Over TLS a peer may send at any
     * time (a key update at its key's limit): closing with those bytes unread would reset the connection, and a reset
     * makes the peer's system drop what it received of this side's last messages and not read yet. Harmless twice,
     * and after {@link #close()}.
     */
    public void closeAfterPeer() {
        if (closed) {
            return;
        }
        closed = true;
        for (Selector s : new Selector[] {readSelector, writeSelector}) {
            try {
                s.close();
            } catch (IOException ignored) {
                // closing anyway
            }
        }
        long deadline = System.nanoTime() + Frames.REFUSAL_LINGER_NANOS;
        try {
            if (tls != null) {
                tls.flushQuietly();
            }
            channel.shutdownOutput();
        } catch (IOException | RuntimeException e) {
            close();
            return;
        }
        Thread.ofVirtual().name("cuwire-closing-" + peer).start(() -> {
            ByteBuffer dropped = ByteBuffer.allocate(4096);
            try {
                while (channel.read(dropped.clear()) >= 0 && System.nanoTime() - deadline < 0) {
                    if (dropped.position() == 0) {
                        Thread.sleep(2);
                    }
                }
            } catch (IOException | InterruptedException e) {
                // the peer reset the connection, or it was closed: nothing more to wait for
            } finally {
                close();
            }
        });
    }

    /** Closes the socket and wakes both directions. Harmless twice. */
    @Override
    public void close() {
        closed = true;
        for (AutoCloseable c : new AutoCloseable[] {channel, readSelector, writeSelector}) {
            try {
                c.close();
            } catch (Exception ignored) {
                // closing anyway: nothing else to free
            }
        }
    }
}
