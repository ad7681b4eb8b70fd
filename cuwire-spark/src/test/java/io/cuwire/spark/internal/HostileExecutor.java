package io.cuwire.spark.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.cluster.HostileCampaign;
import io.cuwire.cluster.HostileTarget;
import io.cuwire.cluster.TestClient;
import io.cuwire.cluster.WireAttacker;
import io.cuwire.cluster.rpc.Reply;
import io.cuwire.cluster.rpc.Request;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DType;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import io.cuwire.ml.MlTesting;
import io.cuwire.ml.linear.LinearRegression;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.Serialized;
import io.cuwire.serialize.TypeRegistry;
import io.cuwire.spark.CuwireSpark;
import io.cuwire.spark.ModelBroadcast;
import io.cuwire.test.ChildJvm;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.ObjectOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The Spark-executor role of the hostile-peer suite: an executor JVM whose endpoint the cuwire plugin starts as
 * Spark has it start ({@link HostileExecutorMain}, on the emulated device), and its driver's node in this JVM. The
 * client's work is a Spark application's: the driver broadcasts a refitted model ({@link CuwireSpark#broadcast}, a
 * new version; the last one released, as {@link ModelBroadcast#close} does), a task on the executor predicts with it
 * through the {@link io.cuwire.spark.ModelRef} it was shipped (the executor fetches the frames from the driver over
 * cuwire) and the prediction is compared with the model's own.
 *
 * <p>Where the executor differs from the worker: its requests (fetch, evict, stats) take no value, their fields
 * being numbers, strings and flags that the decoder refuses by type before it decodes anything in them; a value of a
 * peer's choosing reaches its decoder only as a reply it did not ask for, which it decodes, frees and does not
 * answer. That reply is its carrier (and with the other replies and bare values, its header fuzzer's seeds besides
 * its requests); it stores nothing for peers; it has no operations by name; its endpoint listens on TCP only.
 */
final class HostileExecutor implements HostileTarget {
    private static final long SERVED = HostileCampaign.SERVED_WITHIN.toSeconds();
    private static final String EXECUTOR_ID = "1";
    /** A model id and a peer address nothing holds or listens at. */
    private static final long NO_MODEL = 1L << 40;

    private static final String NOWHERE = "tcp://127.0.0.1:1";

    private final PrintStream log;
    private final Node driver;
    private final ChildJvm executor;
    private final String address;
    private final OutputStream commands;
    private final Map<Long, CompletableFuture<String>> answers = new ConcurrentHashMap<>();
    private final AtomicLong commandIds = new AtomicLong();
    /** The ids of the replies this side sends the executor unasked. */
    private final AtomicLong unaskedIds = new AtomicLong(1L << 41);

    private final BufferAllocator<DeviceBuffer> attackerMemory =
            Devices.get(0).newAllocator("hostile-executor-attacker", BufferAllocator.UNLIMITED);
    private final LinearRegression model = new LinearRegression();
    private NdArray x;
    private long rowSeed;
    private ModelBroadcast<LinearRegression> broadcast;
    /** Whether {@link #stop} began (it checks the executor's exit itself). */
    private boolean stopped;

    private HostileExecutor(PrintStream log) throws Exception {
        this.log = log;
        this.driver = Node.start(Node.DRIVER, Devices.get(0), HostileCampaign.SECRET, "127.0.0.1");
        ChildJvm child = null;
        try {
            child = ChildJvm.builder(HostileExecutorMain.class)
                    .property(Devices.PLATFORM_PROPERTY, Devices.platform())
                    .property("java.util.logging.SimpleFormatter.format", "%4$s: %5$s%6$s%n")
                    .jvmOptions("-XX:+UseSerialGC")
                    // as Spark gives its executors (JavaModuleOptions) and this JVM has: the CPU backend's vector
                    // kernels, so that the executor's prediction has the bits of this JVM's
                    .jvmOptions(
                            ModuleLayer.boot()
                                            .findModule("jdk.incubator.vector")
                                            .isPresent()
                                    ? List.of("--add-modules=jdk.incubator.vector")
                                    : List.of())
                    .env(HostileExecutorMain.SECRET_ENV, HexFormat.of().formatHex(HostileCampaign.SECRET))
                    .args(EXECUTOR_ID, driver.address())
                    .onLine(this::onLine)
                    .start();
            String listening = child.awaitLine(HostileExecutorMain.LISTENING, Duration.ofSeconds(60));
            this.address =
                    listening.substring(HostileExecutorMain.LISTENING.length()).strip();
        } catch (Exception | Error e) {
            if (child != null) {
                child.close();
            }
            driver.close();
            throw e;
        }
        this.executor = child;
        this.commands = child.process().getOutputStream();
        driver.executorAdded(EXECUTOR_ID, address); // what the driver's plugin does with the registration
    }

    /** Starts an executor (its endpoint listening over TCP) and the driver's node of its application. */
    static HostileExecutor start(PrintStream log) throws Exception {
        return new HostileExecutor(log);
    }

    private void onLine(String line) {
        if (line.startsWith(HostileExecutorMain.ANSWER) && !line.startsWith(HostileExecutorMain.LISTENING)) {
            String rest = line.substring(HostileExecutorMain.ANSWER.length());
            int space = rest.indexOf(' ');
            CompletableFuture<String> f = answers.remove(Long.parseLong(rest.substring(0, space)));
            if (f != null) {
                f.complete(rest.substring(space + 1));
            }
        }
    }

    /** Runs {@code command} in the executor JVM and returns its answer (within {@link #SERVED} seconds). */
    private String command(String command) throws Exception {
        long n = commandIds.incrementAndGet();
        CompletableFuture<String> answer = new CompletableFuture<>();
        answers.put(n, answer);
        synchronized (commands) {
            commands.write((n + " " + command + "\n").getBytes(StandardCharsets.UTF_8));
            commands.flush();
        }
        String a = answer.get(SERVED, TimeUnit.SECONDS);
        if (a.startsWith("failed: ")) {
            throw new AssertionError("the executor failed '" + command.split(" ")[0] + "': " + a);
        }
        return a;
    }

    @Override
    public String role() {
        return "executor";
    }

    @Override
    public String address() {
        return address;
    }

    @Override
    public long pid() {
        return executor.handle().pid();
    }

    @Override
    public TypeRegistry registry() {
        return driver.registry();
    }

    /** The family chain of the executor's connections: its transport configuration's default. */
    @Override
    public Family[] families() {
        return new Family[] {Family.CUDA, Family.HOST};
    }

    @Override
    public boolean takesJavaFamily() {
        return false;
    }

    /** The stats, which read the node's counters and change nothing: answered {@code Ok} at once. */
    @Override
    public Request ping(long id) {
        return new SparkRequest.Stats(id, false);
    }

    @Override
    public List<SeedRequest> seeds(SeedValues v) {
        // and the campaign's own two: the ping (stats), and the carrier (a reply not asked for) of the device array
        NdArray deviceArray = v.deviceArray();
        return List.of(
                new SeedRequest(
                        "fetch-nothing",
                        n -> new SparkRequest.Fetch(n, NO_MODEL, 1, NOWHERE, true, ""),
                        Family.CUDA,
                        Family.HOST),
                new SeedRequest(
                        "fetch-redirectable",
                        n -> new SparkRequest.Fetch(n, NO_MODEL, 1, NOWHERE, false, NOWHERE),
                        Family.CUDA,
                        Family.HOST),
                new SeedRequest("evict-nothing", n -> new SparkRequest.Evict(n, NO_MODEL, 1), Family.CUDA, Family.HOST),
                new SeedRequest("stats-reset", n -> new SparkRequest.Stats(n, true), Family.CUDA, Family.HOST),
                new SeedRequest("unasked-host", n -> Reply.ok(n, v.hostArray()), Family.CUDA, Family.HOST),
                new SeedRequest("unasked-host-family", n -> Reply.ok(n, deviceArray), Family.HOST),
                new SeedRequest("unasked-composite", n -> Reply.ok(n, v.composite()), Family.CUDA, Family.HOST),
                new SeedRequest("unasked-model", n -> Reply.ok(n, v.model()), Family.CUDA, Family.HOST),
                new SeedRequest(
                        "unasked-java-model", n -> Reply.ok(n, v.model()), Family.JAVA, Family.CUDA, Family.HOST),
                new SeedRequest(
                        "unasked-nested",
                        n -> Reply.ok(
                                n,
                                List.of(
                                        Optional.of(deviceArray),
                                        new SparkRequest.Fetch(0, NO_MODEL, 1, NOWHERE, true, ""),
                                        Reply.ok(0, deviceArray))),
                        Family.CUDA,
                        Family.HOST),
                new SeedRequest("unasked-missing", n -> Reply.missing(n, "no such model"), Family.CUDA, Family.HOST),
                new SeedRequest(
                        "unasked-undecodable",
                        n -> Reply.undecodable(n, new IllegalStateException("no")),
                        Family.CUDA,
                        Family.HOST),
                new SeedRequest("redirect", n -> new Node.Redirect(NOWHERE), Family.CUDA, Family.HOST),
                new SeedRequest("bare-model", n -> v.model(), Family.CUDA, Family.HOST),
                new SeedRequest("bare-device", n -> deviceArray, Family.CUDA, Family.HOST));
    }

    /** A reply the executor did not ask for, carrying {@code value}: it decodes the value and frees it. */
    @Override
    public Object carrier(long id, Object value) {
        return Reply.ok(id, value);
    }

    @Override
    public String carrierField() {
        return "value";
    }

    @Override
    public Optional<String> carrierUnanswered() {
        return Optional.of("a Spark executor's requests (fetch, evict, stats) take no value, their fields refused by "
                + "type before anything in them is decoded; a value of a peer's choosing reaches its decoder only as "
                + "a reply it did not ask for, which has no answer");
    }

    /**
     * The application's work: releases the last broadcast (the executor drops its copy), refits the model on new
     * targets, broadcasts it (a new version), has a task on the executor predict with it through its handle and
     * compares with the model's own prediction.
     */
    @Override
    public void serve(SplittableRandom random) throws Exception {
        if (x == null) {
            rowSeed = random.nextLong();
            x = MlTesting.array(
                    driver.deviceMemory(),
                    DType.FLOAT64,
                    HostileExecutorMain.rows(rowSeed),
                    HostileExecutorMain.ROWS,
                    HostileExecutorMain.COLUMNS);
        }
        double[] targets = MlTesting.gaussian(random, HostileExecutorMain.ROWS);
        release();
        try (NdArray y = MlTesting.array(driver.deviceMemory(), DType.FLOAT64, targets, HostileExecutorMain.ROWS)) {
            model.fit(x, y);
        }
        broadcast = CuwireSpark.broadcast(model);
        String bits = command("predict " + serialized(broadcast.ref()) + " " + rowSeed);
        double[] got = Arrays.stream(bits.split(","))
                .mapToDouble(b -> Double.longBitsToDouble(Long.parseUnsignedLong(b, 16)))
                .toArray();
        try (NdArray expected = model.predict(x)) {
            assertArrayEquals(
                    MlTesting.values(expected),
                    got,
                    0.0,
                    "the executor's prediction with the broadcast " + "model differs from the model's own");
        }
    }

    /** Releases the last broadcast, which every executor must answer. */
    private void release() {
        if (broadcast != null) {
            broadcast.close();
            assertEquals(0, broadcast.unanswered(), "the executor did not answer the release of " + broadcast);
            broadcast = null;
        }
    }

    /** {@code value}, Java-serialized as Spark ships a task's handle, in base64. */
    private static String serialized(Object value) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
            out.writeObject(value);
        }
        return Base64.getEncoder().encodeToString(bytes.toByteArray());
    }

    @Override
    public Accounts accounts() throws Exception {
        long[] a = Arrays.stream(command("accounts").split(" "))
                .mapToLong(Long::parseLong)
                .toArray();
        return new Accounts(a[0], a[1], 0, a[2]);
    }

    @Override
    public List<Long> pools() throws Exception {
        return Arrays.stream(command("pools").split(" ")).map(Long::valueOf).toList();
    }

    /** Nothing to free: an executor stores nothing for peers (its accounts' objects stay 0, which the checks see). */
    @Override
    public void sweep() {
        // no store
    }

    /**
     * The executor takes a value only as a reply it did not ask for: it decodes the 65,536 frames, frees them and
     * answers the peer's next request.
     */
    @Override
    public void storeAndRelease(TestClient peer, Object value) throws Exception {
        long before = accounts().deviceBytes();
        peer.endpoint.send(Reply.ok(unaskedIds.incrementAndGet(), value)).get(120, TimeUnit.SECONDS);
        Reply r = peer.request(this::ping).get(120, TimeUnit.SECONDS);
        assertInstanceOf(Reply.Ok.class, r, "the request after 65,536 one-byte frames: " + r);
        assertEquals(before, accounts().deviceBytes(), "the executor kept the frames of a value it did not ask for");
    }

    /**
     * The executor has no operations by name: the value comes as a reply it did not ask for (its close walks each
     * shared list once), and the fetch that follows, of a model it does not hold, is refused ({@code Missing}).
     */
    @Override
    public void unknownOperation(TestClient peer, List<Object> value) throws Exception {
        peer.endpoint.send(Reply.ok(unaskedIds.incrementAndGet(), value)).get(SERVED, TimeUnit.SECONDS);
        Reply r = peer.request(n -> new SparkRequest.Fetch(n, NO_MODEL, 1, NOWHERE, true, ""))
                .get(SERVED, TimeUnit.SECONDS);
        Reply.Missing missing = assertInstanceOf(Reply.Missing.class, r, r.toString());
        assertTrue(missing.why().contains("does not hold model " + NO_MODEL), missing.why());
    }

    /**
     * A peer begins a message of one 16 MiB device frame (a reply the executor did not ask for, as a fetch's answer
     * comes), sends its first MiB and leaves; the frame's memory goes at once.
     */
    @Override
    public void departedPeer(HostileCampaign campaign) throws Exception {
        long before = accounts().deviceBytes();
        byte[] header;
        try (NdArray m = NdArray.zeros(attackerMemory, DType.FLOAT32, Order.C, 4 << 20);
                Serialized s = registry().serialize(Reply.ok(unaskedIds.incrementAndGet(), m), Family.CUDA)) {
            header = s.encodeHeader();
        }
        try (WireAttacker peer = campaign.authenticated(HostileCampaign.SOURCES.get(1))) {
            peer.sendMessage(header, List.of(new byte[1 << 20]));
            long deadline = System.nanoTime() + HostileCampaign.SERVED_WITHIN.toNanos();
            while (accounts().deviceBytes() - before < 16 << 20 && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            assertEquals(16 << 20, accounts().deviceBytes() - before, "the frame is allocated");
        }
        long deadline = System.nanoTime() + HostileCampaign.SERVED_WITHIN.toNanos();
        while (accounts().deviceBytes() != before && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertEquals(before, accounts().deviceBytes(), "the departed sender's frame is freed");
    }

    /**
     * The application releases its model, and the executor stops as Spark stops it (its plugin shuts down): it must
     * have closed its endpoint, say once that it stops, and exit 0.
     */
    @Override
    public void stop() throws Exception {
        release();
        stopped = true;
        String answer = command("stop");
        assertEquals("stopped, endpoint closed", answer);
        int code = executor.awaitExit(Duration.ofSeconds(60));
        String output = executor.output();
        assertEquals(0, code, output);
        assertEquals(
                1,
                output().stream()
                        .filter(l -> l.contains(HostileExecutorMain.STOPPING))
                        .count(),
                output);
    }

    @Override
    public List<String> output() {
        return executor.lines();
    }

    /**
     * Releases the model, stops the executor and closes the driver's node; unless {@link #stop} ran, prints what
     * the executor said last (its leak report names what it still held).
     */
    @Override
    public void close() {
        try {
            if (broadcast != null) {
                broadcast.close();
            }
        } catch (RuntimeException e) {
            log.println("[hostile] releasing the model: " + e);
        }
        if (!stopped) {
            try {
                commands.close(); // the executor stops when its input closes
                log.println("[hostile] the executor exited " + executor.awaitExit(Duration.ofSeconds(30)) + ":");
            } catch (IOException | InterruptedException e) {
                log.println("[hostile] the executor did not exit: " + e.getMessage());
            }
            List<String> output = executor.lines();
            output.subList(Math.max(0, output.size() - 100), output.size()).forEach(l -> log.println("  " + l));
        }
        executor.close();
        if (x != null) {
            x.close();
        }
        model.close();
        attackerMemory.close();
        driver.close();
    }
}
