package io.cuwire.spark.internal;

import io.cuwire.cluster.RemoteDecodeException;
import io.cuwire.cluster.rpc.Endpoint;
import io.cuwire.cluster.rpc.Reply;
import io.cuwire.cluster.rpc.Request;
import io.cuwire.cluster.rpc.Values;
import io.cuwire.cluster.runtime.ModelCache;
import io.cuwire.cluster.runtime.PeerLog;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.Closeables;
import io.cuwire.memory.CopyDirection;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.Device;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.Registration;
import io.cuwire.memory.TransferScope;
import io.cuwire.memory.TransferStats;
import io.cuwire.ml.ComputeBackend;
import io.cuwire.ml.types.MlTypes;
import io.cuwire.serialize.DecodeTarget;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.Limits;
import io.cuwire.serialize.SerializationException;
import io.cuwire.serialize.Serialized;
import io.cuwire.serialize.TypeRegistry;
import io.cuwire.serialize.WireType;
import io.cuwire.transport.Capabilities;
import io.cuwire.transport.Connection;
import io.cuwire.transport.ConnectionClosedException;
import io.cuwire.transport.DeviceMap;
import io.cuwire.transport.Listener;
import io.cuwire.transport.TransportConfig;
import io.cuwire.transport.TransportException;
import io.cuwire.transport.Transports;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongFunction;

/**
 * The cuwire endpoint of one JVM of a Spark application: the driver's, or an executor's. It owns the JVM's device
 * and host memory for cuwire, listens on TCP and, where it can, on CUDA IPC, and answers requests over
 * cuwire-cluster's {@link Endpoint}: a {@link SparkRequest} per call on a connection of its own, dispatched by an
 * exhaustive {@code switch} and answered by a {@link Reply}.
 * <table>
 *   <caption>Requests</caption>
 *   <tr><td>{@code Fetch}</td><td>{@code Ok} with the model (sent with the family chain {@code cuda, host}: device
 *       arrays travel as device frames), {@code Ok} with a {@link Redirect} (Spark's own type: ask that peer
 *       instead), or {@code Missing}</td></tr>
 *   <tr><td>{@code Evict}</td><td>drops the model's cached version if it is at most the version named;
 *       {@code Ok}</td></tr>
 *   <tr><td>{@code Stats}</td><td>{@code Ok} with this node's {@link Counters}</td></tr>
 * </table>
 *
 * <h2>Driver</h2>
 * Holds the published models ({@link #publish}), kept until {@link #unpublish}; each fetch the driver answers
 * itself serializes the model into its reply (device arrays stay device frames borrowed from the model). A fetch is
 * answered with the frames by the driver only for the first executor, or when
 * the fetcher asks directly; every later fetcher is sent to an executor that holds the model or is fetching it
 * (the one that served the fewest so far), and becomes a holder in turn, so the copies spread as a tree instead of
 * all pulling through the driver's link.
 *
 * <h2>Executor</h2>
 * Keeps the runtime's {@link ModelCache} (the cluster worker's too), by model id, one version each: the first task
 * that needs a model fetches it (the others in the JVM wait for that fetch) and later tasks use the cached value.
 * A model in use by a task is closed only after the task released it, when dropped or replaced by a newer version;
 * when the device's memory runs short, the least recently used model that no task holds is evicted, and fetched
 * again by the next task that needs it. A peer asking for a model that this executor is still fetching waits for
 * that fetch.
 *
 * <h2>Transports</h2>
 * A node listens on TCP, and on CUDA IPC too where this build has the IPC transport and the node's device exports
 * IPC handles; it advertises both ({@link Addresses}: with its host's identity) wherever it advertises an address.
 * A fetch takes the transport its {@link TransportMode} picks for the node it asks: under {@code auto}, CUDA IPC
 * when that node listens on it, runs on this host (same host name and boot id) and this node can use IPC (device
 * frames copied device to device, none staged through host memory), else TCP (device frames staged); an IPC
 * connection that fails falls back to TCP, logged once per peer. The counters say which transport carried each
 * fetch and how many bytes were staged host to device meanwhile.
 *
 * <h2>Failures</h2>
 * A call fails with the transport's exception when its connection broke; with
 * {@link io.cuwire.cluster.RemoteDecodeException} when the peer could not decode the request; and at once with the
 * {@link SerializationException} (its {@link SerializationException#path() path} says where) when this node's
 * registry cannot decode the reply, a model of a type it does not know: no peer is asked again for it then, since
 * every copy is the same. Connections this node refuses and peers whose connections it refuses or loses are logged
 * as the cluster worker logs them ({@link PeerLog}: one line each, at most 10 of a kind per 10 seconds); the node
 * goes on serving.
 *
 * <p>Thread-safe. One node per JVM at a time ({@link #current()}).
 */
