package io.cuwire.cluster.internal;

import static java.lang.System.Logger.Level.ERROR;
import static java.lang.System.Logger.Level.INFO;
import static java.lang.System.Logger.Level.WARNING;

import io.cuwire.cluster.ClusterException;
import io.cuwire.cluster.ModelHandle;
import io.cuwire.cluster.ObjectRef;
import io.cuwire.cluster.TaskContext;
import io.cuwire.cluster.TaskRegistry;
import io.cuwire.cluster.WorkerExit;
import io.cuwire.cluster.rpc.Endpoint;
import io.cuwire.cluster.rpc.RateLimitedLog;
import io.cuwire.cluster.rpc.Reply;
import io.cuwire.cluster.rpc.Request;
import io.cuwire.cluster.rpc.Values;
import io.cuwire.memory.Buffer;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyDirection;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.DType;
import io.cuwire.memory.Device;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.MemoryKind;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import io.cuwire.memory.TransferStats;
import io.cuwire.serialize.DecodeTarget;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.FrameDescriptor;
import io.cuwire.serialize.Limits;
import io.cuwire.serialize.SerializationException;
import io.cuwire.serialize.Serialized;
import io.cuwire.serialize.TypeRegistry;
import io.cuwire.transport.Connection;
import io.cuwire.transport.ConnectionClosedException;
import io.cuwire.transport.DeviceMap;
import io.cuwire.transport.Listener;
import io.cuwire.transport.MessageRefusedException;
import io.cuwire.transport.PeerClosedException;
import io.cuwire.transport.ProtocolException;
import io.cuwire.transport.TransportConfig;
import io.cuwire.transport.TransportException;
import io.cuwire.transport.TransportTimeoutException;
import io.cuwire.transport.Transports;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import jdk.jfr.FlightRecorder;
import jdk.jfr.Recording;
import jdk.jfr.RecordingState;

/**
 * A worker process: one device, an object store, a model cache and the tasks of its {@link TaskRegistry}, serving
 * the client and its peers over one listener.
 *
 * <h2>Start</h2>
 * {@code Worker index deviceOrdinal listenAddress}; the cluster secret (hex) is the first line of standard input. It
 * listens, prints {@value #LISTENING} and the bound address on one line of standard output, and takes the first
 * connection as the client's. When the client's connection breaks, the worker exits: no orphans. So does it when its
 * client sends a message whose decoding exceeds its budget ({@code Limits.maxDecodeWork}) or fails with an
 * {@link Error}: the endpoint answers the request with the typed error, then closes the connection.
 *
 * <h2>Broadcast assemblies</h2>
 * A model arriving in chunks ({@code bcast-begin}) belongs to the connection it came from: when that connection
 * breaks, the models still arriving on it are dropped and their memory released at once (once forwards of it to
 * other workers are done), and the client is told. The bytes allocated for arriving models and not yet filled are
 * bounded per worker by {@value #MAX_ASSEMBLY_BYTES_PROPERTY} (bytes; default: the device's total memory, so that
 * any model that fits the device is taken); a begin beyond it is refused with a {@link ClusterException}.
 *
 * <h2>Model cache</h2>
 * Broadcast models are cached by id, one version each; a new version retires the old one, which is closed once no
 * running task uses it. When an allocation of the worker's device memory would fail — a broadcast's frames, a value
 * arriving, a task's result — the cache evicts its least recently used model that no running task holds (used: cached,
 * confirmed to a broadcast, or taken by a task), then the allocation is tried again, until it fits or nothing is left
 * to evict ({@link BufferAllocator.Reclaimer}); a model in use is never evicted. The client's next broadcast of an
 * evicted model sends it again (it asks the worker first); a task given its handle meanwhile fails, saying it was
 * evicted. An allocation that fails even so names what holds the device's memory, this cache among the holders
 * ({@link io.cuwire.memory.DeviceMemoryReport}): a chunked broadcast (chain, tree) fails with that message; a model
 * sent whole ({@code model}) is allocated by the transport as it arrives, and a failure there breaks the client's
 * connection, so the worker stops and its last lines carry the message.
 *
 * <h2>Stop</h2>
 * A worker stops once, for the first of: the client's {@code shutdown} request, the client's connection breaking, or
 * a failure of its own; the reason is logged (one line naming the client and the cause) and is its exit code
 * ({@link WorkerExit}). Stopping closes the listener, every connection (the client's, the peers' that connected, those
 * to peers), waits for their readers and the running tasks to end, frees the stored values, cached models and
 * broadcasts still arriving, and then closes the allocators, whose leak report (if any) is logged and makes the exit
 * {@link WorkerExit#LEAK}. Connections refused at the handshake and peers whose messages this worker refuses are
 * logged too, each once with the peer and the reason, at most 10 lines of a kind per 10 seconds
 * ({@link RateLimitedLog}); the worker goes on serving its client. Only the client may ask for {@code shutdown}.
 *
 * <h2>Operations</h2>
 * <table>
 *   <caption>Requests a worker answers</caption>
 *   <tr><td>{@code ping}</td><td>answers at once on the reader thread (heartbeat)</td></tr>
 *   <tr><td>{@code peers [addresses]}</td><td>the listening addresses of all workers, by index</td></tr>
 *   <tr><td>{@code put [value]}</td><td>stores the value; answers its {@link ObjectRef}</td></tr>
 *   <tr><td>{@code get [ref]}</td><td>answers the stored value (client gather, or a peer's fetch)</td></tr>
 *   <tr><td>{@code free [ids]}</td><td>closes and forgets stored values</td></tr>
 *   <tr><td>{@code run name args}</td><td>runs a task, stores its result, answers the ref</td></tr>
 *   <tr><td>{@code call name args}</td><td>runs a task and answers its result, storing nothing</td></tr>
 *   <tr><td>{@code model [id, version, value or nil]}</td><td>caches a model; with nil, answers whether it has
 *       it ({@code missing} if not)</td></tr>
 *   <tr><td>{@code bcast-begin}, {@code bcast-chunk}</td><td>a model arriving in chunks down a chain or tree of
 *       workers: each chunk is copied into place and that slice forwarded to the children as it arrives; the
 *       acknowledgement names children that could not be reached</td></tr>
 *   <tr><td>{@code bcast-abort}</td><td>drops a model still arriving (a worker above failed)</td></tr>
 *   <tr><td>{@code stats}</td><td>copy counters and memory in use</td></tr>
 *   <tr><td>{@code shutdown}</td><td>frees everything, closes the allocators (leaks are reported) and exits</td></tr>
 * </table>
 */
