package io.cuwire.cluster.rpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.cluster.ClusterException;
import io.cuwire.cluster.RemoteDecodeException;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import io.cuwire.serialize.DecodeBudgetExceededException;
import io.cuwire.serialize.DecodeTarget;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.Limits;
import io.cuwire.serialize.ReadContext;
import io.cuwire.serialize.Serializer;
import io.cuwire.serialize.TypeRegistry;
import io.cuwire.serialize.WriteContext;
import io.cuwire.transport.Connection;
import io.cuwire.transport.DeviceMap;
import io.cuwire.transport.Listener;
import io.cuwire.transport.TransportConfig;
import io.cuwire.transport.Transports;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A peer that sends what costs too much to decode, or whose message makes this side fail with an {@link Error}, is
 * answered with the typed error and then cut off: the endpoint breaks once, its connection closes, and its owner
 * hears of it ({@code onBroken}), so that a worker whose client did this exits instead of spinning or serving on.
 * Before, the first case spun the reader for ever (2^50 paths hashed) and the others ended the reader thread without
 * a word, the connection open and the owner unaware.
 */
class EndpointBreakTest {
    private static final AtomicInteger NAMES = new AtomicInteger();

    /** Decodes by failing with the error its name says; written as nothing. */
    static final class Bomb {
        String error;
    }

    private static final class BombSerializer implements Serializer<Bomb> {
        @Override
        public void write(WriteContext out, Bomb value) {
            out.put("e", value.error);
        }

        @Override
        public Bomb read(ReadContext in) {
            throw switch (in.getString("e")) {
                case "oom" -> new OutOfMemoryError("test: the decode ran out of heap");
                default -> new StackOverflowError("test: the decode ran out of stack");
            };
        }
    }

    private static TypeRegistry registry() {
        TypeRegistry r = Endpoint.registerMessages(new TypeRegistry(), TestRequest.class);
        r.register(Bomb.class, "test.Bomb");
        return r.register(Bomb.class, Family.HOST, new BombSerializer());
    }

    /**
     * 50 levels of lists, each holding the level below twice, then a hash set of the last: a few kilobytes whose hash
     * code walks 2^50 paths. The levels come first, in order, so that the header holds each once and refers to it
     * after (a header nests at most 64 deep); the set holds a list that was empty when it was added, and the last
     * level after.
     */
    static List<Object> exponential() {
        List<Object> levels = new ArrayList<>();
        List<Object> level = new ArrayList<>(List.of(1L));
        levels.add(level);
        for (int i = 0; i < 50; i++) {
            List<Object> next = new ArrayList<>();
            next.add(level);
            next.add(level);
            level = next;
            levels.add(level);
        }
        Set<Object> set = new HashSet<>();
        List<Object> holder = new ArrayList<>();
        set.add(holder);
        holder.add(level);
        levels.add(set);
        return levels;
    }

    /** One connected pair of endpoints; the serving side answers {@code echo} and fails {@code explode}. */
    private static final class Pair implements AutoCloseable {
        final BufferAllocator<DeviceBuffer> device = Devices.get(0).newAllocator("break-device", 64 << 20);
        final BufferAllocator<HostBuffer> host = BufferAllocator.host("break-host", 64 << 20);
        final CompletableFuture<Throwable> servingBroken = new CompletableFuture<>();
        final Listener listener;
        final Endpoint serving;
        final Endpoint caller;
        final AtomicInteger ids = new AtomicInteger();

        Pair(String scheme) throws Exception {
            String address =
                    scheme.equals("tcp") ? "tcp://127.0.0.1:0" : "inproc://endpoint-break-" + NAMES.incrementAndGet();
            TransportConfig config = TransportConfig.builder()
                    .secret(new byte[32])
                    .receiveInto(DeviceMap.of(host, device))
                    .build();
            listener = Transports.forAddress(address).listen(address, config);
            CompletableFuture<Connection> accepted =
                    CompletableFuture.supplyAsync(() -> listener.accept(Duration.ofSeconds(20)));
            Connection callerSide = Transports.forAddress(listener.address()).connect(listener.address(), config);
            DecodeTarget target = new DecodeTarget(device, host, Limits.DEFAULT);
            Function<Throwable, RuntimeException> servingFailure = e -> new ClusterException("serving broken", e);
            serving = new Endpoint(
                            "serving",
                            accepted.get(20, TimeUnit.SECONDS),
                            registry(),
                            target,
                            (from, r) -> {
                                switch ((TestRequest) r) {
                                    case TestRequest.Explode x ->
                                        throw new StackOverflowError("test: the handler ran out of " + "stack");
                                    case TestRequest.Echo e -> from.reply(Reply.ok(e.id(), e.value()));
                                    case TestRequest.Give g -> from.reply(Reply.ok(g.id(), null));
                                }
                            },
                            u -> new RemoteDecodeException(u.errorType(), u.error(), u.path()),
                            servingFailure,
                            servingBroken::complete)
                    .start();
            caller = new Endpoint(
                            "caller",
                            callerSide,
                            registry(),
                            target,
                            (from, r) -> {},
                            u -> new RemoteDecodeException(u.errorType(), u.error(), u.path()),
                            e -> new ClusterException("caller broken", e),
                            e -> {})
                    .start();
        }

