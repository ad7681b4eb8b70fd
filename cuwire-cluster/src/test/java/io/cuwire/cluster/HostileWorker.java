package io.cuwire.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.cluster.rpc.Reply;
import io.cuwire.cluster.rpc.Request;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DType;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import io.cuwire.ml.MlTesting;
import io.cuwire.ml.linear.LinearRegression;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.Serialized;
import io.cuwire.serialize.TypeRegistry;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * The cluster-worker role of the hostile-peer suite: a worker JVM started as {@link LocalCluster} starts one
 * ({@link WorkerProcess}, on the emulated device), and its client ({@code LocalCluster.connect}) in this JVM.
 */
final class HostileWorker implements HostileTarget {
    private static final long SERVED = HostileCampaign.SERVED_WITHIN.toSeconds();

    private final String scheme;
    private final PrintStream log;
    private final WorkerProcess worker;
    private final String address;
    private final LocalCluster cluster;
    private final Client client;
    private final TypeRegistry registry = ClusterTypes.registry();
    private final LinearRegression model = new LinearRegression();
    private NdArray x;
    /** The first object id the next sweep frees (see {@link #sweep}). */
    private long sweepFrom = 1;
    /** Whether {@link #stop} began (it checks the worker's exit itself). */
    private boolean stopped;

    private HostileWorker(String scheme, PrintStream log) throws Exception {
        this.scheme = scheme;
        this.log = log;
        String options =
                System.getProperty(HostileCampaign.WORKER_OPTIONS_PROPERTY, "").strip();
        String track = System.getProperty(BufferAllocator.TRACK_PROPERTY);
        this.worker = WorkerProcess.start(
                0,
                scheme,
                HostileCampaign.SECRET,
                track == null ? Map.of() : Map.of(BufferAllocator.TRACK_PROPERTY, track),
                options.isEmpty() ? List.of() : Arrays.asList(options.split("\\s+")));
        LocalCluster c = null;
        try {
            this.address = worker.address();
            c = LocalCluster.builder()
                    .secret(HostileCampaign.SECRET)
                    .connect(List.of(address))
                    .start();
        } catch (Exception | Error e) {
            worker.close();
            throw e;
        }
        this.cluster = c;
        this.client = c.client();
    }

    /** Starts a worker listening over {@code scheme} ({@code tcp} or {@code ipc}) and connects its client. */
    static HostileWorker start(String scheme, PrintStream log) throws Exception {
        return new HostileWorker(scheme, log);
    }

    @Override
    public String role() {
        return "worker";
    }

    @Override
    public String address() {
        return address;
    }

    @Override
    public long pid() {
        return worker.handle().pid();
    }

    WorkerProcess worker() {
        return worker;
    }

    @Override
    public TypeRegistry registry() {
        return registry;
    }

    @Override
    public Family[] families() {
        return ClusterTypes.families();
    }

    @Override
    public boolean takesJavaFamily() {
        return true;
    }

    @Override
    public Request ping(long id) {
        return new WorkerRequest.Ping(id);
    }