public final class Worker implements Endpoint.Handler {
    /** The first word of the line a worker prints when it listens. */
    public static final String LISTENING = "cuwire-worker-listening";
    /** System property: the most bytes allocated for broadcasts arriving in chunks and not yet filled. */
    public static final String MAX_ASSEMBLY_BYTES_PROPERTY = "cuwire.worker.maxAssemblyBytes";
    /** How long stopping waits for the reply to a shutdown request, each reader and the running tasks. */
    private static final Duration STOP_WAIT = Duration.ofSeconds(10);
    private static final System.Logger LOG = System.getLogger("io.cuwire.cluster.worker");

    private final int index;
    private final int ordinal;
    private final BufferAllocator<DeviceBuffer> device;
    private final BufferAllocator<HostBuffer> host;
    private final TypeRegistry registry = ClusterTypes.registry();
    private final TaskRegistry tasks = TaskRegistry.standard();
    private final DecodeTarget target;
    private final TransportConfig config;
    private final ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor();
    private final Map<Long, Object> store = new ConcurrentHashMap<>();
    private final AtomicLong nextId = new AtomicLong(1);
    private final AtomicLong nextRequest = new AtomicLong(1);
    private final Map<Long, CachedModel> models = new ConcurrentHashMap<>();
    /** The cache's clock: a model's last use is the tick it was cached, confirmed or taken at. */
    private final AtomicLong uses = new AtomicLong();
    /** The version of each model evicted and not cached since, for the message of a task that asks for it. */
    private final Map<Long, Long> evicted = new ConcurrentHashMap<>();
    private final AtomicLong evictions = new AtomicLong();
    /** Broadcasts arriving in chunks, by sender and broadcast id; changed under {@code assemblies}' lock. */
    private final Map<AssemblyKey, Assembly> assemblies = new ConcurrentHashMap<>();
    /** Broadcasts dropped before they began here, and those being decoded; guarded by {@code assemblies}. */
    private final Set<Long> aborted = new HashSet<>();
    private final Set<Long> finishing = new HashSet<>();
    /** Bytes allocated for arriving broadcasts and not yet filled, and their bound; guarded by {@code assemblies}. */
    private long unfilledBytes;
    private final long maxAssemblyBytes;
    private final Map<Integer, Endpoint> peers = new ConcurrentHashMap<>();
    private volatile List<String> peerAddresses = List.of();
    private volatile Endpoint client;
    private volatile Listener listener;
    /**
     * Endpoints of the peers that connected to this worker, until their readers ended (pruned as new ones come);
     * additions and the stop's snapshot hold its lock.
     */
    private final Set<Endpoint> accepted = ConcurrentHashMap.newKeySet();
    /** Why the worker stops, once it does; set once. */
    private final AtomicReference<WorkerExit> stopping = new AtomicReference<>();
    private final RateLimitedLog refusals = new RateLimitedLog(LOG, 10, Duration.ofSeconds(10));

    private Worker(int index, int ordinal, byte[] secret) {
        this.index = index;
        this.ordinal = ordinal;
        Device d = Placement.device(ordinal);
        this.device = d.newAllocator("worker-" + index + "-device", BufferAllocator.UNLIMITED);
        this.host = BufferAllocator.host("worker-" + index + "-host", BufferAllocator.UNLIMITED);
        this.target = new DecodeTarget(device, host, Limits.DEFAULT);
        this.maxAssemblyBytes = maxAssemblyBytes(d);
        this.config = TransportConfig.builder().secret(secret).receiveInto(DeviceMap.of(host, device))
                .families(ClusterTypes.families()).build();
        device.addReclaimer(this::evictOne);
        d.addMemoryHolder(this::describeCache);
    }

    /** {@value #MAX_ASSEMBLY_BYTES_PROPERTY}, else the device's total memory. */
    private static long maxAssemblyBytes(Device d) {
        String v = System.getProperty(MAX_ASSEMBLY_BYTES_PROPERTY);
        if (v == null) {
            return d.totalMemory();
        }
        try {
            long bytes = Long.parseLong(v.strip());
            if (bytes > 0) {
                return bytes;
            }
        } catch (NumberFormatException e) {
            // refused below
        }
        throw new IllegalArgumentException(MAX_ASSEMBLY_BYTES_PROPERTY + "=" + v + " (expected: a positive number of "
                + "bytes)");
    }

