package io.cuwire.transport.internal;

import io.cuwire.transport.IdleStrategy;
import io.cuwire.transport.MessageMetrics;
import io.cuwire.transport.TransportException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;

/**
 * A message sent on a connection and not yet completed: its bytes count in the connection's {@link ConnectionState}
 * budget until it completes or fails, exactly once, whichever comes first. A transport's own record of a send
 * extends it with what it needs to write the message.
 */
public abstract class PendingSend {
    /** Header and frame bytes: what the send counts in flight. */
    public final long bytes;
    /** When the send began, for its metrics. */
    public final long startNanos = System.nanoTime();
    /**
     * What {@code Connection.send} returned: its {@code join} and {@code get} spin for the connection's
     * {@link IdleStrategy#spin()} before they park, as a receive does, so that a caller waiting for a small message's
     * completion (a reply's consumed record, often followed by the peer's next message) skips a thread wake-up.
     */
    public final CompletableFuture<MessageMetrics> future;

    private final ConnectionState state;
    private final AtomicBoolean done = new AtomicBoolean();
    private MessageRecorder recorder;

    protected PendingSend(ConnectionState state, long bytes) {
        this.state = state;
        this.bytes = bytes;
        this.future = new SpinningFuture<>(state.idle());
    }

    /** Starts the send's metrics for {@code transport}; {@link #fail} closes them. */
    public final MessageRecorder record(String transport) {
        recorder = MessageRecorder.start(MessageMetrics.Direction.SENT, transport, startNanos, true);
        return recorder;
    }

    /** The metrics started by {@link #record}, or {@code null}. */
    public final MessageRecorder recorder() {
        return recorder;
    }

    /** Whether the send completed or failed. */
    public final boolean isDone() {
        return done.get();
    }

    /** Completes the send with {@code metrics}, unless it is done already. */
    public final void complete(MessageMetrics metrics) {
        complete(() -> metrics);
    }

    /** Completes the send with the metrics {@code metrics} makes (only then), unless it is done already. */
    public final void complete(Supplier<MessageMetrics> metrics) {
        if (done.compareAndSet(false, true)) {
            MessageMetrics m = metrics.get();
            state.release(bytes);
            onCompleted();
            future.complete(m);
        }
    }

    /** Fails the send with {@code e}, unless it is done already. */
    public final void fail(TransportException e) {
        if (done.compareAndSet(false, true)) {
            if (recorder != null) {
                recorder.close();
            }
            state.release(bytes);
            future.completeExceptionally(e);
        }
    }

    /** Runs when the send completed, after its bytes were given back and before its future completes. */
    protected void onCompleted() {}

    /**
     * A future whose waits spin for {@code idle}'s spin before they park. Its dependent stages
     * ({@code thenApply}...) are plain {@link CompletableFuture}s.
     */
    private static final class SpinningFuture<T> extends CompletableFuture<T> {
        private final IdleStrategy idle;

        SpinningFuture(IdleStrategy idle) {
            this.idle = idle;
        }

        @Override
        public T join() {
            idle.spinUntil(this::isDone);
            return super.join();
        }

        @Override
        public T get() throws InterruptedException, ExecutionException {
            idle.spinUntil(this::isDone);
            return super.get();
        }

        @Override
        public T get(long timeout, TimeUnit unit) throws InterruptedException, ExecutionException, TimeoutException {
            long start = System.nanoTime();
            idle.spinUntil(this::isDone);
            return super.get(Math.max(0, unit.toNanos(timeout) - (System.nanoTime() - start)), TimeUnit.NANOSECONDS);
        }
    }
}
