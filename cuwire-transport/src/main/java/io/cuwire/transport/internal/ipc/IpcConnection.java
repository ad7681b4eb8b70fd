package io.cuwire.transport.internal.ipc;

import io.cuwire.memory.Buffer;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.Closeables;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.Device;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.DeviceStream;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.InvalidHandleException;
import io.cuwire.memory.IpcHandle;
import io.cuwire.memory.MemoryKind;
import io.cuwire.serialize.Frame;
import io.cuwire.serialize.FrameDescriptor;
import io.cuwire.serialize.Serialized;
import io.cuwire.transport.Capabilities;
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
import io.cuwire.transport.internal.MessageRecorder;
import io.cuwire.transport.internal.PendingSend;
import io.cuwire.transport.internal.SendQueue;
import io.cuwire.transport.internal.SessionKeys;
import io.cuwire.transport.internal.Timeline;
import io.cuwire.transport.internal.Timeline.Point;
import io.cuwire.transport.internal.socket.SocketIo;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One CUDA IPC connection: a TCP socket carries the handshake, every message's header and host frames, and a
 * reference per device frame; the receiver copies each device frame out of the sender's memory through a cached
 * mapping ({@link MappingCache}) into a frame of its own, then tells the sender the message was consumed.
 *
 * <h2>Wire</h2>
 * <pre>
 *   message:  [1][header length: int32][header][frame 0]...   host or pinned frame: its bytes;
 *             device frame: [handle length: int16][handle][exporter's device: int32][allocation bytes: int64]
 *                           [offset in the allocation: int64]
 *             2 to 1,024 consecutive pulled device frames: one reference run, [-1: int16][count: int32]
 *                           [allocations: int32], each allocation [handle length: int16][handle][device: int32]
 *                           [allocation bytes: int64], each frame [allocation: int32][offset: int64]
 *   consumed: [2]   one per message with device frames, in order: the sender's memory is free again
 *   refused:  [3][reason length: int32][reason: UTF-8]   the last record of a side that refused a message of the
 *             other ({@link Frames#refusal}); it closes after it
 *   arena:    [4][device-frame reference of the accepting side's push arena][its bytes: int64][the dialling side's
 *             device whose frames it takes: int32]   accepting side to dialling side, once
 *   returned: [5][ranges: int32][offset: int64, length: int64]...   accepting side to dialling side: bytes of the
 *             push arena free again
 *   pushed device frame (in a message from the dialling side): [0: int16][offset in the push arena: int64]
 * </pre>
 *
 * <h2>Small frames on one GPU: the push arena</h2>
 * Two processes on one GPU each have a CUDA context, and the GPU time-slices between them: GPU work of one context
 * waits for a switch from the other's (~145 µs each on an H200, measured with a raw two-process ping-pong:
 * {@code bench/results/ipc-rtt-profile-nvidia-h200.md}). So that a round trip pays none, the dialling side
 * does every copy of a small message in both directions: after the accepting side first pulled a device frame of up
 * to {@value #PUSH_FRAME_BYTES} bytes, it offers an arena of its device memory
 * ({@link TransportConfig#ipcPushArenaBytes()}, 4 MiB by default); the dialling side maps it once and, for each later
 * message whose device frames are all of up to that size, copies them into free ranges of it, synchronizes, and sends
 * pushed references instead of its own memory's (a message with a larger frame is pulled whole).
 * The accepting side receives such a frame as a loan of the arena's bytes ({@link ReceiveArena}, no copy, no GPU
 * work) and tells the peer when the loan comes back. Without free ranges for all, the frames are pulled. A message
 * whose device frames were all pushed completes when written; frames the other way are pulled by the dialling side,
 * as every frame is.
 * With session keys ({@link SessionKeys}: a secret on both sides), a tag follows the message record's type and header
 * length, its header, and each device frame's reference, and ends the consumed record and the refusal (whose length
 * then counts the tag); each is the next of its direction's numbered tags and is checked before what it covers is
 * used: the header length before the header is allocated, the header before it is parsed, a reference before it is
 * parsed or mapped. A tag that fails is a {@link io.cuwire.transport.MessageAuthenticationException}, refused as any
 * bad record. The frames' bytes are not covered: device frames do not cross this socket, and a host frame's would
 * cost a pass of HMAC-SHA256 (0.4-0.65 GB/s a core on the 2-core VMs, a third of the socket's 1.7 GB/s).
 * A device frame's reference comes from the peer and is refused ({@link ProtocolViolationException}) before anything is
 * mapped unless the handle is well formed for this side's platform, names an allocation of the peer itself where the
 * platform's handles name their exporter ({@link Device#exportingProcess}), and the frame's bytes — at the
 * reference's offset, of the length the header declared for the frame — lie within the allocation size the reference
 * declares; opening then checks that the platform issued the handle and that the allocation is that large
 * ({@link Device#openHandle}). A message that references more allocations than the mapping cache keeps copies what it
 * mapped so far and gives those mappings back before it maps more.
 *
 * <p>A sender references consecutive device frames it does not push as reference runs ({@link
 * #REFERENCE_RUN_FRAMES} at most): each allocation once, then each frame's allocation and offset, one record and one
 * tag. A receiver reads a run whole and checks its tag before it uses any of it, checks it as above, frame by frame,
 * and leases each allocation's mapping once for the run. Measured on the 2-core VM, a model of 10,000 arrays otherwise
 * had a reference, a tag and a lease per array: 35 of the sender's 205 profile samples in tagging alone (2026-12-07).
 *
 * <h2>Threads</h2>
 * A reader thread reads every record: it completes sends when their {@code consumed} arrives, and receives
 * messages — allocates each frame when it begins (a run of small device frames as one block when the first of them
 * begins: {@link Frames#allocateRun}), from {@link TransportConfig#receiveInto()} (a host frame whose
 * descriptor names a primitive array type as a fresh array, read through the socket's buffer, which the decoder keeps
 * without a copy), reads host frames, enqueues the copy
 * of each device frame on a stream of the device that maps the sender's memory ({@link CopyEngine#copyAsync},
 * {@value #COPY_BATCH} frames' copies at a time: device to device or peer, never through the host; one stream per
 * such device: splitting a 1 GiB frame over 2 or 4 streams was measured slower on two H200s, 0.83 and 0.80 × the
 * peer copy against 0.90),
 * waits for all of them at once, checks that the sender is still alive ({@link PeerProcess}), queues the message
 * for {@link #receive} and then owes the sender {@code consumed}: it rides along with the next record this side
 * writes (in a request-reply exchange the reply, moments later: one write and one wake-up of the peer less), or,
 * if none comes within {@value #CONSUMED_GRACE_NANOS} ns where the idle strategy spins (at once where it does not),
 * the reader writes it on its own. Waiting threads spin briefly before they block, and for as
 * long as a transfer they wait for is in progress — the reader copying a message in, or the peer copying one of
 * this side's out ({@link IdleStrategy}). The reader reads ahead of the application by at most
 * {@value #HOST_READ_AHEAD} bytes of host frames (device frames are bounded by the sender's bytes in flight, as their
 * sends complete only when consumed).
 * Sends write on the caller's thread when nothing is queued ahead and the message's host frames are small (the
 * record then has left when {@code send} returns), else on a writer thread. Host frames of heap memory go through the
 * socket's staging, chunk by chunk ({@link SocketIo#write(HostBuffer, long)}).
 *
 * <h2>Sends complete</h2>
 * when the peer consumed the message, for a message with device frames (the peer read them out of the sender's
 * memory); when written, for one without.
 */
final class IpcConnection extends AbstractConnection {
    static final byte TYPE_MESSAGE = 1;
    static final byte TYPE_CONSUMED = 2;
    static final byte TYPE_REFUSED = 3;
    static final byte TYPE_ARENA = 4;
    static final byte TYPE_RETURNED = 5;
    /** The largest device frame pushed into the peer's arena. */
    static final long PUSH_FRAME_BYTES = 64 << 10;

    private static final int MAX_RETURNED_RANGES = 4096;
    /** How long a range of the push arena that came back waits for a record to ride along with. */
    static final long RETURN_DELAY_MICROS = 200;
    /**
     * The longest the reader waits, where its idle strategy spins, for a record of this side that a consumed
     * record can ride along with (in a request-reply exchange the reply follows at once) before it writes it on its
     * own, in nanoseconds: at most the strategy's spin.
     */
    static final long CONSUMED_GRACE_NANOS = 20_000;

    static final long HOST_READ_AHEAD = 4 << 20;
    /** Device-frame copies gathered before they are enqueued as one batch. */
    static final int COPY_BATCH = 1024;

    private static final int MAX_HANDLE_BYTES = 4096;
    /** The handle length that begins a reference run instead of a single reference (no handle is that long). */
    static final short RUN_MARKER = -1;
    /** The most device frames one reference run covers (its record's size bounded with it). */
    static final int REFERENCE_RUN_FRAMES = 1024;
    /** A reference's handle length not read yet. */
    private static final int NOT_READ = Integer.MIN_VALUE;

    private static final long INLINE_HOST_BYTES = 256 << 10;
    private static final long COALESCE_FRAME_BYTES = 64 << 10;
    private static final AtomicInteger IDS = new AtomicInteger();
    private static final Object END = new Object();

    /** A message being sent; completed or failed exactly once. */
    private final class Outgoing extends PendingSend {
        final Message message;
        final byte[] header;
        final boolean hasDeviceFrames;
        final boolean inline;
        /** Per frame, where it was pushed into the peer's arena, or -1; set under the send lock. */
        long[] pushed;
        /** Device frames the peer pulls (their consumed record completes the send); set under the send lock. */
        int pulledFrames;

        Outgoing(Message message) {
            super(state, message.totalBytes());
            this.message = message;
            this.header = message.header();
            long hostBytes = 0;
            boolean device = false;
            for (Buffer b : message.frames()) {
                if (b instanceof DeviceBuffer) {
                    device = true;
                } else {
                    hostBytes += b.byteSize();
                }
            }
            this.hasDeviceFrames = device;
            this.inline = hostBytes <= INLINE_HOST_BYTES;
        }

        void complete() {
            Timeline.mark(Point.SEND_COMPLETED);
            complete(() ->
                    recorder().finish(header.length, Frames.kinds(message.frames()), Frames.lengths(message.frames())));
        }
    }

    private final SocketIo io;
    private final TransportConfig config;
    /** How the receiving threads wait: this side's configuration's. */
    private final IdleStrategy idle;

    private final String name;
    private final long ioTimeoutNanos;
    private final ConnectionState state;
    private final Handshake.Result handshake;
    private final PeerProcess peerProcess;
    /** The reader's copy stream per device that maps the sender's memory; closed after the reader ended. */
    private final Map<Device, DeviceStream> copyStreams = new HashMap<>();
    /** Counts additions to {@link #received}: a lock-free hint for the receive spin. */
    private final AtomicInteger arrivals = new AtomicInteger();
    /** Whether the reader is copying a message's device frames in (so a receiver should keep spinning). */
    private volatile boolean copying;
    /** When the reader last read a record ({@link System#nanoTime()}): a reply often follows a consumed record. */
    private volatile long lastRecordNanos = System.nanoTime();
    /** When the peer last consumed a message of this side ({@link System#nanoTime()}): a reply often follows. */
    private volatile long consumedNanos;

    private final MappingCache mappings;
    private final ConcurrentLinkedQueue<Outgoing> awaitingConsumed = new ConcurrentLinkedQueue<>();
    private final LinkedBlockingQueue<Object> received = new LinkedBlockingQueue<>();
    private final Object readAhead = new Object();
    private final ReentrantLock receiveLock = new ReentrantLock();
    private final AtomicBoolean failureDelivered = new AtomicBoolean();
    private long queuedHostBytes;
    private final Thread reader;
    private final SendQueue<Outgoing> sends;
    /** Tags what this side sends, under the send lock; {@code null} without session keys. */
    private final SessionKeys.Direction seal;
    /** Checks what the peer sends, on the reader; {@code null} without session keys. */
    private final SessionKeys.Direction open;

    private final boolean client;
    /** The accepting side's push arena, once offered; {@code null} before and on the dialling side. */
    private volatile ReceiveArena receiveArena;
    /** Whether a write of returned ranges is scheduled. */
    private final AtomicBoolean returnScheduled = new AtomicBoolean();
    /** Consumed records this side owes the peer and has not written yet: the next record written takes them along. */
    private final AtomicInteger consumedOwed = new AtomicInteger();
    /** Whether the accepting side may still offer an arena (not offered yet, not failed, not turned off). */
    private boolean mayOfferArena;
    /** A small device frame the last message had this side pull (its buffer closed or not), or {@code null}. */
    private DeviceBuffer pulledSmall;
    /** Its sender's device ordinal. */
    private int pulledSmallOrdinal;
    /** The sender's device ordinal whose frames the offered arena takes (accepting side). */
    private int arenaOrdinal;
    /** The peer's arena as offered (dialling side, set by the reader), mapped on the first push. */
    private volatile OfferedArena offeredArena;
    /** The peer's arena, mapped (dialling side): made under the send lock, released into by the reader. */
    private volatile PushArena pushArena;
    /** Set when the connection ended: no arena is mapped after it. */
    private boolean pushArenaEnded;

    /**
     * Wraps a connected socket whose handshake established {@code handshake} and checks that IPC can work with the
     * peer; closes the socket if not.
     */
    IpcConnection(
            SocketChannel channel,
            TransportConfig config,
            Handshake.Result handshake,
            boolean client,
            int maxMappings,
            long maxMappedBytes) {
        super(Transports.IPC);
        this.config = config;
        this.client = client;
        this.mayOfferArena = !client && config.ipcPushArenaBytes() > 0;
        this.idle = config.idle();
        this.consumedNanos = System.nanoTime() - idle.replyNanos();
        this.ioTimeoutNanos = config.ioTimeout().toNanos();
        this.handshake = handshake;
        String peer;
        try {
            peer = String.valueOf(channel.getRemoteAddress());
            checkUsable(handshake.peer(), peer);
            this.io = new SocketIo(channel, peer, config.idle());
        } catch (IOException | RuntimeException e) {
            try {
                channel.close();
            } catch (IOException ignored) {
                // nothing more to free
            }
            if (e instanceof TransportException t) {
                throw t;
            }
            throw new TransportException("cannot use the socket: " + e.getMessage(), e);
        }
        this.name = "ipc-" + IDS.incrementAndGet() + (client ? "-client" : "-server");
        this.state = new ConnectionState(name, peer, config.maxBytesInFlight(), config.idle());
        this.peerProcess = new PeerProcess(handshake.peer().pid());
        this.seal = handshake.keys() == null ? null : handshake.keys().sending(peer);
        this.open = handshake.keys() == null ? null : handshake.keys().receiving(peer);
        this.mappings = new MappingCache(
                "IPC mappings of " + name + "'s peer " + peer + " (pid "
                        + handshake.peer().pid() + ")",
                Device::openHandle,
                maxMappings,
                maxMappedBytes);
        this.sends = new SendQueue<>(
                name,
                state,
                (out, onCaller) -> {
                    writeOrFail(out);
                    return true;
                },
                () -> {});
        this.reader =
                Thread.ofPlatform().daemon().name("cuwire-" + name + "-reader").start(this::readLoop);
    }

    /** Refuses a peer with which device memory can't be shared, saying why. */
    static void checkUsable(Capabilities peer, String address) {
        String local = Capabilities.localHostId();
        String why = null;
        if (!peer.hostId().equals(local)) {
            why = "it runs on host '" + peer.hostId() + "', this process on '" + local
                    + "' (IPC shares device memory between processes of one host)";
        } else if (peer.pid() == ProcessHandle.current().pid()) {
            why = "it is this same process (CUDA does not open its own handles; use inproc://)";
        } else {
            TreeSet<String> theirs = new TreeSet<>();
            for (Capabilities.DeviceInfo d : peer.devices()) {
                theirs.add(d.platform());
            }
            String mine = Devices.platform();
            if (!theirs.equals(new TreeSet<>(List.of(mine)))) {
                why = "its devices are on platform(s) " + theirs + ", this process's on [" + mine + "] (IPC needs"
                        + " both sides on the same device platform)";
            }
        }
        if (why != null) {
            throw new TransportException("cannot use CUDA IPC with peer " + address + " (pid " + peer.pid() + "): "
                    + why + "; connect over tcp:// or ucx:// instead");
        }
    }

    /** The receiver's mapping cache counters: how often allocations of the peer were opened, reused, closed. */
    MappingCache.Stats mappingStats() {
        return mappings.stats();
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

    /** Writes one message; the caller holds the write lock. */
    private void writeOrFail(Outgoing out) {
        Timeline.mark(Point.SEND_WRITING);
        out.record(Transports.IPC);
        try {
            push(out);
            Timeline.mark(Point.SEND_PUSHED);
        } catch (RuntimeException e) {
            TransportException t = state.translate(e, "sending to");
            out.fail(t);
            shutdown(t);
            return;
        }
        if (out.pulledFrames > 0) {
            awaitingConsumed.add(out);
        }
        try {
            write(out);
            Timeline.mark(Point.SEND_WRITTEN);
        } catch (RuntimeException e) {
            TransportException t = state.translate(e, "sending to");
            if (t instanceof PeerClosedException) {
                t = refusalOr(t);
            }
            out.fail(t);
            shutdown(t);
            return;
        }
        if (out.pulledFrames == 0) {
            if (out.hasDeviceFrames) {
                consumedNanos = System.nanoTime(); // pushed: a reply may follow soon, as after a consumed record
            }
            out.complete();
        }
    }

    /**
     * Copies the message's device frames into the peer's push arena if the peer offered one and every one of them
     * can go there (at most {@value #PUSH_FRAME_BYTES} bytes, on the device that maps the arena, a free range for
     * each), and waits for the copies; sets {@link Outgoing#pushed} and {@link Outgoing#pulledFrames}. All or none:
     * a message with a frame the peer must pull keeps the peer's context busy anyway, and a push of this side's
     * beside it puts GPU work of both contexts into one message (on one H200 a 1 GiB message whose 8-byte frame was
     * pushed took 1.25 ms, 0.64 ms pulled whole a day earlier on another host; whether the push costs that is not
     * settled: {@code bench/results/ipc-rtt-profile-nvidia-h200.md}). The caller holds the write lock.
     */
    private void push(Outgoing out) {
        List<Buffer> frames = out.message.frames();
        int deviceFrames = 0;
        boolean all = true;
        PushArena arena = out.hasDeviceFrames ? pushArena(frames) : null;
        for (Buffer b : frames) {
            if (b instanceof DeviceBuffer d) {
                deviceFrames++;
                all &= arena != null
                        && d.byteSize() > 0
                        && d.byteSize() <= PUSH_FRAME_BYTES
                        && d.device().equals(arena.device());
            }
        }
        out.pushed = null;
        out.pulledFrames = deviceFrames;
        if (deviceFrames == 0 || !all) {
            return;
        }
        long[] pushed = new long[frames.size()];
        Arrays.fill(pushed, -1);
        try {
            for (int i = 0; i < frames.size(); i++) {
                if (frames.get(i) instanceof DeviceBuffer d) {
                    long offset = arena.reserve(d.byteSize());
                    if (offset < 0) {
                        release(arena, pushed, frames);
                        return; // no room for all of them: the peer pulls them
                    }
                    pushed[i] = offset;
                }
            }
            for (int i = 0; i < frames.size(); i++) {
                if (pushed[i] >= 0) {
                    Buffer d = frames.get(i);
                    CopyEngine.copyAsync(
                            (DeviceBuffer) d,
                            0,
                            arena.target(pushed[i], d.byteSize()),
                            0,
                            d.byteSize(),
                            arena.stream());
                }
            }
            Timeline.mark(Point.SEND_ENQUEUED);
            arena.stream().synchronize();
        } catch (RuntimeException e) {
            try {
                arena.stream().synchronize();
            } catch (RuntimeException suppressed) {
                e.addSuppressed(suppressed);
            }
            release(arena, pushed, frames);
            throw e;
        }
        out.pushed = pushed;
        out.pulledFrames = 0;
    }

    /** Gives back the ranges of {@code pushed} (never told to the peer). */
    private static void release(PushArena arena, long[] pushed, List<Buffer> frames) {
        for (int i = 0; i < pushed.length; i++) {
            if (pushed[i] >= 0) {
                arena.release(pushed[i], frames.get(i).byteSize(), "(this side)");
                pushed[i] = -1;
            }
        }
    }

    /**
     * The peer's push arena, mapped on first use on the device of the message's first small device frame;
     * {@code null} if it offered none. The caller holds the write lock.
     */
    private PushArena pushArena(List<Buffer> frames) {
        PushArena arena = pushArena;
        OfferedArena offered = offeredArena;
        if (arena != null || offered == null) {
            return arena;
        }
        Device device = null;
        for (Buffer b : frames) {
            if (b instanceof DeviceBuffer d && d.deviceOrdinal() == offered.ordinal()) {
                device = d.device();
                break;
            }
        }
        if (device == null) {
            return null;
        }
        offeredArena = null;
        MappingCache.Lease lease;
        try {
            lease = mappings.acquire(
                    offered.reference().allocation(), offered.reference().offset(), offered.bytes(), device);
        } catch (IndexOutOfBoundsException | InvalidHandleException e) {
            throw new ProtocolViolationException(
                    "peer " + io.peer() + " offered a push arena that cannot be mapped: " + e.getMessage(), e);
        }
        arena = new PushArena(lease, device);
        synchronized (this) {
            if (!pushArenaEnded) {
                pushArena = arena;
                return arena;
            }
        }
        arena.close();
        return null;
    }

    /** Unmaps the peer's push arena, once; after it none is mapped. */
    private void endPushArena() {
        PushArena arena;
        synchronized (this) {
            pushArenaEnded = true;
            arena = pushArena;
            pushArena = null;
        }
        if (arena != null) {
            arena.close();
        }
    }

    /**
     * Why the peer closed under a send, if it said so first: the refusal the reader read (waited for: the peer's end
     * ends it soon), else {@code closed}.
     */
    private TransportException refusalOr(TransportException closed) {
        if (Thread.currentThread() != reader) {
            try {
                reader.join(Duration.ofNanos(Frames.REFUSAL_LINGER_NANOS));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        return state.failure() instanceof MessageRefusedException r ? state.copyOf(r) : closed;
    }

    private void write(Outgoing out) {
        SocketIo.Gather gather = io.gather(ioTimeoutNanos);
        addOwedConsumed(gather); // consumed records owed, and
        addReturned(gather); // ranges of the push arena given back ride along: no write of their own
        sealed(gather, ByteBuffer.allocate(5).put(0, TYPE_MESSAGE).putInt(1, out.header.length));
        sealed(gather, ByteBuffer.wrap(out.header));
        List<Buffer> frames = out.message.frames();
        for (int i = 0; i < frames.size(); i++) {
            Buffer frame = frames.get(i);
            int run = out.pushed == null ? pulledRun(frames, i) : 0;
            if (run > 1) {
                sealed(gather, referenceRun(frames, i, run));
                i += run - 1;
            } else if (frame instanceof DeviceBuffer d) {
                sealed(
                        gather,
                        out.pushed != null && out.pushed[i] >= 0
                                ? ByteBuffer.allocate(2 + 8)
                                        .putShort((short) 0)
                                        .putLong(out.pushed[i])
                                        .flip()
                                : reference(d));
            } else if (frame.byteSize() <= COALESCE_FRAME_BYTES) {
                gather.add((HostBuffer) frame);
            } else {
                gather.flush();
                io.write((HostBuffer) frame, ioTimeoutNanos);
            }
        }
        gather.flush();
    }

    /**
     * Adds to {@code gather} the records that tell the peer which ranges of its push arena came back (accepting
     * side), if any did; the caller holds the write lock.
     */
    private void addReturned(SocketIo.Gather gather) {
        ReceiveArena arena = receiveArena;
        if (arena == null || !arena.hasReturned()) {
            return;
        }
        List<long[]> ranges = arena.drainReturned();
        for (int from = 0; from < ranges.size(); from += MAX_RETURNED_RANGES) {
            int n = Math.min(MAX_RETURNED_RANGES, ranges.size() - from);
            ByteBuffer record =
                    ByteBuffer.allocate(5 + 16 * n).put(TYPE_RETURNED).putInt(n);
            for (int i = from; i < from + n; i++) {
                record.putLong(ranges.get(i)[0]).putLong(ranges.get(i)[1]);
            }
            sealed(gather, record.flip());
        }
    }

    /**
     * Runs when a loan of the push arena comes back (on the thread that closed it): the range rides along with
     * the next record this side writes — in a request-reply exchange the reply follows at once — or, if none is
     * written within {@value #RETURN_DELAY_MICROS} µs, goes in a record of its own then.
     */
    private void arenaReturned() {
        if (returnScheduled.compareAndSet(false, true)) {
            CompletableFuture.delayedExecutor(RETURN_DELAY_MICROS, TimeUnit.MICROSECONDS)
                    .execute(this::flushReturned);
        }
    }

    /** Writes the ranges of the push arena that came back and that no record took along yet. */
    private void flushReturned() {
        returnScheduled.set(false);
        ReceiveArena arena = receiveArena;
        if (arena == null || !arena.hasReturned() || state.isClosed()) {
            return;
        }
        sends.lock().lock();
        try {
            if (state.isClosed()) {
                return;
            }
            SocketIo.Gather gather = io.gather(ioTimeoutNanos);
            addReturned(gather);
            gather.flush();
        } catch (RuntimeException e) {
            shutdown(state.translate(e, "sending to"));
        } finally {
            sends.lock().unlock();
        }
    }

    /**
     * Offers the peer a push arena on the device of {@code pulled}, a frame from the peer's device {@code ordinal}
     * that this side pulled (accepting side, on the reader), allocated by an allocator of the connection's own,
     * which device-memory reports name; its loans name {@code pulled}'s allocator as theirs. Nothing is offered if
     * the memory is not there.
     */
    @SuppressWarnings("unchecked")
    private void offerArena(DeviceBuffer pulled, int ordinal) {
        mayOfferArena = false;
        Device device = pulled.device();
        BufferAllocator<DeviceBuffer> lentFor = (BufferAllocator<DeviceBuffer>) pulled.allocator();
        BufferAllocator<DeviceBuffer> owner = null;
        DeviceBuffer arena = null;
        ByteBuffer record;
        try {
            owner = device.newAllocator(
                    "IPC push arena of " + name + " (peer " + io.peer() + ")", config.ipcPushArenaBytes());
            arena = owner.allocate(config.ipcPushArenaBytes());
            ByteBuffer ref = reference(arena);
            record = ByteBuffer.allocate(1 + ref.remaining() + 8 + 4)
                    .put(TYPE_ARENA)
                    .put(ref)
                    .putLong(arena.byteSize())
                    .putInt(ordinal)
                    .flip();
        } catch (RuntimeException e) {
            // no device memory to spare, or the device exports none: frames are pulled, as without an arena
            Closeables.closeAll(Arrays.asList(arena, owner));
            return;
        }
        ReceiveArena offered = new ReceiveArena(arena, owner, lentFor, this::arenaReturned);
        sends.lock().lock();
        try {
            if (state.isClosed()) {
                offered.end();
                return;
            }
            arenaOrdinal = ordinal;
            receiveArena = offered;
            SocketIo.Gather gather = io.gather(ioTimeoutNanos);
            sealed(gather, record);
            gather.flush();
        } finally {
            sends.lock().unlock();
        }
    }

    /** Adds {@code part} to {@code gather}, followed by its tag when the connection has session keys. */
    private void sealed(SocketIo.Gather gather, ByteBuffer part) {
        gather.add(part);
        if (seal != null) {
            gather.add(ByteBuffer.wrap(seal.seal(part)));
        }
    }

    /** Adds to {@code gather} the consumed records this side owes the peer; the caller holds the write lock. */
    private void addOwedConsumed(SocketIo.Gather gather) {
        for (int n = consumedOwed.getAndSet(0); n > 0; n--) {
            gather.add(consumedRecord());
        }
    }

    /** A consumed record, tagged when the connection has session keys; the caller holds the write lock. */
    private ByteBuffer consumedRecord() {
        ByteBuffer type = ByteBuffer.wrap(new byte[] {TYPE_CONSUMED});
        if (seal == null) {
            return type;
        }
        return ByteBuffer.allocate(1 + SessionKeys.TAG_BYTES)
                .put(type.duplicate())
                .put(seal.seal(type))
                .flip();
    }

    /**
     * The reason bytes of a refusal record: {@code reason}, followed, when the connection has session keys, by the
     * tag of the whole record ({@code [3][length: int32][reason]}); the caller holds the write lock.
     */
    private byte[] sealedRefusal(byte[] reason) {
        if (seal == null) {
            return reason;
        }
        ByteBuffer record = ByteBuffer.allocate(5 + reason.length)
                .put(TYPE_REFUSED)
                .putInt(reason.length + SessionKeys.TAG_BYTES)
                .put(reason)
                .flip();
        byte[] tag = seal.seal(record);
        byte[] withTag = Arrays.copyOf(reason, reason.length + SessionKeys.TAG_BYTES);
        System.arraycopy(tag, 0, withTag, reason.length, SessionKeys.TAG_BYTES);
        return withTag;
    }

    /** Reads a tag of the peer's and checks it as its next record's, over {@code parts}. */
    private void openTag(String what, ByteBuffer... parts) {
        open.open(readTag(), what, parts);
    }

    private byte[] readTag() {
        byte[] tag = new byte[SessionKeys.TAG_BYTES];
        io.readFully(ByteBuffer.wrap(tag), ioTimeoutNanos, SocketIo.NO_DEADLINE);
        return tag;
    }

    /** Reads the rest of the peer's refusal record after its type, checking its tag when there are session keys. */
    private MessageRefusedException readRefusal() {
        if (open == null) {
            return io.readRefusal(ioTimeoutNanos);
        }
        int length = io.readInt(ioTimeoutNanos, SocketIo.NO_DEADLINE);
        Frames.checkRefusalLength(length - SessionKeys.TAG_BYTES, io.peer());
        byte[] reason = new byte[length - SessionKeys.TAG_BYTES];
        io.readFully(ByteBuffer.wrap(reason), ioTimeoutNanos, SocketIo.NO_DEADLINE);
        openTag("refusal", ByteBuffer.allocate(5).put(0, TYPE_REFUSED).putInt(1, length), ByteBuffer.wrap(reason));
        return Frames.refused(io.peer(), reason);
    }

    /** How many device frames from {@code first} on go in one reference run: consecutive ones, at most a run's. */
    private static int pulledRun(List<Buffer> frames, int first) {
        int n = 0;
        while (first + n < frames.size() && n < REFERENCE_RUN_FRAMES && frames.get(first + n) instanceof DeviceBuffer) {
            n++;
        }
        return n;
    }

    /**
     * The reference run of the {@code count} device frames from {@code first} on: their allocations' handles once
     * each (a frame's allocation is most often its predecessor's: compared first), then each frame's allocation (by
     * its place in that table) and offset; one record, one tag.
     */
    private static ByteBuffer referenceRun(List<Buffer> frames, int first, int count) {
        List<IpcHandle> allocations = new ArrayList<>();
        Map<IpcHandle, Integer> indexOf = new HashMap<>();
        int[] index = new int[count];
        long[] offset = new long[count];
        IpcHandle last = null;
        int lastIndex = -1;
        int bytes = 2 + 4 + 4 + 12 * count;
        for (int k = 0; k < count; k++) {
            DeviceBuffer d = (DeviceBuffer) frames.get(first + k);
            IpcHandle a = d.device().exportAllocation(d);
            int at;
            if (a == last || a.equals(last)) {
                at = lastIndex;
            } else {
                Integer known = indexOf.putIfAbsent(a, allocations.size());
                at = known != null ? known : allocations.size();
                if (known == null) {
                    allocations.add(a);
                    bytes += 2 + a.handle().length + 4 + 8;
                }
                last = a;
                lastIndex = at;
            }
            index[k] = at;
            offset[k] = d.device().allocationOffset(d);
        }
        ByteBuffer b =
                ByteBuffer.allocate(bytes).putShort(RUN_MARKER).putInt(count).putInt(allocations.size());
        for (IpcHandle a : allocations) {
            byte[] handle = a.handle();
            b.putShort((short) handle.length)
                    .put(handle)
                    .putInt(a.deviceOrdinal())
                    .putLong(a.length());
        }
        for (int k = 0; k < count; k++) {
            b.putInt(index[k]).putLong(offset[k]);
        }
        return b.flip();
    }

    /** A device frame's reference: its allocation's handle (cached by the device) and where in it the frame lies. */
    private ByteBuffer reference(DeviceBuffer frame) {
        Device device = frame.device();
        IpcHandle allocation = device.exportAllocation(frame);
        long offset = device.allocationOffset(frame);
        byte[] handle = allocation.handle();
        return ByteBuffer.allocate(2 + handle.length + 4 + 8 + 8)
                .putShort((short) handle.length)
                .put(handle)
                .putInt(allocation.deviceOrdinal())
                .putLong(allocation.length())
                .putLong(offset)
                .flip();
    }

    // ---- reading

    private void readLoop() {
        try {
            while (!state.isClosed()) {
                if (!io.awaitData(SocketIo.NO_DEADLINE, this::awaitingPeer)) {
                    continue;
                }
                Timeline.mark(Point.READ_WOKE);
                byte type = io.readByte(ioTimeoutNanos, SocketIo.NO_DEADLINE);
                Timeline.mark(Point.READ_TYPE);
                lastRecordNanos = System.nanoTime();
                if (type == TYPE_CONSUMED) {
                    if (open != null) {
                        openTag("consumed record", ByteBuffer.wrap(new byte[] {TYPE_CONSUMED}));
                    }
                    Outgoing out = awaitingConsumed.poll();
                    if (out == null) {
                        throw new ProtocolViolationException(
                                "peer " + io.peer() + " acknowledged a message never sent");
                    }
                    consumedNanos = System.nanoTime();
                    Timeline.mark(Point.READ_CONSUMED);
                    out.complete();
                } else if (type == TYPE_MESSAGE) {
                    awaitReadAhead();
                    IpcReceiveEvent event = new IpcReceiveEvent();
                    ReceivedMessage m = readMessage(event);
                    long hostBytes = m.metrics().hostFrameBytes() + m.metrics().pinnedFrameBytes();
                    synchronized (readAhead) {
                        queuedHostBytes += hostBytes;
                    }
                    // Owed before the hand-over (the copies are done): a reply the application sends at once takes
                    // the consumed record along, ahead of itself. Counted after the hand-over, a quick reply went
                    // without it and the record followed the reply, so the peer learnt its send was done only after
                    // the reply (and its send's copy count took in what its threads copied meanwhile).
                    if (event.deviceFrames > 0) {
                        consumedOwed.incrementAndGet();
                    }
                    received.add(m);
                    arrivals.incrementAndGet();
                    Timeline.mark(Point.READ_QUEUED);
                    copying = false;
                    if (event.deviceFrames > 0) {
                        // After the hand-over: the application wakes and often sends at once (a reply), and the
                        // consumed record rides along with that (one write, one wake-up of the peer, no wait for
                        // the lock); else this thread writes it after the grace.
                        long t = event.isEnabled() ? System.nanoTime() : 0;
                        if (!idle.spinUntil(CONSUMED_GRACE_NANOS, () -> consumedOwed.get() == 0)) {
                            sends.lock().lock();
                            try {
                                SocketIo.Gather gather = io.gather(ioTimeoutNanos);
                                addOwedConsumed(gather);
                                addReturned(gather);
                                gather.flush();
                            } finally {
                                sends.lock().unlock();
                            }
                            Timeline.mark(Point.CONSUMED_ALONE);
                        }
                        if (event.isEnabled()) {
                            event.consumedNanos = System.nanoTime() - t;
                            event.commit();
                        }
                    }
                    if (pulledSmall != null && mayOfferArena) {
                        offerArena(pulledSmall, pulledSmallOrdinal);
                    }
                    pulledSmall = null;
                } else if (type == TYPE_ARENA && client) {
                    readArena();
                } else if (type == TYPE_RETURNED && client) {
                    readReturned();
                } else if (type == TYPE_REFUSED) {
                    throw readRefusal();
                } else {
                    throw new ProtocolViolationException("peer " + io.peer() + " sent a record of type " + (type & 0xff)
                            + ": not the cuwire IPC protocol");
                }
            }
        } catch (RuntimeException e) {
            TransportException t = state.translate(e, "receiving from");
            shutdown(t, Frames.refusal(t));
        } finally {
            received.add(END);
        }
    }

    /** Reads the peer's push-arena offer (dialling side): mapped when this side first pushes. */
    private void readArena() {
        short length = readShort();
        int handleLength = Short.toUnsignedInt(length);
        if (handleLength == 0 || handleLength > MAX_HANDLE_BYTES) {
            throw new ProtocolViolationException(
                    "peer " + io.peer() + " sent an IPC handle of " + handleLength + " bytes");
        }
        ByteBuffer rest = ByteBuffer.allocate(handleLength + 4 + 8 + 8);
        ByteBuffer size = ByteBuffer.allocate(8 + 4);
        io.readFully(rest, ioTimeoutNanos, SocketIo.NO_DEADLINE);
        io.readFully(size, ioTimeoutNanos, SocketIo.NO_DEADLINE);
        if (open != null) {
            openTag(
                    "push-arena offer",
                    ByteBuffer.allocate(3).put(0, TYPE_ARENA).putShort(1, length),
                    rest.flip(),
                    size.flip());
        }
        Device device = Devices.all().isEmpty() ? null : Devices.all().getFirst();
        if (device == null || offeredArena != null || pushArena != null) {
            throw new ProtocolViolationException("peer " + io.peer() + " offered a push arena "
                    + (device == null ? "to a side without devices" : "twice"));
        }
        Reference reference = parseReference(rest, device);
        long bytes = size.getLong(0);
        if (bytes < PUSH_FRAME_BYTES / 64
                || bytes > 1L << 30
                || reference.offset() < 0
                || reference.offset() > reference.allocation().length() - bytes) {
            throw new ProtocolViolationException("peer " + io.peer() + " offered a push arena of " + bytes
                    + " bytes at offset "
                    + reference.offset() + " of an allocation of "
                    + reference.allocation().length() + " bytes"
                    + " (expected: 1 KiB to 1 GiB within the allocation)");
        }
        offeredArena = new OfferedArena(reference, bytes, size.getInt(8));
    }

    /**
     * The push arena the peer offered: where it lies in which allocation of the peer's, its size, and the ordinal of
     * this side's device whose frames it takes.
     */
    private record OfferedArena(Reference reference, long bytes, int ordinal) {}

    /** Reads which ranges of the peer's push arena came back (dialling side) and frees them for pushes. */
    private void readReturned() {
        int n = io.readInt(ioTimeoutNanos, SocketIo.NO_DEADLINE);
        if (n < 1 || n > MAX_RETURNED_RANGES) {
            throw new ProtocolViolationException("peer " + io.peer() + " returned " + n
                    + " ranges of its push arena in one"
                    + " record (expected: 1 to " + MAX_RETURNED_RANGES + ")");
        }
        ByteBuffer body = ByteBuffer.allocate(16 * n);
        io.readFully(body, ioTimeoutNanos, SocketIo.NO_DEADLINE);
        if (open != null) {
            openTag(
                    "returned record",
                    ByteBuffer.allocate(5).put(0, TYPE_RETURNED).putInt(1, n),
                    body.flip());
        }
        PushArena arena = pushArena;
        if (arena == null) {
            if (pushArenaEnded) {
                return;
            }
            throw new ProtocolViolationException(
                    "peer " + io.peer() + " returned ranges of a push arena never pushed into");
        }
        for (int i = 0; i < n; i++) {
            arena.release(body.getLong(16 * i), body.getLong(16 * i + 8), io.peer());
        }
    }

    private void awaitReadAhead() {
        synchronized (readAhead) {
            while (!state.isClosed() && queuedHostBytes >= HOST_READ_AHEAD) {
                try {
                    readAhead.wait(100);
                } catch (InterruptedException e) {
                    throw new ConnectionClosedException(name + " was interrupted", e);
                }
            }
        }
        if (state.isClosed()) {
            throw state.closedError();
        }
    }

    /** Reads one message and copies its device frames in; fills {@code event}'s phases when it is enabled. */
    private ReceivedMessage readMessage(IpcReceiveEvent event) {
        MessageRecorder recorder =
                MessageRecorder.start(MessageMetrics.Direction.RECEIVED, Transports.IPC, System.nanoTime(), true);
        boolean timed = event.isEnabled();
        long start = timed ? System.nanoTime() : 0;
        List<Frame> frames = new ArrayList<>();
        List<MappingCache.Lease> leases = new ArrayList<>();
        CopyBatches copies = new CopyBatches();
        long opensBefore = mappings.stats().opens();
        long began = System.nanoTime(); // its type byte is in; a wait for the application to catch up is not counted
        try {
            io.messageDeadline(began, 5, config);
            int headerLength = io.readInt(ioTimeoutNanos, SocketIo.NO_DEADLINE);
            if (open != null) {
                openTag(
                        "message record's prefix",
                        ByteBuffer.allocate(5).put(0, TYPE_MESSAGE).putInt(1, headerLength));
            }
            Frames.checkHeaderLength(headerLength, config, io.peer());
            io.messageDeadline(began, 5L + headerLength, config);
            byte[] headerBytes = new byte[headerLength];
            io.readFully(ByteBuffer.wrap(headerBytes), ioTimeoutNanos, SocketIo.NO_DEADLINE);
            if (open != null) {
                openTag("message header", ByteBuffer.wrap(headerBytes));
            }
            Timeline.mark(Point.READ_HEADER);
            Serialized.Header header = Frames.parseHeader(headerBytes, config, io.peer(), handshake.families());
            Timeline.mark(Point.READ_PARSED);
            // device frames come through the peer's memory, not the socket: counted all the same (never too short)
            io.messageDeadline(began, 5L + headerLength + header.totalFrameBytes(), config);
            List<MemoryKind> kinds = new ArrayList<>(header.frames().size());
            List<Long> lengths = new ArrayList<>(header.frames().size());
            long mappingNanos = 0;
            long enqueueNanos = 0;
            int pulled = 0;
            pulledSmall = null;
            boolean arena = receiveArena != null;
            List<FrameDescriptor> descriptors = header.frames();
            for (int i = 0; i < descriptors.size(); i++) {
                FrameDescriptor descriptor = descriptors.get(i);
                // a device frame's reference begins with its handle's length: 0 for a frame pushed into the arena
                // (only once this side offered one; else the frame is allocated first, as its reference begins),
                // RUN_MARKER for a reference run
                int referenceLength = arena && descriptor.kind() == MemoryKind.DEVICE ? readShort() : NOT_READ;
                Frame frame = receivingFrame(descriptors, i, referenceLength, frames);
                Timeline.mark(Point.READ_ALLOCATED);
                if (referenceLength == 0) {
                    continue;
                }
                if (frame.buffer() instanceof HostBuffer h) {
                    io.readFully(h, ioTimeoutNanos);
                } else {
                    DeviceBuffer target = (DeviceBuffer) frame.buffer();
                    if (referenceLength == NOT_READ) {
                        referenceLength = readShort();
                    }
                    if (referenceLength == RUN_MARKER) {
                        long t0 = timed ? System.nanoTime() : 0;
                        int count = receiveRun(descriptors, i, frames, leases, copies);
                        if (timed) {
                            mappingNanos += System.nanoTime() - t0;
                        }
                        pulled += count;
                        i += count - 1;
                        continue;
                    }
                    // its tag checked before anything of it is used
                    Reference reference = parseReference(
                            readReferenceRest((short) referenceLength, (byte) -1, "device-frame reference"),
                            target.device());
                    Timeline.mark(Point.READ_REFERENCE);
                    pulled++;
                    if (target.byteSize() > 0 && target.byteSize() <= PUSH_FRAME_BYTES) {
                        pulledSmall = target;
                        pulledSmallOrdinal = descriptor.deviceOrdinal();
                    }
                    if (!leases.isEmpty() && mappings.heldAtBound()) {
                        releaseCopied(copies, leases);
                    }
                    long t0 = timed ? System.nanoTime() : 0;
                    MappingCache.Lease lease = lease(reference, target);
                    Timeline.mark(Point.READ_MAPPED);
                    leases.add(lease);
                    long t1 = timed ? System.nanoTime() : 0;
                    copies.add(lease.buffer(), target);
                    if (timed) {
                        long t2 = System.nanoTime();
                        mappingNanos += t1 - t0;
                        enqueueNanos += t2 - t1;
                    }
                }
            }
            Timeline.mark(Point.READ_FRAMES);
            for (Frame f : frames) {
                kinds.add(f.kind());
                lengths.add(f.length());
            }
            if (pulled > 0) {
                copying = true;
                long t3 = timed ? System.nanoTime() : 0;
                copies.synchronize();
                Timeline.mark(Point.READ_COPIED);
                long t4 = timed ? System.nanoTime() : 0;
                if (!peerProcess.isAlive()) {
                    throw new PeerClosedException("peer " + io.peer() + " (pid "
                            + handshake.peer().pid() + ") died while its device frames were being copied");
                }
                Timeline.mark(Point.READ_ALIVE);
                event.deviceFrames = pulled;
                if (timed) {
                    event.headerNanos = t3 - start - mappingNanos - enqueueNanos;
                    event.mappingNanos = mappingNanos;
                    event.copyNanos = enqueueNanos + t4 - t3;
                    event.livenessNanos = System.nanoTime() - t4;
                }
            }
            Serialized value = Serialized.receivedFrames(header, frames);
            return new ReceivedMessage(
                    value,
                    recorder.finish(
                            headerLength, kinds, lengths, mappings.stats().opens() - opensBefore));
        } catch (RuntimeException e) {
            copying = false;
            recorder.close();
            // The copies may still run into the frames: wait for them before the frames go back to their pools
            // (those not enqueued yet are dropped).
            for (DeviceStream stream : copies.used) {
                try {
                    stream.synchronize();
                } catch (RuntimeException suppressed) {
                    e.addSuppressed(suppressed);
                }
            }
            Frames.closeFrames(frames);
            throw e;
        } finally {
            io.endMessage();
            for (MappingCache.Lease lease : leases) {
                lease.close();
            }
        }
    }

    /**
     * The frame {@code index} of a message is received into, then in {@code frames} at {@code index}: pushed into the
     * arena ({@code referenceLength} 0), the loan allocated ahead for it (when {@code frames} has one there already;
     * one that a pushed frame takes the place of is closed), or allocated now, as its reference or its bytes begin:
     * a run of small device frames ({@link Frames#runLength}) as one block, their loans all added, so that many
     * frames cost one allocation per {@link Frames#RUN_BYTES} bytes (the peer gets at most that much allocated ahead
     * of the references it sent); any other frame alone, a host array frame as a fresh array
     * ({@link Frames#allocate(FrameDescriptor, int, TransportConfig, String, boolean, boolean)}).
     */
    private Frame receivingFrame(
            List<FrameDescriptor> descriptors, int index, int referenceLength, List<Frame> frames) {
        FrameDescriptor descriptor = descriptors.get(index);
        if (referenceLength == 0) {
            Frame pushed = pushedFrame(descriptor, index);
            if (index < frames.size()) {
                frames.set(index, pushed).buffer().close();
            } else {
                frames.add(pushed);
            }
            return pushed;
        }
        if (index < frames.size()) {
            return frames.get(index);
        }
        int run = Frames.runLength(descriptors, index);
        if (run > 1) {
            Frames.allocateRun(descriptors, index, run, config, io.peer(), true, frames);
            return frames.get(index);
        }
        Frame frame = Frames.allocate(descriptor, index, config, io.peer(), true, true);
        frames.add(frame);
        return frame;
    }

    /**
     * Receives the reference run that begins at device frame {@code first} (its marker read): reads the whole record
     * (bounded: at most {@value #REFERENCE_RUN_FRAMES} frames, each of the frames it covers a device frame of the
     * header, at most one allocation per frame, each handle at most {@value #MAX_HANDLE_BYTES} bytes) and checks its
     * tag before anything of it is used; checks each allocation as a single reference's ({@link #parseReference})
     * and each frame's range against its allocation's declared bytes; allocates the frames it covers (as
     * {@link #receivingFrame}) and enqueues their copies, leasing each allocation's mapping once for the run.
     *
     * @return the frames it covered
     */
    private int receiveRun(
            List<FrameDescriptor> descriptors,
            int first,
            List<Frame> frames,
            List<MappingCache.Lease> leases,
            CopyBatches copies) {
        ByteBuffer counts = ByteBuffer.allocate(8);
        io.readFully(counts, ioTimeoutNanos, SocketIo.NO_DEADLINE);
        int count = counts.getInt(0);
        int allocations = counts.getInt(4);
        if (count < 2 || count > REFERENCE_RUN_FRAMES || count > descriptors.size() - first) {
            throw new ProtocolViolationException("peer " + io.peer() + " sent a reference run of " + count
                    + " frames at frame " + first + " (expected: 2 to "
                    + Math.min(REFERENCE_RUN_FRAMES, descriptors.size() - first) + ")");
        }
        for (int k = first; k < first + count; k++) {
            if (descriptors.get(k).kind() != MemoryKind.DEVICE) {
                throw new ProtocolViolationException("peer " + io.peer() + " sent a reference run over frame " + k
                        + ", which its header describes as " + descriptors.get(k));
            }
        }
        if (allocations < 1 || allocations > count) {
            throw new ProtocolViolationException("peer " + io.peer() + " sent a reference run of " + count
                    + " frames in " + allocations + " allocations (expected: 1 to " + count + ")");
        }
        List<ByteBuffer> parts = new ArrayList<>(2 * allocations + 3);
        parts.add(ByteBuffer.allocate(2).putShort(0, RUN_MARKER));
        parts.add(counts.flip());
        ByteBuffer[] entries = new ByteBuffer[allocations];
        for (int a = 0; a < allocations; a++) {
            short length = readShort();
            int handleLength = Short.toUnsignedInt(length);
            if (handleLength == 0 || handleLength > MAX_HANDLE_BYTES) {
                throw new ProtocolViolationException(
                        "peer " + io.peer() + " sent an IPC handle of " + handleLength + " bytes in a reference run");
            }
            entries[a] = ByteBuffer.allocate(handleLength + 4 + 8);
            io.readFully(entries[a], ioTimeoutNanos, SocketIo.NO_DEADLINE);
            parts.add(ByteBuffer.allocate(2).putShort(0, length));
            parts.add(entries[a].flip());
        }
        ByteBuffer refs = ByteBuffer.allocate(12 * count);
        io.readFully(refs, ioTimeoutNanos, SocketIo.NO_DEADLINE);
        parts.add(refs.flip());
        if (open != null) {
            openTag("device-frame reference run", parts.toArray(ByteBuffer[]::new));
        }
        Device device = null;
        IpcHandle[] handles = new IpcHandle[allocations];
        MappingCache.Lease[] leased = new MappingCache.Lease[allocations];
        for (int k = 0; k < count; k++) {
            int index = first + k;
            DeviceBuffer target = (DeviceBuffer)
                    receivingFrame(descriptors, index, NOT_READ, frames).buffer();
            int a = refs.getInt(12 * k);
            long offset = refs.getLong(12 * k + 4);
            if (a < 0 || a >= allocations) {
                throw new ProtocolViolationException("peer " + io.peer() + " sent a reference run whose frame " + index
                        + " names allocation " + a + " of " + allocations);
            }
            if (target.device() != device) {
                device = target.device();
                Arrays.fill(leased, null); // the run's leases are through one device: another maps anew
            }
            if (handles[a] == null) {
                handles[a] = parseAllocation(entries[a], handleLength(entries[a]), device);
            }
            IpcHandle allocation = handles[a];
            if (offset < 0 || offset > allocation.length() - target.byteSize()) {
                throw new ProtocolViolationException("peer " + io.peer() + " sent an IPC reference outside its "
                        + "allocation: frame " + index + " at offset " + offset + ", " + target.byteSize()
                        + " bytes (expected: within the " + allocation.length() + " bytes of " + allocation + ")");
            }
            if (target.byteSize() > 0 && target.byteSize() <= PUSH_FRAME_BYTES) {
                pulledSmall = target;
                pulledSmallOrdinal = descriptors.get(index).deviceOrdinal();
            }
            if (leased[a] == null) {
                if (!leases.isEmpty() && mappings.heldAtBound()) {
                    releaseCopied(copies, leases);
                    Arrays.fill(leased, null);
                }
                leased[a] = lease(allocation, 0, allocation.length(), device);
                leases.add(leased[a]);
            }
            copies.add(leased[a].buffer().slice(offset, target.byteSize()), target);
        }
        return count;
    }

    /** The handle length of a reference run's allocation entry ({@code [handle][device: int32][bytes: int64]}). */
    private static int handleLength(ByteBuffer entry) {
        return entry.capacity() - 4 - 8;
    }

    /**
     * Waits for the copies enqueued so far and gives their mappings back, so that a message referencing more of the
     * sender's allocations than the cache keeps open ({@link MappingCache#heldAtBound}) holds no more than that.
     */
    private static void releaseCopied(CopyBatches copies, List<MappingCache.Lease> leases) {
        copies.synchronize();
        for (MappingCache.Lease lease : leases) {
            lease.close();
        }
        leases.clear();
    }

    /** A device frame's reference: the sender's allocation holding it and where in that allocation it lies. */
    private record Reference(IpcHandle allocation, long offset) {}

    /**
     * Reads the rest of a device frame's reference after its handle length {@code length},
     * {@code [handle][exporter's device: int32][allocation bytes: int64][offset in the allocation: int64]}, and its
     * tag when there are session keys (over the record's type {@code type} first, unless it is -1), checked before
     * anything of it is used.
     *
     * @return the reference after its handle length
     */
    private ByteBuffer readReferenceRest(short length, byte type, String what) {
        int handleLength = Short.toUnsignedInt(length);
        if (handleLength == 0 || handleLength > MAX_HANDLE_BYTES) {
            throw new ProtocolViolationException(
                    "peer " + io.peer() + " sent an IPC handle of " + handleLength + " bytes");
        }
        ByteBuffer rest = ByteBuffer.allocate(handleLength + 4 + 8 + 8);
        io.readFully(rest, ioTimeoutNanos, SocketIo.NO_DEADLINE);
        if (open != null) {
            ByteBuffer prefix = type == -1
                    ? ByteBuffer.allocate(2).putShort(0, length)
                    : ByteBuffer.allocate(3).put(0, type).putShort(1, length);
            openTag(what, prefix, rest.flip());
        }
        return rest;
    }

    /**
     * A device frame the peer pushed into this side's arena: its offset there (and tag) read, the bytes lent out of
     * the arena as the frame.
     */
    private Frame pushedFrame(FrameDescriptor descriptor, int index) {
        ByteBuffer offsetBytes = ByteBuffer.allocate(8);
        io.readFully(offsetBytes, ioTimeoutNanos, SocketIo.NO_DEADLINE);
        if (open != null) {
            openTag("pushed device-frame reference", ByteBuffer.allocate(2), offsetBytes.flip());
        }
        ReceiveArena arena = receiveArena;
        if (arena == null) {
            throw new ProtocolViolationException("peer " + io.peer() + " sent frame " + index
                    + " as pushed into a push arena"
                    + " this side never offered");
        }
        if (descriptor.deviceOrdinal() != arenaOrdinal) {
            throw new ProtocolViolationException("peer " + io.peer() + " pushed frame " + index + " (" + descriptor
                    + ") into"
                    + " the push arena offered for its device " + arenaOrdinal);
        }
        try {
            return new Frame(arena.lend(offsetBytes.getLong(0), descriptor.length()), true);
        } catch (IllegalArgumentException e) {
            throw new ProtocolViolationException(
                    "peer " + io.peer() + " pushed frame " + index + " (" + descriptor + ") badly: " + e.getMessage(),
                    e);
        }
    }

    /** Parses a reference {@link #readReferenceRest} read; {@code device} receives the frame. */
    private Reference parseReference(ByteBuffer rest, Device device) {
        int handleLength = rest.capacity() - 4 - 8 - 8;
        return new Reference(parseAllocation(rest, handleLength, device), rest.getLong(handleLength + 4 + 8));
    }

    /**
     * Parses the allocation a reference names, {@code [handle: handleLength bytes][exporter's device: int32]
     * [allocation bytes: int64]} at the start of {@code rest}, and refuses it unless its handle is well formed for
     * {@code device}'s platform and names an allocation of the peer itself where the platform's handles name their
     * exporter.
     */
    private IpcHandle parseAllocation(ByteBuffer rest, int handleLength, Device device) {
        byte[] handle = new byte[handleLength];
        rest.get(0, handle);
        int ordinal = rest.getInt(handleLength);
        long allocationBytes = rest.getLong(handleLength + 4);
        IpcHandle allocation;
        OptionalLong exporter;
        try {
            allocation = new IpcHandle(device.platform(), ordinal, handle, 0, allocationBytes);
            exporter = device.exportingProcess(allocation);
        } catch (IllegalArgumentException | InvalidHandleException e) {
            throw new ProtocolViolationException(
                    "peer " + io.peer() + " sent a malformed IPC reference: " + e.getMessage(), e);
        }
        if (exporter.isPresent() && exporter.getAsLong() != handshake.peer().pid()) {
            throw new ProtocolViolationException("peer " + io.peer() + " (pid "
                    + handshake.peer().pid()
                    + ") sent a reference"
                    + " to an allocation of process " + exporter.getAsLong() + ": a peer may send its own only");
        }
        return allocation;
    }

    /** A lease on the mapping of the reference's allocation, for {@code frame}'s bytes at its offset. */
    private MappingCache.Lease lease(Reference reference, DeviceBuffer frame) {
        return lease(reference.allocation(), reference.offset(), frame.byteSize(), frame.device());
    }

    /** A lease on {@code length} bytes at {@code offset} of {@code allocation}, mapped through {@code via}. */
    private MappingCache.Lease lease(IpcHandle allocation, long offset, long length, Device via) {
        try {
            return mappings.acquire(allocation, offset, length, via);
        } catch (IndexOutOfBoundsException e) {
            throw new ProtocolViolationException(
                    "peer " + io.peer() + " sent an IPC reference outside its allocation: " + e.getMessage(), e);
        } catch (InvalidHandleException e) {
            throw new ProtocolViolationException(
                    "peer " + io.peer()
                            + " sent an IPC reference that its device did not issue:"
                            + " " + e.getMessage(),
                    e);
        }
    }

    /**
     * A message's device-frame copies, each from the sender's bytes (mapped) into a frame, on the copy stream of the
     * device that maps the sender's memory: gathered while the message's references are read and enqueued together,
     * {@value #COPY_BATCH} at a time, so that the device starts on them while the rest of the message is read. On one
     * H200 a model of 10,000 arrays of 100 KiB took 10.5-13.9 µs an array so (three runs) against 16.6-19.1 with each
     * copy enqueued as its reference was read (2026-12-03); CUDA 13's {@code cuMemcpyBatchAsync} for each batch instead
     * was slower (15.5-16.2 µs), so the copies go one driver call each. A batch is one
     * {@link CopyEngine#copyAllAsync} (one count of its bytes; on the emulated device one piece of work for the
     * stream's thread instead of one per copy). Not thread-safe: the reader's.
     */
    private final class CopyBatches {
        /** Streams that copies were enqueued on. */
        final List<DeviceStream> used = new ArrayList<>(2);

        private final List<Copy> pending = new ArrayList<>();

        /** One gathered copy: {@code source} into the whole of {@code frame}, on {@code stream}. */
        private record Copy(DeviceBuffer source, DeviceBuffer frame, DeviceStream stream) {}

        void add(DeviceBuffer source, DeviceBuffer frame) {
            pending.add(new Copy(source, frame, copyStreams.computeIfAbsent(source.device(), Device::newStream)));
            if (pending.size() >= COPY_BATCH) {
                enqueue();
            }
        }

        /** Enqueues the copies gathered so far: a stream's consecutive ones as one {@link CopyEngine#copyAllAsync}. */
        void enqueue() {
            List<DeviceBuffer> sources = new ArrayList<>();
            List<DeviceBuffer> targets = new ArrayList<>();
            DeviceStream stream = null;
            for (Copy c : pending) {
                if (c.stream() != stream) {
                    enqueue(sources, targets, stream);
                    stream = c.stream();
                    if (!used.contains(stream)) {
                        used.add(stream);
                    }
                }
                sources.add(c.source());
                targets.add(c.frame());
            }
            enqueue(sources, targets, stream);
            pending.clear();
        }

        private static void enqueue(List<DeviceBuffer> sources, List<DeviceBuffer> targets, DeviceStream stream) {
            if (!sources.isEmpty()) {
                CopyEngine.copyAllAsync(sources, targets, stream);
                sources.clear();
                targets.clear();
            }
        }

        /** Enqueues the copies gathered so far and waits for every copy enqueued. */
        void synchronize() {
            enqueue();
            for (DeviceStream stream : used) {
                stream.synchronize();
            }
        }
    }

    private short readShort() {
        return (short) ((io.readByte(ioTimeoutNanos, SocketIo.NO_DEADLINE) & 0xff) << 8
                | io.readByte(ioTimeoutNanos, SocketIo.NO_DEADLINE) & 0xff);
    }

    @Override
    public ReceivedMessage receive(Duration timeout) {
        Timeline.mark(Point.RECEIVE_CALLED);
        receiveLock.lock();
        try {
            if (state.isClosed() && state.failure() == null) {
                throw state.closedError();
            }
            int seen = arrivals.get();
            Object item = received.poll();
            if (item == null) {
                long spinStart = System.nanoTime();
                while (arrivals.get() == seen && idle.keepSpinning(System.nanoTime() - spinStart, this::arriving)) {
                    Thread.onSpinWait();
                }
                item = received.poll();
            }
            try {
                if (item == null) {
                    item = timeout == null ? received.take() : received.poll(timeout.toNanos(), TimeUnit.NANOSECONDS);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new TransportException("interrupted while receiving on " + name, e);
            }
            if (item == null) {
                throw new TransportTimeoutException("no message from " + io.peer() + " within " + timeout);
            }
            if (item == END) {
                received.add(END);
                TransportException f = state.failure();
                if (f != null && failureDelivered.compareAndSet(false, true)) {
                    throw f;
                }
                throw state.closedError();
            }
            ReceivedMessage m = (ReceivedMessage) item;
            synchronized (readAhead) {
                queuedHostBytes -= m.metrics().hostFrameBytes() + m.metrics().pinnedFrameBytes();
                readAhead.notifyAll();
            }
            Timeline.mark(Point.RECEIVE_RETURNED);
            return m;
        } finally {
            receiveLock.unlock();
        }
    }

    /**
     * Whether the peer is copying a message of this side out of its memory (its consumed record, and often a reply,
     * will follow), or consumed one within {@link IdleStrategy#replyNanos()} (its reply may be on the way: on the H200
     * host a worker's acknowledgement of a 1 GiB model came ~0.3 ms after its consumed record, past the plain spin).
     */
    private boolean awaitingPeer() {
        return !awaitingConsumed.isEmpty() || System.nanoTime() - consumedNanos < idle.replyNanos();
    }

    /** Whether a message is likely to arrive soon: being copied in, a reply expected, or a record just read. */
    private boolean arriving() {
        return copying || awaitingPeer() || System.nanoTime() - lastRecordNanos < idle.spinNanos();
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
        if (refusal == null
                || !ConnectionState.runLocked(sends.lock(), () -> io.refuse(TYPE_REFUSED, sealedRefusal(refusal)))) {
            io.close();
        }
        sends.close();
        ReceiveArena arena = receiveArena;
        if (arena != null) {
            arena.end();
        }
        Outgoing out;
        while ((out = awaitingConsumed.poll()) != null) {
            out.fail(state.closedError());
        }
        synchronized (readAhead) {
            readAhead.notifyAll();
        }
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
        io.close(); // a refusal's wait for the peer ends now too
        sends.awaitEnd();
        ConnectionState.awaitEnd(reader);
        Object item;
        while ((item = received.poll()) != null) {
            if (item instanceof ReceivedMessage m) {
                m.close();
            }
        }
        received.add(END);
        List<AutoCloseable> streams = new ArrayList<>(copyStreams.values());
        copyStreams.clear();
        Closeables.closeAll(streams);
        endPushArena();
        mappings.close();
    }

    @Override
    public String toString() {
        return "IpcConnection[" + name + " to " + io.peer() + (state.isClosed() ? ", closed" : "") + ", " + mappings
                + "]";
    }
}