    public static void main(String[] args) throws Exception {
        if (System.getProperty("java.util.logging.config.file") == null) {
            // One line per log record, as the cuwire command writes them: the client keeps the worker's last lines.
            System.setProperty("java.util.logging.SimpleFormatter.format", "%4$s: %5$s%6$s%n");
        }
        int index = Integer.parseInt(args[0]);
        int ordinal = Integer.parseInt(args[1]);
        String address = args[2];
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        String line = in.readLine();
        if (line == null) {
            System.err.println("cuwire worker " + index + ": no cluster secret on standard input");
            System.exit(WorkerExit.USAGE.code());
        }
        try {
            serve(index, ordinal, address, HexFormat.of().parseHex(line.strip()), System.out);
        } catch (RuntimeException e) {
            System.err.println("cuwire worker " + index + ": cannot start: " + e.getMessage());
            System.exit(WorkerExit.START_FAILED.code());
        }
    }

    /**
     * Runs a worker in this JVM: listens on {@code address}, prints {@value #LISTENING} and the bound address to
     * {@code out}, serves its client, and halts the JVM with a {@link WorkerExit} code when it stops (see "Stop").
     * Never returns normally.
     *
     * @throws RuntimeException if it cannot start (the address cannot be bound, the device cannot be used)
     */
    public static void serve(int index, int ordinal, String address, byte[] secret, PrintStream out) {
        Worker w = new Worker(index, ordinal, secret);
        try {
            w.serve(address, out);
        } catch (RuntimeException e) {
            w.device.close();  // nothing was allocated yet: it cannot listen
            w.host.close();
            throw e;
        }
    }

    private void serve(String address, PrintStream out) {
        Listener l = Transports.forAddress(address).listen(address, config);
        listener = l;
        out.println(LISTENING + " " + l.address());
        out.flush();
        while (stopping.get() == null) {
            Connection c;
            try {
                c = l.accept();
            } catch (ConnectionClosedException e) {
                stop(WorkerExit.ERROR, "its listener at " + l.address() + " closed: " + e.getMessage(), null);
                break;  // closed by the stop already, or by nobody this worker knows
            } catch (TransportException e) {
                if (stopping.get() == null) {
                    refusals.log(WARNING, "connection", "cuwire worker " + index + ": refused a connection: "
                            + e.getMessage());
                }
                continue;
            } catch (RuntimeException e) {
                stop(WorkerExit.ERROR, "accepting connections at " + l.address() + " failed: " + e, null);
                break;
            }
            synchronized (accepted) {
                if (stopping.get() != null) {
                    c.close();
                    break;
                }
                if (client == null) {
                    client = new Endpoint("worker-" + index + "-client", c, registry, target, this,
                            e -> new ClusterException("client connection broken", e), e -> clientBroken(c, e));
                    client.start();
                } else {
                    accepted.removeIf(p -> !p.isOpen() && p.awaitReader(Duration.ZERO));
                    // A peer's broadcast assemblies go with it (senderGone); its break is logged (peerBroken).
                    AtomicReference<Endpoint> peer = new AtomicReference<>();
                    peer.set(new Endpoint("worker-" + index + "-peer", c, registry, target, this,
                            e -> new ClusterException("peer connection broken", e), e -> {
                                senderGone(peer.get(), e);
                                peerBroken(c, e);
                            }));
                    accepted.add(peer.get());
                    peer.get().start();
                }
            }
        }
        while (true) {
            LockSupport.park(this);  // the stopping thread halts the JVM
        }
    }

    @Override
    public void onRequest(Endpoint from, Request r) {
        List<Object> a = r.args();
        switch (r.op()) {
            case "ping" -> from.reply(Reply.ok(r.id(), null));
            case "peers" -> {
                List<String> list = new ArrayList<>();
                for (Object o : (List<?>) a.getFirst()) {
                    list.add((String) o);
                }
                peerAddresses = List.copyOf(list);
                from.reply(Reply.ok(r.id(), null));
            }
            case "put" -> {
                long id = nextId.getAndIncrement();
                store.put(id, a.getFirst());
                from.reply(Reply.ok(r.id(), new ObjectRef(index, id)));
            }
            case "get" -> {
                ObjectRef ref = (ObjectRef) a.getFirst();
                Object v = store.get(ref.id());
                from.reply(v == null && !store.containsKey(ref.id())
                        ? Reply.failed(r.id(), new ClusterException("no object " + ref + " on worker " + index
                                + " (freed, or never stored)"))
                        : Reply.ok(r.id(), v));
            }
            case "free" -> {
                for (Object o : (List<?>) a.getFirst()) {
                    Values.close(store.remove((Long) o));
                }
                from.reply(Reply.ok(r.id(), null));
            }
            case "run", "call" -> {
                io.cuwire.cluster.Task task;
                try {
                    task = tasks.get(r.name());
                } catch (RuntimeException e) {
                    Values.close(a);
                    from.reply(Reply.failed(r.id(), e));
                    return;
                }
                executor.execute(() -> runTask(from, r, task));
            }
            case "model" -> cacheModel(from, r);
            case "bcast-begin" -> beginBroadcast(from, r);
            case "bcast-chunk" -> chunk(from, r);
            case "bcast-abort" -> abortBroadcast(r);
            case "stats" -> from.reply(Reply.ok(r.id(), stats()));
            case "shutdown" -> {
                if (from != client) {
                    refusals.log(WARNING, "peer", "cuwire worker " + index + ": refused a shutdown request from peer "
                            + from.connection() + ": only the client may shut the worker down");
                    from.reply(Reply.failed(r.id(), new ClusterException("only worker " + index + "'s client may "
                            + "shut it down")));
                    return;
                }
                stop(WorkerExit.CLOSED, "the client closed the cluster", from.send(Reply.ok(r.id(), null)));
            }
            default -> {
                Values.close(a);
                from.reply(Reply.failed(r.id(), new ClusterException("unknown operation '" + r.op() + "'")));
            }
        }
    }

