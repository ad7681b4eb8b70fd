package io.cuwire.cluster;

import io.cuwire.cluster.internal.BroadcastEvent;
import io.cuwire.cluster.rpc.Endpoint;
import io.cuwire.cluster.rpc.Reply;
import io.cuwire.cluster.rpc.Values;
import io.cuwire.memory.Buffer;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.HostBuffer;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.Frame;
import io.cuwire.serialize.Serialized;
import io.cuwire.serialize.TypeRegistry;
import io.cuwire.serialize.UnserializableException;
import io.cuwire.transport.IdleStrategy;
import java.lang.ref.WeakReference;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.WeakHashMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongFunction;

/**
 * The client of a {@link LocalCluster}: puts data on workers, runs registered tasks there, brings results back and
 * broadcasts models.
 *
 * <h2>Values and ownership</h2>
 * Values sent ({@link #scatter}, task arguments, models) are serialized through the cluster's type registry: device
 * arrays travel as device frames, so partitions and models stay on the devices. The caller keeps what it sent open
 * until the call's future completes. Values that come back ({@link #gather}, {@link #call}) are new objects in the
 * client's memory, owned by the caller. Values on the workers live until {@link #free}.
 *
 * <h2>Models</h2>
 * {@link #broadcast} gives each model object one id for the client's lifetime and a version that goes up when the
 * model's serialized form changed since its last broadcast: a refit replaces the fitted arrays, which changes it.
 * The check compares the model's header and the identity of its array buffers, so writing into a broadcast model's
 * arrays in place is not seen: broadcast a new model object (or refit) instead. Workers cache models by
 * {@code (id, version)} and drop older versions; broadcasting an unchanged model sends only its identity.
 *
 * <h2>Failures</h2>
 * A future fails with a {@link ClusterException} when the worker could not serve the call:
 * {@link WorkerLostException} when the worker is gone (at once for a worker already lost),
 * {@link UnknownTaskException} or {@link RemoteTaskException} when the worker refused or failed the request, and
 * {@link RemoteDecodeException} (a {@code RemoteTaskException} with the field path) when the worker could not decode
 * it. It fails with a {@link io.cuwire.serialize.SerializationException} when this side could not: an argument that
 * does not serialize ({@link UnserializableException}: nothing was sent), or a result whose type this side's
 * registry does not know ({@link io.cuwire.serialize.SerializationException#path()} says where). The worker stays
 * usable after a decode failure on either side. Thread-safe.
 */
public final class Client {
    private static final String UNKNOWN_TASK = UnknownTaskException.class.getSimpleName();

    private final List<RemoteWorker> workers;
    private final TypeRegistry registry;
    private final BufferAllocator<DeviceBuffer> memory;
    private final BufferAllocator<HostBuffer> hostMemory;
    /** How this client waits for a worker's acknowledgement: the transports' default (spin, then park). */
    private final IdleStrategy idle = IdleStrategy.fromProperty();

    private final AtomicLong nextRequest = new AtomicLong(1);
    private final AtomicLong nextModel = new AtomicLong(1);
    private final Map<Object, Tracked> models = new WeakHashMap<>();
    private final BroadcastSender.Links links = new BroadcastSender.Links() {
        @Override
        public Endpoint endpoint(int worker) {
            return remote(worker).endpoint();
        }

        @Override
        public long nextRequestId() {
            return nextRequest.getAndIncrement();
        }

        @Override
        public TypeRegistry registry() {
            return registry;
        }
    };

    /** A model's identity, last version and what it looked like then. */
    private static final class Tracked {
        final long id;
        long version;
        byte[] header;
        List<WeakReference<Buffer>> buffers = List.of();
        final Set<Integer> holders = new HashSet<>();

        Tracked(long id) {
            this.id = id;
        }
    }

    Client(
            List<RemoteWorker> workers,
            TypeRegistry registry,
            BufferAllocator<DeviceBuffer> memory,
            BufferAllocator<HostBuffer> hostMemory) {
        this.workers = List.copyOf(workers);
        this.registry = registry;
        this.memory = memory;
        this.hostMemory = hostMemory;
    }

    /**
     * The client's device memory: where values that come back and the merged estimators live (device 0 of this
     * process). Never closed by the cluster, so that gathered values outlive it.
     */
    public BufferAllocator<DeviceBuffer> memory() {
        return memory;
    }

    /** Host bytes the client holds: frames received into host memory, not yet freed. */
    long hostBytes() {
        return hostMemory.allocatedBytes();
    }

    /** The number of workers. */
    public int workers() {
        return workers.size();
    }

    /** Whether worker {@code worker} is alive as far as the client knows. */
    public boolean isAlive(int worker) {
        return remote(worker).isAlive();
    }

