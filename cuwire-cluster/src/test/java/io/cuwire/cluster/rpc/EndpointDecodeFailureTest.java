package io.cuwire.cluster.rpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.cluster.ClusterException;
import io.cuwire.cluster.RemoteDecodeException;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.NdArray;
import io.cuwire.serialize.DecodeTarget;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.Limits;
import io.cuwire.serialize.TypeRegistry;
import io.cuwire.serialize.UnknownTypeException;
import io.cuwire.serialize.UnserializableException;
import io.cuwire.transport.Connection;
import io.cuwire.transport.DeviceMap;
import io.cuwire.transport.Listener;
import io.cuwire.transport.MessageRefusedException;
import io.cuwire.transport.TransportConfig;
import io.cuwire.transport.Transports;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Two endpoints whose registries each lack a type the other sends: the caller of a request the peer cannot decode,
 * and the caller of a reply it cannot decode itself, both get the typed error with the field path, and the endpoints
 * go on serving. Over the in-process transport and over TCP, in one JVM.
 */
class EndpointDecodeFailureTest {
    private static final AtomicInteger NAMES = new AtomicInteger();

    /** Only the caller knows it. */
    static final class Weights {
        NdArray values;
    }

    /** Only the serving side knows it. */
    static final class Forest {
        NdArray trees;
    }

    private static TypeRegistry registry(Class<?> known, String name) {
        TypeRegistry r = Endpoint.registerMessages(new TypeRegistry(), TestRequest.class);
        r.registerGeneric(known, Family.CUDA, Family.HOST);
        return r.register(known, name);
    }

    @ParameterizedTest
    @ValueSource(strings = {"inproc", "tcp"})
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void shouldFailTheCallWithTheTypedErrorAndItsPathWhenEitherSideCannotDecode(String scheme) throws Exception {
        List<BufferAllocator<?>> allocators = new ArrayList<>();
        BufferAllocator<DeviceBuffer> callerDevice = Devices.get(0).newAllocator("caller-device", 64 << 20);
        BufferAllocator<HostBuffer> callerHost = BufferAllocator.host("caller-host", 64 << 20);
        BufferAllocator<DeviceBuffer> servingDevice = Devices.get(0).newAllocator("serving-device", 64 << 20);
        BufferAllocator<HostBuffer> servingHost = BufferAllocator.host("serving-host", 64 << 20);
        allocators.addAll(List.of(callerDevice, callerHost, servingDevice, servingHost));
        String address =
                scheme.equals("tcp") ? "tcp://127.0.0.1:0" : "inproc://endpoint-decode-" + NAMES.incrementAndGet();
        TransportConfig callerConfig = TransportConfig.builder()
                .secret(new byte[32])
                .receiveInto(DeviceMap.of(callerHost, callerDevice))
                .build();
        TransportConfig servingConfig = TransportConfig.builder()
                .secret(new byte[32])
                .receiveInto(DeviceMap.of(servingHost, servingDevice))
                .build();
        AtomicLong ids = new AtomicLong();
        List<String> logged = new CopyOnWriteArrayList<>();
        Logger log = Logger.getLogger(Endpoint.class.getName());
        Handler handler = new Handler() {
            @Override
            public void publish(LogRecord record) {
                logged.add(record.getMessage());
            }

            @Override
            public void flush() {}

            @Override
            public void close() {}
        };
        log.addHandler(handler);
        try (Listener listener = Transports.forAddress(address).listen(address, servingConfig)) {
            CompletableFuture<Connection> accepted =
                    CompletableFuture.supplyAsync(() -> listener.accept(Duration.ofSeconds(20)));
            Connection callerSide = Transports.forAddress(listener.address()).connect(listener.address(), callerConfig);
            Endpoint serving = new Endpoint(
                            "serving",
                            accepted.get(20, TimeUnit.SECONDS),
                            registry(Forest.class, "test.Forest"),
                            new DecodeTarget(servingDevice, servingHost, Limits.DEFAULT),
                            (from, r) -> serve(from, r, servingDevice),
                            u -> new RemoteDecodeException(u.errorType(), u.error(), u.path()),
                            e -> new ClusterException("serving side broken", e),
                            e -> {})
                    .start();
            try (Endpoint caller = new Endpoint(
                                    "caller",
                                    callerSide,
                                    registry(Weights.class, "test.Weights"),
                                    new DecodeTarget(callerDevice, callerHost, Limits.DEFAULT),
                                    (from, r) -> {},
                                    u -> new RemoteDecodeException(u.errorType(), u.error(), u.path()),
                                    e -> new ClusterException("caller side broken", e),
                                    e -> {})
                            .start();
                    Endpoint served = serving;
                    NdArray values = NdArray.fromArray(callerDevice, new float[4096], 4096)) {
                Weights w = new Weights();
                w.values = values;
                RemoteDecodeException remote = failure(
                        RemoteDecodeException.class, caller.call(new TestRequest.Echo(ids.incrementAndGet(), w)));
                assertEquals("UnknownTypeException", remote.remoteType());
                assertEquals("root.value", remote.path());
                assertTrue(
                        remote.getMessage()
                                .contains("could not decode the request: UnknownTypeException: "
                                        + "unregistered type name 'test.Weights' at root.value"),
                        remote.getMessage());
                assertEquals("after", echo(caller, ids, "after"), "the serving side goes on");

                UnknownTypeException local =
                        failure(UnknownTypeException.class, caller.call(new TestRequest.Give(ids.incrementAndGet())));
                assertEquals("root.value", local.path());
                assertTrue(local.getMessage().contains("'test.Forest' at root.value"), local.getMessage());
                assertEquals("again", echo(caller, ids, "again"), "the caller goes on");

                UnserializableException unsent = failure(
                        UnserializableException.class,
                        caller.call(new TestRequest.Echo(ids.incrementAndGet(), new Forest())));
                assertTrue(unsent.getMessage().contains(Forest.class.getName()), unsent.getMessage());
                assertEquals("last", echo(caller, ids, "last"));
                assertTrue(caller.isOpen() && served.isOpen());
            }
        } finally {
            log.removeHandler(handler);
        }
        assertEquals(2, logged.size(), "one line per message that did not decode: " + logged);
        assertTrue(
                logged.get(0).startsWith("serving: could not decode a message from ")
                        && logged.get(0)
                                .contains("UnknownTypeException: unregistered type name 'test.Weights' at "
                                        + "root.value"),
                logged.get(0));
        assertTrue(
                logged.get(1).startsWith("caller: could not decode a message from ")
                        && logged.get(1).contains("'test.Forest' at root.value"),
                logged.get(1));
        for (BufferAllocator<?> a : allocators) {
            assertEquals(0, a.allocatedBytes(), a + " holds nothing after the failed decodes");
            a.close();
        }
    }

