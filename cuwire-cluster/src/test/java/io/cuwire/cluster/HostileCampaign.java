package io.cuwire.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.cluster.rpc.Reply;
import io.cuwire.cluster.rpc.Request;
import io.cuwire.memory.Buffer;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.DType;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.IpcHandle;
import io.cuwire.memory.MemoryKind;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import io.cuwire.ml.MlTesting;
import io.cuwire.ml.linear.LinearRegression;
import io.cuwire.serialize.DecodeBudgetExceededException;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.Frame;
import io.cuwire.serialize.FrameDescriptor;
import io.cuwire.serialize.Serialized;
import io.cuwire.serialize.TypeRegistry;
import io.cuwire.transport.Message;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.ObjectOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.LinkedList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongFunction;
import java.util.stream.Stream;

/**
 * One live node of the runtime in a JVM of its own on the emulated device, in one of its roles ({@link HostileTarget}:
 * the cluster worker, the Spark executor's endpoint), its legitimate client, and the hostile peers of issue 15 against
 * it: the attacks of its findings as scenarios, a handshake fuzzer ({@link HandshakeFuzzer}) and a header fuzzer
 * ({@link HeaderFuzzer}) whose mutants of the node's own requests go out on authenticated connections (over
 * {@code ipc://}, with their device frames' references fuzzed too). After each round it checks that the node is
 * alive, that its client is served (a broadcast and a prediction, checked against the model's own), that a new peer
 * connects and is answered, and that the node is back where it started: its allocators' accounts, its store and cache,
 * its JVM's direct and mapped buffer pools and its files in the emulated device's directory. Written once for every
 * role; used by {@link HostilePeerSuite} (a fixed seed, bounded rounds) and {@link HostileSoak}.
 */
public final class HostileCampaign implements AutoCloseable {
    /** The cluster secret of the node and its client. */
    public static final byte[] SECRET = "the hostile suite's 32-byte key!".getBytes(StandardCharsets.US_ASCII);
    /** The attackers' source addresses: 127.0.0.2 … 127.0.0.9, and 127.0.0.1, which the client shares. */
    public static final List<String> SOURCES = List.of(
            "127.0.0.1",
            "127.0.0.2",
            "127.0.0.3",
            "127.0.0.4",
            "127.0.0.5",
            "127.0.0.6",
            "127.0.0.7",
            "127.0.0.8",
            "127.0.0.9");
    /** System property: JVM options for the worker (the coverage profile's JaCoCo agent). */
    static final String WORKER_OPTIONS_PROPERTY = "cuwire.hostile.workerOptions";
    /** How long anything the client does may take: its normal time is well under a second. */
    public static final Duration SERVED_WITHIN = Duration.ofSeconds(30);
    /** How long the worker may take to get back to its baseline once the attackers are gone. */
    private static final Duration SETTLE = Duration.ofSeconds(20);

    private static final int FILLER_BYTES = 1 << 20;
    /** The seeds of the role's ping and of its carrier of a device array (which the forged references go with). */
    private static final String PING_SEED = "ping";

    private static final String CARRIER_SEED = "carrier-device";

    final String scheme;
    private final boolean ipc;
    private final PrintStream log;
    private final SplittableRandom random;
    private final HostileTarget target;
    final String address;
    private final InetSocketAddress socketAddress;
    private final Path emulatedDir;
    private final BufferAllocator<DeviceBuffer> device =
            Devices.get(0).newAllocator("attacker-device", BufferAllocator.UNLIMITED);
    private final BufferAllocator<HostBuffer> host = BufferAllocator.host("attacker-host", BufferAllocator.UNLIMITED);
    private final TypeRegistry registry;
    private final List<AutoCloseable> seedValues = new ArrayList<>();
    private final List<SeedData> seeds = new ArrayList<>();
    private final HeaderFuzzer headerFuzzer;
    private final HandshakeFuzzer handshakeFuzzer;
    private final DeviceBuffer scratch;
    private final byte[] filler = new byte[FILLER_BYTES];
    private final AtomicLong requestIds = new AtomicLong(HeaderFuzzer.ATTACKER_IDS);
    /** What went wrong, found by the attackers (a worker that answered what it must refuse). */
    final List<String> violations = Collections.synchronizedList(new ArrayList<>());
    /** Connections the attackers opened, mutants sent, and the client's served rounds. */
    final AtomicLong connections = new AtomicLong();

    final AtomicLong mutants = new AtomicLong();
    /** Header mutants the receiver's header checks refuse (the rest reach the decoder). */
    final AtomicLong refusedHeaders = new AtomicLong();
    /** The client's served times, nanoseconds. */
    final List<Long> servedNanos = Collections.synchronizedList(new ArrayList<>());
    /** The checks that do not apply to the target's role, each with the role's reason, once each. */
    private final Set<String> notApplicable = Collections.synchronizedSet(new LinkedHashSet<>());

    private Snapshot baseline;

    /** A seed message: its header, and per frame the bytes a TCP sender sends and the buffer an IPC one refers to. */
    private record SeedData(HeaderFuzzer.Seed seed, List<byte[]> bytes, List<Buffer> buffers) {}

