package io.cuwire.transport.internal.ucx;

import io.cuwire.memory.Buffer;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.Device;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.MemoryKind;
import io.cuwire.memory.spi.DeviceAllocation;
import io.cuwire.serialize.FrameDescriptor;
import io.cuwire.serialize.LimitExceededException;
import io.cuwire.serialize.Serialized;
import io.cuwire.transport.ConnectionClosedException;
import io.cuwire.transport.IdleStrategy;
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
import io.cuwire.transport.internal.PinnedSlots;
import io.cuwire.transport.internal.SessionKeys;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;
import org.openucx.jucx.ucp.UcpTagMessage;

/**
 * One UCX connection: a worker of its own driven by a {@link UcxAgent}, one endpoint to the peer's worker, and the
 * {@link Bootstrap} socket that carried the handshake and the worker addresses and now tells a clean close from a
 * death.
 *
 * <h2>Wire</h2>
 * Message {@code n} is a run of tag-matched UCX messages, tag {@code n << 28 | part}:
 * <pre>
 *   part 0:  [type: 1 byte = 1][device chunk: int32][host part: int32][header length: int32][header]
 *            [tag, with session keys][small host frames]
 *   part 1…: the other frames in order, each cut into parts: host frames in parts of the host part, device frames
 *            in parts of the device chunk (the sender's staging chunk)
 * </pre>
 * With session keys ({@link SessionKeys}: a secret on both sides), the tag covers part 0 up to the end of the
 * header, numbered {@code n}; the receiver checks it before it reads anything else of part 0, and the peer's
 * {@code bye} or {@code refused} is tagged too ({@link Bootstrap}). The frames' bytes are not covered.
 * The host part is 64 MiB, or {@link HeapStaging#CHUNK_BYTES} in a message with a large host frame that is not
 * native memory (a heap array's): such a frame has no address to hand UCX, so the sender copies it part by part
 * into a ring of staging slots and sends each part from its slot.
 * A host frame of at most 64 KiB goes into part 0 while part 0's frames stay within 1 MiB (the same rule on both
 * sides, from the header's descriptors). The receiver probes for part 0, refuses a length beyond its header limit
 * before allocating anything, checks the header against its limits, allocates the frames, then posts the receives.
 * Every request names its memory type: host for host frames and staging, CUDA for device frames on the
 * {@link DevicePath#DIRECT direct path}. Which path a connection's device frames take is chosen when it is made,
 * from both sides' capabilities ({@link DevicePath#negotiate}): direct when both sides' UCX carries CUDA memory, else
 * staged through a pinned {@link UcxStaging} ring. On the direct path a device frame whose memory has a device
 * address (CUDA memory, not the emulated device's) is sent and received in place, in parts of
 * {@link DevicePath#DIRECT_PART_BYTES}, which the sender announces as the device chunk of the message; a message with
 * a device frame that has no device address announces the staging chunk instead, and that frame is staged. The
 * receiver follows the announced chunk either way, so the wire is the same on both paths.
 *
 * <h2>Threads</h2>
 * The agent's thread makes every UCX call; a sender thread stages device and heap frames, hands parts to the agent and
 * completes send futures in order of completion; the receiving caller's thread does its own receive; a watcher waits
 * on the bootstrap socket for the peer's {@code bye}, refusal or death.
 *
 * <h2>Refusals</h2>
 * A message this side's checks refuse is answered on the bootstrap socket, not in UCX ({@link Frames#refusal}): the
 * receiver writes {@code refused} with its reason there and, on a thread of its own, waits up to
 * {@link Frames#REFUSAL_LINGER_NANOS} for the peer to close (its worker stays up meanwhile, so the peer's transfers to
 * it do not fail first), then closes; {@link #close} cuts the wait short.
 *
 * <h2>Timeouts</h2>
 * Every wait for a UCX request inside a message is bounded by the I/O timeout; on the sending side, outstanding parts
 * that make no progress for that long break the connection too.
 */
final class UcxConnection extends AbstractConnection {
    static final byte TYPE_MESSAGE = 1;
    static final int PART_BITS = 28;
    static final long MAX_PARTS = 1L << PART_BITS;
    static final int HOST_PART_BYTES = 64 << 20;
    /** The smallest host part a receiver accepts: its host receives are all posted at once. */
    static final int MIN_HOST_PART_BYTES = 64 << 10;
    /** Slots of the staging of heap frames: parts in flight while the next one is copied. */
    static final int HEAP_STAGING_SLOTS = 4;

    static final int MAX_DEVICE_CHUNK = 256 << 20;
    static final long COALESCE_FRAME_BYTES = 64 << 10;
    static final long COALESCE_TOTAL_BYTES = 1 << 20;
    static final int PREAMBLE_BYTES = 13;
    private static final int MAX_ADDRESS_BYTES = 64 << 10;
    /** The record each side writes once its UCX endpoint to the other is connected. */
    private static final byte[] READY = {'R'};

