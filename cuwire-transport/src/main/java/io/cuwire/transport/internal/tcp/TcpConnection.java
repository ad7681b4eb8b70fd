package io.cuwire.transport.internal.tcp;

import io.cuwire.memory.Buffer;
import io.cuwire.memory.Device;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.MemoryKind;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.Serialized;
import io.cuwire.transport.Capabilities;
import io.cuwire.transport.Connection;
import io.cuwire.transport.ConnectionClosedException;
import io.cuwire.transport.Message;
import io.cuwire.transport.MessageMetrics;
import io.cuwire.transport.MessageRefusedException;
import io.cuwire.transport.PeerClosedException;
import io.cuwire.transport.ProtocolException;
import io.cuwire.transport.ReceivedMessage;
import io.cuwire.transport.TransportConfig;
import io.cuwire.transport.TransportException;
import io.cuwire.transport.TransportTimeoutException;
import io.cuwire.transport.Transports;
import io.cuwire.transport.internal.Handshake;
import io.cuwire.transport.internal.ConnectionState;
import io.cuwire.transport.internal.Frames;
import io.cuwire.transport.internal.MessageRecorder;
import io.cuwire.transport.internal.PendingSend;
import io.cuwire.transport.internal.SendQueue;
import io.cuwire.transport.internal.UncheckedSend;
import java.io.IOException;
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
 * The sending side writes from a writer thread of its own, in order: the record's start, the header and the small
 * host frames that follow it go out in one gathering write; large host frames go straight from their memory, or,
 * when that is a heap array's, chunk by chunk through the socket's staging ({@link SocketIo#write(HostBuffer, long)});
 * device frames go through a {@link StagingRing} (device to pinned host, overlapped with the socket). The receiving
 * side reads on the caller's thread: the header is checked against the limits before any frame is allocated, then
 * each frame is allocated from the configured {@link io.cuwire.transport.FrameAllocator} and filled (device frames
 * through a staging ring, host to device overlapped with the socket).
 */
final class TcpConnection implements Connection, UncheckedSend {
    static final byte TYPE_MESSAGE = 1;
    static final byte TYPE_REFUSED = 2;
    private static final long COALESCE_FRAME_BYTES = 64 << 10;
    private static final long COALESCE_TOTAL_BYTES = 1 << 20;
    /** Messages of only host frames up to this many bytes are written on the caller's thread when nothing waits. */
    private static final long INLINE_HOST_BYTES = 256 << 10;
    private static final AtomicInteger IDS = new AtomicInteger();

    /** A message waiting to be written; completed or failed exactly once. */
    private final class Outgoing extends PendingSend {
        final Message message;
        final byte[] header;
        final boolean inline;

        Outgoing(Message message) {
            super(state, message.totalBytes());
            this.message = message;
            this.header = message.header();
            boolean hostOnly = true;
            for (Buffer b : message.frames()) {
                hostOnly &= b instanceof HostBuffer;
            }
            this.inline = hostOnly && bytes <= INLINE_HOST_BYTES;
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

    /**
     * Wraps a connected socket whose handshake ({@link TcpTransport#handshake}, {@link TcpListener}) established
     * {@code handshake}; closes the socket if it cannot be used.
     */
    TcpConnection(SocketChannel channel, TransportConfig config, Handshake.Result handshake, boolean client) {
        this.config = config;
        this.ioTimeoutNanos = config.ioTimeout().toNanos();
        this.handshake = handshake;
        String peer;
        try {
            peer = String.valueOf(channel.getRemoteAddress());
            this.io = new SocketIo(channel, peer);
        } catch (IOException e) {
            closeQuietly(channel);
            throw new TransportException("cannot use the socket: " + e.getMessage(), e);
        }
        this.name = "tcp-" + IDS.incrementAndGet() + (client ? "-client" : "-server");
        this.state = new ConnectionState(name, peer, config.maxBytesInFlight());
        this.sends = new SendQueue<>(name, state, this::writeOrFail, this::closeSendRings);
    }

    private static void closeQuietly(SocketChannel channel) {
        try {
            channel.close();
        } catch (IOException ignored) {
            // nothing more to free
        }
    }

    @Override
    public String transport() {
        return Transports.TCP;
    }

    @Override
    public Capabilities peer() {
        return handshake.peer();
    }

    @Override
    public List<Family> families() {
        return handshake.families();
    }

    // ---- sending

    @Override
    public CompletableFuture<MessageMetrics> send(Message message) {
        Frames.checkSendable(message, handshake.families(), io.peer());
        return sendUnchecked(message);
    }

    @Override
    public CompletableFuture<MessageMetrics> sendUnchecked(Message message) {
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

    /** Writes one message and completes it, or fails it and the connection; the caller holds the write lock. */
    private void writeOrFail(Outgoing out) {
        try {
            out.complete(write(out));
        } catch (RuntimeException e) {
            TransportException t = state.translate(e, "sending to");
            if (t instanceof PeerClosedException) {
                t = refusalOr(t);
            }
            out.fail(t);
            shutdown(t);
        }
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
            if (state.isClosed() || !io.awaitData(System.nanoTime())
                    || io.readByte(ioTimeoutNanos, SocketIo.NO_DEADLINE) != TYPE_REFUSED) {
                return closed;  // the connection breaks either way: a message read into here is dropped with it
            }
            return io.readRefusal(ioTimeoutNanos);
        } catch (TransportException e) {
            return closed;
        } finally {
            receiveLock.unlock();
        }
    }

    private MessageMetrics write(Outgoing out) {
        List<Buffer> frames = out.message.frames();
        try (MessageRecorder recorder = MessageRecorder.start(MessageMetrics.Direction.SENT, Transports.TCP,
                out.startNanos, true)) {
            SocketIo.Gather gather = io.gather(ioTimeoutNanos);
            gather.add(ByteBuffer.allocate(5).put(0, TYPE_MESSAGE).putInt(1, out.header.length));
            gather.add(ByteBuffer.wrap(out.header));
            long gathered = 5L + out.header.length;
            List<MemoryKind> kinds = new ArrayList<>(frames.size());
            List<Long> lengths = new ArrayList<>(frames.size());
            for (Buffer frame : frames) {
                kinds.add(frame.kind());
                lengths.add(frame.byteSize());
                if (frame instanceof HostBuffer h && h.byteSize() <= COALESCE_FRAME_BYTES
                        && gathered + h.byteSize() <= COALESCE_TOTAL_BYTES) {
                    gather.add(h);
                    gathered += h.byteSize();
                    continue;
                }
                gather.flush();
                gathered = 0;
                if (frame instanceof HostBuffer h) {
                    io.write(h, ioTimeoutNanos);
                } else {
                    DeviceBuffer d = (DeviceBuffer) frame;
                    sendRings.computeIfAbsent(d.device(), this::newRing).send(d, io, ioTimeoutNanos);
                }
            }
            gather.flush();
            return recorder.finish(out.header.length, kinds, lengths);
        }
    }

    private StagingRing newRing(Device device) {
        return new StagingRing(device, config.stagingChunkBytes(), config.stagingSlots(),
                name + "-staging-" + device);
    }

    // ---- receiving

    @Override
    public ReceivedMessage receive() {
        return receive(null);
    }

    @Override
    public ReceivedMessage receive(Duration timeout) {
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
            return readMessage();
        } finally {
            receiveLock.unlock();
        }
    }

    private ReceivedMessage readMessage() {
        MessageRecorder recorder = MessageRecorder.start(MessageMetrics.Direction.RECEIVED, Transports.TCP,
                System.nanoTime(), true);
        List<Buffer> frames = new ArrayList<>();
        long start = System.nanoTime();
        try {
            io.messageDeadline(start, 5, config);
            byte type = io.readByte(ioTimeoutNanos, SocketIo.NO_DEADLINE);
            if (type == TYPE_REFUSED) {
                throw io.readRefusal(ioTimeoutNanos);
            }
            if (type != TYPE_MESSAGE) {
                throw new ProtocolException("peer " + io.peer() + " sent a record of type " + (type & 0xff)
                        + ": not the cuwire protocol");
            }
            int headerLength = io.readInt(ioTimeoutNanos, SocketIo.NO_DEADLINE);
            Frames.checkHeaderLength(headerLength, config, io.peer());
            io.messageDeadline(start, 5L + headerLength, config);
            byte[] headerBytes = new byte[headerLength];
            io.readFully(ByteBuffer.wrap(headerBytes), ioTimeoutNanos, SocketIo.NO_DEADLINE);
            Serialized.Header header = Frames.parseHeader(headerBytes, config, io.peer(), handshake.families());
            io.messageDeadline(start, 5L + headerLength + header.totalFrameBytes(), config);
            Frames.allocate(header, config, io.peer(), false, frames);
            List<MemoryKind> kinds = new ArrayList<>(frames.size());
            List<Long> lengths = new ArrayList<>(frames.size());
            for (Buffer frame : frames) {
                kinds.add(frame.kind());
                lengths.add(frame.byteSize());
                if (frame instanceof HostBuffer h) {
                    io.readFully(h.segment(), ioTimeoutNanos);
                } else {
                    DeviceBuffer d = (DeviceBuffer) frame;
                    receiveRings.computeIfAbsent(d.device(), this::newRing).receive(io, d, ioTimeoutNanos);
                }
            }
            Serialized value = Serialized.received(header, frames);
            return new ReceivedMessage(value, recorder.finish(headerLength, kinds, lengths));
        } catch (RuntimeException e) {
            recorder.close();
            Frames.closeOpen(frames);
            TransportException t = state.translate(e, "receiving from");
            shutdown(t, Frames.refusal(t));
            closeReceiveRings();
            throw t;
        } finally {
            io.endMessage();
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
        if (refusal == null || !ConnectionState.runLocked(sends.lock(), () -> io.refuse(TYPE_REFUSED, refusal))) {
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
        shutdown(new ConnectionClosedException(name + " closed"));
        io.close();  // a refusal's wait for the peer ends now too
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