    private RemoteWorker remote(int worker) {
        if (worker < 0 || worker >= workers.size()) {
            throw new IllegalArgumentException(
                    "worker: " + worker + " (expected: 0 <= worker < " + workers.size() + ")");
        }
        return workers.get(worker);
    }

    /** Sends the request {@code request} makes of a new id to a worker; the reply's value, or the typed failure. */
    CompletableFuture<Object> request(int worker, LongFunction<WorkerRequest> request) {
        RemoteWorker w = remote(worker);
        if (w.lost() != null) {
            return w.failed();
        }
        return w.endpoint().call(request.apply(nextRequest.getAndIncrement())).thenApply(Client::valueOf);
    }

    private static Object valueOf(Reply reply) {
        return switch (reply) {
            case Reply.Ok ok -> ok.value();
            // the worker's TaskRegistry refused the name: the cluster's own type, known by its name on the wire
            case Reply.Failed f when UNKNOWN_TASK.equals(f.errorType()) -> throw new UnknownTaskException(f.error());
            case Reply.Failed f -> throw new RemoteTaskException(String.valueOf(f.errorType()), f.error());
            case Reply.Missing m -> throw new RemoteTaskException("missing", m.why());
            // the endpoint fails the call with a RemoteDecodeException instead of completing it with this
            case Reply.Undecodable u -> throw new RemoteDecodeException(u.errorType(), u.error(), u.path());
        };
    }

    // ---------------------------------------------------------------- data

    /**
     * Puts partition {@code i} on worker {@code i mod workers} and waits until all are stored.
     *
     * @return the refs, in the order of {@code partitions}
     */
    public List<ObjectRef> scatter(List<?> partitions) {
        List<CompletableFuture<ObjectRef>> futures = new ArrayList<>();
        for (int i = 0; i < partitions.size(); i++) {
            futures.add(put(i % workers.size(), partitions.get(i)));
        }
        return joinAll(futures);
    }

    /** Stores {@code value} on worker {@code worker}. */
    public CompletableFuture<ObjectRef> put(int worker, Object value) {
        return request(worker, id -> new WorkerRequest.Put(id, value)).thenApply(ObjectRef.class::cast);
    }

    /**
     * Runs {@code task} on {@code worker} with {@code args} and keeps its result there.
     *
     * @param args values, {@link ObjectRef}s (of any worker: fetched worker to worker) and {@link ModelHandle}s
     */
    public <R> CompletableFuture<ObjectRef> submit(int worker, TaskType<R> task, Object... args) {
        return request(worker, id -> new WorkerRequest.Run(id, task.name(), Arrays.asList(args)))
                .thenApply(ObjectRef.class::cast);
    }

    /** Runs {@code task} on {@code worker} with {@code args} and brings its result back; nothing is stored. */
    public <R> CompletableFuture<R> call(int worker, TaskType<R> task, Object... args) {
        return request(worker, id -> new WorkerRequest.Call(id, task.name(), Arrays.asList(args)))
                .thenApply(task.resultType()::cast);
    }

    /** The value {@code ref} names, copied to the client. */
    public CompletableFuture<Object> fetch(ObjectRef ref) {
        return request(ref.worker(), id -> new WorkerRequest.Get(id, ref));
    }

    /** The values {@code refs} name, in order; waits for all. */
    public List<Object> gather(List<ObjectRef> refs) {
        List<CompletableFuture<Object>> futures = new ArrayList<>();
        for (ObjectRef r : refs) {
            futures.add(fetch(r));
        }
        return joinAll(futures);
    }

    /** Like {@link #gather(List)}, checked against {@code type}. */
    public <T> List<T> gather(List<ObjectRef> refs, Class<T> type) {
        List<T> out = new ArrayList<>();
        for (Object o : gather(refs)) {
            out.add(type.cast(o));
        }
        return out;
    }

    /** Frees the values on their workers (closing their memory there); waits for the live workers. */
    public void free(List<ObjectRef> refs) {
        Map<Integer, List<Long>> byWorker = new TreeMap<>();
        for (ObjectRef r : refs) {
            byWorker.computeIfAbsent(r.worker(), w -> new ArrayList<>()).add(r.id());
        }
        List<CompletableFuture<Object>> futures = new ArrayList<>();
        byWorker.forEach((w, ids) -> {
            if (remote(w).isAlive()) {
                futures.add(request(w, id -> new WorkerRequest.Free(id, ids)));
            }
        });
        joinAll(futures);
    }

    // ---------------------------------------------------------------- models

