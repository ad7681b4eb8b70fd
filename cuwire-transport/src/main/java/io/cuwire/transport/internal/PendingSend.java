package io.cuwire.transport.internal;

import io.cuwire.transport.MessageMetrics;
import io.cuwire.transport.TransportException;
import java.util.concurrent.CompletableFuture;
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
    /** What {@code Connection.send} returned. */
    public final CompletableFuture<MessageMetrics> future = new CompletableFuture<>();
    private final ConnectionState state;
    private final AtomicBoolean done = new AtomicBoolean();
    private MessageRecorder recorder;

    protected PendingSend(ConnectionState state, long bytes) {
        this.state = state;
        this.bytes = bytes;
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
    protected void onCompleted() {
    }
}
