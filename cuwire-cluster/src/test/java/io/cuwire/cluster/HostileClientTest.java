package io.cuwire.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.cluster.rpc.Endpoint;
import io.cuwire.cluster.rpc.Reply;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.NdArray;
import io.cuwire.serialize.DecodeBudgetExceededException;
import io.cuwire.serialize.DecodeTarget;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.Limits;
import io.cuwire.serialize.Serialized;
import io.cuwire.serialize.TypeRegistry;
import io.cuwire.test.ChildJvm;
import io.cuwire.transport.DeviceMap;
import io.cuwire.transport.TransportConfig;
import io.cuwire.transport.Transports;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongFunction;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A real worker process against clients and peers that send what costs too much: a request whose decode exceeds its
 * budget, one that runs the worker out of heap, broadcast assemblies whose sender leaves or that exceed the worker's
 * budget. The worker answers with typed errors where it can, drops what a departed sender left, and exits when its
 * client's connection breaks, instead of spinning or serving on without noticing its client leave.
 */
class HostileClientTest {
    private static final byte[] SECRET = new byte[32];

    private final List<ChildJvm> processes = new ArrayList<>();
    private final List<Endpoint> endpoints = new ArrayList<>();
    private final AtomicLong ids = new AtomicLong(1000);
    private BufferAllocator<DeviceBuffer> device;
    private BufferAllocator<HostBuffer> host;

    static {
        SECRET[0] = 15;
    }

    @BeforeEach
    void open() {
        device = Devices.get(0).newAllocator("hostile-device", BufferAllocator.UNLIMITED);
        host = BufferAllocator.host("hostile-host", BufferAllocator.UNLIMITED);
    }

    @AfterEach
    void close() {
        endpoints.forEach(Endpoint::close);
        processes.forEach(ChildJvm::close);
        assertEquals(0, device.allocatedBytes() + host.allocatedBytes());
        device.close();
        host.close();
    }

    private ChildJvm startWorker(String... jvmOptions) throws IOException {
        ChildJvm p = ChildJvm.builder(Worker.class)
                .property(Devices.PLATFORM_PROPERTY, Devices.platform())
                .jvmOptions(jvmOptions)
                .args("0", "0", "tcp://127.0.0.1:0")
                .input(HexFormat.of().formatHex(SECRET) + "\n")
                .start();
        processes.add(p);
        return p;
    }

    /** The address the worker printed (within 60 s). */
    private static String listeningAddress(ChildJvm p) throws IOException, InterruptedException {
        return p.awaitLine(Worker.LISTENING + " ", Duration.ofSeconds(60))
                .substring(Worker.LISTENING.length() + 1)
                .strip();
    }

    /** Connects as the worker's first connection (its client) or a later one (a peer). */
    private Endpoint connect(String address) {
        TransportConfig config = TransportConfig.builder()
                .secret(SECRET)
                .receiveInto(DeviceMap.of(host, device))
                .families(ClusterTypes.families())
                .build();
        Endpoint e = new Endpoint(
                        "hostile-" + endpoints.size(),
                        Transports.forAddress(address).connect(address, config),
                        ClusterTypes.registry(),
                        new DecodeTarget(device, host, Limits.DEFAULT),
                        (from, r) -> {},
                        u -> new RemoteDecodeException(u.errorType(), u.error(), u.path()),
                        x -> new ClusterException("connection to the worker broken", x),
                        x -> {})
                .start();
        endpoints.add(e);
        return e;
    }

    private CompletableFuture<Reply> call(Endpoint e, LongFunction<WorkerRequest> request) {
        return e.call(request.apply(ids.incrementAndGet()));
    }

    /** Waits for the worker to exit (it did not when its client's connection broke, if this throws). */
    private static void assertExits(ChildJvm p) throws IOException, InterruptedException {
        p.awaitExit(Duration.ofSeconds(30));
    }

    @Test
    @Timeout(value = 90, unit = TimeUnit.SECONDS)
    void shouldAnswerARequestBeyondTheDecodeBudgetThenDropItsClientAndExit() throws Exception {
        ChildJvm p = startWorker();
        Endpoint client = connect(listeningAddress(p));
        assertInstanceOf(Reply.Ok.class, call(client, WorkerRequest.Ping::new).get(20, TimeUnit.SECONDS));
        // the levels of 2^50 paths, then a set of the last: see EndpointBreakTest
        List<Object> levels = new ArrayList<>();
        List<Object> level = new ArrayList<>(List.of(1L));
        levels.add(level);
        for (int i = 0; i < 50; i++) {
            level = new ArrayList<>(List.of(level, level));
            levels.add(level);
        }
        Set<Object> set = new HashSet<>();
        List<Object> holder = new ArrayList<>();
        set.add(holder);
        holder.add(level);
        levels.add(set);
        ExecutionException e = assertThrows(
                ExecutionException.class,
                () -> call(client, id -> new WorkerRequest.Put(id, levels)).get(20, TimeUnit.SECONDS));
        RemoteDecodeException remote = assertInstanceOf(RemoteDecodeException.class, e.getCause());
        assertEquals(DecodeBudgetExceededException.class.getSimpleName(), remote.remoteType());
        assertExits(p);
    }