    /** What the checks compare with the baseline. */
    public record Snapshot(
            long deviceBytes,
            long hostBytes,
            long objects,
            long models,
            long directCount,
            long directBytes,
            long mappedCount,
            long mappedBytes,
            long files) {
        boolean memoryEquals(Snapshot o) {
            return deviceBytes == o.deviceBytes
                    && hostBytes == o.hostBytes
                    && objects == o.objects
                    && models == o.models
                    && directCount == o.directCount
                    && directBytes == o.directBytes
                    && mappedCount == o.mappedCount
                    && mappedBytes == o.mappedBytes
                    && files == o.files;
        }
    }

    private HostileCampaign(HostileTarget target, String scheme, long seed, PrintStream log) {
        this.target = target;
        this.scheme = scheme;
        this.ipc = scheme.equals("ipc");
        this.log = log;
        this.random = new SplittableRandom(seed);
        random.nextBytes(filler);
        this.headerFuzzer = new HeaderFuzzer(random.split());
        this.handshakeFuzzer = new HandshakeFuzzer(SECRET, ipc);
        // The node and this JVM share the emulated device's directory (a reference over IPC names a file there).
        this.emulatedDir = Path.of(System.getProperty(
                "cuwire.emulated.dir",
                Files.isDirectory(Path.of("/dev/shm")) ? "/dev/shm" : System.getProperty("java.io.tmpdir")));
        this.address = target.address();
        this.socketAddress = WireAttacker.target(address);
        this.registry = target.registry();
        this.scratch = device.allocate(FILLER_BYTES);
        CopyEngine.copyFromSegment(MemorySegment.ofArray(filler), scratch, 0);
        makeSeeds();
    }

    /**
     * Starts the campaign against {@code target} (reached over {@code scheme}: {@code tcp} or {@code ipc}), which it
     * owns from now on: closing the campaign closes it; {@code log} hears progress.
     */
    public static HostileCampaign start(HostileTarget target, String scheme, long seed, PrintStream log)
            throws Exception {
        HostileCampaign c;
        try {
            c = new HostileCampaign(target, scheme, seed, log);
        } catch (RuntimeException | Error e) {
            target.close();
            throw e;
        }
        try {
            // Twice: over ipc the node pulls the first message's device frames and then offers the client a push
            // arena (TransportConfig.ipcPushArenaBytes), into which every later small message comes; the baseline is
            // the steady state, a model held in the arena, as after every round.
            c.serve();
            c.serve();
            c.newPeerServed(); // the state every check compares in: see checkBaseline
            c.baseline = c.settled(null);
            c.log.println("[hostile] " + scheme + " " + target.role() + " pid " + target.pid() + " at " + c.address
                    + ", baseline " + c.baseline);
            return c;
        } catch (Exception | Error e) {
            c.close();
            throw e;
        }
    }

    /** The next id of an attacker's request. */
    public long nextRequestId() {
        return requestIds.incrementAndGet();
    }

    long workerPid() {
        return target.pid();
    }

    HostileTarget target() {
        return target;
    }

    // ---------------------------------------------------------------- the client and the checks

    /** The client's work ({@link HostileTarget#serve}); how long it took. */
    Duration serve() throws Exception {
        long start = System.nanoTime();
        target.serve(random);
        long took = System.nanoTime() - start;
        servedNanos.add(took);
        return Duration.ofNanos(took);
    }

    /** A new peer with the secret connects (while whatever is open stays open) and is answered. */
    void newPeerServed() throws Exception {
        try (TestClient peer = peer()) {
            Reply r = peer.request(target::ping).get(SERVED_WITHIN.toSeconds(), TimeUnit.SECONDS);
            assertInstanceOf(Reply.Ok.class, r, "a new peer's ping: " + r);
        }
    }

    /** A new authenticated connection to the node, with its role's registry and families. */
    private TestClient peer() {
        return TestClient.connect(address, SECRET, registry, target.families());
    }

    /** The node's accounts, store, cache, buffer pools and files now. */
    Snapshot snapshot() throws Exception {
        HostileTarget.Accounts s = target.accounts();
        List<Long> pools = target.pools();
        return new Snapshot(
                s.deviceBytes(),
                s.hostBytes(),
                s.objects(),
                s.models(),
                pools.get(0),
                pools.get(1),
                pools.get(2),
                pools.get(3),
                workerFiles());
    }

    /** The worker's files in the emulated device's directory ({@code cuwire-emu-<pid>-...}). */
    long workerFiles() throws IOException {
        String prefix = "cuwire-emu-" + workerPid() + "-";
        try (Stream<Path> files = Files.list(emulatedDir)) {
            return files.filter(p -> p.getFileName().toString().startsWith(prefix))
                    .count();
        }
    }

    /**
     * Waits until two snapshots in a row agree (and, given {@code expected}, equal it), within {@link #SETTLE}:
     * buffers that went with their connections come back to the pools once collected. While they do not, a new peer
     * connects before the next look: the worker prunes the endpoints of closed peers (holding their connections'
     * buffers) only when a new peer connects, and a peer that was still closing at the last one was kept.
     */
    private Snapshot settled(Snapshot expected) throws Exception {
        long deadline = System.nanoTime() + SETTLE.toNanos();
        Snapshot last = snapshot();
        while (true) {
            Thread.sleep(100);
            Snapshot now = snapshot();
            boolean stable = now.memoryEquals(last);
            if (stable && (expected == null || now.memoryEquals(expected))) {
                return now;
            }
            if (System.nanoTime() > deadline) {
                return now;
            }
            if (expected != null) {
                newPeerServed();
                now = snapshot();
            }
            last = now;
        }
    }

