package io.cuwire.spark.internal;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.Closeables;
import io.cuwire.memory.CopyDirection;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.Device;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.TransferStats;
import io.cuwire.serialize.DecodeTarget;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.Limits;
import io.cuwire.serialize.Serialized;
import io.cuwire.serialize.TypeRegistry;
import io.cuwire.spark.ModelRef;
import io.cuwire.spark.NodeStats;
import io.cuwire.spark.internal.Protocol.Evict;
import io.cuwire.spark.internal.Protocol.Fetch;
import io.cuwire.spark.internal.Protocol.FetchReply;
import io.cuwire.spark.internal.Protocol.StatsQuery;
import io.cuwire.transport.Connection;
import io.cuwire.transport.ConnectionClosedException;
import io.cuwire.transport.DeviceMap;
import io.cuwire.transport.Listener;
import io.cuwire.transport.Message;
import io.cuwire.transport.ReceivedMessage;
import io.cuwire.transport.TransportConfig;
import io.cuwire.transport.TransportException;
import io.cuwire.transport.Transports;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The cuwire endpoint of one JVM of a Spark application: the driver's, or an executor's. It owns the JVM's device
 * and host memory for cuwire, listens on TCP, and answers {@link Protocol} requests, one connection per request.
 *
 * <h2>Driver</h2>
 * Holds the published models ({@link #publish}), each serialized once (device arrays stay device frames) and kept
 * until {@link #unpublish}. A fetch is answered with the frames by the driver only for the first executor, or when
 * the fetcher asks directly; every later fetcher is sent to an executor that holds the model or is fetching it
 * (the one that served the fewest so far), and becomes a holder in turn, so the copies spread as a tree instead of
 * all pulling through the driver's link.
 *
 * <h2>Executor</h2>
 * Keeps a cache of models by {@code (id, version, device)}: the first task that needs a model fetches it (the
 * others in the JVM wait for that fetch) and later tasks use the cached value. A model in use by a task is closed
 * only after the task released it, when evicted. A peer asking for a model that this executor is still fetching
 * waits for that fetch.
 *
 * <p>Thread-safe. One node per JVM at a time ({@link #current()}).
 */
public final class Node implements AutoCloseable {
    /** The executor id of the driver's node. */
    public static final String DRIVER = "driver";

    private static volatile Node current;

    private final String executorId;
    private final Device device;
    private final BufferAllocator<DeviceBuffer> deviceMemory;
    private final BufferAllocator<HostBuffer> hostMemory;
    private final TypeRegistry registry = Protocol.registry();
    private final DecodeTarget target;
    private final TransportConfig config;
    private final Listener listener;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final Map<Long, Published> published = new ConcurrentHashMap<>();
    private final Map<Key, CompletableFuture<Cached>> cache = new ConcurrentHashMap<>();
    private final Map<String, String> executors = new ConcurrentHashMap<>();
    private final AtomicLong fetchedFromDriver = new AtomicLong();
    private final AtomicLong fetchedFromPeers = new AtomicLong();
    private final AtomicLong fetchedBytes = new AtomicLong();
    private final AtomicLong servedToPeers = new AtomicLong();
    private final AtomicLong redirects = new AtomicLong();
    private final AtomicLong evicted = new AtomicLong();

    private Node(String executorId, Device device, byte[] secret, String host) {
        this.executorId = executorId;
        this.device = device;
        String name = "spark-" + executorId;
        this.deviceMemory = device.newAllocator(name + "-device", BufferAllocator.UNLIMITED);
        this.hostMemory = BufferAllocator.host(name + "-host", BufferAllocator.UNLIMITED);
        this.target = new DecodeTarget(deviceMemory, hostMemory, Limits.DEFAULT);
        this.config = TransportConfig.builder().secret(secret).receiveInto(DeviceMap.of(hostMemory, deviceMemory))
                .ioTimeout(Duration.ofSeconds(120)).build();
        this.listener = Transports.tcp().listen("tcp://" + host + ":0", config);
        Thread.ofPlatform().daemon().name("cuwire-spark-" + executorId + "-accept").start(this::acceptLoop);
    }

    /**
     * Starts this JVM's node and makes it {@link #current()}.
     *
     * @param executorId the Spark executor id, or {@link #DRIVER}
     * @param device the device the node's models live on
     * @param secret the application's cluster secret
     * @param host the host name or address to listen on
     * @throws IllegalStateException if this JVM has a node already
     */
    public static synchronized Node start(String executorId, Device device, byte[] secret, String host) {
        if (current != null) {
            throw new IllegalStateException("this JVM already has a cuwire endpoint: " + current);
        }
        current = new Node(executorId, device, secret, host);
        return current;
    }

    /**
     * This JVM's node.
     *
     * @throws IllegalStateException if there is none: the application does not run with the cuwire plugin
     */
    public static Node current() {
        Node n = current;
        if (n == null) {
            throw new IllegalStateException("no cuwire endpoint in this JVM: start the Spark application with "
                    + "spark.plugins=io.cuwire.spark.CuwirePlugin");
        }
        return n;
    }

    /** This JVM's node, or {@code null}. */
    public static Node currentOrNull() {
        return current;
    }

    public String executorId() {
        return executorId;
    }

    public String address() {
        return listener.address();
    }

    public Device device() {
        return device;
    }

    public BufferAllocator<DeviceBuffer> deviceMemory() {
        return deviceMemory;
    }

    public BufferAllocator<HostBuffer> hostMemory() {
        return hostMemory;
    }

    public TypeRegistry registry() {
        return registry;
    }

    public DecodeTarget target() {
        return target;
    }

    /** Where received or read frames go: host frames to host memory, device frames to this node's device. */
    public DeviceMap frameAllocator() {
        return DeviceMap.of(hostMemory, deviceMemory);
    }

    // ---------------------------------------------------------------- driver side

    /** Records an executor's endpoint (from the plugin's registration). */
    public void executorAdded(String id, String address) {
        executors.put(id, address);
    }

    /** Forgets an executor that Spark removed: no model is fetched from it any more. */
    public void executorRemoved(String id) {
        String address = executors.remove(id);
        if (address != null) {
            for (Published p : published.values()) {
                p.dropHolder(address);
            }
        }
    }

    /** The executors' endpoints by executor id. */
    public Map<String, String> executors() {
        return Map.copyOf(executors);
    }

    /** A model published by the driver, its serialized form, and who holds or is fetching it. */
    private static final class Published {
        final long version;
        final Object value;
        final Serialized serialized;
        final List<Holder> holders = new ArrayList<>();

        Published(long version, Object value, Serialized serialized) {
            this.version = version;
            this.value = value;
            this.serialized = serialized;
        }

        synchronized String redirectFor(String requesterAddress) {
            Holder best = null;
            for (Holder h : holders) {
                if (!h.address.equals(requesterAddress) && (best == null || h.served < best.served)) {
                    best = h;
                }
            }
            addHolder(requesterAddress);
            if (best == null) {
                return null;
            }
            best.served++;
            return best.address;
        }

        synchronized void addHolder(String address) {
            for (Holder h : holders) {
                if (h.address.equals(address)) {
                    return;
                }
            }
            holders.add(new Holder(address));
        }

        synchronized void dropHolder(String address) {
            holders.removeIf(h -> h.address.equals(address));
        }

        synchronized List<String> holderAddresses() {
            List<String> out = new ArrayList<>();
            for (Holder h : holders) {
                out.add(h.address);
            }
            return out;
        }
    }

    private static final class Holder {
        final String address;
        int served;

        Holder(String address) {
            this.address = address;
        }
    }

    /**
     * Publishes {@code value} as model {@code id} version {@code version}: serializes it once (device arrays as
     * device frames, borrowed from the value, which must stay open and unchanged until {@link #unpublish}) and
     * returns the encoded header.
     */
    public byte[] publish(long id, long version, Object value) {
        Serialized s = registry.serialize(value, Family.CUDA, Family.HOST);
        Published old = published.put(id, new Published(version, value, s));
        if (old != null) {
            old.serialized.close();
        }
        return s.encodeHeader();
    }

    /** The value of a published model, or {@code null}. */
    public Object publishedValue(long id, long version) {
        Published p = published.get(id);
        return p != null && p.version == version ? p.value : null;
    }

    /**
     * Stops serving model {@code id} at {@code version} and tells every executor to drop its copy. An executor that
     * does not answer (lost) is skipped: it holds nothing any more. Returns how many executors did not answer.
     */
    public int unpublish(long id, long version) {
        Published p = published.get(id);
        List<String> targets = new ArrayList<>(executors.values());
        if (p != null && p.version == version && published.remove(id, p)) {
            for (String a : p.holderAddresses()) {
                if (!targets.contains(a)) {
                    targets.add(a);
                }
            }
            p.serialized.close();
        }
        int unanswered = 0;
        for (String address : targets) {
            try (Connection c = connect(address, Duration.ofSeconds(5))) {
                request(c, new Evict(id, version));
            } catch (RuntimeException e) {
                unanswered++;
            }
        }
        return unanswered;
    }

    // ---------------------------------------------------------------- executor side

    /** A cache key: a model version on a device. */
    private record Key(long id, long version, int device) {
    }

    /** A cached model and the tasks using it; evicted, it is closed once the last user released it. */
    private static final class Cached {
        final Object value;
        final AtomicInteger users = new AtomicInteger(1);

        Cached(Object value) {
            this.value = value;
        }

        boolean use() {
            for (int u = users.get(); u > 0; u = users.get()) {
                if (users.compareAndSet(u, u + 1)) {
                    return true;
                }
            }
            return false;
        }

        void release() {
            if (users.decrementAndGet() == 0 && value instanceof AutoCloseable c) {
                Closeables.closeAll(List.of(c));
            }
        }
    }

    /** A model in use by the caller; closing it releases the use. */
    public interface Lease extends AutoCloseable {
        /** The model. */
        Object value();

        @Override
        void close();
    }

    /**
     * The model {@code ref} names, for the caller's use until it closes the lease: on the driver, the published
     * value; on an executor, the cached copy, fetched first if this JVM does not have it.
     */
    public Lease acquire(ModelRef<?> ref) {
        Object own = publishedValue(ref.id(), ref.version());
        if (own != null) {
            return lease(own, () -> { });
        }
        Key key = new Key(ref.id(), ref.version(), device.ordinal());
        while (true) {
            CompletableFuture<Cached> f = cache.get(key);
            if (f == null) {
                CompletableFuture<Cached> mine = new CompletableFuture<>();
                if (cache.putIfAbsent(key, mine) == null) {
                    try {
                        mine.complete(new Cached(fetch(ref)));
                    } catch (RuntimeException e) {
                        cache.remove(key, mine);
                        mine.completeExceptionally(e);
                        throw e;
                    }
                }
                continue;
            }
            Cached c;
            try {
                c = f.get();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted waiting for " + ref, e);
            } catch (ExecutionException e) {
                cache.remove(key, f);
                throw new IllegalStateException("fetching " + ref + " failed: " + e.getCause(), e.getCause());
            }
            if (c.use()) {
                return lease(c.value, c::release);
            }
            cache.remove(key, f);
        }
    }

    private static Lease lease(Object value, Runnable release) {
        AtomicBoolean done = new AtomicBoolean();
        return new Lease() {
            @Override
            public Object value() {
                return value;
            }

            @Override
            public void close() {
                if (done.compareAndSet(false, true)) {
                    release.run();
                }
            }
        };
    }

    /** Fetches a model: asks the driver, which answers with the frames or sends this node to a peer. */
    private Object fetch(ModelRef<?> ref) {
        Fetch ask = new Fetch(ref.id(), ref.version(), executorId, address(), false, "");
        try (Connection c = connect(ref.driverAddress(), config.connectTimeout())) {
            FetchReply r = (FetchReply) request(c, ask);
            switch (r.status()) {
                case Protocol.OK -> {
                    Object v = receiveModel(c, ref);
                    fetchedFromDriver.incrementAndGet();
                    return v;
                }
                case Protocol.REDIRECT -> {
                    String peer = r.address();
                    try (Connection p = connect(peer, config.connectTimeout())) {
                        FetchReply pr = (FetchReply) request(p, new Fetch(ref.id(), ref.version(), executorId,
                                address(), true, ""));
                        if (Protocol.OK.equals(pr.status())) {
                            Object v = receiveModel(p, ref);
                            fetchedFromPeers.incrementAndGet();
                            return v;
                        }
                    } catch (TransportException e) {
                        // the peer is gone or broke: the driver answers itself, and forgets the peer
                    }
                    return fetchDirect(ref, peer);
                }
                default -> throw new IllegalStateException(ref + ": the driver does not have it (" + r.message()
                        + "); was it released?");
            }
        }
    }

    private Object fetchDirect(ModelRef<?> ref, String failedPeer) {
        try (Connection c = connect(ref.driverAddress(), config.connectTimeout())) {
            FetchReply r = (FetchReply) request(c, new Fetch(ref.id(), ref.version(), executorId, address(), true,
                    failedPeer));
            if (!Protocol.OK.equals(r.status())) {
                throw new IllegalStateException(ref + ": the driver does not have it (" + r.message()
                        + "); was it released?");
            }
            Object v = receiveModel(c, ref);
            fetchedFromDriver.incrementAndGet();
            return v;
        }
    }

    private Object receiveModel(Connection c, ModelRef<?> ref) {
        try (ReceivedMessage m = c.receive()) {
            if (m.value().totalFrameBytes() != ref.frameBytes()) {
                throw new IllegalStateException(ref + " arrived with " + m.value().totalFrameBytes()
                        + " frame bytes (expected: " + ref.frameBytes() + ", as published)");
            }
            fetchedBytes.addAndGet(m.value().totalFrameBytes());
            return registry.deserialize(m.value(), target);
        }
    }

    /** Drops every cached version of model {@code id} up to {@code version}. */
    private void evict(long id, long version) {
        for (Map.Entry<Key, CompletableFuture<Cached>> e : cache.entrySet()) {
            Key k = e.getKey();
            if (k.id() == id && k.version() <= version && cache.remove(k, e.getValue())) {
                evicted.incrementAndGet();
                e.getValue().thenAccept(Cached::release);
            }
        }
    }

    // ---------------------------------------------------------------- serving

    private void acceptLoop() {
        while (!closed.get()) {
            Connection c;
            try {
                c = listener.accept();
            } catch (ConnectionClosedException e) {
                return;
            } catch (TransportException e) {
                continue;
            }
            Thread.ofVirtual().name("cuwire-spark-" + executorId + "-serve").start(() -> serve(c));
        }
    }

    private void serve(Connection c) {
        try (c) {
            while (c.isOpen() && !closed.get()) {
                Object request;
                try (ReceivedMessage m = c.receive()) {
                    request = registry.deserialize(m.value(), target);
                }
                switch (request) {
                    case Fetch f -> serveFetch(c, f);
                    case Evict e -> {
                        evict(e.id(), e.version());
                        send(c, new FetchReply(Protocol.OK, "", ""));
                    }
                    case StatsQuery q -> send(c, stats(q.reset()));
                    default -> send(c, new FetchReply(Protocol.MISSING, "", "unknown request "
                            + request.getClass().getSimpleName()));
                }
            }
        } catch (TransportException e) {
            // the peer closed after its request, or died: nothing to answer
        }
    }

    private void serveFetch(Connection c, Fetch f) {
        Published p = published.get(f.id());
        if (p != null) {
            if (p.version != f.version()) {
                send(c, new FetchReply(Protocol.MISSING, "", "model " + f.id() + " is at version " + p.version
                        + ", not " + f.version()));
                return;
            }
            if (!f.failedPeer().isEmpty()) {
                p.dropHolder(f.failedPeer());
            }
            String peer = f.direct() ? null : p.redirectFor(f.requesterAddress());
            if (f.direct()) {
                p.addHolder(f.requesterAddress());
            }
            if (peer != null) {
                redirects.incrementAndGet();
                send(c, new FetchReply(Protocol.REDIRECT, peer, ""));
                return;
            }
            send(c, new FetchReply(Protocol.OK, "", ""));
            c.send(Message.of(p.serialized)).join();
            servedToPeers.incrementAndGet();
            return;
        }
        CompletableFuture<Cached> f2 = cache.get(new Key(f.id(), f.version(), device.ordinal()));
        Cached held = null;
        if (f2 != null) {
            try {
                Cached got = f2.get(config.ioTimeout().toMillis(), TimeUnit.MILLISECONDS);
                held = got.use() ? got : null;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (ExecutionException | TimeoutException e) {
                held = null;
            }
        }
        if (held == null) {
            send(c, new FetchReply(Protocol.MISSING, "", executorId + " does not hold model " + f.id() + " v"
                    + f.version()));
            return;
        }
        try (Serialized s = registry.serialize(held.value, Family.CUDA, Family.HOST)) {
            send(c, new FetchReply(Protocol.OK, "", ""));
            c.send(Message.of(s)).join();
            servedToPeers.incrementAndGet();
        } finally {
            held.release();
        }
    }

    /** This node's counters; with {@code reset}, zeroed afterwards. */
    public NodeStats stats(boolean reset) {
        TransferStats t = CopyEngine.totals();
        long[] copies = new long[CopyDirection.values().length];
        for (CopyDirection d : CopyDirection.values()) {
            copies[d.ordinal()] = t.bytes(d);
        }
        NodeStats s = new NodeStats(executorId, address(), fetchedFromDriver.get(), fetchedFromPeers.get(),
                fetchedBytes.get(), servedToPeers.get(), redirects.get(), evicted.get(), cache.size(), copies,
                deviceMemory.allocatedBytes());
        if (reset) {
            for (AtomicLong a : List.of(fetchedFromDriver, fetchedFromPeers, fetchedBytes, servedToPeers, redirects,
                    evicted)) {
                a.set(0);
            }
        }
        return s;
    }

    /** The stats of the endpoint at {@code address}. */
    public NodeStats statsOf(String address, boolean reset) {
        try (Connection c = connect(address, Duration.ofSeconds(10))) {
            return (NodeStats) request(c, new StatsQuery(reset));
        }
    }

    // ---------------------------------------------------------------- messages

    private Connection connect(String address, Duration timeout) {
        return Transports.forAddress(address).connect(address, config.toBuilder().connectTimeout(timeout).build());
    }

    private void send(Connection c, Object value) {
        try (Serialized s = registry.serialize(value, Family.HOST)) {
            c.send(Message.of(s)).join();
        }
    }

    private Object request(Connection c, Object value) {
        send(c, value);
        try (ReceivedMessage m = c.receive()) {
            return registry.deserialize(m.value(), target);
        }
    }

    @Override
    public String toString() {
        return "cuwire endpoint of " + executorId + " at " + address() + " on " + device;
    }

    /**
     * Stops listening, drops the cache (closing models no task uses) and forgets the published models, then
     * closes the memory; memory still held (a model a task did not release) is reported, not thrown.
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        listener.close();
        for (Key k : List.copyOf(cache.keySet())) {
            evict(k.id(), k.version());
        }
        for (Published p : published.values()) {
            p.serialized.close();
        }
        published.clear();
        synchronized (Node.class) {
            if (current == this) {
                current = null;
            }
        }
        try {
            Closeables.closeAll(List.of(deviceMemory, hostMemory));
        } catch (RuntimeException e) {
            System.getLogger(Node.class.getName()).log(System.Logger.Level.WARNING,
                    "cuwire endpoint of " + executorId + " closed with memory in use: " + e.getMessage());
        }
    }
}