    private void runTask(Endpoint from, Request r, io.cuwire.cluster.Task task) {
        List<Object> owned = new ArrayList<>();
        List<CachedModel> used = new ArrayList<>();
        Object result = null;
        try {
            List<Object> args = new ArrayList<>(r.args().size());
            for (Object o : r.args()) {
                args.add(resolve(o, owned, used));
            }
            result = task.run(new TaskContext(index, ordinal, device, host), args);
        } catch (RuntimeException | Error e) {
            Values.close(owned);
            release(used);
            from.reply(Reply.failed(r.id(), e));
            return;
        }
        Values.close(owned);
        release(used);
        if (r.op().equals("run")) {
            long id = nextId.getAndIncrement();
            store.put(id, result);
            from.reply(Reply.ok(r.id(), new ObjectRef(index, id)));
        } else {
            Object value = result;
            from.send(Reply.ok(r.id(), value)).whenComplete((m, e) -> Values.close(value));
        }
    }

    /** A task argument as the task sees it; what the worker must close afterwards goes into {@code owned}. */
    private Object resolve(Object arg, List<Object> owned, List<CachedModel> used) {
        switch (arg) {
            case ObjectRef ref when ref.worker() == index -> {
                Object v = store.get(ref.id());
                if (v == null) {
                    throw new ClusterException("no object " + ref + " on worker " + index + " (freed?)");
                }
                return v;
            }
            case ObjectRef ref -> {
                Object v = fetch(ref);
                owned.add(v);
                return v;
            }
            case ModelHandle h -> {
                CachedModel m = models.get(h.id());
                if (m == null || m.version != h.version() || !m.tryAcquire(uses.incrementAndGet())) {
                    Long gone = evicted.get(h.id());
                    throw new ClusterException(h + " is not in worker " + index + "'s cache (cached: "
                            + (m == null || m.isClosed() ? "none" : "v" + m.version) + ")"
                            + (gone != null && gone == h.version() ? ": it was evicted to make room in the device's "
                            + "memory; broadcast it again" : ""));
                }
                used.add(m);
                return m.value;
            }
            default -> {
                owned.add(arg);
                return arg;
            }
        }
    }

    /** Fetches a value from the worker that holds it, worker to worker. */
    private Object fetch(ObjectRef ref) {
        Endpoint peer = peer(ref.worker());
        Reply reply;
        try {
            reply = peer.call(new Request(nextRequest.getAndIncrement(), "get", null, List.of(ref))).join();
        } catch (CompletionException e) {
            // the task's failure names what failed (the peer's RemoteDecodeException, a value this side cannot decode)
            throw e.getCause() instanceof RuntimeException r ? r : e;
        }
        if (!Reply.OK.equals(reply.status())) {
            throw new ClusterException("fetching " + ref + " from worker " + ref.worker() + ": " + reply.errorType()
                    + ": " + reply.error());
        }
        return reply.value();
    }

    private Endpoint peer(int other) {
        Endpoint e = peers.get(other);
        if (e != null && e.isOpen()) {
            return e;
        }
        synchronized (peers) {
            e = peers.get(other);
            if (e == null || !e.isOpen()) {
                List<String> addresses = peerAddresses;
                if (other < 0 || other >= addresses.size()) {
                    throw new ClusterException("worker " + index + " knows no worker " + other + " (peers: "
                            + addresses.size() + ")");
                }
                String address = addresses.get(other);
                Connection c = Transports.forAddress(address).connect(address, config);
                AtomicReference<Endpoint> self = new AtomicReference<>();
                self.set(new Endpoint("worker-" + index + "-to-" + other, c, registry, target, this,
                        t -> new ClusterException("connection to worker " + other + " broken", t), t -> {
                            senderGone(self.get(), t);
                            peerBroken(c, t);
                        }));
                e = self.get().start();
                peers.put(other, e);
            }
            return e;
        }
    }

    // ---------------------------------------------------------------- model cache

    /**
     * A cached model, the tasks using it and its last use. A retired version is closed once no task uses it; an
     * evicted one is claimed (no task may take it any more) while none does, then closed.
     */
    private final class CachedModel {
        /** {@code users} once claimed for closing: no task may take it. */
        private static final int CLAIMED = Integer.MIN_VALUE;
        /** {@code deviceBytes} until first asked. */
        private static final long NOT_YET = -2;

        final long id;
        final long version;
        final Object value;
        private final AtomicInteger users = new AtomicInteger();
        private final AtomicBoolean closed = new AtomicBoolean();
        volatile long lastUse;
        volatile boolean retired;
        /** Bytes of its device frames, worked out when first asked; -1 if they cannot be. */
        private volatile long deviceBytes = NOT_YET;

        CachedModel(long id, long version, Object value) {
            this.id = id;
            this.version = version;
            this.value = value;
            this.lastUse = uses.incrementAndGet();
        }