    /**
     * Sweeps, connects a new peer (which is served) and then checks that the worker got back to its baseline; the
     * snapshot it came back to. The worker keeps the endpoints of peers that closed, and so their connections'
     * buffers, until the next peer connects (it prunes them then): the baseline was taken right after such a peer,
     * and so is every check.
     */
    Snapshot checkBaseline(String after) throws Exception {
        target.sweep();
        newPeerServed();
        Snapshot now = settled(baseline);
        assertEquals(baseline, now, "the " + target.role() + " is not back at its baseline after " + after);
        return now;
    }

    // ---------------------------------------------------------------- rounds

    /**
     * One round: the scenarios (the whole set in round 0, the cheap ones after), then {@code handshakes} handshake
     * mutants and {@code headers} header mutants over {@code parallel} attackers at once, while 100 stalled
     * handshakes and a dripping message stay open; then the client is served, a new peer too, and the worker must
     * be back at its baseline. Violations found by the attackers fail it.
     */
    void round(int round, int handshakes, int headers, int parallel) throws Exception {
        long start = System.nanoTime();
        Phases phases = new Phases();
        List<Socket> stalled = phases.time("stalled", () -> stalled(100)); // finding 1
        Dripper drip = phases.time("drip", this::drip); // finding 4
        try {
            if (round == 0) {
                phases.run("tiny-frames", this::manyTinyDeviceFrames); // finding 2
                phases.run("churn", () -> churn(1000)); // finding 10
            }
            phases.run("budgets", this::decodeBudgets); // finding 3
            phases.run("departed", () -> target.departedPeer(this)); // finding 5
            if (ipc) {
                phases.run("forged", this::forgedReferences); // finding 6
            }
            phases.run("relay", this::relay); // finding 8
            phases.run("handshakes", () -> fuzzHandshakes(handshakes, parallel));
            phases.run("headers", () -> fuzzHeaders(headers, parallel));
            Duration served = phases.time("served", this::serve);
            phases.run("new-peer", this::newPeerServed); // while the stalled handshakes and the drip are open
            log.println("[hostile] " + scheme + " round " + round + ": served in " + served.toMillis() + " ms with "
                    + stalled.size() + " stalled handshakes and a message of " + Dripper.DECLARED + " declared bytes "
                    + "holding " + drip.heldBytes + " host bytes at the " + target.role() + " after " + Dripper.SENT
                    + " arrived");
        } finally {
            drip.close();
            for (Socket s : stalled) {
                s.close();
            }
        }
        assertEquals(List.of(), violations, "the attackers found violations");
        phases.run("baseline", () -> checkBaseline("round " + round));
        log.println("[hostile] " + scheme + " round " + round + " done in " + (System.nanoTime() - start) / 1_000_000
                + " ms (" + phases + "): " + connections.get() + " attacker connections, " + mutants.get()
                + " header mutants (" + refusedHeaders.get() + " refused at the header) so far");
    }

    /** How long each phase of a round took, in order. */
    private static final class Phases {
        private final StringBuilder text = new StringBuilder();

        @FunctionalInterface
        interface Step {
            void run() throws Exception;
        }

        @FunctionalInterface
        interface Value<T> {
            T get() throws Exception;
        }

        void run(String name, Step step) throws Exception {
            time(name, () -> {
                step.run();
                return null;
            });
        }

        <T> T time(String name, Value<T> step) throws Exception {
            long t = System.nanoTime();
            try {
                return step.get();
            } finally {
                text.append(text.isEmpty() ? "" : ", ")
                        .append(name)
                        .append(' ')
                        .append((System.nanoTime() - t) / 1_000_000)
                        .append(" ms");
            }
        }

        @Override
        public String toString() {
            return text.toString();
        }
    }