    private static final long LINGER_NANOS = TimeUnit.MILLISECONDS.toNanos(1500);
    private static final AtomicInteger IDS = new AtomicInteger();

    /** A message to send; completed or failed exactly once. */
    private final class Outgoing extends PendingSend {
        final Message message;
        long seq = -1;

        Outgoing(Message message) {
            super(connection, message.totalBytes());
            this.message = message;
        }

        @Override
        protected void onCompleted() {
            completed(seq);
        }
    }

    private final Ucx ucx;
    private final Bootstrap bootstrap;
    private final UcxAgent agent;
    private final TransportConfig config;
    private final String name;
    private final long ioTimeoutNanos;
    private final ConnectionState connection;
    private final Handshake.Result handshake;
    /** How this connection's device frames cross, chosen from both sides' capabilities. */
    private final DevicePath devicePath;
    /** Tags part 0 of each message sent, on the sender thread; {@code null} without session keys. */
    private final SessionKeys.Direction seal;
    /** Checks part 0 of each message received, under the receive lock; {@code null} without session keys. */
    private final SessionKeys.Direction open;

    private final LinkedBlockingQueue<Runnable> senderQueue = new LinkedBlockingQueue<>();
    // when this side last handed a message to the agent: a reply often follows, and the receiver spins for it
    private volatile long lastSentNanos = System.nanoTime() - (1L << 62);
    private final Thread sender;
    private final Thread watcher;
    private final ReentrantLock receiveLock = new ReentrantLock();
    private final Map<Device, UcxStaging> sendRings = new HashMap<>();
    private final Map<Device, UcxStaging> receiveRings = new HashMap<>();
    /** The sender's staging of heap frames, made on first use; sender thread only. */
    private HeapStaging heapStaging;

    private final Object state = new Object();
    // sender thread only
    private long nextSendSeq;
    // guarded by state
    private long completedPrefix;
    private final TreeSet<Long> completedAhead = new TreeSet<>();
    private long received;
    private long peerCompleted = -1;

    /**
     * Connects UCX over {@code socket}, whose handshake established {@code handshake}; closes everything if that
     * fails.
     */
    UcxConnection(Ucx ucx, Socket socket, TransportConfig config, Handshake.Result handshake, boolean client) {
        super(Transports.UCX);
        this.ucx = ucx;
        this.config = config;
        this.handshake = handshake;
        this.devicePath =
                DevicePath.negotiate(ucx.carriesCuda(), handshake.peer().ucxCarriesCuda());
        this.ioTimeoutNanos = config.ioTimeout().toNanos();
        this.name = "ucx-" + IDS.incrementAndGet() + (client ? "-client" : "-server");
        try {
            this.bootstrap = new Bootstrap(socket);
        } catch (IOException e) {
            closeQuietly(socket);
            throw new TransportException("cannot use the socket: " + e.getMessage(), e);
        }
        this.connection = new ConnectionState(name, bootstrap.peer(), config.maxBytesInFlight(), config.idle());
        this.seal = handshake.keys() == null ? null : handshake.keys().sending(bootstrap.peer());
        this.open = handshake.keys() == null ? null : handshake.keys().receiving(bootstrap.peer());
        bootstrap.authenticate(handshake.keys());
        UcxAgent made = null;
        try {
            long deadline = System.nanoTime() + config.handshakeTimeout().toNanos();
            made = new UcxAgent(ucx, name, config.idle());
            ByteBuffer address = made.workerAddress(Math.max(1, deadline - System.nanoTime()));
            byte[] mine = new byte[address.remaining()];
            address.duplicate().get(mine);
            bootstrap.writeRecord(mine);
            byte[] theirs = bootstrap.readRecord(MAX_ADDRESS_BYTES, deadline);
            made.connect(ByteBuffer.wrap(theirs), () -> {})
                    .get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            // Neither side returns before both endpoints exist: a side that closed as soon as it returned would
            // otherwise destroy its worker while the peer still attaches to it (UCX's shared memory then fails the
            // peer's connect: seen in CI when a test closed right after accept).
            bootstrap.writeRecord(READY);
            byte[] ready = bootstrap.readRecord(READY.length, deadline);
            if (!Arrays.equals(READY, ready)) {
                throw new ProtocolViolationException("peer " + bootstrap.peer() + " sent " + ready.length
                        + " bytes instead of "
                        + "its ready record after connecting UCX: not a cuwire transport of this version");
            }
        } catch (RuntimeException | InterruptedException | ExecutionException | TimeoutException e) {
            if (made != null) {
                made.close(0);
            }
            bootstrap.close();
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            if (e instanceof TransportException t) {
                throw t;
            }
            if (e instanceof TimeoutException) {
                throw new TransportTimeoutException(
                        "connecting UCX with " + bootstrap.peer() + " took longer " + "than "
                                + config.handshakeTimeout(),
                        e);
            }
            Throwable cause = e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e;
            throw new TransportException("connecting UCX with " + bootstrap.peer() + " failed: " + cause, cause);
        }
        this.agent = made;
        this.sender =
                Thread.ofPlatform().daemon().name("cuwire-" + name + "-sender").start(this::sendLoop);
        this.watcher = Thread.ofVirtual().name("cuwire-" + name + "-watcher").start(this::watch);
    }