        /** Takes it for a task (used at tick {@code now}), unless it was claimed for closing. */
        boolean tryAcquire(long now) {
            for (int u = users.get(); u >= 0; u = users.get()) {
                if (users.compareAndSet(u, u + 1)) {
                    lastUse = now;
                    return true;
                }
            }
            return false;
        }

        void release() {
            if (users.decrementAndGet() == 0 && retired && claim()) {
                closeOnce();
            }
        }

        void retire() {
            retired = true;
            if (claim()) {
                closeOnce();
            }
        }

        /** Whether a running task holds it. */
        boolean inUse() {
            return users.get() > 0;
        }

        boolean isClosed() {
            return users.get() < 0 || closed.get();
        }

        /** Claims it for closing if no task holds it: no task can take it afterwards. */
        boolean claim() {
            return users.compareAndSet(0, CLAIMED);
        }

        void closeOnce() {
            if (closed.compareAndSet(false, true)) {
                Values.close(value);
            }
        }

        /**
         * The bytes of its device frames (what its {@code cuda}-family form references, no copy made), or -1 when
         * that form cannot be made; worked out once, while holding it.
         */
        long deviceBytes() {
            long b = deviceBytes;
            if (b == NOT_YET && tryAcquire(lastUse)) {
                try (Serialized s = registry.serialize(value, Family.CUDA)) {
                    b = 0;
                    for (FrameDescriptor d : s.frameDescriptors()) {
                        b += d.kind() == MemoryKind.DEVICE ? d.length() : 0;
                    }
                } catch (RuntimeException e) {
                    b = -1;
                } finally {
                    release();
                }
                deviceBytes = b;
            }
            return b;
        }
    }

    private static void release(List<CachedModel> used) {
        for (CachedModel m : used) {
            m.release();
        }
    }

    private void cacheModel(Endpoint from, Request r) {
        long id = (Long) r.args().get(0);
        long version = (Long) r.args().get(1);
        Object value = r.args().get(2);
        if (value == null) {
            CachedModel m = models.get(id);
            boolean held = m != null && m.version == version && !m.isClosed();
            if (held) {
                m.lastUse = uses.incrementAndGet();
            }
            from.reply(held ? Reply.ok(r.id(), null) : new Reply(r.id(), Reply.MISSING, null, null, null));
            return;
        }
        CachedModel old = cache(id, version, value);
        from.reply(Reply.ok(r.id(), null));
        retire(old);
    }

    /** Caches {@code value} as model {@code id} v{@code version}; returns the version it replaced, or {@code null}. */
    private CachedModel cache(long id, long version, Object value) {
        evicted.remove(id);
        return models.put(id, new CachedModel(id, version, value));
    }

    /**
     * The reclaimer of the worker's device memory: evicts the least recently used model no running task holds;
     * whether there was one.
     */
    private boolean evictOne(long bytes) {
        while (true) {
            CachedModel lru = null;
            for (CachedModel m : models.values()) {
                if (!m.inUse() && !m.isClosed() && (lru == null || m.lastUse < lru.lastUse)) {
                    lru = m;
                }
            }
            if (lru == null) {
                return false;
            }
            long size = lru.deviceBytes();
            if (!lru.claim()) {
                continue;  // a task took it meanwhile: look again
            }
            models.remove(lru.id, lru);
            evicted.put(lru.id, lru.version);
            evictions.incrementAndGet();
            lru.closeOnce();
            LOG.log(INFO, "cuwire worker " + index + ": evicted model " + lru.id + " v" + lru.version + " ("
                    + (size < 0 ? "its device bytes unknown" : size + " bytes of device frames") + ", least recently "
                    + "used, no task holding it) to make room for an allocation of " + bytes + " bytes");
            return true;
        }
    }

    /** The model cache's line in the device's memory report; {@code null} when it is empty. */
    private String describeCache() {
        int count = 0;
        int inUse = 0;
        long bytes = 0;
        boolean unknown = false;
        for (CachedModel m : models.values()) {
            if (m.isClosed()) {
                continue;
            }
            count++;
            inUse += m.inUse() ? 1 : 0;
            long b = m.deviceBytes();
            unknown |= b < 0;
            bytes += Math.max(0, b);
        }
        if (count == 0 && evictions.get() == 0) {
            return null;
        }
        return "model cache of worker " + index + ": " + count + " model(s), " + bytes + " bytes of device frames"
                + (unknown ? " (and models whose size is unknown)" : "") + ", " + inUse + " in use by running tasks "
                + "(never evicted), " + (count - inUse) + " evictable; " + evictions.get() + " evicted so far";
    }

    /**
     * Releases a replaced version ({@code null}: none), after the acknowledgement of its successor so that it stays
     * off the broadcast's critical path.
     */
    private static void retire(CachedModel old) {
        if (old != null) {
            old.retire();
        }
    }

    // ---------------------------------------------------------------- forwarded broadcast (chain, tree)

    /** An arriving broadcast's key: the connection it arrives on, and its id (the client's request id). */
    private record AssemblyKey(Endpoint sender, long bid) {
    }

    /**
     * A model arriving in chunks: its header, one buffer per frame (the model's own memory once complete), the
     * workers it is forwarded to, and the forwards still in flight. Guarded by its own lock.
     */
    private final class Assembly {
        final AssemblyKey key;
        final long bid;
        final long id;
        final long version;
        final Serialized.Header header;
        final List<Buffer> frames = new ArrayList<>();
        final List<Child> children;
        final List<CompletableFuture<?>> forwards = new ArrayList<>();
        /** Bytes not yet filled; counted in the worker's {@code unfilledBytes} while positive and not done. */
        long missing;
        boolean done;