    /** {@code n} connections that sent the start of a hello and stall, from every source address. */
    List<Socket> stalled(int n) throws InterruptedException {
        List<Socket> sockets = Collections.synchronizedList(new ArrayList<>());
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            String source = SOURCES.get(i % SOURCES.size());
            threads.add(Thread.ofVirtual().start(() -> {
                Socket s = new Socket();
                try {
                    s.bind(new InetSocketAddress(InetAddress.getByName(source), 0));
                    s.connect(socketAddress, 10_000);
                    DataOutputStream out = new DataOutputStream(s.getOutputStream());
                    out.writeInt(100);
                    out.write(new byte[10]);
                    out.flush();
                    sockets.add(s);
                } catch (IOException e) {
                    closeQuietly(s);
                }
            }));
        }
        for (Thread t : threads) {
            t.join();
        }
        connections.addAndGet(n);
        return new ArrayList<>(sockets);
    }

    /** Finding 10: {@code n} connections that connect and close at once (each cost a buffer and selectors). */
    void churn(int n) throws InterruptedException {
        List<Thread> threads = new ArrayList<>();
        AtomicInteger next = new AtomicInteger();
        for (int t = 0; t < 8; t++) {
            threads.add(Thread.ofVirtual().start(() -> {
                for (int i = next.getAndIncrement(); i < n; i = next.getAndIncrement()) {
                    try (Socket s = new Socket()) {
                        s.bind(new InetSocketAddress(InetAddress.getByName(SOURCES.get(i % SOURCES.size())), 0));
                        s.connect(socketAddress, 10_000);
                    } catch (IOException e) {
                        // refused or reset under load: the next
                    }
                }
            }));
        }
        for (Thread t : threads) {
            t.join();
        }
        connections.addAndGet(n);
    }

    /**
     * Finding 4: an authenticated peer declares a message of one host frame of {@link #DECLARED} bytes, sends
     * {@link #SENT} of them and stalls. The worker allocates a frame when its first bytes arrive, and then all of it
     * (what is left of the finding: no budget of allocated-but-unfilled bytes); what it holds is measured, and it
     * must all come back once the peer is gone.
     */
    final class Dripper implements AutoCloseable {
        static final long DECLARED = 16L << 20;
        static final int SENT = 1024;
        private final WireAttacker attacker;
        long heldBytes;

        Dripper() throws Exception {
            attacker = authenticated(SOURCES.get(1 + random.nextInt(8)));
            Map<String, Object> top = new LinkedHashMap<>();
            top.put("fam", List.of("cuda", "host"));
            top.put("root", pingRoot());
            top.put("frames", List.of(List.of((long) MemoryKind.HOST.ordinal(), -1L, DECLARED)));
            byte[] header = HeaderFuzzer.encode(top);
            attacker.sendMessage(header, List.of(Arrays.copyOf(filler, SENT)));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            long before = baseline == null ? 0 : baseline.hostBytes();
            do {
                heldBytes = target.accounts().hostBytes() - before;
            } while (heldBytes < DECLARED && System.nanoTime() < deadline);
        }

        @Override
        public void close() {
            attacker.close();
        }
    }

    Dripper drip() throws Exception {
        return new Dripper();
    }

    /** An attacker that completed the handshake with the secret, from {@code source}. */
    public WireAttacker authenticated(String source) throws IOException {
        WireAttacker a = WireAttacker.connect(source, socketAddress);
        connections.incrementAndGet();
        try {
            a.authenticate(random.split(), SECRET);
            return a;
        } catch (IOException | RuntimeException e) {
            a.close();
            throw e;
        }
    }

    /**
     * Finding 2: one message of 65,536 one-byte device frames from a peer is taken and let go as the role does
     * ({@link HostileTarget#storeAndRelease}), leaving no file.
     */
    void manyTinyDeviceFrames() throws Exception {
        int frames = 65_536;
        try (TestClient peer = peer();
                DeviceBuffer memory = peer.device.allocate(frames)) {
            List<NdArray> tiny = new ArrayList<>(frames);
            for (int i = 0; i < frames; i++) {
                tiny.add(NdArray.view(memory, i, DType.UINT8, Order.C, 1));
            }
            target.storeAndRelease(peer, tiny);
        }
    }

    /**
     * Finding 3: a header of about 2 KB whose references describe 2^50 paths under a set is answered with the
     * budget's refusal and the peer is cut off; a 2^60-path value given to an unknown operation is answered (its close
     * walks each shared list once); a request of an unknown kind is answered with the registry's refusal of its type
     * name, before anything in it is decoded; a 60-level SerialDOS stream in the {@code java} family is refused by its
     * depth (where the node's connections take that family; else the peer is cut off at its header).
     */
    void decodeBudgets() throws Exception {
        try (TestClient peer = peer()) {
            target.unknownOperation(peer, doubling(60));

            RemoteDecodeException refusedKind = refusal(peer, HostileCampaign::unknownKindHeader);
            assertEquals("UnknownTypeException", refusedKind.remoteType(), refusedKind.getMessage());
            assertTrue(refusedKind.getMessage().contains("'cuwire.worker.Frobnicate'"), refusedKind.getMessage());

            if (target.takesJavaFamily()) {
                RemoteDecodeException refused = refusal(peer, this::serialDosHeader);
                assertEquals("LimitExceededException", refused.remoteType(), refused.getMessage());
            } else {
                // from the wire: a peer's own transport will not send a family its connection did not agree
                try (WireAttacker other = authenticated(SOURCES.get(1 + random.nextInt(8)))) {
                    other.sendMessage(serialDosHeader(nextRequestId()), List.of());
                    assertTrue(
                            other.awaitClosedByPeer(SERVED_WITHIN),
                            "the " + target.role() + " kept the "
                                    + "connection of a peer that sent a header in the java family, which its connections do "
                                    + "not take");
                }
            }

            List<Object> levels = doubling(50);
            Set<Object> set = new HashSet<>();
            List<Object> holder = new ArrayList<>();
            set.add(holder);
            holder.add(levels.getLast());
            levels.add(set);
            Optional<String> unanswered = target.carrierUnanswered();
            String budgetRefused = DecodeBudgetExceededException.class.getSimpleName();
            long budgetLines = lines(target.output(), budgetRefused).size();
            if (unanswered.isEmpty()) {
                ExecutionException e = assertThrows(
                        ExecutionException.class,
                        () -> peer.request(n -> (Request) target.carrier(n, levels))
                                .get(SERVED_WITHIN.toSeconds(), TimeUnit.SECONDS));
                RemoteDecodeException budget = assertInstanceOf(RemoteDecodeException.class, e.getCause());
                assertEquals(DecodeBudgetExceededException.class.getSimpleName(), budget.remoteType());
            } else {
                notApplicable(
                        "the answer to a carrier beyond the decode budget (the cut-off is checked)", unanswered.get());
                peer.endpoint
                        .send(target.carrier(nextRequestId(), levels))
                        .get(SERVED_WITHIN.toSeconds(), TimeUnit.SECONDS);
            }
            assertClosedByNode(peer, "beyond its decode budget");
            if (unanswered.isPresent()) {
                // unanswered, the cut-off is the budget's where the node's log says so (an endpoint logs its first
                // undecodable message always)
                long deadline = System.nanoTime() + SERVED_WITHIN.toNanos();
                while (lines(target.output(), budgetRefused).size() == budgetLines && System.nanoTime() < deadline) {
                    Thread.sleep(10);
                }
                assertTrue(
                        lines(target.output(), budgetRefused).size() > budgetLines,
                        "the " + target.role()
                                + " cut the peer off without logging its decode budget's refusal: "
                                + target.output()
                                        .subList(
                                                Math.max(0, target.output().size() - 20),
                                                target.output().size()));
            }
        }
    }

    /** Records (and logs, the first time) that {@code check} does not apply to the target's role: {@code why}. */
    private void notApplicable(String check, String why) {
        if (notApplicable.add(check + ": " + why)) {
            log.println("[hostile] " + scheme + " " + target.role() + ": not applicable: " + check + ": " + why);
        }
    }

    /** The checks that did not apply to the target's role so far, each with its reason. */
    List<String> notApplicable() {
        synchronized (notApplicable) {
            return List.copyOf(notApplicable);
        }
    }

    /** Fails unless the node closes {@code peer}'s connection within {@link #SERVED_WITHIN}. */
    private void assertClosedByNode(TestClient peer, String what) throws InterruptedException {
        long deadline = System.nanoTime() + SERVED_WITHIN.toNanos();
        while (peer.endpoint.isOpen() && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertTrue(
                !peer.endpoint.isOpen(), "the " + target.role() + " kept the connection of a peer that sent " + what);
    }

    /** A header of a request with a new id, as {@code header} makes it of the id. */
    @FunctionalInterface
    private interface RequestHeader {
        byte[] of(long id) throws IOException;
    }

    /** Sends {@code peer}'s worker the header {@code header} makes and returns the worker's refusal of it. */
    private RemoteDecodeException refusal(TestClient peer, RequestHeader header) throws Exception {
        long id = requestIds.incrementAndGet();
        CompletableFuture<Reply> reply = peer.endpoint.expect(id);
        peer.endpoint
                .sendMessage(Message.of(header.of(id), List.of()))
                .get(SERVED_WITHIN.toSeconds(), TimeUnit.SECONDS);
        ExecutionException e =
                assertThrows(ExecutionException.class, () -> reply.get(SERVED_WITHIN.toSeconds(), TimeUnit.SECONDS));
        return assertInstanceOf(RemoteDecodeException.class, e.getCause());
    }

    /** Lists each holding the one before twice: 2^levels paths down the last. */
    private static List<Object> doubling(int levels) {
        List<Object> all = new ArrayList<>();
        List<Object> level = new ArrayList<>(List.of(1L));
        all.add(level);
        for (int i = 0; i < levels; i++) {
            level = new ArrayList<>(List.of(level, level));
            all.add(level);
        }
        return all;
    }

    /**
     * The role's carrier request ({@code put} for the worker) whose value is a {@code java}-family node of an
     * estimator holding a 60-level SerialDOS set.
     */
    private byte[] serialDosHeader(long id) throws IOException {
        Set<Object> root = new HashSet<>();
        Set<Object> s1 = root;
        Set<Object> s2 = new HashSet<>();
        for (int i = 0; i < 60; i++) {
            Set<Object> t1 = new HashSet<>();
            Set<Object> t2 = new HashSet<>();
            t1.add("foo");
            s1.add(t1);
            s1.add(t2);
            s2.add(t1);
            s2.add(t2);
            s1 = t1;
            s2 = t2;
        }
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
            out.writeObject(root);
        }
        Map<String, Object> node = HeaderFuzzer.node(
                registry.nameOf(LinearRegression.class), "f", "java", "d", Map.of("b", bytes.toByteArray()));
        Map<String, Object> request = carrierRoot(id);
        @SuppressWarnings("unchecked")
        Map<String, Object> fields = (Map<String, Object>) request.get("d");
        fields.put(target.carrierField(), node);
        Map<String, Object> top = new LinkedHashMap<>();
        top.put("fam", List.of("cuda", "java"));
        top.put("root", request);
        top.put("frames", List.of());
        return HeaderFuzzer.encode(top);
    }

    /** A request of a kind no worker serves ({@code cuwire.worker.Frobnicate}, unregistered) with the id {@code id}. */
    private static byte[] unknownKindHeader(long id) {
        Map<String, Object> request = HeaderFuzzer.node("cuwire.worker.Frobnicate", "f", "cuda");
        Map<String, Object> fields = new LinkedHashMap<>();
        fields.put("id", id);
        fields.put("value", 1L);
        request.put("d", fields);
        Map<String, Object> top = new LinkedHashMap<>();
        top.put("fam", List.of("cuda", "host"));
        top.put("root", request);
        top.put("frames", List.of());
        return HeaderFuzzer.encode(top);
    }

    /** The root node of the role's carrier request with the id {@code id} (its value a placeholder). */
    private Map<String, Object> carrierRoot(long id) {
        try (Serialized s = registry.serialize(target.carrier(id, 0L), Family.CUDA, Family.HOST)) {
            @SuppressWarnings("unchecked")
            Map<String, Object> root = (Map<String, Object>)
                    HeaderFuzzer.seed("carrier", s.encodeHeader()).top().get("root");
            return root;
        }
    }

    /** The root node of the role's ping. */
    private Object pingRoot() {
        try (Serialized s = registry.serialize(target.ping(HeaderFuzzer.ATTACKER_IDS), Family.CUDA, Family.HOST)) {
            return HeaderFuzzer.seed("ping", s.encodeHeader()).top().get("root");
        }
    }

    /**
     * Finding 6 (IPC): a peer's {@code put} whose device frame refers to a file by its path, or to an allocation of
     * another process: the worker must close the connection without storing anything.
     */
    void forgedReferences() throws Exception {
        Path secretFile = Files.createTempFile("cuwire-emu-", ".secret");
        try {
            Files.writeString(secretFile, "no peer may read this");
            SeedData put = seeds.stream()
                    .filter(s -> s.seed().name().equals(CARRIER_SEED))
                    .findFirst()
                    .orElseThrow();
            byte[] header = HeaderFuzzer.encode(put.seed().top());
            List<FrameDescriptor> frames = HeaderFuzzer.accepted(header);
            for (byte[] handle : List.of(
                    secretFile.toString().getBytes(StandardCharsets.UTF_8),
                    ByteBuffer.allocate(24).putLong(1).put(new byte[16]).array())) {
                long objects = target.accounts().objects();
                try (WireAttacker a = authenticated(SOURCES.get(1 + random.nextInt(8)))) {
                    a.sendMessage(header, List.of(reference(handle, 0, 1 << 20, 0)));
                    assertTrue(
                            a.awaitClosedByPeer(SERVED_WITHIN),
                            "the worker kept a peer that sent a forged " + "reference of " + frames.getFirst());
                }
                assertEquals(objects, target.accounts().objects(), "the node stored a forged frame");
            }
        } finally {
            Files.deleteIfExists(secretFile);
        }
    }

    /**
     * Finding 8: a relay between a secret holder and the worker forwards the handshake both ways and then sends a
     * message of its own: the secret holder is refused (the hello names the relay), and the worker never accepts the
     * relay's connection.
     */
    void relay() throws Exception {
        try (ServerSocket server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            CompletableFuture<Void> relayed = CompletableFuture.runAsync(() -> relayOnce(server));
            String via = scheme + "://127.0.0.1:" + server.getLocalPort();
            RuntimeException e = assertThrows(
                    RuntimeException.class,
                    () -> TestClient.connect(via, SECRET, registry, target.families())
                            .close());
            assertTrue(String.valueOf(e.getMessage()).contains("but this connection arrived at"), String.valueOf(e));
            relayed.get(SERVED_WITHIN.toSeconds(), TimeUnit.SECONDS);
            connections.addAndGet(2);
        }
    }

    private void relayOnce(ServerSocket server) {
        try (Socket victim = server.accept();
                Socket toWorker = new Socket()) {
            toWorker.connect(socketAddress, 10_000);
            Thread back = Thread.ofVirtual().start(() -> pump(toWorker, victim));
            DataInputStream fromVictim = new DataInputStream(victim.getInputStream());
            DataOutputStream out = new DataOutputStream(toWorker.getOutputStream());
            for (int i = 0; i < 3; i++) {
                byte[] record = new byte[fromVictim.readInt()];
                fromVictim.readFully(record);
                out.writeInt(record.length);
                out.write(record);
                out.flush();
            }
            byte[] header = HeaderFuzzer.encode(seeds.stream()
                    .filter(s -> s.seed().name().equals(PING_SEED))
                    .findFirst()
                    .orElseThrow()
                    .seed()
                    .top());
            out.writeByte(WireAttacker.MESSAGE);
            out.writeInt(header.length);
            out.write(header);
            out.flush();
            back.join(Duration.ofSeconds(20));
        } catch (EOFException e) {
            // the worker (or the victim) hung up during the handshake: what it should do
        } catch (IOException | InterruptedException e) {
            // closed
        }
    }

    private static void pump(Socket from, Socket to) {
        byte[] buffer = new byte[4096];
        try {
            InputStream in = from.getInputStream();
            OutputStream out = to.getOutputStream();
            int n;
            while ((n = in.read(buffer)) >= 0) {
                out.write(buffer, 0, n);
                out.flush();
            }
        } catch (IOException e) {
            // either side went away
        }
        closeQuietly(to);
    }

    // ---------------------------------------------------------------- fuzzing

    /** {@code n} handshake mutants, {@code parallel} at a time, from every source address. */
    void fuzzHandshakes(int n, int parallel) throws InterruptedException {
        AtomicInteger next = new AtomicInteger();
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < parallel; t++) {
            SplittableRandom r = random.split();
            threads.add(Thread.ofVirtual().start(() -> {
                while (next.getAndIncrement() < n) {
                    HandshakeFuzzer.Outcome o =
                            handshakeFuzzer.attack(r, socketAddress, SOURCES.get(r.nextInt(SOURCES.size())));
                    connections.incrementAndGet();
                    if (o.violation() != null) {
                        violations.add("handshake " + o.what() + ": " + o.violation());
                    }
                }
            }));
        }
        for (Thread t : threads) {
            t.join();
        }
    }

    /**
     * {@code n} header mutants, {@code parallel} authenticated attackers at a time, each sending mutants on its
     * connection until the worker closes it (or 16 went out). A mutant whose header the receiver's checks refuse must
     * close the connection.
     */
    void fuzzHeaders(int n, int parallel) throws InterruptedException {
        AtomicInteger next = new AtomicInteger();
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < parallel; t++) {
            SplittableRandom r = random.split();
            HeaderFuzzer fuzzer = new HeaderFuzzer(r.split());
            threads.add(Thread.ofVirtual().start(() -> {
                WireAttacker a = null;
                int sentOnConnection = 0;
                try {
                    while (next.getAndIncrement() < n) {
                        SeedData seed = seeds.get(r.nextInt(seeds.size()));
                        HeaderFuzzer.Mutant m = fuzzer.mutate(seed.seed());
                        boolean fuzzRefs = ipc && r.nextInt(3) == 0;
                        List<byte[]> frames =
                                m.frames() == null ? List.of() : wireFrames(seed, m.frames(), fuzzRefs ? r : null);
                        if (a == null || a.awaitClosedByPeer(Duration.ZERO) || sentOnConnection >= 16) {
                            if (a != null) {
                                a.close();
                            }
                            a = authenticated(SOURCES.get(r.nextInt(SOURCES.size())));
                            sentOnConnection = 0;
                        }
                        mutants.incrementAndGet();
                        sentOnConnection++;
                        try {
                            a.sendMessage(m.header(), frames);
                        } catch (IOException closed) {
                            continue; // the worker cut this connection off after an earlier mutant
                        }
                        if (m.frames() == null) {
                            refusedHeaders.incrementAndGet();
                        }
                        if (m.frames() == null && !a.awaitClosedByPeer(SERVED_WITHIN)) {
                            violations.add("header " + m.what() + ": the worker kept reading the connection after a "
                                    + "header its checks refuse");
                        }
                    }
                } catch (IOException | RuntimeException e) {
                    violations.add("header fuzzer: could not attack: " + e);
                } finally {
                    if (a != null) {
                        a.close();
                    }
                }
            }));
        }
        for (Thread t : threads) {
            t.join();
        }
    }

    /**
     * The wire bytes of a mutant's frames: a host frame's bytes (the seed's own where the length is the seed's,
     * else filler); over IPC a device frame's reference (to the seed's buffer or a scratch allocation), mutated
     * when {@code fuzz} is given.
     */
    private List<byte[]> wireFrames(SeedData seed, List<FrameDescriptor> frames, SplittableRandom fuzz) {
        List<byte[]> parts = new ArrayList<>();
        for (int i = 0; i < frames.size(); i++) {
            FrameDescriptor d = frames.get(i);
            if (ipc && HeaderFuzzer.isDevice(d)) {
                DeviceBuffer b =
                        i < seed.buffers().size() && seed.buffers().get(i) instanceof DeviceBuffer db ? db : scratch;
                IpcHandle h = b.device().exportAllocation(b);
                long offset = b.device().allocationOffset(b);
                if (fuzz == null) {
                    parts.add(reference(h.handle(), h.deviceOrdinal(), h.length(), offset));
                } else {
                    parts.add(mutatedReference(fuzz, h, offset));
                }
            } else if (i < seed.bytes().size() && seed.bytes().get(i).length == d.length()) {
                parts.add(seed.bytes().get(i));
            } else {
                for (long left = d.length(); left > 0; left -= FILLER_BYTES) {
                    parts.add(left >= FILLER_BYTES ? filler : Arrays.copyOf(filler, (int) left));
                }
            }
        }
        return parts;
    }

    /** {@code [handle length: int16][handle][device: int32][allocation bytes: int64][offset: int64]}. */
    private static byte[] reference(byte[] handle, int ordinal, long allocationBytes, long offset) {
        return ByteBuffer.allocate(2 + handle.length + 4 + 8 + 8)
                .putShort((short) handle.length)
                .put(handle)
                .putInt(ordinal)
                .putLong(allocationBytes)
                .putLong(offset)
                .array();
    }

    private byte[] mutatedReference(SplittableRandom r, IpcHandle h, long offset) {
        byte[] handle = h.handle().clone();
        int ordinal = h.deviceOrdinal();
        long allocation = h.length();
        switch (r.nextInt(9)) {
            case 0 -> handle = Arrays.copyOf(handle, List.of(0, 1, 23, 25, 4097).get(r.nextInt(5)));
            case 1 ->
                ByteBuffer.wrap(handle)
                        .putLong(0, List.of(1L, workerPid(), -1L, 0L).get(r.nextInt(4)));
            case 2 -> handle[8 + r.nextInt(Math.max(1, handle.length - 8))] ^= (byte) (1 << r.nextInt(8));
            case 3 -> ordinal = List.of(1, -1, 99, Integer.MAX_VALUE).get(r.nextInt(4));
            case 4 ->
                allocation =
                        List.of(0L, 1L, -1L, Long.MAX_VALUE, allocation + 1).get(r.nextInt(5));
            case 5 ->
                offset =
                        List.of(-1L, allocation, allocation - 1, Long.MAX_VALUE).get(r.nextInt(4));
            case 6 -> handle = "/proc/self/environ".getBytes(StandardCharsets.UTF_8);
            case 7 ->
                handle = ("../" + emulatedDir.getFileName() + "/cuwire-emu-" + workerPid())
                        .getBytes(StandardCharsets.UTF_8);
            default -> {
                byte[] junk = new byte[1 + r.nextInt(64)];
                r.nextBytes(junk);
                handle = junk;
            }
        }
        if (handle.length > 0xffff) {
            handle = Arrays.copyOf(handle, 0xffff);
        }
        return reference(handle, ordinal, allocation, offset);
    }

    // ---------------------------------------------------------------- seeds

    private void makeSeeds() {
        NdArray deviceArray = keep(MlTesting.array(device, DType.FLOAT32, MlTesting.uniform(random, 16), 4, 4));
        NdArray hostArray = keep(MlTesting.array(host, DType.FLOAT64, MlTesting.uniform(random, 16), 16));
        LinearRegression small = keep(new LinearRegression());
        try (NdArray sx = MlTesting.array(device, DType.FLOAT64, MlTesting.gaussian(random, 40), 20, 2);
                NdArray sy = MlTesting.array(device, DType.FLOAT64, MlTesting.gaussian(random, 20), 20)) {
            small.fit(sx, sy);
        }
        List<Object> shared = new ArrayList<>(List.of(1L, "shared"));
        int[] sharedInts = {1, 2, 3};
        List<Object> composite = new ArrayList<>();
        composite.add(7);
        composite.add((short) 3);
        composite.add((byte) 2);
        composite.add('c');
        composite.add(1.5f);
        composite.add(2.5);
        composite.add(null);
        composite.add(Optional.of("present"));
        composite.add(Optional.empty());
        composite.add(new TreeMap<>(Map.of("b", 2L, "a", 1L)));
        composite.add(new HashSet<>(List.of("x", "y", "z")));
        composite.add(new LinkedList<>(List.of(1L, 2L)));
        composite.add(new LinkedHashMap<>(Map.of(3L, "three")));
        composite.add(new String[] {"s", "t"});
        composite.add(new long[][] {{1, 2}, {3}});
        composite.add(shared);
        composite.add(shared);
        composite.add(sharedInts);
        composite.add(sharedInts);
        composite.add(new double[10_000]); // 80 KB: beyond the frame threshold, a frame of its own
        composite.add(List.of(1L, 2L, 3L));
        composite.add(Set.of("imm"));
        addSeed(PING_SEED, target::ping, Family.CUDA, Family.HOST);
        addSeed(CARRIER_SEED, n -> target.carrier(n, deviceArray), Family.CUDA, Family.HOST);
        for (HostileTarget.SeedRequest r :
                target.seeds(new HostileTarget.SeedValues(deviceArray, hostArray, small, composite))) {
            addSeed(r.name(), r.request(), r.chain());
        }
    }

    private <T extends AutoCloseable> T keep(T value) {
        seedValues.add(value);
        return value;
    }

    private void addSeed(String name, LongFunction<?> request, Family... chain) {
        Serialized s = registry.serialize(request.apply(requestIds.incrementAndGet()), chain);
        seedValues.add(s); // its host copies stay open: an IPC seed's host frames are sent from them
        List<byte[]> bytes = new ArrayList<>();
        List<Buffer> buffers = new ArrayList<>();
        for (Frame f : s.frames()) {
            byte[] b = new byte[(int) f.length()];
            CopyEngine.copyToSegment(f.buffer(), 0, MemorySegment.ofArray(b));
            bytes.add(b);
            buffers.add(f.buffer());
        }
        seeds.add(new SeedData(HeaderFuzzer.seed(name, s.encodeHeader()), bytes, buffers));
    }

    // ---------------------------------------------------------------- the end

    /**
     * The node stops as its role stops it ({@link HostileTarget#stop}, which checks its exit), with no leak report and
     * none of its files left, having logged the peers it refused (finding 9).
     */
    public void finish() throws Exception {
        target.stop();
        List<String> lines = target.output();
        String output = String.join("\n", lines);
        assertEquals(List.of(), lines(lines, "bytes outstanding"), output);
        assertEquals(List.of(), lines(lines, "allocator '"), output);
        assertTrue(!lines(lines, "refused peer ").isEmpty(), "no refused peer was logged (finding 9): " + output);
        assertTrue(!lines(lines, " refused /127.0.0.").isEmpty(), "no refused handshake was logged: " + output);
        assertEquals(0, workerFiles(), "the " + target.role() + "'s files are left behind");
    }

    private static List<String> lines(List<String> output, String text) {
        return output.stream().filter(l -> l.contains(text)).toList();
    }

    /** Closes the node and its client (the target), then what the attackers held. */
    @Override
    public void close() {
        target.close();
        for (int i = seedValues.size() - 1; i >= 0; i--) {
            try {
                seedValues.get(i).close();
            } catch (Exception e) {
                log.println("[hostile] closing a seed value: " + e);
            }
        }
        scratch.close();
        device.close();
        host.close();
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // closing anyway
        }
    }
}
