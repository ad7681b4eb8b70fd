package io.cuwire.cluster;

import static java.lang.System.Logger.Level.ERROR;
import static java.lang.System.Logger.Level.INFO;
import static java.lang.System.Logger.Level.WARNING;

import io.cuwire.cluster.internal.Placement;
import io.cuwire.cluster.rpc.Endpoint;
import io.cuwire.cluster.rpc.Reply;
import io.cuwire.cluster.rpc.Request;
import io.cuwire.cluster.rpc.Values;
import io.cuwire.cluster.runtime.ModelCache;
import io.cuwire.cluster.runtime.ObjectStore;
import io.cuwire.cluster.runtime.PeerLog;
import io.cuwire.memory.Buffer;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyDirection;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.Device;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.MemoryKind;
import io.cuwire.memory.TransferStats;
import io.cuwire.serialize.DecodeTarget;
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
import io.cuwire.transport.ProtocolViolationException;
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
 * A model arriving in chunks ({@code BroadcastBegin}) belongs to the connection it came from: when that connection
 * breaks, the models still arriving on it are dropped and their memory released at once (once forwards of it to
 * other workers are done), and the client is told. The bytes allocated for arriving models and not yet filled are
 * bounded per worker by {@value #MAX_ASSEMBLY_BYTES_PROPERTY} (bytes; default: the device's total memory, so that
 * any model that fits the device is taken); a begin beyond it is refused with a {@link ClusterException}
 * ({@link BroadcastAssemblies}).
 *
 * <h2>Model cache</h2>
 * Broadcast models are cached by id, one version each ({@link ModelCache}, the Spark executor's cache too); a new
 * version retires the old one, which is closed once no running task uses it. When an allocation of the worker's
 * device memory would fail — a broadcast's frames, a value arriving, a task's result — the cache evicts its least
 * recently used model that no running task holds (used: cached, confirmed to a broadcast, or taken by a task), then
 * the allocation is tried again, until it fits or nothing is left
 * to evict ({@link BufferAllocator.Reclaimer}); a model in use is never evicted. The client's next broadcast of an
 * evicted model sends it again (it asks the worker first); a task given its handle meanwhile fails, saying it was
 * evicted. An allocation that fails even so names what holds the device's memory, this cache among the holders
 * ({@link io.cuwire.memory.DeviceMemoryReport}): a chunked broadcast (chain, tree) fails with that message; a model
 * sent whole ({@code CacheModel}) is allocated by the transport as it arrives, and a failure there breaks the client's
 * connection, so the worker stops and its last lines carry the message.
 *
 * <h2>Stop</h2>
 * A worker stops once, for the first of: the client's {@code Shutdown} request, the client's connection breaking, or
 * a failure of its own; the reason is logged (one line naming the client and the cause) and is its exit code
 * ({@link WorkerExit}). Stopping closes the listener, every connection (the client's, the peers' that connected, those
 * to peers), waits for their readers and the running tasks to end, frees the stored values, cached models and
 * broadcasts still arriving, and then closes the allocators, whose leak report (if any) is logged and makes the exit
 * {@link WorkerExit#LEAK}. Connections refused at the handshake and peers whose messages this worker refuses are
 * logged too, each once with the peer and the reason, at most 10 lines of a kind per 10 seconds
 * ({@link PeerLog}); the worker goes on serving its client. Only the client may ask for {@code Shutdown}.
 *
 * <h2>Requests</h2>
 * The kinds of {@link WorkerRequest}, dispatched by an exhaustive {@code switch}; every answer is a
 * {@link Reply} record under the request's id (a chunked broadcast's, under the broadcast's id, to the client):
 * <table>
 *   <caption>Requests a worker answers</caption>
 *   <tr><td>{@code Ping}</td><td>answers at once on the reader thread (heartbeat)</td></tr>
 *   <tr><td>{@code Peers}</td><td>the listening addresses of all workers, by index</td></tr>
 *   <tr><td>{@code Put}</td><td>stores the value; answers its {@link ObjectRef}</td></tr>
 *   <tr><td>{@code Get}</td><td>answers the stored value (client gather, or a peer's fetch)</td></tr>
 *   <tr><td>{@code Free}</td><td>closes and forgets stored values</td></tr>
 *   <tr><td>{@code Run}</td><td>runs a task, stores its result, answers the ref</td></tr>
 *   <tr><td>{@code Call}</td><td>runs a task and answers its result, storing nothing</td></tr>
 *   <tr><td>{@code CacheModel}, {@code HasModel}</td><td>caches a model sent whole (its encoded header and its
 *       frames); answers whether it holds a model's version ({@code Missing} if not)</td></tr>
 *   <tr><td>{@code BroadcastBegin}, {@code BroadcastChunk}</td><td>a model arriving in chunks down a chain or tree of
 *       workers: each chunk is copied into place and that slice forwarded to the children as it arrives; the
 *       acknowledgement names children that could not be reached</td></tr>
 *   <tr><td>{@code BroadcastAbort}</td><td>drops a model still arriving (a worker above failed)</td></tr>
 *   <tr><td>{@code Stats}</td><td>copy counters and memory in use ({@link WorkerStats})</td></tr>
 *   <tr><td>{@code Shutdown}</td><td>frees everything, closes the allocators (leaks are reported) and exits</td></tr>
 * </table>
 */
final class Worker implements Endpoint.Handler {
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
    private final ObjectStore store = new ObjectStore();
    private final AtomicLong nextRequest = new AtomicLong(1);
    private final ModelCache models;
    /** Broadcasts arriving in chunks (chain, tree). */
    private final BroadcastAssemblies assemblies;

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

    private final PeerLog refusals;

    private Worker(int index, int ordinal, byte[] secret) {
        this.index = index;
        this.ordinal = ordinal;
        Device d = Placement.device(ordinal);
        this.device = d.newAllocator("worker-" + index + "-device", BufferAllocator.UNLIMITED);
        this.host = BufferAllocator.host("worker-" + index + "-host", BufferAllocator.UNLIMITED);
        this.target = new DecodeTarget(device, host, Limits.DEFAULT);
        this.config = TransportConfig.builder()
                .secret(secret)
                .receiveInto(DeviceMap.of(host, device))
                .families(ClusterTypes.families())
                .build();
        this.models = new ModelCache("worker " + index, registry);
        this.refusals = new PeerLog(LOG, "cuwire worker " + index);
        this.assemblies = new BroadcastAssemblies(
                index,
                device,
                host,
                maxAssemblyBytes(d),
                registry,
                target,
                models,
                executor,
                new BroadcastAssemblies.Links() {
                    @Override
                    public Endpoint client() {
                        return client;
                    }

                    @Override
                    public Endpoint peer(int worker) {
                        return Worker.this.peer(worker);
                    }
                });
        device.addReclaimer(models::evictOne);
        d.addMemoryHolder(models::describe);
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
        throw new IllegalArgumentException(
                MAX_ASSEMBLY_BYTES_PROPERTY + "=" + v + " (expected: a positive number of " + "bytes)");
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
            w.device.close(); // nothing was allocated yet: it cannot listen
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
                break; // closed by the stop already, or by nobody this worker knows
            } catch (TransportException e) {
                if (stopping.get() == null) {
                    refusals.connectionRefused(e);
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
                    client = new Endpoint(
                            "worker-" + index + "-client",
                            c,
                            registry,
                            target,
                            this,
                            Worker::refused,
                            e -> new ClusterException("client connection broken", e),
                            e -> clientBroken(c, e));
                    client.start();
                } else {
                    accepted.removeIf(p -> !p.isOpen() && p.awaitReader(Duration.ZERO));
                    // A peer's broadcast assemblies go with it (senderGone); its break is logged (peerBroken).
                    AtomicReference<Endpoint> peer = new AtomicReference<>();
                    peer.set(new Endpoint(
                            "worker-" + index + "-peer",
                            c,
                            registry,
                            target,
                            this,
                            Worker::refused,
                            e -> new ClusterException("peer connection broken", e),
                            e -> {
                                assemblies.senderGone(peer.get(), e);
                                peerBroken(c, e);
                            }));
                    accepted.add(peer.get());
                    peer.get().start();
                }
            }
        }
        while (true) {
            LockSupport.park(this); // the stopping thread halts the JVM
        }
    }

    /**
     * Serves a request. What a decoded request carries owns its memory (device arrays on this worker's device): each
     * kind keeps what it stores and frees the rest once done with it. A request that is none of this worker's kinds
     * (another server's, in a registry that knows it) is refused, its values freed.
     */
    @Override
    public void onRequest(Endpoint from, Request request) {
        if (!(request instanceof WorkerRequest r)) {
            Values.close(request);
            from.reply(Reply.failed(
                    request.id(),
                    new ClusterException(
                            "worker " + index + " serves no " + registry.nameOf(request.getClass()) + " request")));
            return;
        }
        switch (r) {
            case WorkerRequest.Ping p -> from.reply(Reply.ok(p.id(), null));
            case WorkerRequest.Peers p -> {
                peerAddresses = p.addresses();
                from.reply(Reply.ok(p.id(), null));
            }
            case WorkerRequest.Put p -> from.reply(Reply.ok(p.id(), new ObjectRef(index, store.put(p.value()))));
            case WorkerRequest.Get g -> {
                Object v = store.get(g.ref().id());
                from.reply(
                        v == null
                                ? Reply.failed(
                                        g.id(),
                                        new ClusterException("no object " + g.ref() + " on worker " + index
                                                + " (freed, or never stored)"))
                                : Reply.ok(g.id(), v));
            }
            case WorkerRequest.Free f -> {
                for (long id : f.objects()) {
                    store.free(id);
                }
                from.reply(Reply.ok(f.id(), null));
            }
            case WorkerRequest.TaskRequest t -> {
                io.cuwire.cluster.Task task;
                try {
                    task = tasks.get(t.task());
                } catch (RuntimeException e) {
                    Values.close(t.args());
                    from.reply(Reply.failed(t.id(), e));
                    return;
                }
                executor.execute(() -> runTask(from, t, task));
            }
            case WorkerRequest.CacheModel m -> cacheModel(from, m);
            case WorkerRequest.HasModel h ->
                from.reply(
                        models.holds(h.model(), h.version())
                                ? Reply.ok(h.id(), null)
                                : Reply.missing(
                                        h.id(),
                                        "worker " + index + " does not hold model " + h.model() + " v" + h.version()));
            case WorkerRequest.BroadcastBegin b -> assemblies.begin(from, b);
            case WorkerRequest.BroadcastChunk c -> assemblies.chunk(from, c);
            case WorkerRequest.BroadcastAbort a -> assemblies.abort(a);
            case WorkerRequest.Stats st -> from.reply(Reply.ok(st.id(), stats()));
            case WorkerRequest.Shutdown sh -> {
                if (from != client) {
                    refusals.requestRefused("refused a shutdown request from peer " + from.connection()
                            + ": only the client may shut the worker down");
                    from.reply(Reply.failed(
                            sh.id(), new ClusterException("only worker " + index + "'s client may " + "shut it down")));
                    return;
                }
                stop(WorkerExit.CLOSED, "the client closed the cluster", from.send(Reply.ok(sh.id(), null)));
            }
        }
    }

    private void runTask(Endpoint from, WorkerRequest.TaskRequest r, io.cuwire.cluster.Task task) {
        List<Object> owned = new ArrayList<>();
        List<ModelCache.Lease> used = new ArrayList<>();
        Object result = null;
        int resolved = 0;
        try {
            List<Object> args = new ArrayList<>(r.args().size());
            for (Object o : r.args()) {
                args.add(resolve(o, owned, used));
                resolved++;
            }
            result = task.run(new TaskContext(index, ordinal, device, host), args);
        } catch (RuntimeException | Error e) {
            Values.close(owned);
            // the arguments after one that did not resolve were never taken: theirs is the worker's to free too
            Values.close(r.args()
                    .subList(Math.min(resolved + 1, r.args().size()), r.args().size()));
            release(used);
            from.reply(Reply.failed(r.id(), e));
            return;
        }
        Values.close(owned);
        release(used);
        switch (r) {
            case WorkerRequest.Run run -> {
                if (result == null) { // nothing to store: answered, where the store's refusal leaves it unanswered
                    from.reply(Reply.failed(
                            run.id(),
                            new ClusterException("task " + run.task() + " returned nothing " + "to store on worker "
                                    + index + " (run it with call)")));
                    return;
                }
                long id = store.put(result);
                from.reply(Reply.ok(run.id(), new ObjectRef(index, id)));
            }
            case WorkerRequest.Call call -> {
                Object value = result;
                from.send(Reply.ok(call.id(), value)).whenComplete((m, e) -> Values.close(value));
            }
        }
    }

    /** A task argument as the task sees it; what the worker must close afterwards goes into {@code owned}. */
    private Object resolve(Object arg, List<Object> owned, List<ModelCache.Lease> used) {
        switch (arg) {
            case ObjectRef ref
            when ref.worker() == index -> {
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
                ModelCache.Lease m = models.acquire(h.id(), h.version(), h.toString(), ClusterException::new);
                used.add(m);
                return m.value();
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
            reply = peer.call(new WorkerRequest.Get(nextRequest.getAndIncrement(), ref))
                    .join();
        } catch (CompletionException e) {
            // the task's failure names what failed (the peer's RemoteDecodeException, a value this side cannot decode)
            throw e.getCause() instanceof RuntimeException r ? r : e;
        }
        return switch (reply) {
            case Reply.Ok ok -> ok.value();
            case Reply.Failed f ->
                throw new ClusterException(
                        "fetching " + ref + " from worker " + ref.worker() + ": " + f.errorType() + ": " + f.error());
            case Reply.Missing m ->
                throw new ClusterException(
                        "fetching " + ref + " from worker " + ref.worker() + ": missing: " + m.why());
            case Reply.Undecodable u ->
                throw new ClusterException("fetching " + ref + " from worker " + ref.worker() + ": undecodable: "
                        + u.errorType() + ": " + u.error()); // completed exceptionally instead
        };
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
                    throw new ClusterException(
                            "worker " + index + " knows no worker " + other + " (peers: " + addresses.size() + ")");
                }
                String address = addresses.get(other);
                Connection c = Transports.forAddress(address).connect(address, config);
                AtomicReference<Endpoint> self = new AtomicReference<>();
                self.set(new Endpoint(
                        "worker-" + index + "-to-" + other,
                        c,
                        registry,
                        target,
                        this,
                        Worker::refused,
                        t -> new ClusterException("connection to worker " + other + " broken", t),
                        t -> {
                            assemblies.senderGone(self.get(), t);
                            peerBroken(c, t);
                        }));
                e = self.get().start();
                peers.put(other, e);
            }
            return e;
        }
    }

    // ---------------------------------------------------------------- model cache

    private static void release(List<ModelCache.Lease> used) {
        for (ModelCache.Lease m : used) {
            m.close();
        }
    }

    /**
     * Caches the model that the encoded header and the frames of {@code m} make (the client's one serialized form of
     * it, as a chunked broadcast's assembly is made).
     */
    private void cacheModel(Endpoint from, WorkerRequest.CacheModel m) {
        Serialized s;
        try {
            Serialized.Header header = Serialized.parseHeader(m.header(), Limits.DEFAULT);
            List<ModelFrame> frames = m.frames();
            List<Buffer> buffers = new ArrayList<>(frames.size());
            for (int i = 0; i < frames.size() && i < header.frames().size(); i++) {
                boolean device = header.frames().get(i).kind() == MemoryKind.DEVICE;
                if ((frames.get(i).buffer().kind() == MemoryKind.DEVICE) != device) {
                    throw new ClusterException("model " + m.model() + " v" + m.version() + ": frame " + i + " is not "
                            + "a " + (device ? "device" : "host") + " frame, as its header describes");
                }
                buffers.add(frames.get(i).buffer());
            }
            s = Serialized.received(header, buffers); // checks the count and each length
        } catch (RuntimeException e) {
            Values.close(m);
            from.reply(Reply.failed(m.id(), e));
            return;
        }
        Object value;
        try (s) {
            value = registry.deserialize(s, target);
        } catch (RuntimeException e) {
            from.reply(Reply.failed(m.id(), e));
            return;
        }
        models.put(m.model(), m.version(), value, () -> from.reply(Reply.ok(m.id(), null)));
    }

    // ---------------------------------------------------------------- stats and shutdown

    private WorkerStats stats() {
        TransferStats t = CopyEngine.totals();
        return new WorkerStats(
                index,
                t.bytes(CopyDirection.D2H),
                t.bytes(CopyDirection.H2D),
                t.bytes(CopyDirection.D2D),
                t.bytes(CopyDirection.PEER),
                device.allocatedBytes(),
                host.allocatedBytes(),
                store.size(),
                models.size(),
                models.evictions());
    }

    // ---------------------------------------------------------------- stopping

    /** The client's connection broke: the worker stops, saying why (nothing, if it is stopping already). */
    private void clientBroken(Connection c, Throwable cause) {
        stop(exitFor(cause), "client " + c + " (pid " + c.peer().pid() + "): " + PeerLog.describe(cause), null);
    }

    /**
     * A peer's connection broke: logged (rate-limited) unless it simply closed, or this worker is stopping; the
     * worker goes on serving its client.
     */
    private void peerBroken(Connection c, Throwable cause) {
        if (stopping.get() == null) {
            refusals.peerBroken(c, cause);
        }
    }

    /** What a call fails with when the peer could not decode its request. */
    private static RuntimeException refused(Reply.Undecodable u) {
        return new RemoteDecodeException(u.errorType(), u.error(), u.path());
    }

    /** The exit for a client connection that broke because of {@code cause}. */
    static WorkerExit exitFor(Throwable cause) {
        return switch (PeerLog.unwrap(cause)) {
            case ProtocolViolationException p -> WorkerExit.PROTOCOL_VIOLATION;
            case SerializationException s -> WorkerExit.PROTOCOL_VIOLATION;
            case PeerClosedException p -> WorkerExit.CLIENT_LOST;
            case TransportTimeoutException t -> WorkerExit.CLIENT_LOST;
            case MessageRefusedException m -> WorkerExit.CLIENT_LOST;
            case ConnectionClosedException c -> WorkerExit.CLIENT_LOST;
            default -> WorkerExit.ERROR;
        };
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
        LOG.log(
                reason == WorkerExit.CLOSED ? INFO : WARNING,
                "cuwire worker " + index + ": " + why + "; stopping " + "(exit " + reason.code() + ": "
                        + reason.meaning() + ")");
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
            endpoints.add(p); // opened by a task meanwhile
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
            LOG.log(
                    WARNING,
                    "cuwire worker " + index + ": " + String.join(", ", running) + " still running after " + STOP_WAIT
                            + "; freeing the memory anyway");
        }
        store.close();
        models.close();
        try {
            assemblies.discardAll().get(STOP_WAIT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (ExecutionException | TimeoutException e) {
            LOG.log(
                    WARNING,
                    "cuwire worker " + index + ": broadcasts still arriving were not freed within " + STOP_WAIT + ": "
                            + e);
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