    /** A request the serving side's transport refuses breaks the connection; the call fails with the reason. */
    @ParameterizedTest
    @ValueSource(strings = {"inproc", "tcp"})
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void shouldFailTheCallWithTheRefusalWhenThePeersTransportRefusesTheRequest(String scheme) throws Exception {
        try (BufferAllocator<DeviceBuffer> device = Devices.get(0).newAllocator("refused-device", 64 << 20);
                BufferAllocator<HostBuffer> host = BufferAllocator.host("refused-host", 64 << 20)) {
            String address =
                    scheme.equals("tcp") ? "tcp://127.0.0.1:0" : "inproc://endpoint-refused-" + NAMES.incrementAndGet();
            TransportConfig.Builder config =
                    TransportConfig.builder().secret(new byte[32]).receiveInto(DeviceMap.of(host, device));
            Limits small = new Limits(4096, 16, 16, 1 << 20, 1 << 20, 1024);
            try (Listener listener = Transports.forAddress(address)
                    .listen(address, config.limits(small).build())) {
                CompletableFuture<Connection> accepted =
                        CompletableFuture.supplyAsync(() -> listener.accept(Duration.ofSeconds(20)));
                Connection callerSide = Transports.forAddress(listener.address())
                        .connect(
                                listener.address(),
                                config.limits(Limits.DEFAULT).build());
                DecodeTarget target = new DecodeTarget(device, host, Limits.DEFAULT);
                Endpoint serving = new Endpoint(
                                "serving",
                                accepted.get(20, TimeUnit.SECONDS),
                                registry(Forest.class, "test.Forest"),
                                target,
                                (from, r) -> serve(from, r, device),
                                u -> new RemoteDecodeException(u.errorType(), u.error(), u.path()),
                                e -> new ClusterException("serving side broken", e),
                                e -> {})
                        .start();
                try (serving;
                        Endpoint caller = new Endpoint(
                                        "caller",
                                        callerSide,
                                        registry(Weights.class, "test.Weights"),
                                        target,
                                        (from, r) -> {},
                                        u -> new RemoteDecodeException(u.errorType(), u.error(), u.path()),
                                        e -> new ClusterException("caller side broken", e),
                                        e -> {})
                                .start()) {
                    ClusterException broken =
                            failure(ClusterException.class, caller.call(new TestRequest.Echo(1, "x".repeat(10_000))));
                    MessageRefusedException refused =
                            assertInstanceOf(MessageRefusedException.class, broken.getCause(), broken.toString());
                    assertTrue(refused.reason().endsWith("exceeds the limit of 4096"), refused.reason());
                    assertTrue(caller.expect(2).isCompletedExceptionally(), "the caller's endpoint broke");
                }
            }
            assertEquals(0, device.allocatedBytes() + host.allocatedBytes());
        }
    }

    private static void serve(Endpoint from, Request r, BufferAllocator<DeviceBuffer> device) {
        switch ((TestRequest) r) {
            case TestRequest.Echo e -> from.reply(Reply.ok(e.id(), e.value()));
            case TestRequest.Give g -> {
                Forest f = new Forest();
                f.trees = NdArray.fromArray(device, new double[1024], 1024);
                from.send(Reply.ok(g.id(), f)).whenComplete((m, e) -> f.trees.close());
            }
            case TestRequest.Explode x -> from.reply(Reply.failed(x.id(), new IllegalArgumentException("explode")));
        }
    }

    private static Object echo(Endpoint caller, AtomicLong ids, String value) throws Exception {
        Reply reply =
                caller.call(new TestRequest.Echo(ids.incrementAndGet(), value)).get(20, TimeUnit.SECONDS);
        return assertInstanceOf(Reply.Ok.class, reply).value();
    }

    private static <T extends Throwable> T failure(Class<T> type, CompletableFuture<Reply> call) {
        ExecutionException e = assertThrows(ExecutionException.class, () -> call.get(20, TimeUnit.SECONDS));
        return assertInstanceOf(type, e.getCause());
    }
}