        /** Parses the header and reserves its frames' bytes in the worker's budget; the caller holds its lock. */
        Assembly(AssemblyKey key, long id, long version, byte[] headerBytes, List<Child> children) {
            this.key = key;
            this.bid = key.bid();
            this.id = id;
            this.version = version;
            this.header = Serialized.parseHeader(headerBytes, Limits.DEFAULT);
            this.children = children;
            long total = 0;
            for (FrameDescriptor d : header.frames()) {
                total += d.length();  // each at most Limits.maxFrameBytes, at most maxFrames of them: no overflow
            }
            if (total > maxAssemblyBytes - unfilledBytes) {
                throw new ClusterException("worker " + index + " refused broadcast " + bid + " of model " + id + " v"
                        + version + ": its " + total + " bytes would make " + (unfilledBytes + total) + " bytes "
                        + "allocated for arriving broadcasts and not yet filled, beyond the worker's budget of "
                        + maxAssemblyBytes + " (" + MAX_ASSEMBLY_BYTES_PROPERTY + ")");
            }
            try {
                for (FrameDescriptor d : header.frames()) {
                    frames.add(d.kind() == MemoryKind.DEVICE ? device.allocate(d.length()) : host.allocate(d.length()));
                }
            } catch (RuntimeException e) {
                Values.close(frames);
                throw e;
            }
            missing = total;
            unfilledBytes += total;
        }

        /** {@code bytes} were filled in; the caller holds this assembly's lock. */
        void filled(long bytes) {
            long counted = Math.max(0, Math.min(bytes, missing));
            missing -= bytes;
            synchronized (assemblies) {
                unfilledBytes -= counted;
            }
        }

        /** No more bytes will be filled in: what is missing leaves the budget; the caller holds this lock. */
        void settle() {
            done = true;
            synchronized (assemblies) {
                unfilledBytes -= Math.max(0, missing);
            }
            missing = 0;
        }

        /** Frees the frames once no forward reads them any more; the future completes when they are. */
        CompletableFuture<Void> discard() {
            return CompletableFuture.allOf(forwards.toArray(CompletableFuture[]::new))
                    .handle((v, e) -> {
                        Values.close(frames);
                        return null;
                    });
        }
    }

    /** A worker this one forwards to, its own subtree, and whether forwarding to it broke. */
    private static final class Child {
        final long worker;
        final List<Object> subtree;
        Endpoint endpoint;
        volatile boolean broken;

        Child(long worker, List<Object> subtree) {
            this.worker = worker;
            this.subtree = subtree;
        }
    }

    /**
     * {@code bcast-begin [id, version, header, children]}: {@code children} is a list of {@code [worker,
     * children]} pairs, the tree below this worker (one child each for a chain). The begin goes on to each child at
     * once; a child that cannot be reached is reported in this worker's acknowledgement.
     */
    private void beginBroadcast(Endpoint from, Request r) {
        List<Object> a = r.args();
        long id = (Long) a.get(0);
        long version = (Long) a.get(1);
        byte[] headerBytes = (byte[]) a.get(2);
        List<Child> children = new ArrayList<>();
        for (Object o : (List<?>) a.get(3)) {
            List<?> pair = (List<?>) o;
            children.add(new Child((Long) pair.get(0), new ArrayList<>((List<?>) pair.get(1))));
        }
        Assembly asm;
        AssemblyKey key = new AssemblyKey(from, r.id());
        synchronized (assemblies) {
            if (aborted.remove(r.id())) {
                return;
            }
            try {
                if (assemblies.containsKey(key)) {
                    throw new ClusterException("broadcast " + r.id() + " is already arriving on this connection");
                }
                asm = new Assembly(key, id, version, headerBytes, children);
            } catch (RuntimeException e) {
                client.reply(Reply.failed(r.id(), e));
                return;
            }
            assemblies.put(key, asm);
        }
        if (!from.isOpen()) {
            senderGone(from, new ClusterException("closed while the broadcast began"));  // its drop may have run first
            return;
        }
        for (Child c : children) {
            try {
                c.endpoint = peer((int) c.worker);
                c.endpoint.send(new Request(r.id(), "bcast-begin", null, List.of(id, version, headerBytes,
                        c.subtree))).whenComplete((m, e) -> c.broken |= e != null);
            } catch (RuntimeException e) {
                c.broken = true;
            }
        }
        synchronized (asm) {
            maybeFinish(asm);
        }
    }

    /**
     * {@code bcast-chunk [frame, offset, bytes]}: copied into place, then that slice of the model's own frame goes
     * on to each child (the received chunk is freed at once, and the children see one allocation per frame).
     */
    private void chunk(Endpoint from, Request r) {
        List<Object> a = r.args();
        Assembly asm = assemblies.get(new AssemblyKey(from, r.id()));
        try (NdArray chunk = (NdArray) a.get(2)) {
            if (asm == null) {
                return;
            }
            int frame = ((Long) a.get(0)).intValue();
            long offset = (Long) a.get(1);
            synchronized (asm) {
                if (asm.done) {
                    return;
                }
                try {
                    Buffer target = asm.frames.get(frame);
                    CopyEngine.copy(chunk.buffer(), 0, target, offset, chunk.byteSize());
                    for (Child c : asm.children) {
                        if (!c.broken) {
                            NdArray slice = NdArray.view(target, offset, DType.UINT8, Order.C, chunk.byteSize());
                            CompletableFuture<?> f = c.endpoint.send(new Request(r.id(), "bcast-chunk", null,
                                    List.of((long) frame, offset, slice)), Family.CUDA);
                            asm.forwards.add(f.whenComplete((m, e) -> {
                                slice.close();
                                c.broken |= e != null;
                            }));
                        }
                    }
                    asm.filled(chunk.byteSize());
                    maybeFinish(asm);
                } catch (RuntimeException e) {
                    asm.settle();
                    assemblies.remove(asm.key);
                    asm.discard();
                    client.reply(Reply.failed(r.id(), e));
                }
            }
        }
    }