public final class Node implements AutoCloseable {
    /** The executor id of the driver's node. */
    public static final String DRIVER = "driver";
    /** The largest scratch buffer kept for reuse. */
    private static final long SCRATCH_BUFFER_BYTES = 64 << 10;
    /** The most bytes of free scratch buffers kept. */
    private static final long SCRATCH_RETAINED_BYTES = 8 << 20;

    private static final System.Logger LOG = System.getLogger(Node.class.getName());

    private static volatile Node current;

    private final String executorId;
    private final Device device;
    private final BufferAllocator<DeviceBuffer> deviceMemory;
    private final PooledMemory scratch;
    private final BufferAllocator<DeviceBuffer> scratchMemory;
    private final BufferAllocator<HostBuffer> hostMemory;
    private final TypeRegistry registry = newRegistry();
    private final DecodeTarget target;
    private final TransportConfig config;
    private final Listener listener;
    /** The CUDA IPC listener, or {@code null} where this node cannot use IPC ({@link #ipcUnusable}). */
    private final Listener ipcListener;
    /** Why this node cannot use CUDA IPC, or empty. */
    private final String ipcUnusable;

    private final Addresses addresses;
    private final TransportMode mode;
    /** The IPC addresses of peers whose IPC connection failed, each logged once. */
    private final Set<String> ipcFallbacks = ConcurrentHashMap.newKeySet();

    private final AtomicBoolean closed = new AtomicBoolean();
    /** The endpoints of the connections peers opened to this node, until they break or close. */
    private final Set<Endpoint> served = ConcurrentHashMap.newKeySet();

    private final AtomicLong nextRequest = new AtomicLong();
    private final Map<Long, Published> published = new ConcurrentHashMap<>();
    private final ModelCache cache;
    /** The cache's reclaimer of {@code deviceMemory} and its line in the device's memory report. */
    private final List<Registration> cacheRegistrations;

    private final Map<String, String> executors = new ConcurrentHashMap<>();
    private final AtomicLong fetchedFromDriver = new AtomicLong();
    private final AtomicLong fetchedFromPeers = new AtomicLong();
    private final AtomicLong fetchedBytes = new AtomicLong();
    private final AtomicLong fetchStagedBytes = new AtomicLong();
    /** Fetches by the name of the transport that carried the model. */
    private final Map<String, LongAdder> fetchedOver = new ConcurrentHashMap<>();

    private final AtomicLong servedToPeers = new AtomicLong();
    private final AtomicLong redirects = new AtomicLong();
    private final AtomicLong evicted = new AtomicLong();
    /** Partial-fit tasks this JVM ran, by the name of the compute backend they ran on. */
    private final Map<String, LongAdder> partialFits = new ConcurrentHashMap<>();
    /** Rows this JVM's transforms scored, by the name of the compute backend they ran on. */
    private final Map<String, LongAdder> scoredRows = new ConcurrentHashMap<>();
    /** Connections refused and peers refused or lost, as the cluster worker logs them. */
    private final PeerLog refusals;