    @Override
    public List<SeedRequest> seeds(SeedValues v) {
        // and the campaign's own two: the ping, and the carrier (put) of the device array
        ObjectRef nowhere = new ObjectRef(0, 1L << 40);
        String drop = TestTasks.DROP.name();
        NdArray deviceArray = v.deviceArray();
        return List.of(
                new SeedRequest("stats", WorkerRequest.Stats::new, Family.CUDA, Family.HOST),
                new SeedRequest(
                        "drop-device",
                        n -> new WorkerRequest.Call(n, drop, List.of(deviceArray)),
                        Family.CUDA,
                        Family.HOST),
                new SeedRequest(
                        "drop-host",
                        n -> new WorkerRequest.Call(n, drop, List.of(v.hostArray())),
                        Family.CUDA,
                        Family.HOST),
                new SeedRequest(
                        "drop-host-family", n -> new WorkerRequest.Call(n, drop, List.of(deviceArray)), Family.HOST),
                new SeedRequest(
                        "drop-composite",
                        n -> new WorkerRequest.Call(n, drop, v.composite()),
                        Family.CUDA,
                        Family.HOST),
                new SeedRequest(
                        "drop-model",
                        n -> new WorkerRequest.Call(n, drop, List.of(v.model())),
                        Family.CUDA,
                        Family.HOST),
                new SeedRequest(
                        "drop-java-model",
                        n -> new WorkerRequest.Call(n, drop, List.of(v.model())),
                        Family.JAVA,
                        Family.CUDA,
                        Family.HOST),
                new SeedRequest(
                        "drop-nested",
                        n -> new WorkerRequest.Call(
                                n,
                                drop,
                                List.of(
                                        Optional.of(deviceArray),
                                        new WorkerRequest.Put(0, deviceArray),
                                        Reply.ok(0, deviceArray))),
                        Family.CUDA,
                        Family.HOST),
                new SeedRequest(
                        "run-scale",
                        n -> new WorkerRequest.Run(n, TestTasks.SCALE.name(), List.of(deviceArray, 2.0)),
                        Family.CUDA,
                        Family.HOST),
                new SeedRequest(
                        "shape",
                        n -> new WorkerRequest.Call(n, MlTasks.SHAPE.name(), List.of(deviceArray)),
                        Family.CUDA,
                        Family.HOST),
                new SeedRequest("get-nothing", n -> new WorkerRequest.Get(n, nowhere), Family.CUDA, Family.HOST),
                new SeedRequest(
                        "free-nothing", n -> new WorkerRequest.Free(n, List.of(1L << 40)), Family.CUDA, Family.HOST),
                new SeedRequest("has-model", n -> new WorkerRequest.HasModel(n, 1L << 40, 1), Family.CUDA, Family.HOST),
                new SeedRequest(
                        "unknown-task",
                        n -> new WorkerRequest.Call(n, "frobnicate", List.of(1L, "two")),
                        Family.CUDA,
                        Family.HOST),
                new SeedRequest("shutdown", WorkerRequest.Shutdown::new, Family.CUDA, Family.HOST));
    }

    @Override
    public Request carrier(long id, Object value) {
        return new WorkerRequest.Put(id, value);
    }

    @Override
    public String carrierField() {
        return "value";
    }

    /**
     * The client's work: refits the model on new targets, broadcasts it (a new version: its frames go out), puts the
     * rows on the worker, predicts there with the broadcast model and compares with the model's own prediction.
     */
    @Override
    public void serve(SplittableRandom random) throws Exception {
        if (x == null) {
            x = MlTesting.array(client.memory(), DType.FLOAT64, MlTesting.gaussian(random.split(), 200 * 8), 200, 8);
        }
        double[] targets = MlTesting.gaussian(random, 200);
        try (NdArray y = MlTesting.array(client.memory(), DType.FLOAT64, targets, 200)) {
            model.fit(x, y);
        }
        ModelHandle handle =
                CompletableFuture.supplyAsync(() -> client.broadcast(model)).get(SERVED, TimeUnit.SECONDS);
        ObjectRef part = client.put(0, x).get(SERVED, TimeUnit.SECONDS);
        ObjectRef predicted = client.submit(0, MlTasks.PREDICT, handle, part).get(SERVED, TimeUnit.SECONDS);
        Object back = client.fetch(predicted).get(SERVED, TimeUnit.SECONDS);
        try (NdArray got = (NdArray) back;
                NdArray expected = model.predict(x)) {
            assertTrue(
                    expected.contentEquals(got),
                    "the worker's prediction with the broadcast model differs from " + "the model's own");
        }
        client.free(List.of(part, predicted));
    }

    @Override
    public Accounts accounts() throws Exception {
        WorkerStats s = client.workerStats(0).get(SERVED, TimeUnit.SECONDS);
        return new Accounts(s.deviceBytes(), s.hostBytes(), s.objects(), s.models());
    }

    @Override
    @SuppressWarnings("unchecked")
    public List<Long> pools() throws Exception {
        return (List<Long>) client.call(0, TestTasks.POOLS).get(SERVED, TimeUnit.SECONDS);
    }

    /** The worker JVM's heap used, heap committed and non-heap committed bytes, after a GC ({@link TestTasks#HEAP}). */
    List<?> heap() throws Exception {
        return (List<?>) client.call(0, TestTasks.HEAP).get(SERVED, TimeUnit.SECONDS);
    }

    /**
     * Frees whatever the attackers stored (a mutant that still decoded into a {@code put} or a {@code run}): the
     * ids since the last sweep, up to a marker this sweep stores. The client holds nothing on the worker between
     * rounds, so none of them is its own.
     */
    @Override
    public void sweep() throws Exception {
        ObjectRef marker = client.put(0, 0L).get(SERVED, TimeUnit.SECONDS);
        List<ObjectRef> refs = new ArrayList<>();
        for (long id = sweepFrom; id <= marker.id(); id++) {
            refs.add(new ObjectRef(0, id));
        }
        client.free(refs);
        sweepFrom = marker.id() + 1;
    }