    /** Once every byte is in place and every forward settled: the model goes to the cache and the client hears. */
    private void maybeFinish(Assembly asm) {
        if (asm.missing != 0 || asm.done) {
            return;
        }
        asm.settle();
        CompletableFuture.allOf(asm.forwards.toArray(CompletableFuture[]::new)).whenCompleteAsync((v, e) -> {
            synchronized (assemblies) {
                if (assemblies.remove(asm.key) == null) {
                    return;
                }
                finishing.add(asm.bid);
            }
            List<Object> unreached = new ArrayList<>();
            for (Child c : asm.children) {
                if (c.broken) {
                    unreached.add(c.worker);
                }
            }
            try (Serialized s = Serialized.received(asm.header, asm.frames)) {
                CachedModel old = cache(asm.id, asm.version, registry.deserialize(s, target));
                client.reply(Reply.ok(asm.bid, unreached));
                retire(old);
            } catch (RuntimeException x) {
                client.reply(Reply.failed(asm.bid, x));
            } finally {
                synchronized (assemblies) {
                    finishing.remove(asm.bid);
                }
            }
        }, executor);
    }

    /**
     * {@code bcast-abort [bid, id, version, why]}: the client gave up on this worker's copy (a worker above it in the
     * tree failed). Answers the broadcast's own id: ok if the model is already here, else failed; a begin that
     * arrives later is dropped.
     */
    private void abortBroadcast(Request r) {
        long bid = (Long) r.args().get(0);
        long id = (Long) r.args().get(1);
        long version = (Long) r.args().get(2);
        String why = (String) r.args().get(3);
        Assembly asm = null;
        synchronized (assemblies) {
            for (AssemblyKey key : assemblies.keySet()) {
                if (key.bid() == bid) {
                    asm = assemblies.remove(key);  // one per broadcast: the client's connection or a parent's
                    break;
                }
            }
            if (asm == null) {
                if (finishing.contains(bid)) {
                    return;
                }
                CachedModel m = models.get(id);
                if (m != null && m.version == version && !m.isClosed()) {
                    client.reply(Reply.ok(bid, List.of()));
                    return;
                }
                aborted.add(bid);
            }
        }
        if (asm != null) {
            synchronized (asm) {
                asm.settle();
                asm.discard();
            }
        }
        client.reply(Reply.failed(bid, new ClusterException("worker " + index + " dropped the broadcast of model "
                + id + " v" + version + ": " + why)));
    }

    /**
     * A connection broke: the broadcasts still arriving on it are dropped and their memory freed (once no forward
     * reads it), and the client hears that each failed.
     */
    private void senderGone(Endpoint sender, Throwable why) {
        List<Assembly> arriving = new ArrayList<>();
        synchronized (assemblies) {
            for (Assembly asm : assemblies.values()) {
                if (asm.key.sender() == sender) {
                    arriving.add(asm);
                }
            }
        }
        for (Assembly asm : arriving) {
            synchronized (asm) {
                if (asm.done) {
                    continue;  // every byte is here (or it was dropped already): it finishes as it would have
                }
                asm.settle();
                synchronized (assemblies) {
                    assemblies.remove(asm.key);
                }
                asm.discard();
            }
            Endpoint c = client;
            if (c != null && c != sender) {
                c.reply(Reply.failed(asm.bid, new ClusterException("worker " + index + " dropped the broadcast of "
                        + "model " + asm.id + " v" + asm.version + ": the connection it arrived on broke: " + why)));
            }
        }
    }

    // ---------------------------------------------------------------- stats and shutdown

    private List<Object> stats() {
        TransferStats t = CopyEngine.totals();
        List<Object> out = new ArrayList<>();
        for (CopyDirection d : CopyDirection.values()) {
            out.add(t.bytes(d));
        }
        out.add(device.allocatedBytes());
        out.add(host.allocatedBytes());
        out.add((long) store.size());
        out.add((long) models.size());
        out.add(evictions.get());
        return out;
    }

    // ---------------------------------------------------------------- stopping

    /** The client's connection broke: the worker stops, saying why (nothing, if it is stopping already). */
    private void clientBroken(Connection c, Throwable cause) {
        stop(exitFor(cause), "client " + c + " (pid " + c.peer().pid() + "): " + describe(cause), null);
    }

    /**
     * A peer's connection broke: logged (rate-limited) unless it simply closed, or this worker is stopping; the
     * worker goes on serving its client.
     */
    private void peerBroken(Connection c, Throwable cause) {
        Throwable t = unwrap(cause);
        if (stopping.get() != null || t instanceof PeerClosedException || t instanceof ConnectionClosedException) {
            return;
        }
        String what = t instanceof ProtocolException ? "refused peer " : "lost peer ";
        refusals.log(WARNING, "peer", "cuwire worker " + index + ": " + what + c + " (pid " + c.peer().pid() + "): "
                + describe(t));
    }