    /** 10^6 boxed integers: a 12 MB header of a million small maps, far beyond a 64 MiB heap once parsed. */
    @Test
    @Timeout(value = 90, unit = TimeUnit.SECONDS)
    void shouldNoticeItsClientLeaveAfterRunningOutOfHeapOnARequest() throws Exception {
        // the JVM runs the command when the heap first runs out: its output shows the error happened
        ChildJvm p = startWorker("-Xmx64m", "-XX:OnOutOfMemoryError=echo worker-ran-out-of-heap");
        Endpoint client = connect(listeningAddress(p));
        assertInstanceOf(Reply.Ok.class, call(client, WorkerRequest.Ping::new).get(20, TimeUnit.SECONDS));
        List<Object> boxed = new ArrayList<>();
        for (int i = 0; i < 1_000_000; i++) {
            boxed.add(i);
        }
        ExecutionException e = assertThrows(
                ExecutionException.class,
                () -> call(client, id -> new WorkerRequest.Put(id, boxed)).get(30, TimeUnit.SECONDS));
        assertInstanceOf(ClusterException.class, e.getCause(), "the worker closed the connection: " + e);
        assertExits(p);
        assertTrue(p.output().contains("worker-ran-out-of-heap"), "the worker ran out of heap: " + p.output());
    }

    /** A model's header as a broadcast's begin carries it: one device frame of {@code bytes}. */
    private byte[] modelHeader(long bytes) {
        TypeRegistry registry = ClusterTypes.registry();
        try (NdArray model = NdArray.fromArray(device, new float[(int) (bytes / 4)], (int) (bytes / 4));
                Serialized s = registry.serialize(model, Family.CUDA)) {
            return s.encodeHeader();
        }
    }

    private long deviceBytes(Endpoint client) throws Exception {
        Reply r = call(client, WorkerRequest.Stats::new).get(20, TimeUnit.SECONDS);
        return ((WorkerStats) assertInstanceOf(Reply.Ok.class, r, r.toString()).value()).deviceBytes();
    }

    @Test
    @Timeout(value = 90, unit = TimeUnit.SECONDS)
    void shouldDropABroadcastAssemblyAtOnceWhenItsSenderLeaves() throws Exception {
        ChildJvm p = startWorker();
        String address = listeningAddress(p);
        Endpoint client = connect(address);
        // The worker serves the first connection it accepts as its client; handshakes run concurrently, so the
        // client is known to be first only once it has been answered.
        assertInstanceOf(Reply.Ok.class, call(client, WorkerRequest.Ping::new).get(20, TimeUnit.SECONDS));
        Endpoint peer = connect(address);
        long bid = 77;
        CompletableFuture<Reply> ack = client.expect(bid);
        peer.send(new WorkerRequest.BroadcastBegin(bid, 5L, 1L, modelHeader(16 << 20), List.of()))
                .get(20, TimeUnit.SECONDS);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (deviceBytes(client) == 0 && System.nanoTime() < deadline) {
            Thread.sleep(20); // the begin is decoded on the worker's reader of that connection
        }
        assertEquals(16 << 20, deviceBytes(client), "the assembly's frame is allocated");
        peer.close();
        Reply.Failed dropped = assertInstanceOf(Reply.Failed.class, ack.get(20, TimeUnit.SECONDS));
        assertTrue(dropped.error().contains("the connection it arrived on broke"), dropped.error());
        assertEquals(0, deviceBytes(client), "the departed sender's assembly is freed");
        assertInstanceOf(
                Reply.Ok.class, call(client, WorkerRequest.Shutdown::new).get(20, TimeUnit.SECONDS));
        assertExits(p);
        assertTrue(!p.output().contains("bytes outstanding"), "no leak at shutdown: " + p.output());
    }

    @Test
    @Timeout(value = 90, unit = TimeUnit.SECONDS)
    void shouldRefuseABroadcastBeyondTheWorkersBudgetOfUnfilledBytes() throws Exception {
        ChildJvm p = startWorker("-D" + Worker.MAX_ASSEMBLY_BYTES_PROPERTY + "=" + (24 << 20));
        String address = listeningAddress(p);
        Endpoint client = connect(address);
        // The worker serves the first connection it accepts as its client; handshakes run concurrently, so the
        // client is known to be first only once it has been answered.
        assertInstanceOf(Reply.Ok.class, call(client, WorkerRequest.Ping::new).get(20, TimeUnit.SECONDS));
        Endpoint peer = connect(address);
        byte[] header = modelHeader(16 << 20);
        CompletableFuture<Reply> second = client.expect(79);
        peer.send(new WorkerRequest.BroadcastBegin(78, 5L, 1L, header, List.of()))
                .get(20, TimeUnit.SECONDS);
        peer.send(new WorkerRequest.BroadcastBegin(79, 6L, 1L, header, List.of()))
                .get(20, TimeUnit.SECONDS);
        Reply.Failed refused = assertInstanceOf(Reply.Failed.class, second.get(20, TimeUnit.SECONDS));
        assertEquals("ClusterException", refused.errorType());
        assertTrue(
                refused.error()
                        .contains("16777216 bytes would make 33554432 bytes allocated for arriving "
                                + "broadcasts and not yet filled, beyond the worker's budget of 25165824 ("
                                + Worker.MAX_ASSEMBLY_BYTES_PROPERTY + ")"),
                refused.error());
        assertEquals(16 << 20, deviceBytes(client), "the first assembly alone is allocated");
        assertInstanceOf(
                Reply.Ok.class, call(client, WorkerRequest.Shutdown::new).get(20, TimeUnit.SECONDS));
        assertExits(p);
    }
}