    private static void closeQuietly(Socket socket) {
        try {
            socket.close();
        } catch (IOException ignored) {
            // nothing more to free
        }
    }

    static long tag(long seq, long part) {
        return (seq << PART_BITS) | part;
    }

    // ---- sending

    @Override
    protected Handshake.Result handshake() {
        return handshake;
    }

    @Override
    protected String peerName() {
        return bootstrap.peer();
    }

    @Override
    public CompletableFuture<MessageMetrics> sendUnchecked(Message message) {
        connection.checkUsable();
        Outgoing out = new Outgoing(message);
        connection.acquire(out.bytes);
        senderQueue.add(() -> write(out));
        if (connection.isClosed()) {
            out.fail(connection.closedError());
        }
        return out.future;
    }

    private void sendLoop() {
        try {
            while (!connection.isClosed()) {
                Runnable task = senderQueue.poll();
                if (task == null && config.idle().spinUntil(() -> !senderQueue.isEmpty())) {
                    task = senderQueue.poll();
                }
                if (task == null) {
                    try {
                        task = senderQueue.take();
                    } catch (InterruptedException e) {
                        break;
                    }
                }
                task.run();
            }
        } finally {
            Runnable task;
            while ((task = senderQueue.poll()) != null) {
                task.run();
            }
            agent.close(LINGER_NANOS);
            for (UcxStaging ring : sendRings.values()) {
                closeRing(ring);
            }
            sendRings.clear();
        }
    }

    /** Hands a message's parts to the agent; runs on the sender thread. */
    private void write(Outgoing out) {
        if (connection.isClosed() || connection.failure() != null) {
            out.fail(connection.closedError());
            return;
        }
        try {
            List<Buffer> frames = out.message.frames();
            int chunk = deviceChunk(frames);
            List<Boolean> inline = coalesced(Frames.kinds(frames), Frames.lengths(frames));
            int hostPart = HOST_PART_BYTES;
            for (int i = 0; i < frames.size(); i++) {
                if (!inline.get(i) && frames.get(i) instanceof HostBuffer h && HeapStaging.needed(h)) {
                    hostPart = HeapStaging.CHUNK_BYTES;
                }
            }
            long parts = 1;
            long inlineBytes = 0;
            for (int i = 0; i < frames.size(); i++) {
                Buffer f = frames.get(i);
                if (inline.get(i)) {
                    inlineBytes += f.byteSize();
                } else {
                    parts += partsOf(f.kind(), f.byteSize(), chunk, hostPart);
                }
            }
            if (parts > MAX_PARTS) {
                throw new TransportException(
                        "a message of " + parts + " UCX parts is more than " + MAX_PARTS + ": raise the staging chunk");
            }
            out.seq = nextSendSeq++;
            lastSentNanos = System.nanoTime();
            out.record(Transports.UCX);
            byte[] header = out.message.header();
            int tagBytes = seal == null ? 0 : SessionKeys.TAG_BYTES;
            ByteBuffer preamble = ByteBuffer.allocateDirect(
                            Math.toIntExact(PREAMBLE_BYTES + header.length + inlineBytes + tagBytes))
                    .order(ByteOrder.BIG_ENDIAN);
            preamble.put(TYPE_MESSAGE)
                    .putInt(chunk)
                    .putInt(hostPart)
                    .putInt(header.length)
                    .put(header);
            MemorySegment pre = MemorySegment.ofBuffer(preamble.clear());
            long at = PREAMBLE_BYTES + header.length;
            if (seal != null) {
                // the tag of the preamble and header, as message out.seq of this direction, right after them
                preamble.put(
                        (int) at,
                        seal.seal(out.seq, preamble.duplicate().position(0).limit((int) at)));
                at += tagBytes;
            }
            for (int i = 0; i < frames.size(); i++) {
                if (inline.get(i)) {
                    HostBuffer h = (HostBuffer) frames.get(i);
                    CopyEngine.copyToSegment(h, 0, pre.asSlice(at, h.byteSize()));
                    at += h.byteSize();
                }
            }
            List<CompletableFuture<Void>> requests = new ArrayList<>();
            requests.add(agent.send(pre.address(), pre.byteSize(), tag(out.seq, 0), UcxAgent.HOST));
            long part = 1;
            for (int i = 0; i < frames.size(); i++) {
                Buffer f = frames.get(i);
                if (inline.get(i)) {
                    continue;
                }
                if (f instanceof HostBuffer h && HeapStaging.needed(h)) {
                    sendStaged(h, out.seq, part);
                    part += HeapStaging.chunks(h.byteSize());
                } else if (f instanceof HostBuffer h) {
                    MemorySegment s = h.segment();
                    for (long off = 0; off < s.byteSize(); off += hostPart) {
                        long n = Math.min(hostPart, s.byteSize() - off);
                        requests.add(agent.send(s.address() + off, n, tag(out.seq, part++), UcxAgent.HOST));
                    }
                } else {
                    DeviceBuffer d = (DeviceBuffer) f;
                    OptionalLong direct = directAddress(d);
                    if (direct.isPresent()) {
                        for (long off = 0; off < d.byteSize(); off += chunk) {
                            long n = Math.min(chunk, d.byteSize() - off);
                            requests.add(agent.send(direct.getAsLong() + off, n, tag(out.seq, part++), UcxAgent.CUDA));
                        }
                    } else {
                        sendRings
                                .computeIfAbsent(d.device(), dev -> newRing(dev, chunk))
                                .send(d, agent, tag(out.seq, part), this::await);
                        part += PinnedSlots.chunks(d.byteSize(), chunk);
                    }
                }
            }
            List<MemoryKind> kinds = Frames.kinds(frames);
            List<Long> lengths = Frames.lengths(frames);
            CompletableFuture.allOf(requests.toArray(CompletableFuture[]::new)).whenComplete((v, e) -> {
                if (e != null) {
                    Throwable c = e instanceof java.util.concurrent.CompletionException && e.getCause() != null
                            ? e.getCause()
                            : e;
                    failSend(out, translate(c, "sending to"));
                } else {
                    senderQueue.add(() -> out.complete(out.recorder().finish(header.length, kinds, lengths)));
                }
                // keeps the preamble's memory alive until UCX is done with it
                preamble.limit();
            });
            watchStall(out, requests);
        } catch (RuntimeException e) {
            failSend(out, translate(e, "sending to"));
        }
    }