    /** The exit for a client connection that broke because of {@code cause}. */
    static WorkerExit exitFor(Throwable cause) {
        return switch (unwrap(cause)) {
            case ProtocolException p -> WorkerExit.PROTOCOL_VIOLATION;
            case SerializationException s -> WorkerExit.PROTOCOL_VIOLATION;
            case PeerClosedException p -> WorkerExit.CLIENT_LOST;
            case TransportTimeoutException t -> WorkerExit.CLIENT_LOST;
            case MessageRefusedException m -> WorkerExit.CLIENT_LOST;
            case ConnectionClosedException c -> WorkerExit.CLIENT_LOST;
            default -> WorkerExit.ERROR;
        };
    }

    private static Throwable unwrap(Throwable e) {
        return e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
    }

    private static String describe(Throwable t) {
        Throwable e = unwrap(t);
        return e.getClass().getSimpleName() + ": " + e.getMessage();
    }

    /**
     * Stops the worker once, for {@code reason} ({@code why} says more), on a thread of its own: first waits for
     * {@code after} (the reply to a shutdown request; {@code null}: nothing), then as the class comment says, and
     * halts the JVM. Later calls do nothing.
     */
    private void stop(WorkerExit reason, String why, CompletableFuture<?> after) {
        if (!stopping.compareAndSet(null, reason)) {
            return;
        }
        LOG.log(reason == WorkerExit.CLOSED ? INFO : WARNING, "cuwire worker " + index + ": " + why + "; stopping "
                + "(exit " + reason.code() + ": " + reason.meaning() + ")");
        Thread.ofPlatform().name("cuwire-worker-" + index + "-stop").start(() -> {
            int exit = WorkerExit.ERROR.code();
            try {
                exit = teardown(reason, after);
            } catch (RuntimeException | Error e) {
                LOG.log(ERROR, "cuwire worker " + index + ": stopping failed: " + e, e);
            } finally {
                refusals.flush();
                System.out.flush();
                System.err.flush();
                stopRecordings();
                Runtime.getRuntime().halt(exit);
            }
        });
    }

    /** Frees everything in order (see the class comment); returns the exit code. */
    private int teardown(WorkerExit reason, CompletableFuture<?> after) {
        if (after != null) {
            try {
                after.get(STOP_WAIT.toMillis(), TimeUnit.MILLISECONDS);
            } catch (ExecutionException | TimeoutException e) {
                // the client went before the reply left, or it is stuck: stop anyway
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        Listener l = listener;
        if (l != null) {
            l.close();
        }
        List<Endpoint> endpoints = new ArrayList<>();
        synchronized (accepted) {
            endpoints.addAll(accepted);
            if (client != null) {
                endpoints.add(client);
            }
        }
        endpoints.addAll(peers.values());
        for (Endpoint e : endpoints) {
            e.close();
        }
        executor.shutdownNow();
        boolean tasksEnded;
        try {
            tasksEnded = executor.awaitTermination(STOP_WAIT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            tasksEnded = false;
        }
        for (Endpoint p : peers.values()) {
            endpoints.add(p);  // opened by a task meanwhile
            p.close();
        }
        List<String> running = new ArrayList<>();
        if (!tasksEnded) {
            running.add("tasks");
        }
        for (Endpoint e : endpoints) {
            if (!e.awaitReader(STOP_WAIT)) {
                running.add(e.name() + "'s reader");
            }
        }
        if (!running.isEmpty()) {
            LOG.log(WARNING, "cuwire worker " + index + ": " + String.join(", ", running) + " still running after "
                    + STOP_WAIT + "; freeing the memory anyway");
        }
        for (Object v : store.values()) {
            Values.close(v);
        }
        store.clear();
        for (CachedModel m : models.values()) {
            m.closeOnce();
        }
        models.clear();
        List<CompletableFuture<Void>> discarded = new ArrayList<>();
        for (Assembly a : assemblies.values()) {
            discarded.add(a.discard());
        }
        assemblies.clear();
        try {
            CompletableFuture.allOf(discarded.toArray(CompletableFuture[]::new)).get(STOP_WAIT.toMillis(),
                    TimeUnit.MILLISECONDS);
        } catch (ExecutionException | TimeoutException e) {
            LOG.log(WARNING, "cuwire worker " + index + ": broadcasts still arriving were not freed within "
                    + STOP_WAIT + ": " + e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        int exit = reason.code();
        for (BufferAllocator<?> a : List.of(device, host)) {
            try {
                a.close();
            } catch (RuntimeException e) {
                LOG.log(ERROR, "cuwire worker " + index + ": " + e.getMessage());
                exit = WorkerExit.LEAK.code();
            }
        }
        return exit;
    }

    /**
     * Stops the JFR recordings that write to a file (e.g. {@code -XX:StartFlightRecording=filename=...} given to the
     * worker JVMs), so that they reach their files: {@code halt} runs no shutdown hooks, JFR's dump among them.
     */
    private static void stopRecordings() {
        if (!FlightRecorder.isInitialized()) {
            return;
        }
        for (Recording r : FlightRecorder.getFlightRecorder().getRecordings()) {
            if (r.getDestination() != null && r.getState() == RecordingState.RUNNING) {
                try {
                    r.stop();
                } catch (RuntimeException e) {
                    System.err.println("cuwire worker: JFR recording " + r.getName() + " not written: " + e);
                }
            }
        }
    }
}