    private Node(String executorId, Device device, byte[] secret, String host, TransportMode mode) {
        this.executorId = executorId;
        this.mode = mode;
        this.device = device;
        String name = "spark-" + executorId;
        this.deviceMemory = device.newAllocator(name + "-device", BufferAllocator.UNLIMITED);
        this.scratch = new PooledMemory(device.memory(), SCRATCH_BUFFER_BYTES, SCRATCH_RETAINED_BYTES);
        this.scratchMemory = BufferAllocator.root(name + "-scratch", BufferAllocator.UNLIMITED, scratch);
        this.hostMemory = BufferAllocator.host(name + "-host", BufferAllocator.UNLIMITED);
        this.target = new DecodeTarget(deviceMemory, hostMemory, Limits.DEFAULT);
        this.config = TransportConfig.builder()
                .secret(secret)
                .receiveInto(DeviceMap.of(hostMemory, deviceMemory))
                .ioTimeout(Duration.ofSeconds(120))
                .build();
        this.cache = new ModelCache("spark node " + executorId, registry);
        this.refusals = new PeerLog(LOG, "cuwire endpoint of " + executorId);
        this.cacheRegistrations =
                List.of(deviceMemory.addReclaimer(cache::evictOne), device.addMemoryHolder(cache::describe));
        try {
            this.listener = Transports.tcp().listen("tcp://" + host + ":0", config);
        } catch (RuntimeException e) {
            Closeables.closeAll(cacheRegistrations); // the device must not keep a holder of a node that never ran
            throw e;
        }
        String why = mode == TransportMode.TCP ? "spark.cuwire.transport=tcp" : ipcUnusable(device);
        Listener ipc = null;
        if (why.isEmpty()) {
            try {
                ipc = Transports.ipc().listen("ipc://" + host + ":0", config);
            } catch (RuntimeException e) {
                why = "listening on ipc://" + host + ":0 failed: " + e.getMessage();
                LOG.log(System.Logger.Level.WARNING, "cuwire endpoint of " + executorId + ": " + why + "; tcp only");
            }
        }
        this.ipcListener = ipc;
        this.ipcUnusable = why;
        this.addresses = ipc == null
                ? Addresses.tcpOnly(listener.address())
                : new Addresses(listener.address(), ipc.address(), Capabilities.localHostId());
        for (Listener l : ipc == null ? List.of(listener) : List.of(listener, ipc)) {
            Thread.ofPlatform()
                    .daemon()
                    .name("cuwire-spark-" + executorId + "-accept-" + l.address())
                    .start(() -> acceptLoop(l));
        }
    }