    /** Broadcasts {@code model} to every live worker with the default options. */
    public ModelHandle broadcast(Object model) {
        return broadcast(model, BroadcastOptions.DEFAULT).handle();
    }

    /**
     * Broadcasts {@code model} to every live worker: serialized once with the {@code cuda} family (the change check's
     * form is what is sent; a {@code host} or {@code java} broadcast serializes it once more, for the send); a worker
     * that holds this version gets only its identity; the others get the frames, from the client in turn or down a
     * chain or tree of workers ({@link BroadcastOptions.Strategy}).
     *
     * @throws WorkerLostException if a worker was lost on the way (naming it, and which workers hold the model);
     *     the other workers got the model or nothing, and hold no memory for it
     */
    public BroadcastResult broadcast(Object model, BroadcastOptions options) {
        Objects.requireNonNull(model, "model");
        long start = System.nanoTime();
        Tracked t;
        synchronized (models) {
            t = models.computeIfAbsent(model, m -> new Tracked(nextModel.getAndIncrement()));
        }
        synchronized (t) {
            BroadcastEvent event = new BroadcastEvent();
            try (Probe probe = probe(model, options.family())) {
                return broadcast(model, options, t, probe, event, start);
            }
        }
    }

    /** {@link #broadcast(Object, BroadcastOptions)} of {@code t}'s model, with its change check's form. */
    private BroadcastResult broadcast(
            Object model, BroadcastOptions options, Tracked t, Probe probe, BroadcastEvent event, long start) {
        track(t, probe.form());
        long tracked = System.nanoTime();
        ModelHandle handle = new ModelHandle(t.id, t.version);
        List<Integer> need = new ArrayList<>();
        List<Integer> live = new ArrayList<>();
        for (RemoteWorker w : workers) {
            // isAlive, not only lost() == null: a worker whose connection broke or whose process is gone must
            // not be a link of the next broadcast even before the client's reader marks it lost (a broadcast that
            // lost it can end on a report from the worker above it).
            if (w.isAlive()) {
                live.add(w.index());
            }
        }
        int hits = 0;
        List<CompletableFuture<Object>> checks = new ArrayList<>();
        List<Integer> checked = new ArrayList<>();
        for (int w : live) {
            if (t.holders.contains(w)) {
                checks.add(request(w, id -> new WorkerRequest.HasModel(id, t.id, t.version))
                        .handle((v, e) -> e == null ? Boolean.TRUE : null));
                checked.add(w);
            } else {
                need.add(w);
            }
        }
        for (int i = 0; i < checks.size(); i++) {
            if (checks.get(i).join() == Boolean.TRUE) {
                hits++;
            } else {
                need.add(checked.get(i));
            }
        }
        BroadcastOptions.Strategy strategy = options.strategyFor(need.size());
        long bytes = 0;
        long checkedAt = System.nanoTime();
        long sentAt = checkedAt;
        if (!need.isEmpty()) {
            long bid = nextRequest.getAndIncrement();
            List<CompletableFuture<Reply>> acks = new ArrayList<>();
            for (int w : need) {
                acks.add(remote(w).endpoint().expect(bid));
            }
            BroadcastSender sender = BroadcastSender.of(strategy, links, options.chunkBytes());
            if (probe.sendable()) {
                bytes = sender.send(bid, t.id, t.version, probe.form(), need, acks);
            } else {
                try (Serialized s = registry.serialize(model, chainOf(options.family()))) {
                    bytes = sender.send(bid, t.id, t.version, s, need, acks);
                }
            }
            sentAt = System.nanoTime();
            settle(t, need, acks);
        }
        long end = System.nanoTime();
        if (event.shouldCommit()) {
            event.model = t.id;
            event.version = t.version;
            event.strategy = strategy.name();
            event.sent = need.size();
            event.trackNanos = tracked - start;
            event.checkNanos = checkedAt - tracked;
            event.sendNanos = sentAt - checkedAt;
            event.settleNanos = end - sentAt;
            event.commit();
        }
        return new BroadcastResult(handle, need.size(), hits, strategy, bytes, end - start);
    }

    /**
     * The form the change check compares: the model serialized with the {@code cuda} family, whose frames are the
     * model's own buffers (no copy); or, for a model that family cannot take, with the broadcast's chain. It is
     * also what is sent when the broadcast's family is {@code cuda} or the check fell back to its chain, so that the
     * model is serialized once; a {@code host} or {@code java} broadcast serializes it for the send as well.
     *
     * @param form the serialized model
     * @param sendable whether {@code form} is what the broadcast sends
     */
    private record Probe(Serialized form, boolean sendable) implements AutoCloseable {
        @Override
        public void close() {
            form.close();
        }
    }

