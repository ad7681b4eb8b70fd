package io.cuwire.cluster.rpc;

import io.cuwire.serialize.DecodeBudgetExceededException;
import io.cuwire.serialize.DecodeTarget;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.SerializationException;
import io.cuwire.serialize.Serialized;
import io.cuwire.serialize.TypeRegistry;
import io.cuwire.transport.Connection;
import io.cuwire.transport.ConnectionClosedException;
import io.cuwire.transport.Message;
import io.cuwire.transport.MessageMetrics;
import io.cuwire.transport.ReceivedMessage;
import io.cuwire.transport.TransportException;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * Requests and replies over one {@link Connection}: a reader thread decodes every incoming message, completes the
 * pending call a {@link Reply} answers and hands each {@link Request} to the handler. Sends are asynchronous; the
 * serialized value of a send is closed when the transport is done with its frames.
 *
 * <p>Failure: when receiving fails (peer gone, protocol error, a message the peer's transport refused), a send fails
 * in the transport or {@link #fail} is called, the endpoint breaks once: {@code onBroken} runs, the connection
 * closes, and every pending call fails with the exception {@code failure} makes of the cause.
 * Later calls fail at once the same way.
 *
 * <p>A value that does not decode breaks nothing; the endpoint goes on with the next message, and logs it (a
 * warning naming the connection and the reason, at most 10 such lines per 10 seconds per endpoint). A request this side
 * cannot decode is answered {@link Reply.Undecodable} with the exception's type, message and field path, and the
 * caller's future fails with the exception {@code refusal} makes of that answer (the cluster's
 * {@code RemoteDecodeException}: this layer names no type of the packages above it); a reply this side cannot decode
 * fails its call at once with the local {@link SerializationException} (its {@link SerializationException#path()
 * path} says where), and so does a call whose request this side cannot serialize (nothing was sent).
 *
 * <p>Except a message that costs too much: a decode beyond the message's work budget
 * ({@link DecodeBudgetExceededException}: the peer sent what no honest peer sends) or one that fails with an
 * {@link Error} ({@link OutOfMemoryError}, say). It is answered the same way where its request id can be read (the
 * answer's send is awaited a short while), and then the endpoint breaks as above, closing the connection; so does an
 * {@code Error} anywhere else on the reader thread (in the transport's receive, in the handler), which never ends the
 * reader silently. Thread-safe.
 *
 * <p>The one request/reply layer over the transport: the client and workers use it, and so do cuwire-spark's nodes
 * (io.cuwire.spark.internal.Node), whose fetches carry a model as a reply's value.
 */
public final class Endpoint implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(Endpoint.class.getName());

    /** Gets the requests arriving on an endpoint; runs on its reader thread (hand long work elsewhere). */
    @FunctionalInterface
    public interface Handler {
        void onRequest(Endpoint from, Request request);
    }

    /** How long a break waits for the answer to the message that caused it to be sent. */
    private static final long ANSWER_BEFORE_BREAK_SECONDS = 5;

    private final String name;
    private final Connection connection;
    private final TypeRegistry registry;
    private final DecodeTarget target;
    private final Handler handler;
    private final Function<Reply.Undecodable, RuntimeException> refusal;
    private final Function<Throwable, RuntimeException> failure;
    private final Consumer<Throwable> onBroken;
    private final Map<Long, CompletableFuture<Reply>> pending = new ConcurrentHashMap<>();
    private volatile Thread reader;
    /** Messages this endpoint could not decode: its peer can send them at will. */
    private final RateLimitedLog undecodable = new RateLimitedLog(LOG, 10, Duration.ofSeconds(10));
    /** The failure every call fails with once the endpoint broke; {@code null} while it works. */
    private final AtomicReference<RuntimeException> broken = new AtomicReference<>();

    private final AtomicLong messagesSent = new AtomicLong();
    private final AtomicLong headerBytesSent = new AtomicLong();
    private final AtomicLong frameBytesSent = new AtomicLong();
    private final AtomicLong framesSent = new AtomicLong();
    private final AtomicLong bytesReceived = new AtomicLong();
    private final AtomicLong frameBytesReceived = new AtomicLong();

    /**
     * An endpoint, not yet reading ({@link #start}).
     *
     * @param handler gets the requests that arrive
     * @param refusal the exception a call fails with when the peer answered that it could not decode the request
     * @param failure the exception every call fails with once the endpoint broke, made of the cause
     * @param onBroken runs once when the endpoint breaks, with the cause
     */
    public Endpoint(
            String name,
            Connection connection,
            TypeRegistry registry,
            DecodeTarget target,
            Handler handler,
            Function<Reply.Undecodable, RuntimeException> refusal,
            Function<Throwable, RuntimeException> failure,
            Consumer<Throwable> onBroken) {
        this.name = name;
        this.connection = connection;
        this.registry = registry;
        this.target = target;
        this.handler = handler;
        this.refusal = refusal;
        this.failure = failure;
        this.onBroken = onBroken;
    }

    /**
     * Registers the messages an endpoint sends in {@code registry}: every kind of {@link Reply}, and the requests of
     * {@code requests} (a sealed interface stands for each record it permits, down its sealed subinterfaces; a record
     * for itself), each under its
     * {@link io.cuwire.serialize.WireType} name; returns it. The records travel through the generic serializer in the
     * {@code cuda} and {@code host} families.
     */
    @SafeVarargs
    public static TypeRegistry registerMessages(TypeRegistry registry, Class<? extends Request>... requests) {
        registry.registerGeneric(Reply.class, Family.CUDA, Family.HOST);
        registry.registerGeneric(Request.class, Family.CUDA, Family.HOST);
        for (Class<?> type : Reply.class.getPermittedSubclasses()) {
            registry.register(type);
        }
        for (Class<? extends Request> set : requests) {
            registerKinds(registry, set);
        }
        return registry;
    }

    /** Registers {@code type}, a record, or each record a sealed {@code type} permits, down its sealed subtypes. */
    private static void registerKinds(TypeRegistry registry, Class<?> type) {
        if (type.isRecord()) {
            registry.register(type);
        } else if (type.isSealed()) {
            for (Class<?> kind : type.getPermittedSubclasses()) {
                registerKinds(registry, kind);
            }
        } else {
            throw new IllegalArgumentException(
                    type.getName() + " is neither a record nor sealed: a request is one " + "record per kind");
        }
    }

    /** Starts the reader thread; returns this. */
    public Endpoint start() {
        reader = Thread.ofPlatform().daemon().name("cuwire-" + name + "-reader").start(this::readLoop);
        return this;
    }

    /**
     * Waits at most {@code timeout} for the reader thread to end (it ends once the endpoint broke or closed, after
     * the message it is handling): after that nothing this endpoint received is still being decoded or dispatched.
     *
     * @return whether it ended (also when it never started, or when called from the reader itself)
     */
    public boolean awaitReader(Duration timeout) {
        Thread t = reader;
        if (t == null || t == Thread.currentThread()) {
            return true;
        }
        try {
            return t.join(timeout);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return !t.isAlive();
        }
    }

    /** The connection's name for messages. */
    public String name() {
        return name;
    }

    /** The underlying connection. */
    public Connection connection() {
        return connection;
    }

    private void readLoop() {
        try {
            readMessages();
        } catch (RuntimeException | Error e) {
            fail(e); // an Error in the transport or the handler: never a silent end of the reader
        }
    }

    private void readMessages() {
        while (broken.get() == null) {
            Object value;
            DispatchEvent event;
            boolean timed;
            long received = 0;
            long decoded = 0;
            try (ReceivedMessage m = connection.receive()) {
                // Made once the message is here (a recording may have started while the reader waited); no clock
                // reads on the reader's path unless a recording wants them.
                event = new DispatchEvent();
                timed = event.isEnabled();
                if (timed) {
                    received = System.nanoTime();
                }
                bytesReceived.addAndGet(m.metrics().totalBytes());
                frameBytesReceived.addAndGet(m.metrics().frameBytes());
                try {
                    value = registry.deserialize(m.value(), target);
                } catch (DecodeBudgetExceededException | Error e) {
                    // what no honest peer sends, or what this JVM cannot afford: answer, then break
                    answerAndBreak(m.value(), e);
                    return;
                } catch (RuntimeException e) {
                    answerUndecodable(m.value(), e);
                    continue;
                }
                if (timed) {
                    decoded = System.nanoTime();
                }
            } catch (RuntimeException e) {
                fail(e);
                return;
            }
            long released = timed ? System.nanoTime() : 0;
            dispatch(value);
            if (timed && event.shouldCommit()) {
                event.endpoint = name;
                event.op = value instanceof Request || value instanceof Reply
                        ? registry.nameOf(value.getClass())
                        : "other";
                event.decodeNanos = decoded - received;
                event.releaseNanos = released - decoded;
                event.handleNanos = System.nanoTime() - released;
                event.commit();
            }
        }
    }

    /**
     * Answers the message {@code e} made undecodable (awaiting the answer's send a short while), then breaks the
     * endpoint with {@code e}.
     */
    private void answerAndBreak(Serialized value, Throwable e) {
        try {
            answerUndecodable(value, e).get(ANSWER_BEFORE_BREAK_SECONDS, TimeUnit.SECONDS);
        } catch (InterruptedException x) {
            Thread.currentThread().interrupt();
        } catch (Exception | Error x) {
            // best effort: the peer hears of the break either way
        }
        fail(e);
    }

    /** Completes the call a reply answers, or hands a request to the handler. */
    private void dispatch(Object value) {
        switch (value) {
            case Reply r -> {
                CompletableFuture<Reply> f = pending.remove(r.id());
                if (f == null) {
                    Values.close(r);
                } else if (r instanceof Reply.Undecodable u) {
                    f.completeExceptionally(refusal.apply(u));
                } else {
                    f.complete(r);
                }
            }
            case Request r -> {
                try {
                    handler.onRequest(this, r);
                } catch (RuntimeException e) {
                    Values.close(r);
                    reply(Reply.failed(r.id(), e));
                } catch (Error e) {
                    Values.close(r);
                    reply(Reply.failed(r.id(), e));
                    throw e; // the reader breaks the endpoint
                }
            }
            default -> Values.close(value);
        }
    }

    /**
     * A message that did not decode (an unregistered type, a refused family, a limit, a budget, an {@link Error}): a
     * reply fails its call with it; anything else with an id (a request, or a message whose type name this side does
     * not know, such as a request kind it does not serve) is answered with the error; the header's untrusted shape is
     * only read to find the id and the type.
     *
     * @return the answer's send, or a completed future where there is nothing to send
     */
    private CompletableFuture<?> answerUndecodable(Serialized value, Throwable e) {
        undecodable.log(
                System.Logger.Level.WARNING,
                "undecodable",
                name + ": could not decode a message from " + connection + ": " + e);
        if (!(value.root() instanceof Map<?, ?> root
                && root.get("d") instanceof Map<?, ?> d
                && d.get("id") instanceof Long id)) {
            return CompletableFuture.completedFuture(null);
        }
        Class<?> type = root.get("t") instanceof String name ? registry.typeOf(name) : null;
        if (type != null && Reply.class.isAssignableFrom(type)) {
            CompletableFuture<Reply> f = pending.remove(id);
            if (f != null) {
                f.completeExceptionally(e);
            }
            return CompletableFuture.completedFuture(null);
        }
        // a request, or a message of a kind this side does not know (a request kind it does not serve): answered
        return send(Reply.undecodable(id, e)).exceptionally(x -> null); // a failed send is this endpoint's failure
    }

    /** Sends {@code request} and returns the future of its reply (failed with the endpoint's failure if broken). */
    public CompletableFuture<Reply> call(Request request, Family... chain) {
        CompletableFuture<Reply> f = expect(request.id());
        if (f.isDone()) {
            return f;
        }
        send(request, chain).exceptionally(e -> {
            failExpected(request.id(), e);
            return null;
        });
        return f;
    }

    /** The future of a reply with {@code id} that something else causes (a broadcast forwarded to this peer). */
    public CompletableFuture<Reply> expect(long id) {
        CompletableFuture<Reply> f = new CompletableFuture<>();
        RuntimeException failed = broken.get();
        if (failed != null) {
            f.completeExceptionally(failed);
            return f;
        }
        pending.put(id, f);
        failed = broken.get();
        if (failed != null && pending.remove(id) != null) {
            f.completeExceptionally(failed);
        }
        return f;
    }

    /**
     * Fails the pending reply {@code id}, if any, as a failed send of its request would: with the
     * {@link SerializationException} when the request did not serialize (nothing was sent), else with
     * {@code failure(cause)}.
     */
    public void failExpected(long id, Throwable cause) {
        CompletableFuture<Reply> p = pending.remove(id);
        if (p != null) {
            p.completeExceptionally(unwrap(cause) instanceof SerializationException s ? s : failure.apply(cause));
        }
    }

    /** Forgets a pending reply (a request that was never sent). */
    public void forget(long id) {
        pending.remove(id);
    }

    /** Sends a reply (errors are the failure of this endpoint and dropped). */
    public void reply(Reply reply) {
        send(reply).exceptionally(e -> null);
    }

    /**
     * Serializes {@code value} with {@code chain} (the connection's agreed chain when empty) and sends it; the
     * serialized value is closed when the send completes.
     */
    public CompletableFuture<MessageMetrics> send(Object value, Family... chain) {
        Family[] families = chain.length == 0 ? connection.families().toArray(Family[]::new) : chain;
        Serialized s;
        try {
            s = registry.serialize(value, families);
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
        CompletableFuture<MessageMetrics> f = sendMessage(Message.of(s));
        f.whenComplete((m, e) -> s.close());
        return f;
    }

    /** Sends a message built elsewhere; the caller keeps its frames open until the future completes. */
    public CompletableFuture<MessageMetrics> sendMessage(Message message) {
        RuntimeException failed = broken.get();
        if (failed != null) {
            return CompletableFuture.failedFuture(failed);
        }
        CompletableFuture<MessageMetrics> f;
        try {
            f = connection.send(message);
        } catch (RuntimeException e) {
            fail(e);
            return CompletableFuture.failedFuture(failure.apply(e));
        }
        return f.whenComplete((m, e) -> {
            if (m != null) {
                messagesSent.incrementAndGet();
                headerBytesSent.addAndGet(m.headerBytes());
                frameBytesSent.addAndGet(m.frameBytes());
                framesSent.addAndGet(m.frames());
            } else if (unwrap(e) instanceof TransportException t) {
                fail(t); // a send that failed in the transport broke the connection (Connection's contract)
            }
        });
    }

    /** Breaks the endpoint: fails every pending call with {@code failure(cause)} and closes the connection. */
    public void fail(Throwable cause) {
        if (broken.get() != null) {
            return; // broken once already (the usual case for a second call): no failure to build
        }
        RuntimeException failed = failure.apply(cause);
        if (!broken.compareAndSet(null, failed)) {
            return;
        }
        // onBroken (a worker marked lost) runs before anything can observe the break: closing the connection fails
        // its pending sends, whose handlers complete futures that callers wait on.
        onBroken.accept(cause);
        connection.close();
        for (Long id : pending.keySet()) {
            CompletableFuture<Reply> f = pending.remove(id);
            if (f != null) {
                f.completeExceptionally(failed);
            }
        }
    }

    private static Throwable unwrap(Throwable e) {
        return e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
    }

    /** Whether the endpoint is still usable. */
    public boolean isOpen() {
        return broken.get() == null;
    }

    /** What this endpoint sent and received so far. */
    public WireCounts counts() {
        return new WireCounts(
                messagesSent.get(),
                framesSent.get(),
                headerBytesSent.get(),
                frameBytesSent.get(),
                bytesReceived.get(),
                frameBytesReceived.get());
    }

    /**
     * Counters of one endpoint.
     *
     * @param messages messages sent
     * @param frames frames sent
     * @param headerBytes header bytes sent
     * @param frameBytes frame bytes sent
     * @param bytesReceived header and frame bytes received
     * @param frameBytesReceived frame bytes received
     */
    public record WireCounts(
            long messages,
            long frames,
            long headerBytes,
            long frameBytes,
            long bytesReceived,
            long frameBytesReceived) {}

    /** Closes: pending calls fail as if the peer had gone. */
    @Override
    public void close() {
        fail(new ConnectionClosedException(name + " closed"));
    }
}
