package io.cuwire.cluster;

import io.cuwire.cluster.internal.Placement;
import io.cuwire.cluster.rpc.Endpoint;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import io.cuwire.serialize.DecodeTarget;
import io.cuwire.serialize.Limits;
import io.cuwire.serialize.TypeRegistry;
import io.cuwire.transport.Connection;
import io.cuwire.transport.DeviceMap;
import io.cuwire.transport.TransportConfig;
import io.cuwire.transport.TransportException;
import io.cuwire.transport.Transports;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.module.ModuleFinder;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A cluster on this host: one worker JVM per GPU — or, on the emulated device, two by default — and a {@link Client}
 * connected to each over an authenticated transport. The analogue of dask-cuda's {@code LocalCUDACluster}. Worker
 * {@code i} binds device {@code i mod devices} (on a host of one GPU, every worker shares device 0, with the client)
 * unless {@link Builder#devices} says otherwise; an ordinal this process does not see fails {@link Builder#start}
 * before any worker starts, naming the devices it sees and, on CUDA, {@code CUDA_VISIBLE_DEVICES}.
 *
 * <h2>Workers</h2>
 * Each worker is a JVM started with this JVM's {@code java} binary and class path, native access enabled, and the
 * device platform this JVM chose (so a client on the emulated device gets emulated workers). The cluster secret (32
 * random bytes per cluster unless given) goes to the worker on its standard input, never on a command line. The
 * worker reports its listening address on standard output; the client connects and sends every worker the
 * addresses of the others, for fetches between workers and chained broadcasts.
 *
 * <h2>Health</h2>
 * A worker is lost when its process exits, its connection breaks, or a heartbeat is not answered within the
 * heartbeat timeout (the process is then killed). Every call pending on a lost worker fails with
 * {@link WorkerLostException}, and so does every later call to it.
 *
 * <h2>Close</h2>
 * {@link #close()} asks each worker to shut down (it frees its memory and reports leaks), waits up to the shutdown
 * timeout for the processes, and kills those still running. Values the client gathered stay valid: they live in the
 * client's own memory. Closing twice is harmless.
 */
public final class LocalCluster implements AutoCloseable {
    private static final SecureRandom RANDOM = new SecureRandom();

    private final List<RemoteWorker> workers;
    private final Client client;
    private final ScheduledExecutorService heartbeat;
    private final Builder settings;
    private final String transport;
    private volatile boolean closed;

    private LocalCluster(Builder b, List<RemoteWorker> workers, Client client, String transport) {
        this.settings = b;
        this.workers = workers;
        this.client = client;
        this.transport = transport;
        this.heartbeat = Executors.newSingleThreadScheduledExecutor(
                r -> Thread.ofPlatform().daemon().name("cuwire-heartbeat").unstarted(r));
        long period = b.heartbeatInterval.toMillis();
        heartbeat.scheduleWithFixedDelay(this::beat, period, period, TimeUnit.MILLISECONDS);
    }

    /** A builder with the defaults. */
    public static Builder builder() {
        return new Builder();
    }

    /** The client. */
    public Client client() {
        return client;
    }

    /** The number of workers. */
    public int size() {
        return workers.size();
    }

    /** The transport scheme the client and workers use. */
    public String transport() {
        return transport;
    }

    /** The device ordinal worker {@code worker} is bound to (in its own process); -1 for a worker connected to. */
    public int deviceOf(int worker) {
        return workers.get(worker).deviceOrdinal();
    }

    /**
     * The process of worker {@code worker}, e.g. to watch or (in tests) to kill it.
     *
     * @throws IllegalStateException for a worker started by hand ({@link Builder#connect}): this cluster did not
     *     start it
     */
    public ProcessHandle processOf(int worker) {
        Process p = workers.get(worker).process();
        if (p == null) {
            throw new IllegalStateException(
                    "worker " + worker + " was started by hand; the cluster has no process " + "of it");
        }
        return p.toHandle();
    }

    private void beat() {
        for (RemoteWorker w : workers) {
            if (w.lost() != null || closed) {
                continue;
            }
            client.request(w.index(), WorkerRequest.Ping::new)
                    .orTimeout(settings.heartbeatTimeout.toMillis(), TimeUnit.MILLISECONDS)
                    .whenComplete((v, e) -> {
                        if (e != null
                                && !closed
                                && (e instanceof TimeoutException || e.getCause() instanceof TimeoutException)) {
                            w.markLost(new ClusterException("no heartbeat answer in " + settings.heartbeatTimeout));
                        }
                    });
        }
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        heartbeat.shutdownNow();
        List<CompletableFuture<Object>> shutdowns = new ArrayList<>();
        for (RemoteWorker w : workers) {
            w.closing();
            if (w.lost() == null) {
                shutdowns.add(client.request(w.index(), WorkerRequest.Shutdown::new));
            }
        }
        long deadline = System.nanoTime() + settings.shutdownTimeout.toNanos();
        for (CompletableFuture<Object> f : shutdowns) {
            try {
                f.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            } catch (Exception e) {
                // the worker is killed below if it does not exit
            }
        }
        for (RemoteWorker w : workers) {
            w.awaitExit(Duration.ofNanos(Math.max(1, deadline - System.nanoTime())));
            Endpoint e = w.endpoint();
            if (e != null) {
                e.close();
            }
        }
    }

    /** Builds and starts a {@link LocalCluster}; not thread-safe. */
    public static final class Builder {
        private int workers = -1;
        private String transport = Transports.TCP;
        private byte[] secret;
        private final List<String> jvmOptions = new ArrayList<>(List.of("-XX:+UseSerialGC"));
        private Duration startTimeout = Duration.ofSeconds(60);
        private Duration heartbeatInterval = Duration.ofSeconds(1);
        private Duration heartbeatTimeout = Duration.ofSeconds(10);
        private Duration shutdownTimeout = Duration.ofSeconds(10);
        private PrintStream workerOutput;
        private List<String> connect;
        private int[] devices;

        private Builder() {}

        /** The number of workers; default one per device (CUDA), or 2 on the emulated device. */
        public Builder workers(int n) {
            if (n < 1) {
                throw new IllegalArgumentException("workers: " + n + " (expected: >= 1)");
            }
            this.workers = n;
            return this;
        }

        /**
         * The transport scheme: {@code tcp} (default), another scheme the transport module knows ({@code ucx},
         * {@code ipc} as they land), or {@code auto} for the first of {@code ipc}, {@code ucx}, {@code tcp} that
         * this build has.
         */
        public Builder transport(String scheme) {
            this.transport = Objects.requireNonNull(scheme, "scheme");
            return this;
        }

        /** The cluster secret (at least 16 bytes); default 32 random bytes. */
        public Builder secret(byte[] value) {
            this.secret = value.clone();
            return this;
        }

        /** More options for the worker JVMs (e.g. {@code -Xmx2g}), after the defaults. */
        public Builder jvmOptions(List<String> options) {
            this.jvmOptions.addAll(options);
            return this;
        }

        /**
         * The device ordinals the workers bind, in turn: worker {@code i} on {@code ordinals[i mod length]}; default
         * every device of this host, worker {@code i} on device {@code i mod devices}.
         */
        public Builder devices(int... ordinals) {
            if (ordinals.length == 0) {
                throw new IllegalArgumentException("devices: none given");
            }
            this.devices = ordinals.clone();
            return this;
        }

        /** How long workers may take to start and connect; default 60 s. */
        public Builder startTimeout(Duration value) {
            this.startTimeout = value;
            return this;
        }

        /** How often the client pings each worker, and how long an answer may take; defaults 1 s and 10 s. */
        public Builder heartbeat(Duration interval, Duration timeout) {
            this.heartbeatInterval = interval;
            this.heartbeatTimeout = timeout;
            return this;
        }

        /** How long {@link LocalCluster#close()} waits for the workers to exit; default 10 s. */
        public Builder shutdownTimeout(Duration value) {
            this.shutdownTimeout = value;
            return this;
        }

        /**
         * Connects to workers started by hand ({@code cuwire worker}) instead of starting worker JVMs: worker
         * {@code i} listens at {@code addresses[i]} and must have been started with index {@code i}, the same
         * transport scheme, and this builder's {@link #secret}, which is then required. {@link #workers} and
         * {@link #transport} are ignored (the scheme is the addresses'). Closing the cluster shuts the workers down.
         */
        public Builder connect(List<String> addresses) {
            if (addresses.isEmpty()) {
                throw new IllegalArgumentException("connect: no addresses");
            }
            this.connect = List.copyOf(addresses);
            return this;
        }

        /** Copies each line the workers print to {@code out}, prefixed with the worker; default: kept quietly. */
        public Builder workerOutput(PrintStream out) {
            this.workerOutput = out;
            return this;
        }

        /**
         * Starts the workers and connects the client.
         *
         * @throws ClusterException if a worker does not start or connect within the start timeout (all are stopped)
         */
        public LocalCluster start() {
            String platform = Devices.platform();
            int devices = Devices.all().size();
            int n = workers > 0 ? workers : platform.equals("emulated") ? 2 : devices;
            if (connect != null && secret == null) {
                throw new IllegalArgumentException("connect: needs the workers' secret (Builder.secret)");
            }
            byte[] key = secret != null ? secret.clone() : randomSecret();
            List<RemoteWorker> started = new ArrayList<>();
            try {
                String scheme;
                if (connect != null) {
                    scheme = connect.getFirst()
                            .substring(0, Math.max(0, connect.getFirst().indexOf("://")));
                    for (int i = 0; i < connect.size(); i++) {
                        RemoteWorker w = new RemoteWorker(i, -1, null);
                        w.address(connect.get(i));
                        started.add(w);
                    }
                } else {
                    scheme = scheme(transport);
                    int[] ordinals = new int[n];
                    for (int i = 0; i < n; i++) {
                        ordinals[i] = Placement.ordinal(i, this.devices, devices);
                        try {
                            Placement.device(ordinals[i]);
                        } catch (IllegalArgumentException e) {
                            throw new IllegalArgumentException("worker " + i + ": " + e.getMessage(), e);
                        }
                    }
                    for (int i = 0; i < n; i++) {
                        started.add(launch(i, ordinals[i], platform, scheme, key));
                    }
                    awaitAddresses(started);
                }
                TypeRegistry registry = ClusterTypes.registry();
                BufferAllocator<DeviceBuffer> dev =
                        Devices.get(0).newAllocator("cuwire-client-device", BufferAllocator.UNLIMITED);
                BufferAllocator<HostBuffer> host =
                        BufferAllocator.host("cuwire-client-host", BufferAllocator.UNLIMITED);
                TransportConfig config = TransportConfig.builder()
                        .secret(key)
                        .receiveInto(DeviceMap.of(host, dev))
                        .families(ClusterTypes.families())
                        .connectTimeout(startTimeout)
                        .build();
                DecodeTarget target = new DecodeTarget(dev, host, Limits.DEFAULT);
                for (RemoteWorker w : started) {
                    Connection c = Transports.forAddress(w.address()).connect(w.address(), config);
                    w.endpoint(new Endpoint(
                                    "client-to-" + w.index(),
                                    c,
                                    registry,
                                    target,
                                    (from, r) -> from.reply(io.cuwire.cluster.rpc.Reply.failed(
                                            r.id(), new ClusterException("the client takes no requests"))),
                                    u -> new RemoteDecodeException(u.errorType(), u.error(), u.path()),
                                    w::lostException,
                                    w::markLost)
                            .start());
                    if (w.process() != null) {
                        w.process().onExit().thenRun(() -> w.markLost(new ClusterException("process exited")));
                    }
                }
                Client client = new Client(started, registry, dev, host);
                List<String> addresses = new ArrayList<>();
                for (RemoteWorker w : started) {
                    addresses.add(w.address());
                }
                List<CompletableFuture<Object>> peers = new ArrayList<>();
                for (RemoteWorker w : started) {
                    peers.add(client.request(w.index(), id -> new WorkerRequest.Peers(id, addresses)));
                }
                Client.joinAll(peers);
                return new LocalCluster(this, started, client, scheme);
            } catch (RuntimeException e) {
                for (RemoteWorker w : started) {
                    w.closing();
                    if (w.process() != null) {
                        w.process().destroyForcibly();
                    } else if (w.endpoint() != null) {
                        w.endpoint().close();
                    }
                }
                if (e instanceof ClusterException) {
                    throw e;
                }
                throw new ClusterException("the local cluster did not start: " + e.getMessage(), e);
            }
        }

        private static byte[] randomSecret() {
            byte[] key = new byte[32];
            RANDOM.nextBytes(key);
            return key;
        }

        static String scheme(String requested) {
            if (!requested.equals("auto")) {
                Transports.forAddress(requested + "://check");
                return requested;
            }
            for (String s : List.of("ipc", "ucx", Transports.TCP)) {
                try {
                    Transports.forAddress(s + "://check");
                    return s;
                } catch (TransportException e) {
                    // not in this build
                }
            }
            return Transports.TCP;
        }

        private static String listenAddress(String scheme, int index) {
            return switch (scheme) {
                case "tcp", "ucx", "ipc" -> scheme + "://127.0.0.1:0";
                default -> scheme + "://cuwire-" + ProcessHandle.current().pid() + "-" + index;
            };
        }

        /**
         * What a worker JVM is given native access for: the class path, and where this cluster is a named module,
         * cuwire's modules and every module of this JVM's boot layer that has it here.
         */
        static List<String> nativeAccess() {
            List<String> names = new ArrayList<>(List.of("ALL-UNNAMED"));
            if (LocalCluster.class.getModule().isNamed()) {
                for (String name : applicationModules()) {
                    Module m = ModuleLayer.boot().findModule(name).orElseThrow();
                    if (name.startsWith("io.cuwire.") || m.isNativeAccessEnabled()) {
                        names.add(name);
                    }
                }
            }
            return names;
        }

        /**
         * The options that start {@code main} in a worker JVM on the path this JVM runs on: the class path, or, where
         * this cluster is a named module, the module path with the modules of this JVM's boot layer that came from it
         * (the application's own, its task providers and model types among them) and the class path beside it.
         */
        static List<String> launchPath(Class<?> main) {
            String classPath = System.getProperty("java.class.path", "");
            Module module = main.getModule();
            if (!module.isNamed()) {
                return List.of("-cp", classPath, main.getName());
            }
            String modulePath = System.getProperty("jdk.module.path");
            if (modulePath == null
                    || ModuleLayer.boot().findModule(module.getName()).isEmpty()) {
                throw new ClusterException("cannot start workers: module " + module.getName() + " is not in the "
                        + "boot layer of a JVM started with a module path (a custom module layer is not supported)");
            }
            List<String> options = new ArrayList<>(
                    List.of("--module-path", modulePath, "--add-modules", String.join(",", applicationModules())));
            if (!classPath.isEmpty()) {
                options.addAll(List.of("-cp", classPath));
            }
            options.addAll(List.of("-m", module.getName() + "/" + main.getName()));
            return options;
        }

        /** The modules of this JVM's boot layer that are not the runtime's own, by name. */
        private static List<String> applicationModules() {
            Set<String> system = new HashSet<>();
            ModuleFinder.ofSystem()
                    .findAll()
                    .forEach(r -> system.add(r.descriptor().name()));
            List<String> names = new ArrayList<>();
            for (Module m : ModuleLayer.boot().modules()) {
                if (!system.contains(m.getName())) {
                    names.add(m.getName());
                }
            }
            names.sort(null);
            return names;
        }

        private RemoteWorker launch(int index, int ordinal, String platform, String scheme, byte[] key) {
            List<String> cmd = new ArrayList<>();
            cmd.add(ProcessHandle.current().info().command().orElse("java"));
            cmd.add("--enable-native-access=" + String.join(",", nativeAccess()));
            if (ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent()) {
                cmd.add("--add-modules=jdk.incubator.vector"); // the CPU backend's kernels, as in this JVM
            }
            cmd.add("-D" + Devices.PLATFORM_PROPERTY + "=" + platform);
            // java.io.tmpdir too: where the emulated device's files go when /dev/shm is too small (all processes that
            // share device memory must use the same directory)
            for (String p : List.of(
                    "cuwire.emulated.devices",
                    "cuwire.emulated.memoryBytes",
                    "cuwire.emulated.dir",
                    "java.io.tmpdir",
                    "cuwire.memory.trackAllocations")) {
                String v = System.getProperty(p);
                if (v != null) {
                    cmd.add("-D" + p + "=" + v);
                }
            }
            cmd.addAll(jvmOptions);
            cmd.addAll(launchPath(Worker.class));
            cmd.add(Integer.toString(index));
            cmd.add(Integer.toString(ordinal));
            cmd.add(listenAddress(scheme, index));
            Process p;
            try {
                p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
                try (OutputStream in = p.getOutputStream()) {
                    in.write((HexFormat.of().formatHex(key) + "\n").getBytes(StandardCharsets.US_ASCII));
                }
            } catch (IOException e) {
                throw new ClusterException("cannot start worker " + index + ": " + e.getMessage(), e);
            }
            RemoteWorker w = new RemoteWorker(index, ordinal, p);
            CompletableFuture<String> address = new CompletableFuture<>();
            pending.add(address);
            Thread.ofPlatform()
                    .daemon()
                    .name("cuwire-worker-" + index + "-output")
                    .start(() -> {
                        try (BufferedReader r =
                                new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                            String line;
                            while ((line = r.readLine()) != null) {
                                if (!address.isDone() && line.startsWith(Worker.LISTENING + " ")) {
                                    address.complete(line.substring(Worker.LISTENING.length() + 1)
                                            .strip());
                                    continue;
                                }
                                w.output(line);
                                PrintStream echo = workerOutput;
                                if (echo != null) {
                                    echo.println("[worker " + index + "] " + line);
                                }
                            }
                        } catch (IOException e) {
                            // the process is gone
                        }
                        address.completeExceptionally(new ClusterException(
                                "worker " + index + " exited before listening;" + " its output:\n" + w.outputTail()));
                    });
            return w;
        }

        private final List<CompletableFuture<String>> pending = new ArrayList<>();

        private void awaitAddresses(List<RemoteWorker> started) {
            long deadline = System.nanoTime() + startTimeout.toNanos();
            for (int i = 0; i < started.size(); i++) {
                RemoteWorker w = started.get(i);
                try {
                    w.address(pending.get(i).get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS));
                } catch (TimeoutException e) {
                    throw new ClusterException("worker " + i + " did not listen within " + startTimeout
                            + "; its output:\n" + w.outputTail());
                } catch (java.util.concurrent.ExecutionException e) {
                    throw e.getCause() instanceof ClusterException c
                            ? c
                            : new ClusterException("worker " + i + " failed to start", e.getCause());
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new ClusterException("interrupted while starting workers");
                }
            }
            pending.clear();
        }
    }
}