    private Probe probe(Object model, Family family) {
        try {
            return new Probe(registry.serialize(model, Family.CUDA), family == Family.CUDA);
        } catch (UnserializableException e) {
            return new Probe(registry.serialize(model, chainOf(family)), true);
        }
    }

    /** Compares the model's form with its last broadcast; a change makes a new version that no worker holds. */
    private static void track(Tracked t, Serialized s) {
        byte[] header = s.encodeHeader();
        List<Buffer> buffers = new ArrayList<>();
        for (Frame f : s.frames()) {
            buffers.add(f.buffer());
        }
        boolean same = t.header != null && Arrays.equals(header, t.header) && buffers.size() == t.buffers.size();
        for (int i = 0; same && i < buffers.size(); i++) {
            Buffer b = buffers.get(i);
            same = !s.frames().get(i).owned() && t.buffers.get(i).get() == b && b.isOpen();
        }
        if (!same) {
            t.version++;
            t.header = header;
            List<WeakReference<Buffer>> refs = new ArrayList<>();
            for (Buffer b : buffers) {
                refs.add(new WeakReference<>(b));
            }
            t.buffers = refs;
            t.holders.clear();
        }
    }

    private static Family[] chainOf(Family family) {
        return family == Family.JAVA ? new Family[] {Family.JAVA, Family.HOST} : new Family[] {family};
    }

    /**
     * Waits for every acknowledgement; the workers that acknowledged hold the model. A failure is thrown after all
     * settled: a lost worker first, as a {@link WorkerLostException} naming it and which workers hold the model.
     */
    private void settle(Tracked t, List<Integer> need, List<CompletableFuture<Reply>> acks) {
        WorkerLostException lost = null;
        List<RuntimeException> failures = new ArrayList<>();
        List<Integer> without = new ArrayList<>();
        for (int i = 0; i < acks.size(); i++) {
            try {
                valueOf(unwrap(acks.get(i)));
                t.holders.add(need.get(i));
            } catch (RuntimeException e) {
                without.add(need.get(i));
                if (lost == null && e instanceof WorkerLostException l) {
                    lost = l;
                } else {
                    failures.add(e);
                }
            }
        }
        if (lost == null && failures.isEmpty()) {
            return;
        }
        RuntimeException thrown = lost != null
                ? new WorkerLostException(
                        lost.worker(),
                        "during the broadcast of "
                                + "model " + t.id + " v" + t.version + "; workers " + new java.util.TreeSet<>(t.holders)
                                + " hold it, "
                                + without + " do not",
                        lost)
                : failures.removeFirst();
        failures.forEach(thrown::addSuppressed);
        throw thrown;
    }

    private Reply unwrap(CompletableFuture<Reply> f) {
        try {
            return idle.await(f);
        } catch (CompletionException e) {
            throw e.getCause() instanceof RuntimeException r ? r : e;
        }
    }

    // ---------------------------------------------------------------- stats

    /** What the client sent to and received from all workers so far. */
    public WireStats wireStats() {
        long m = 0;
        long f = 0;
        long h = 0;
        long fb = 0;
        long r = 0;
        for (RemoteWorker w : workers) {
            Endpoint.WireCounts c = w.endpoint().counts();
            m += c.messages();
            f += c.frames();
            h += c.headerBytes();
            fb += c.frameBytes();
            r += c.bytesReceived();
        }
        return new WireStats(m, f, h, fb, r);
    }

    /** Each live worker's copy counters and memory. */
    public List<WorkerStats> workerStats() {
        List<CompletableFuture<WorkerStats>> futures = new ArrayList<>();
        for (RemoteWorker w : workers) {
            if (w.isAlive()) {
                futures.add(workerStats(w.index()));
            }
        }
        return joinAll(futures);
    }

    /** Worker {@code worker}'s copy counters and memory. */
    public CompletableFuture<WorkerStats> workerStats(int worker) {
        return request(worker, WorkerRequest.Stats::new).thenApply(WorkerStats.class::cast);
    }

    /**
     * Waits for every future; the first failure is thrown (unwrapped) after all have settled, and the values of
     * the others are closed.
     */
    static <T> List<T> joinAll(List<CompletableFuture<T>> futures) {
        List<T> out = new ArrayList<>(futures.size());
        RuntimeException failure = null;
        for (CompletableFuture<T> f : futures) {
            try {
                out.add(f.join());
            } catch (CompletionException e) {
                RuntimeException r = e.getCause() instanceof RuntimeException re ? re : e;
                if (failure == null) {
                    failure = r;
                } else if (failure != r) {
                    failure.addSuppressed(r);
                }
            }
        }
        if (failure != null) {
            Values.close(out);
            throw failure;
        }
        return out;
    }
}