    /**
     * Why a node on {@code device} cannot use CUDA IPC, or empty when it can: the transport must be in this build and
     * the device must export a handle of its memory (a node that exports handles is taken to open its peers' too:
     * both are the platform's one mechanism).
     */
    static String ipcUnusable(Device device) {
        try {
            Transports.ipc();
        } catch (TransportException e) {
            return "the CUDA IPC transport is not in this build (" + e.getMessage() + ")";
        }
        try (DeviceBuffer probe = device.memory().allocate(1)) {
            device.exportAllocation(probe);
            return "";
        } catch (RuntimeException e) {
            return "device " + device + " exports no IPC handle: " + e.getMessage();
        }
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
    public static Node start(String executorId, Device device, byte[] secret, String host) {
        return start(executorId, device, secret, host, TransportMode.AUTO);
    }

    /**
     * Starts this JVM's node and makes it {@link #current()}; its fetches pick their transport by {@code mode}
     * ({@link TransportMode#TCP}: the node listens on TCP only).
     *
     * @throws IllegalStateException if this JVM has a node already
     */
    public static synchronized Node start(
            String executorId, Device device, byte[] secret, String host, TransportMode mode) {
        if (current != null) {
            throw new IllegalStateException("this JVM already has a cuwire endpoint: " + current);
        }
        current = new Node(executorId, device, secret, host, mode);
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

    /**
     * The answer to a fetch that the driver sends on to a peer: ask the node at {@code address} instead. The value of
     * an {@code ok} reply: the shared request/reply layer knows nothing of redirects.
     *
     * @param address the peer's listening addresses ({@link Addresses#encode})
     */
    @WireType("cuwire.spark.Redirect")
    public record Redirect(String address) {}

    /**
     * What one node did so far, as {@code io.cuwire.spark.NodeStats} reports it (which see for the components).
     *
     * @param executorId the Spark executor id, or {@link #DRIVER}
     * @param address where the node listens on TCP
     * @param ipcAddress where it listens on CUDA IPC, or empty
     * @param device the node's device, platform and ordinal ({@code cuda0}, {@code emulated0})
     * @param partialFits partial-fit tasks run by the node's JVM, by compute backend ({@code cuda}, {@code cpu})
     * @param scoredRows rows scored by the node's JVM, by compute backend
     * @param fetchedFromDriver models received from the driver
     * @param fetchedFromPeers models received from another executor
     * @param fetchedBytes frame bytes received with those models
     * @param fetchedOver those fetches by the transport that carried the model ({@code ipc}, {@code tcp})
     * @param fetchStagedBytes bytes the process copied host to device while those fetches ran: device frames staged
     *     through host memory (0 over CUDA IPC)
     * @param servedToPeers models sent to nodes that asked
     * @param redirects fetches the driver sent on to an executor
     * @param evicted models dropped from the cache on release
     * @param cachedModels models in the cache now
     * @param copyBytes the process's bytes copied by the copy engine, by {@link CopyDirection} ordinal
     * @param deviceBytes bytes of device memory the node holds now
     */
    @WireType("cuwire.spark.NodeStats")
    public record Counters(
            String executorId,
            String address,
            String ipcAddress,
            String device,
            SortedMap<String, Long> partialFits,
            SortedMap<String, Long> scoredRows,
            long fetchedFromDriver,
            long fetchedFromPeers,
            long fetchedBytes,
            SortedMap<String, Long> fetchedOver,
            long fetchStagedBytes,
            long servedToPeers,
            long redirects,
            long evicted,
            long cachedModels,
            long[] copyBytes,
            long deviceBytes) {}

    /**
     * A model to fetch: what a task's handle names ({@code io.cuwire.spark.ModelRef} makes one).
     *
     * @param id the model's id
     * @param version its version
     * @param frameBytes the bytes of its frames, as published (a fetch that brings other bytes fails)
     * @param driverAddress where the driver's node listens ({@link Addresses#encode})
     * @param transport the {@code spark.cuwire.transport} of the task that wants it, or {@code null}: the node's
     * @param description the handle's text, for messages
     */
    public record Wanted(
            long id, long version, long frameBytes, String driverAddress, String transport, String description) {
        @Override
        public String toString() {
            return description;
        }
    }

    /** A registry of the estimators, their partials, the endpoint's messages and this node's own answers. */
    private static TypeRegistry newRegistry() {
        TypeRegistry r = Endpoint.registerMessages(MlTypes.register(new TypeRegistry()), SparkRequest.class);
        for (Class<?> type : new Class<?>[] {Counters.class, Redirect.class}) {
            r.registerGeneric(type, Family.CUDA, Family.HOST);
            r.register(type);
        }
        return r;
    }

    /** This JVM's node, or {@code null}. */
    public static Node currentOrNull() {
        return current;
    }

    public String executorId() {
        return executorId;
    }

    /** Where this node listens on TCP. */
    public String address() {
        return listener.address();
    }

    /** Where this node listens, as it advertises itself ({@link Addresses#encode}: TCP, and IPC where it can). */
    public String advertised() {
        return addresses.encode();
    }

    /** Where this node listens. */
    public Addresses addresses() {
        return addresses;
    }

    /** How this node's fetches pick their transport unless a task says otherwise. */
    public TransportMode mode() {
        return mode;
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

    /**
     * Device memory for the arrays of a transform's blocks of rows: freed buffers up to 64 KiB are kept for reuse
     * (8 MiB at most), and released once this node caches no model any more.
     */
    public BufferAllocator<DeviceBuffer> scratchMemory() {
        return scratchMemory;
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

    /** A model published by the driver, and who holds or is fetching it. */
    private static final class Published {
        final long version;
        final Object value;
        final List<Holder> holders = new ArrayList<>();

        Published(long version, Object value) {
            this.version = version;
            this.value = value;
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
     * Publishes {@code value} as model {@code id} version {@code version} and returns its encoded header (device
     * arrays as device frames). The fetches the driver answers serialize the value again, borrowing its device
     * arrays as frames: it must stay open and unchanged until {@link #unpublish}.
     */
    public byte[] publish(long id, long version, Object value) {
        byte[] header;
        try (Serialized s = registry.serialize(value, Family.CUDA, Family.HOST)) {
            header = s.encodeHeader();
        }
        published.put(id, new Published(version, value));
        return header;
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
        }
        int unanswered = 0;
        for (String address : targets) {
            try (Endpoint e = connect(Addresses.parse(address).tcp(), Duration.ofSeconds(5))) {
                if (!(call(e, n -> new SparkRequest.Evict(n, id, version)) instanceof Reply.Ok)) {
                    unanswered++;
                }
            } catch (RuntimeException e) {
                unanswered++;
            }
        }
        return unanswered;
    }

    // ---------------------------------------------------------------- executor side

    /**
     * The model {@code ref} names, for the caller's use until it closes the lease: on the driver, the published
     * value; on an executor, the cached copy, fetched first if this JVM does not have it.
     */
    public ModelCache.Lease acquire(Wanted ref) {
        Object own = publishedValue(ref.id(), ref.version());
        if (own != null) {
            return new ModelCache.Lease() {
                @Override
                public Object value() {
                    return own;
                }

                @Override
                public void close() {
                    // the driver's caller owns a published model
                }
            };
        }
        return cache.acquire(ref.id(), ref.version(), () -> fetch(ref));
    }

    /**
     * Fetches a model: asks the driver, which answers with the frames or sends this node to a peer; counts the bytes
     * staged host to device meanwhile (a process-wide count: copies of other threads in that time too).
     */
    private Object fetch(Wanted ref) {
        TransportMode m = ref.transport() == null ? mode : TransportMode.parse(TransportMode.SETTING, ref.transport());
        try (TransferScope scope = CopyEngine.openScope("fetch of " + ref)) {
            Object v = fetch(ref, m);
            fetchStagedBytes.addAndGet(scope.bytes(CopyDirection.H2D));
            return v;
        }
    }

    private Object fetch(Wanted ref, TransportMode m) {
        Addresses driverAt = Addresses.parse(ref.driverAddress());
        String peer;
        try (Route driver = open(driverAt, m)) {
            Reply r = call(driver.endpoint(), fetch(ref, false, ""));
            if (!(r instanceof Reply.Ok(long id, Redirect(String address)))) {
                Object v = model(driver, r, ref);
                fetchedFromDriver.incrementAndGet();
                return v;
            }
            peer = address;
        }
        try (Route p = open(Addresses.parse(peer), m)) {
            Reply r = call(p.endpoint(), fetch(ref, true, ""));
            if (r instanceof Reply.Ok) {
                Object v = model(p, r, ref);
                fetchedFromPeers.incrementAndGet();
                return v;
            }
        } catch (SerializationException e) {
            throw e; // this node cannot decode the model: the driver's copy would not decode either
        } catch (RuntimeException e) {
            // the peer is gone, broke or sent something else: the driver answers itself, and forgets the peer
        }
        try (Route driver = open(driverAt, m)) {
            Object v = model(driver, call(driver.endpoint(), fetch(ref, true, peer)), ref);
            fetchedFromDriver.incrementAndGet();
            return v;
        }
    }

    /** An endpoint for a fetch's calls, and the name of the transport it runs on. */
    private record Route(Endpoint endpoint, String transport) implements AutoCloseable {
        @Override
        public void close() {
            endpoint.close();
        }
    }

    /**
     * An endpoint to the node at {@code at} over the transport {@code m} picks; under {@link TransportMode#AUTO}, an
     * IPC connection that fails falls back to TCP (logged once per peer).
     *
     * @throws IllegalStateException under {@link TransportMode#IPC} when IPC cannot be used or its connection failed
     */
    private Route open(Addresses at, TransportMode m) {
        TransportMode.Choice c = m.choose(at, Capabilities.localHostId(), ipcUnusable);
        if (c.transport().equals(Transports.IPC)) {
            try {
                return new Route(connect(c.address(), config.connectTimeout()), Transports.IPC);
            } catch (TransportException e) {
                if (m == TransportMode.IPC) {
                    throw new IllegalStateException(
                            TransportMode.SETTING + "=ipc, but the CUDA IPC connection to " + c.address() + " failed: "
                                    + e.getMessage(),
                            e);
                }
                if (ipcFallbacks.add(c.address())) {
                    LOG.log(
                            System.Logger.Level.WARNING,
                            "cuwire endpoint of " + executorId + ": the CUDA IPC connection to " + c.address()
                                    + " failed (" + e.getMessage() + "); fetching from " + at.tcp()
                                    + " over tcp instead");
                }
            }
        }
        return new Route(connect(at.tcp(), config.connectTimeout()), Transports.TCP);
    }

    private LongFunction<SparkRequest> fetch(Wanted ref, boolean direct, String failedPeer) {
        return n -> new SparkRequest.Fetch(n, ref.id(), ref.version(), advertised(), direct, failedPeer);
    }

    /** The model a fetch's reply carries, checked against the frame bytes published; {@code via} carried it. */
    private Object model(Route via, Reply r, Wanted ref) {
        Endpoint from = via.endpoint();
        Object model = switch (r) {
            case Reply.Ok(long id, Redirect redirect) ->
                throw new IllegalStateException(ref + ": " + from.name() + " answered with a redirect to "
                        + redirect.address() + " where the model was asked for");
            case Reply.Ok ok -> ok.value();
            case Reply.Missing m ->
                throw new IllegalStateException(
                        ref + ": the driver does not have it (" + m.why() + "); was it released?");
            case Reply.Failed f ->
                throw new IllegalStateException(
                        ref + ": " + from.name() + " answered error: " + f.errorType() + ": " + f.error());
            case Reply.Undecodable u ->
                throw new IllegalStateException(ref + ": " + from.name() + " answered " + "undecodable: "
                        + u.errorType() + ": " + u.error()); // the call fails instead
        };
        long frameBytes = from.counts().frameBytesReceived();
        if (frameBytes != ref.frameBytes()) {
            Values.close(model);
            throw new IllegalStateException(ref + " arrived with " + frameBytes + " frame bytes (expected: "
                    + ref.frameBytes() + ", as published)");
        }
        fetchedBytes.addAndGet(frameBytes);
        fetchedOver.computeIfAbsent(via.transport(), k -> new LongAdder()).increment();
        return model;
    }

    /** Drops the cached version of model {@code id} if it is at most {@code version}. */
    private void evict(long id, long version) {
        if (cache.drop(id, version)) {
            evicted.incrementAndGet();
        }
        if (cache.size() == 0) {
            scratch.trim();
        }
    }

    // ---------------------------------------------------------------- serving

    private void acceptLoop(Listener from) {
        while (!closed.get()) {
            Connection c;
            try {
                c = from.accept();
            } catch (ConnectionClosedException e) {
                return;
            } catch (TransportException e) {
                if (!closed.get()) {
                    refusals.connectionRefused(e);
                }
                continue;
            }
            // onBroken runs once the endpoint is no longer open: forget every such one, and log a peer refused or lost
            Endpoint e = new Endpoint(
                    "spark-" + executorId + "-served",
                    c,
                    registry,
                    target,
                    this::onRequest,
                    Node::refused,
                    Node::broken,
                    t -> {
                        served.removeIf(x -> !x.isOpen());
                        if (!closed.get()) {
                            refusals.peerBroken(c, t);
                        }
                    });
            served.add(e);
            e.start();
            if (closed.get()) {
                e.close();
            }
        }
    }

    /** Answers a request on the endpoint's reader thread; a fetch, which may wait, on a thread of its own. */
    private void onRequest(Endpoint from, Request request) {
        if (!(request instanceof SparkRequest r)) {
            Values.close(request);
            from.reply(Reply.failed(
                    request.id(),
                    new IllegalArgumentException(
                            "a Spark node serves no " + registry.nameOf(request.getClass()) + " request")));
            return;
        }
        switch (r) {
            case SparkRequest.Fetch f ->
                Thread.ofVirtual().name("cuwire-spark-" + executorId + "-serve").start(() -> serveFetch(from, f));
            case SparkRequest.Evict e -> {
                evict(e.model(), e.version());
                from.reply(Reply.ok(e.id(), null));
            }
            case SparkRequest.Stats s ->
                from.send(Reply.ok(s.id(), stats(s.reset())), Family.HOST).exceptionally(e -> null);
        }
    }

    private void serveFetch(Endpoint from, SparkRequest.Fetch f) {
        long request = f.id();
        long id = f.model();
        long version = f.version();
        String requesterAddress = f.requester();
        boolean direct = f.direct();
        String failedPeer = f.failedPeer();
        Published p = published.get(id);
        if (p != null) {
            if (p.version != version) {
                from.reply(Reply.missing(request, "model " + id + " is at version " + p.version + ", not " + version));
                return;
            }
            if (!failedPeer.isEmpty()) {
                p.dropHolder(failedPeer);
            }
            String peer = direct ? null : p.redirectFor(requesterAddress);
            if (direct) {
                p.addHolder(requesterAddress);
            }
            if (peer != null) {
                redirects.incrementAndGet();
                from.reply(Reply.ok(request, new Redirect(peer)));
                return;
            }
            sendModel(from, request, p.value, () -> {});
            return;
        }
        ModelCache.Lease held = cache.awaitAcquire(id, version, config.ioTimeout());
        if (held == null) {
            from.reply(Reply.missing(request, executorId + " does not hold model " + id + " v" + version));
            return;
        }
        sendModel(from, request, held.value(), held::close);
    }

    /** Sends {@code model} as the reply to {@code request}; {@code done} runs when the transport is done with it. */
    private void sendModel(Endpoint to, long request, Object model, Runnable done) {
        to.send(Reply.ok(request, model), Family.CUDA, Family.HOST).whenComplete((m, e) -> {
            done.run();
            if (e == null) {
                servedToPeers.incrementAndGet();
            } else {
                to.reply(Reply.failed(request, e)); // did not serialize; a broken transport drops this too
            }
        });
    }

    /** This node's counters; with {@code reset}, zeroed afterwards. */
    public Counters stats(boolean reset) {
        TransferStats t = CopyEngine.totals();
        long[] copies = new long[CopyDirection.values().length];
        for (CopyDirection d : CopyDirection.values()) {
            copies[d.ordinal()] = t.bytes(d);
        }
        Counters s = new Counters(
                executorId,
                address(),
                addresses.ipc(),
                device.toString(),
                snapshot(partialFits, reset),
                snapshot(scoredRows, reset),
                fetchedFromDriver.get(),
                fetchedFromPeers.get(),
                fetchedBytes.get(),
                snapshot(fetchedOver, reset),
                fetchStagedBytes.get(),
                servedToPeers.get(),
                redirects.get(),
                evicted.get(),
                cache.size(),
                copies,
                deviceMemory.allocatedBytes() + scratchMemory.allocatedBytes() + scratch.retainedBytes());
        if (reset) {
            for (AtomicLong a : List.of(
                    fetchedFromDriver,
                    fetchedFromPeers,
                    fetchedBytes,
                    fetchStagedBytes,
                    servedToPeers,
                    redirects,
                    evicted)) {
                a.set(0);
            }
        }
        return s;
    }

    /** Counts a partial-fit task of this JVM that computed on {@code backend}. */
    public void countPartialFit(ComputeBackend backend) {
        partialFits.computeIfAbsent(backend.name(), k -> new LongAdder()).increment();
    }

    /** Counts {@code rows} rows a transform of this JVM scored on {@code backend}. */
    public void countScoredRows(ComputeBackend backend, long rows) {
        scoredRows.computeIfAbsent(backend.name(), k -> new LongAdder()).add(rows);
    }

    /** The counts by backend, in name order; with {@code reset}, each taken and zeroed. */
    private static SortedMap<String, Long> snapshot(Map<String, LongAdder> counts, boolean reset) {
        SortedMap<String, Long> out = new TreeMap<>();
        counts.forEach((backend, n) -> {
            long v = reset ? n.sumThenReset() : n.sum();
            if (v > 0) {
                out.put(backend, v);
            }
        });
        return out;
    }

    /** The stats of the endpoint at {@code address} ({@link Addresses#encode}), asked over TCP. */
    public Counters statsOf(String address, boolean reset) {
        try (Endpoint e = connect(Addresses.parse(address).tcp(), Duration.ofSeconds(10))) {
            return switch (call(e, n -> new SparkRequest.Stats(n, reset))) {
                case Reply.Ok(long id, Counters c) -> c;
                case Reply.Ok ok ->
                    throw new IllegalStateException("stats of " + address + ": the answer is "
                            + (ok.value() == null
                                    ? "empty"
                                    : "a " + ok.value().getClass().getName()));
                case Reply r -> throw new IllegalStateException("stats of " + address + ": " + r);
            };
        }
    }

    // ---------------------------------------------------------------- messages

    /** An endpoint on a new connection to {@code address}, for the caller's calls; the caller closes it. */
    private Endpoint connect(String address, Duration timeout) {
        Connection c = Transports.forAddress(address)
                .connect(address, config.toBuilder().connectTimeout(timeout).build());
        return new Endpoint(
                        "spark-" + executorId + "-to-" + address,
                        c,
                        registry,
                        target,
                        (from, r) -> {
                            Values.close(r);
                            from.reply(Reply.failed(
                                    r.id(), new IllegalStateException("a connection to a peer takes no requests")));
                        },
                        Node::refused,
                        Node::broken,
                        t -> {})
                .start();
    }

    /**
     * Sends {@code to} the request {@code request} makes of a new id and waits for the reply; fails with the
     * transport's exception if it broke.
     */
    private Reply call(Endpoint to, LongFunction<SparkRequest> request) {
        SparkRequest r = request.apply(nextRequest.getAndIncrement());
        try {
            return to.call(r, Family.HOST).get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(
                    "interrupted waiting for " + registry.nameOf(r.getClass()) + " on " + to.name(), e);
        } catch (ExecutionException e) {
            throw e.getCause() instanceof RuntimeException x ? x : new IllegalStateException(e.getCause());
        }
    }

    /** What a call fails with when the peer could not decode its request. */
    private static RuntimeException refused(Reply.Undecodable u) {
        return new RemoteDecodeException(u.errorType(), u.error(), u.path());
    }

    /** What a broken connection fails its calls with: the transport's exception, or one around the cause. */
    private static RuntimeException broken(Throwable cause) {
        return cause instanceof TransportException t ? t : new TransportException("connection broken: " + cause, cause);
    }

    @Override
    public String toString() {
        return "cuwire endpoint of " + executorId + " at " + addresses + " on " + device;
    }

    /**
     * Stops listening and closes the connections peers opened, drops the cache (closing models no task uses) and
     * forgets the published models, then closes the memory; memory still held (a model a task did not release) is
     * reported, not thrown.
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        listener.close();
        if (ipcListener != null) {
            ipcListener.close();
        }
        for (Endpoint e : List.copyOf(served)) {
            e.close();
        }
        refusals.flush();
        for (long id : cache.ids()) {
            evict(id, Long.MAX_VALUE);
        }
        Closeables.closeAll(cacheRegistrations);
        published.clear();
        synchronized (Node.class) {
            if (current == this) {
                current = null;
            }
        }
        try {
            Closeables.closeAll(List.<AutoCloseable>of(scratchMemory, scratch::trim, deviceMemory, hostMemory));
        } catch (RuntimeException e) {
            System.getLogger(Node.class.getName())
                    .log(
                            System.Logger.Level.WARNING,
                            "cuwire endpoint of " + executorId + " closed with memory in use: " + e.getMessage());
        }
    }
}