        CompletableFuture<Reply> call(String op, Object arg) {
            long id = ids.incrementAndGet();
            return caller.call(op.equals("explode") ? new TestRequest.Explode(id, arg) : new TestRequest.Echo(id, arg));
        }

        /** The serving side broke with {@code cause} and closed: the caller's endpoint sees its connection end. */
        void assertBrokeWith(Class<? extends Throwable> cause) throws Exception {
            assertInstanceOf(cause, servingBroken.get(20, TimeUnit.SECONDS));
            assertFalse(serving.isOpen());
            ExecutionException later = assertThrows(
                    ExecutionException.class, () -> call("echo", "after").get(20, TimeUnit.SECONDS));
            assertInstanceOf(ClusterException.class, later.getCause(), "the connection is closed: " + later);
        }

        @Override
        public void close() {
            caller.close();
            serving.close();
            listener.close();
            assertEquals(0, device.allocatedBytes() + host.allocatedBytes(), "the broken decodes left nothing");
            device.close();
            host.close();
        }
    }

    private static <T extends Throwable> T failure(Class<T> type, CompletableFuture<Reply> call) {
        ExecutionException e = assertThrows(ExecutionException.class, () -> call.get(20, TimeUnit.SECONDS));
        return assertInstanceOf(type, e.getCause());
    }

    @ParameterizedTest
    @ValueSource(strings = {"inproc", "tcp"})
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void shouldAnswerARequestBeyondTheDecodeBudgetAndThenBreak(String scheme) throws Exception {
        try (Pair p = new Pair(scheme)) {
            assertEquals("before", ((Reply.Ok) p.call("echo", "before").get(20, TimeUnit.SECONDS)).value());
            RemoteDecodeException e = failure(RemoteDecodeException.class, p.call("echo", exponential()));
            assertEquals(DecodeBudgetExceededException.class.getSimpleName(), e.remoteType());
            assertTrue(e.getMessage().contains("(Limits.maxDecodeWork)"), e.getMessage());
            p.assertBrokeWith(DecodeBudgetExceededException.class);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"inproc", "tcp"})
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void shouldAnswerARequestWhoseDecodeFailsWithAnErrorAndThenBreak(String scheme) throws Exception {
        for (String error : new String[] {"oom", "stack"}) {
            try (Pair p = new Pair(scheme)) {
                Bomb bomb = new Bomb();
                bomb.error = error;
                RemoteDecodeException e = failure(RemoteDecodeException.class, p.call("echo", bomb));
                if (error.equals("oom")) {
                    assertEquals("OutOfMemoryError", e.remoteType());
                    assertTrue(e.getMessage().contains("test: the decode ran out of heap"), e.getMessage());
                    p.assertBrokeWith(OutOfMemoryError.class);
                } else {
                    // the decoder makes a stack overflow the typed refusal of a value too deep
                    assertEquals(DecodeBudgetExceededException.class.getSimpleName(), e.remoteType());
                    assertTrue(e.getMessage().contains("ran out of thread stack"), e.getMessage());
                    p.assertBrokeWith(DecodeBudgetExceededException.class);
                }
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"inproc", "tcp"})
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void shouldAnswerARequestWhoseHandlerFailsWithAnErrorAndThenBreak(String scheme) throws Exception {
        try (Pair p = new Pair(scheme)) {
            Reply reply = p.call("explode", "x").get(20, TimeUnit.SECONDS);
            assertEquals(
                    "StackOverflowError",
                    assertInstanceOf(Reply.Failed.class, reply).errorType());
            p.assertBrokeWith(StackOverflowError.class);
        }
    }
}