    /**
     * Fails {@code out} and breaks the connection over {@code t}; when that is the peer's end
     * ({@link PeerClosedException}), first lets the watcher read a refusal the peer may have sent before it closed,
     * which then explains both (on a thread of its own: the wait may take a while).
     */
    private void failSend(Outgoing out, TransportException t) {
        if (!(t instanceof PeerClosedException)) {
            out.fail(t);
            shutdownAsync(t);
            return;
        }
        Thread.ofVirtual().name("cuwire-" + name + "-shutdown").start(() -> {
            TransportException why = refusalOr(t);
            out.fail(why);
            shutdown(why);
        });
    }

    /**
     * The peer's refusal, if its watcher reads one before the peer's socket ends (waited for a while: it ends soon
     * once the peer is gone), else {@code closed}.
     */
    private TransportException refusalOr(TransportException closed) {
        if (Thread.currentThread() != watcher) {
            try {
                watcher.join(Duration.ofNanos(Frames.REFUSAL_LINGER_NANOS));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        return connection.failure() instanceof MessageRefusedException r ? connection.copyOf(r) : closed;
    }

    /** Breaks the connection if the message's parts stall for longer than the I/O timeout. */
    private void watchStall(Outgoing out, List<CompletableFuture<Void>> requests) {
        CompletableFuture.allOf(requests.toArray(CompletableFuture[]::new))
                .orTimeout(Math.max(ioTimeoutNanos, ioTimeoutNanos * requests.size()), TimeUnit.NANOSECONDS)
                .exceptionally(e -> {
                    if (e instanceof TimeoutException && !out.isDone()) {
                        TransportTimeoutException t = new TransportTimeoutException("sending to "
                                + bootstrap.peer() + " stalled: " + requests.size() + " UCX parts not done in "
                                + TimeUnit.NANOSECONDS.toMillis(ioTimeoutNanos * requests.size()) + " ms");
                        out.fail(t);
                        shutdownAsync(t);
                    }
                    return null;
                });
    }

    /**
     * Sends all of {@code frame}, a host frame that is not native memory, as parts {@code firstPart, firstPart + 1,
     * …} of message {@code seq} ({@link HeapStaging#CHUNK_BYTES} each): part {@code k} is copied into slot
     * {@code k % slots} once the slot's previous part was sent, so that the next parts are copied while earlier ones
     * are on their way. Returns when every part was sent. Sender thread only.
     */
    private void sendStaged(HostBuffer frame, long seq, long firstPart) {
        if (heapStaging == null) {
            heapStaging = new HeapStaging(HEAP_STAGING_SLOTS);
        }
        HeapStaging staging = heapStaging;
        List<CompletableFuture<Void>> sending = new ArrayList<>(Collections.nCopies(staging.slots(), null));
        long chunks = HeapStaging.chunks(frame.byteSize());
        for (long k = 0; k < chunks; k++) {
            int slot = (int) (k % staging.slots());
            CompletableFuture<Void> previous = sending.get(slot);
            if (previous != null) {
                await(previous);
            }
            MemorySegment part = staging.stageChunk(frame, k, slot);
            sending.set(slot, agent.send(part.address(), part.byteSize(), tag(seq, firstPart + k), UcxAgent.HOST));
        }
        for (CompletableFuture<Void> f : sending) {
            if (f != null) {
                await(f);
            }
        }
    }

    private UcxStaging newRing(Device device, int chunk) {
        return new UcxStaging(device, chunk, config.stagingSlots(), name + "-staging-" + device);
    }

    /** How this connection's device frames cross. */
    DevicePath devicePath() {
        return devicePath;
    }

    /**
     * The device chunk of a message of {@code frames}: {@link DevicePath#DIRECT_PART_BYTES} when every device frame
     * goes direct, else the staging chunk (a staged frame needs ring slots of the chunk's size).
     */
    private int deviceChunk(List<Buffer> frames) {
        if (devicePath != DevicePath.DIRECT) {
            return config.stagingChunkBytes();
        }
        for (Buffer f : frames) {
            if (f instanceof DeviceBuffer d && directAddress(d).isEmpty()) {
                return config.stagingChunkBytes();
            }
        }
        return DevicePath.DIRECT_PART_BYTES;
    }

    /** The device address to hand UCX, on the direct path when the memory has one. */
    private OptionalLong directAddress(DeviceBuffer d) {
        if (devicePath != DevicePath.DIRECT) {
            return OptionalLong.empty();
        }
        OptionalLong base = d.allocation(DeviceAllocation.class).nativeAddress();
        return base.isPresent() ? OptionalLong.of(base.getAsLong() + d.rootOffset()) : base;
    }

    /** Counts message {@code seq} complete; the prefix of completed messages is what a {@code bye} tells. */
    private void completed(long seq) {
        synchronized (state) {
            if (seq == completedPrefix) {
                completedPrefix++;
                while (completedAhead.remove(completedPrefix)) {
                    completedPrefix++;
                }
            } else {
                completedAhead.add(seq);
            }
        }
    }

    /** Parts of a frame of {@code kind} and {@code length}: device chunks or host parts. */
    static long partsOf(MemoryKind kind, long length, int deviceChunk, int hostPart) {
        long unit = kind == MemoryKind.DEVICE ? deviceChunk : hostPart;
        return (length + unit - 1) / unit;
    }

    /** Which frames travel inside part 0: the same rule on both sides. */
    static List<Boolean> coalesced(List<MemoryKind> kinds, List<Long> lengths) {
        List<Boolean> inline = new ArrayList<>(kinds.size());
        long total = 0;
        for (int i = 0; i < kinds.size(); i++) {
            long n = lengths.get(i);
            boolean in =
                    kinds.get(i) != MemoryKind.DEVICE && n <= COALESCE_FRAME_BYTES && total + n <= COALESCE_TOTAL_BYTES;
            if (in) {
                total += n;
            }
            inline.add(in);
        }
        return inline;
    }

    // ---- receiving

    @Override
    public ReceivedMessage receive(Duration timeout) {
        receiveLock.lock();
        try {
            connection.checkUsable();
            long deadline = timeout == null ? Long.MAX_VALUE : System.nanoTime() + timeout.toNanos();
            UcpTagMessage first = awaitFirstPart(timeout, deadline);
            return readMessage(first);
        } finally {
            receiveLock.unlock();
        }
    }

    /** Waits for part 0 of the next message; a timeout before it leaves the connection usable. */
    private UcpTagMessage awaitFirstPart(Duration timeout, long deadline) {
        boolean drained;
        synchronized (state) {
            drained = peerCompleted >= 0 && received >= peerCompleted;
        }
        if (drained) {
            PeerClosedException e = new PeerClosedException("peer " + bootstrap.peer() + " closed the connection");
            shutdown(e);
            throw e;
        }
        CompletableFuture<UcpTagMessage> probe = agent.probe(tag(received, 0));
        spinForReply(probe);
        while (true) {
            long left = deadline - System.nanoTime();
            if (timeout != null && left <= 0) {
                agent.cancelProbe(
                                probe,
                                new TransportTimeoutException(
                                        "no message from " + bootstrap.peer() + " within " + timeout))
                        .exceptionally(x -> null)
                        .join();
            }
            try {
                return probe.get(
                        timeout == null ? 50_000_000L : Math.max(1, Math.min(left, 50_000_000L)), TimeUnit.NANOSECONDS);
            } catch (TimeoutException e) {
                continue;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                agent.cancelProbe(probe, new TransportException("interrupted"))
                        .exceptionally(x -> null)
                        .join();
                throw new TransportException("interrupted while receiving on " + name, e);
            } catch (ExecutionException e) {
                if (e.getCause() instanceof TransportTimeoutException t) {
                    throw t;
                }
                TransportException t = translate(e.getCause(), "receiving from");
                if (t instanceof PeerClosedException) {
                    t = refusalOr(t);
                }
                shutdown(t);
                throw t;
            }
        }
    }

    private ReceivedMessage readMessage(UcpTagMessage first) {
        MessageRecorder recorder =
                MessageRecorder.start(MessageMetrics.Direction.RECEIVED, Transports.UCX, System.nanoTime(), true);
        List<Buffer> frames = new ArrayList<>();
        try {
            long length = first.getRecvLength();
            int tagBytes = open == null ? 0 : SessionKeys.TAG_BYTES;
            long max = PREAMBLE_BYTES + config.limits().maxHeaderBytes() + COALESCE_TOTAL_BYTES + tagBytes;
            if (length < PREAMBLE_BYTES + tagBytes || length > max) {
                throw new ProtocolViolationException(
                        "peer " + bootstrap.peer() + " sent a first part of " + length + " bytes",
                        new LimitExceededException("first part of " + length + " bytes exceeds the " + "limit of " + max
                                + " (header limit plus 1 MiB of small frames)"));
            }
            ByteBuffer preamble = ByteBuffer.allocateDirect((int) length);
            MemorySegment pre = MemorySegment.ofBuffer(preamble);
            await(agent.receive(first, pre.address(), length, UcxAgent.HOST));
            if (open != null) {
                // the header length bounds what the tag covers, and is covered itself
                int covered = PREAMBLE_BYTES + preamble.getInt(9);
                if (covered < PREAMBLE_BYTES || covered > length - tagBytes) {
                    throw new ProtocolViolationException("peer declared a header of " + preamble.getInt(9)
                            + " bytes in a "
                            + "first part of " + length);
                }
                byte[] tag = new byte[SessionKeys.TAG_BYTES];
                preamble.get(covered, tag);
                open.open(
                        received,
                        tag,
                        "message header",
                        preamble.duplicate().position(0).limit(covered));
            }
            if (preamble.get(0) != TYPE_MESSAGE) {
                throw new ProtocolViolationException("peer " + bootstrap.peer() + " sent a message of type "
                        + (preamble.get(0) & 0xff) + ": not the cuwire protocol");
            }
            int chunk = preamble.getInt(1);
            int hostPart = preamble.getInt(5);
            int headerLength = preamble.getInt(9);
            int maxChunk = devicePath == DevicePath.DIRECT ? DevicePath.MAX_DIRECT_PART_BYTES : MAX_DEVICE_CHUNK;
            if (chunk < 4096 || chunk > maxChunk) {
                throw new ProtocolViolationException(
                        "peer announced a device chunk of " + chunk + " bytes (expected: 4096.." + maxChunk + ")");
            }
            if (hostPart < MIN_HOST_PART_BYTES || hostPart > HOST_PART_BYTES) {
                throw new ProtocolViolationException("peer announced a host part of " + hostPart + " bytes (expected: "
                        + MIN_HOST_PART_BYTES + ".." + HOST_PART_BYTES + ")");
            }
            if (headerLength < 0 || headerLength > length - PREAMBLE_BYTES - tagBytes) {
                throw new ProtocolViolationException(
                        "peer declared a header of " + headerLength + " bytes in a first part " + "of " + length);
            }
            byte[] headerBytes = new byte[headerLength];
            preamble.get(PREAMBLE_BYTES, headerBytes);
            Serialized.Header header = Frames.parseHeader(headerBytes, config, bootstrap.peer(), handshake.families());
            List<MemoryKind> kinds = new ArrayList<>();
            List<Long> lengths = new ArrayList<>();
            for (FrameDescriptor d : header.frames()) {
                kinds.add(d.kind());
                lengths.add(d.length());
            }
            List<Boolean> inline = coalesced(kinds, lengths);
            long inlineBytes = 0;
            long parts = 1;
            for (int i = 0; i < kinds.size(); i++) {
                if (inline.get(i)) {
                    inlineBytes += lengths.get(i);
                } else {
                    parts += partsOf(kinds.get(i), lengths.get(i), chunk, hostPart);
                }
            }
            if (length != PREAMBLE_BYTES + headerLength + tagBytes + inlineBytes || parts > MAX_PARTS) {
                throw new ProtocolViolationException("peer's first part of " + length
                        + " bytes does not match its header ("
                        + headerLength + " header bytes, " + inlineBytes + " bytes of small frames, " + parts
                        + " parts)");
            }
            Frames.allocate(header, config, bootstrap.peer(), false, frames);
            long seq = received;
            long at = PREAMBLE_BYTES + headerLength + tagBytes;
            long part = 1;
            List<CompletableFuture<Void>> hostParts = new ArrayList<>();
            List<Runnable> deviceFrames = new ArrayList<>();
            for (int i = 0; i < frames.size(); i++) {
                Buffer b = frames.get(i);
                if (inline.get(i)) {
                    MemorySegment.copy(pre, at, ((HostBuffer) b).segment(), 0, b.byteSize());
                    at += b.byteSize();
                    continue;
                }
                if (b instanceof HostBuffer h) {
                    MemorySegment s = h.segment();
                    for (long off = 0; off < s.byteSize(); off += hostPart) {
                        long n = Math.min(hostPart, s.byteSize() - off);
                        hostParts.add(agent.receive(s.address() + off, n, tag(seq, part++), UcxAgent.HOST));
                    }
                } else {
                    DeviceBuffer d = (DeviceBuffer) b;
                    long firstPart = part;
                    part += PinnedSlots.chunks(d.byteSize(), chunk);
                    deviceFrames.add(() -> receiveDevice(d, seq, firstPart, chunk));
                }
            }
            for (Runnable r : deviceFrames) {
                r.run();
            }
            for (CompletableFuture<Void> r : hostParts) {
                await(r);
            }
            Serialized value = Serialized.received(header, frames);
            MessageMetrics metrics = recorder.finish(headerLength, kinds, lengths);
            synchronized (state) {
                received++;
            }
            return new ReceivedMessage(value, metrics);
        } catch (RuntimeException e) {
            recorder.close();
            TransportException t = translate(e, "receiving from");
            if (t instanceof PeerClosedException) {
                t = refusalOr(t);
            }
            shutdown(t, Frames.refusal(t));
            Frames.closeOpen(frames);
            closeReceiveRings();
            throw t;
        }
    }

    private void receiveDevice(DeviceBuffer d, long seq, long firstPart, int chunk) {
        OptionalLong direct = directAddress(d);
        if (direct.isPresent()) {
            List<CompletableFuture<Void>> requests = new ArrayList<>();
            for (long off = 0, p = firstPart; off < d.byteSize(); off += chunk, p++) {
                long n = Math.min(chunk, d.byteSize() - off);
                requests.add(agent.receive(direct.getAsLong() + off, n, tag(seq, p), UcxAgent.CUDA));
            }
            for (CompletableFuture<Void> r : requests) {
                await(r);
            }
            return;
        }
        if (chunk > MAX_DEVICE_CHUNK) {
            // direct parts are received in place; a ring of slots this large is not made for a frame that must be
            // staged here (this side's device memory has no device address)
            throw new ProtocolViolationException("peer sent a device frame in parts of " + chunk + " bytes, which "
                    + "this side would have to stage (its memory has no device address); staging takes parts of at "
                    + "most " + MAX_DEVICE_CHUNK);
        }
        UcxStaging ring = receiveRings.get(d.device());
        if (ring != null && ring.chunk() != chunk) {
            closeRing(ring);
            ring = null;
        }
        if (ring == null) {
            ring = newRing(d.device(), chunk);
            receiveRings.put(d.device(), ring);
        }
        ring.receive(d, agent, tag(seq, firstPart), this::await);
    }

    /**
     * Spins on the probe for the next message as the connection's idle strategy says before a blocking wait parks the
     * thread (a wake-up costs tens of microseconds, most of a small message's latency): for the plain spin, and on
     * for the reply window after this side sent a message.
     */
    private void spinForReply(CompletableFuture<?> probe) {
        IdleStrategy idle = config.idle();
        if (idle.spinNanos() == 0 || probe.isDone()) {
            return;
        }
        long start = System.nanoTime();
        while (!probe.isDone()
                && idle.keepSpinning(
                        System.nanoTime() - start, () -> System.nanoTime() - lastSentNanos < idle.replyNanos())) {
            Thread.onSpinWait();
        }
    }

    /**
     * Waits for a UCX request (spinning first as the idle strategy says), at most the I/O timeout; throws its failure
     * as a transport exception.
     */
    private void await(CompletableFuture<Void> request) {
        config.idle().spinUntil(request::isDone);
        try {
            request.get(ioTimeoutNanos, TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            throw new TransportTimeoutException("UCX transfer with " + bootstrap.peer() + " stalled: no progress "
                    + "for " + TimeUnit.NANOSECONDS.toMillis(ioTimeoutNanos) + " ms");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new TransportException("interrupted while waiting for UCX on " + name, e);
        } catch (ExecutionException e) {
            throw translate(e.getCause(), "transferring with");
        }
    }

    /** Frees the receive staging; the caller holds the receive lock and the agent is stopped. */
    private void closeReceiveRings() {
        if (!agent.isTerminated()) {
            return;
        }
        for (UcxStaging ring : receiveRings.values()) {
            closeRing(ring);
        }
        receiveRings.clear();
    }

    // ---- the peer's life line

    private void watch() {
        Bootstrap.Goodbye bye = bootstrap.awaitGoodbye();
        if (connection.isClosed()) {
            return;
        }
        if (bye.forged() != null) {
            shutdown(bye.forged());
            return;
        }
        if (bye.refusal() != null) {
            shutdown(Frames.refused(bootstrap.peer(), bye.refusal()));
            return;
        }
        if (bye.died()) {
            shutdown(new PeerClosedException(
                    "peer " + bootstrap.peer() + " went away (its socket closed without " + "a bye)"));
            return;
        }
        long n = bye.completedMessages();
        boolean drained;
        synchronized (state) {
            peerCompleted = n;
            drained = received >= n;
        }
        if (drained) {
            shutdown(new PeerClosedException("peer " + bootstrap.peer() + " closed the connection"));
        }
    }

    // ---- state

    /** {@link ConnectionState#translate} with UCX's own request failures. */
    private TransportException translate(Throwable e, String what) {
        return connection.translate(e, what, x -> switch (x) {
            case UcxAgent.RequestFailure r
            when r.truncated() ->
                new ProtocolViolationException(
                        "peer " + bootstrap.peer() + " sent a UCX message longer than announced: " + r.getMessage(), r);
            case UcxAgent.RequestFailure r ->
                new PeerClosedException(what + " " + bootstrap.peer() + " failed in UCX: " + r.getMessage(), r);
            case UcxAgent.AgentClosed _ -> connection.closedError();
            default -> null;
        });
    }

    private void shutdownAsync(TransportException cause) {
        Thread.ofVirtual().name("cuwire-" + name + "-shutdown").start(() -> shutdown(cause));
    }

    /**
     * Breaks the connection because of {@code cause} (a local close when it is a ConnectionClosedException): stops
     * the agent (its worker then touches no memory), tells a clean close to the peer, closes the socket.
     */
    private void shutdown(TransportException cause) {
        shutdown(cause, null);
    }

    /** As {@link #shutdown(TransportException)}, first telling the peer {@code refusal} if not {@code null}. */
    private void shutdown(TransportException cause, byte[] refusal) {
        boolean local = cause instanceof ConnectionClosedException;
        if (!connection.close(cause)) {
            agent.close(LINGER_NANOS);
            if (local) {
                bootstrap.close(); // a refusal's wait for the peer ends now too
            }
            return;
        }
        if (refusal != null) {
            try {
                bootstrap.writeRefusal(refusal);
            } catch (TransportException ignored) {
                // the peer is gone already
            }
            Thread.ofVirtual().name("cuwire-" + name + "-refused").start(() -> {
                try {
                    // the watcher returns when the peer, told, closed its socket; this side's worker is up till then
                    watcher.join(Duration.ofNanos(Frames.REFUSAL_LINGER_NANOS));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                agent.close(LINGER_NANOS);
                bootstrap.close();
                senderQueue.add(() -> {});
                ConnectionState.runLocked(receiveLock, this::closeReceiveRings);
            });
            return;
        }
        agent.close(LINGER_NANOS);
        if (local) {
            long done;
            synchronized (state) {
                done = completedPrefix;
            }
            try {
                bootstrap.writeBye(done);
            } catch (TransportException ignored) {
                // the peer is gone already
            }
        }
        bootstrap.close();
        senderQueue.add(() -> {});
    }

    @Override
    public long bytesInFlight() {
        return connection.bytesInFlight();
    }

    @Override
    public boolean isOpen() {
        return !connection.isClosed();
    }

    @Override
    public void close() {
        shutdown(new ConnectionClosedException(name + " closed"));
        ConnectionState.awaitEnd(sender);
        ConnectionState.runLocked(receiveLock, this::closeReceiveRings);
    }

    private static void closeRing(UcxStaging ring) {
        try {
            ring.close();
        } catch (RuntimeException ignored) {
            // a failed copy was already reported to the send or receive it belonged to
        }
    }

    @Override
    public String toString() {
        return "UcxConnection[" + name + " to " + bootstrap.peer() + (connection.isClosed() ? ", closed" : "") + "]";
    }
}