    /** The worker stores the value (answering its ref) and frees it when asked. */
    @Override
    public void storeAndRelease(TestClient peer, Object value) throws Exception {
        Reply r = peer.request(n -> new WorkerRequest.Put(n, value)).get(120, TimeUnit.SECONDS);
        long id = ((ObjectRef) assertInstanceOf(Reply.Ok.class, r, "65,536 one-byte frames: " + r)
                        .value())
                .id();
        assertInstanceOf(
                Reply.Ok.class,
                peer.request(n -> new WorkerRequest.Free(n, List.of(id))).get(60, TimeUnit.SECONDS));
    }

    /** A task the worker does not have: answered with {@link UnknownTaskException} (its close walks each list once). */
    @Override
    public void unknownOperation(TestClient peer, List<Object> value) throws Exception {
        Reply unknown = peer.request(n -> new WorkerRequest.Call(n, "frobnicate", value))
                .get(SERVED, TimeUnit.SECONDS);
        Reply.Failed failed = assertInstanceOf(Reply.Failed.class, unknown, unknown.toString());
        assertEquals(UnknownTaskException.class.getSimpleName(), failed.errorType());
        assertTrue(failed.error().contains("no task named 'frobnicate'"), failed.error());
    }

    /** A peer begins a broadcast of 16 MiB and leaves; its assembly goes at once. */
    @Override
    public void departedPeer(HostileCampaign campaign) throws Exception {
        long before = accounts().deviceBytes();
        try (TestClient peer = TestClient.connect(address, HostileCampaign.SECRET)) {
            byte[] header;
            try (NdArray m = NdArray.zeros(peer.device, DType.FLOAT32, Order.C, 4 << 20);
                    Serialized s = registry.serialize(m, Family.CUDA)) {
                header = s.encodeHeader();
            }
            long bid = campaign.nextRequestId();
            peer.endpoint
                    .send(new WorkerRequest.BroadcastBegin(bid, bid, 1L, header, List.of()))
                    .get(SERVED, TimeUnit.SECONDS);
            long deadline = System.nanoTime() + HostileCampaign.SERVED_WITHIN.toNanos();
            while (accounts().deviceBytes() - before < 16 << 20 && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            assertEquals(16 << 20, accounts().deviceBytes() - before, "the assembly is allocated");
        }
        long deadline = System.nanoTime() + HostileCampaign.SERVED_WITHIN.toNanos();
        while (accounts().deviceBytes() != before && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertEquals(before, accounts().deviceBytes(), "the departed sender's assembly is freed");
    }

    /**
     * Asks the worker's JaCoCo agent, if it has one, to write its data; then the client closes the cluster, and the
     * worker must exit 0, having said once that it stops.
     */
    @Override
    public void stop() throws Exception {
        Boolean dumped = client.call(0, TestTasks.COVERAGE_DUMP).get(SERVED, TimeUnit.SECONDS);
        if (dumped) {
            log.println("[hostile] the worker's coverage data was written");
        }
        stopped = true;
        cluster.close();
        int code = worker.awaitExit(Duration.ofSeconds(60));
        String output = String.join("\n", worker.output());
        assertEquals(WorkerExit.CLOSED.code(), code, output);
        assertEquals(1, worker.lines("; stopping (exit").size(), output);
    }

    @Override
    public List<String> output() {
        return worker.output();
    }

    /**
     * Closes the client and the worker; unless {@link #stop} ran, prints what the worker said as it stopped (its
     * leak report names what it still held; {@code -D}{@value BufferAllocator#TRACK_PROPERTY}{@code =true} in this
     * JVM, passed on to the worker, adds the allocation stacks).
     */
    @Override
    public void close() {
        try {
            cluster.close();
        } catch (RuntimeException e) {
            log.println("[hostile] closing the cluster: " + e);
        }
        if (!stopped) {
            try {
                log.println(
                        "[hostile] the " + scheme + " worker exited " + worker.awaitExit(Duration.ofSeconds(30)) + ":");
            } catch (Exception | AssertionError e) {
                log.println("[hostile] the worker did not exit: " + e.getMessage());
            }
            List<String> output = worker.output();
            output.subList(Math.max(0, output.size() - 100), output.size()).forEach(l -> log.println("  " + l));
        }
        worker.close();
        if (x != null) {
            x.close();
        }
        model.close();
    }
}
