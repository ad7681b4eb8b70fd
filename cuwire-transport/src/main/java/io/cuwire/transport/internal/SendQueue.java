package io.cuwire.transport.internal;

import io.cuwire.transport.MessageMetrics;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The ordered send path of a connection over one byte stream (tcp, ipc): a small message goes out on the caller's
 * thread when nothing is queued ahead (skipping the hand-off to the writer thread and its wake-up), every other one
 * is queued and written in order by a writer thread of the queue's own. Each message is written under
 * {@link #lock()} by the connection's write action, which completes it or fails it (and the connection); messages
 * of a closed connection fail with {@link ConnectionState#closedError()} instead. A write action on the caller's
 * thread may stop in the middle of a message (the stream took nothing for a while); the writer thread then writes the
 * rest before anything else, and records of the connection's own ({@link #runAtRecordBoundary}) wait for it.
 *
 * @param <T> the connection's record of a send
 */
public final class SendQueue<T extends PendingSend> {
    /** Writes one message under {@link #lock()}; completes it, or fails it and the connection. */
    @FunctionalInterface
    public interface WriteAction<T> {
        /**
         * Writes {@code out}: all of it, or, on the caller's thread ({@code onCaller}), as much as the stream takes
         * without a long wait.
         *
         * @return {@code false} if only part of {@code out} is written and the writer thread is to write the rest;
         *     never on the writer thread
         */
        boolean write(T out, boolean onCaller);
    }

    private final ConnectionState state;
    private final WriteAction<T> write;
    private final LinkedBlockingQueue<PendingSend> queue = new LinkedBlockingQueue<>();
    private final AtomicInteger queued = new AtomicInteger();
    private final ReentrantLock lock = new ReentrantLock();
    /** Signalled when {@link #partial} is done. */
    private final Condition boundary = lock.newCondition();
    /** A message its caller began and the writer is to finish; guarded by {@link #lock}. */
    private PendingSend partial;

    private final PendingSend stop;
    private final Thread writer;

    /**
     * Starts the writer thread, {@code cuwire-<name>-writer}.
     *
     * @param write writes one message and completes or fails it; called under {@link #lock()}
     * @param onWriterExit runs on the writer thread when it ends (frees what only writes use)
     */
    public SendQueue(String name, ConnectionState state, WriteAction<T> write, Runnable onWriterExit) {
        this.state = state;
        this.write = write;
        this.stop = new PendingSend(state, 0) {};
        this.writer =
                Thread.ofPlatform().daemon().name("cuwire-" + name + "-writer").start(() -> writeLoop(onWriterExit));
    }

    /**
     * The lock every write of the stream holds, messages and the connection's own records alike. A record of the
     * connection's own written under it directly must not come from a connection whose write action stops midway
     * (use {@link #runAtRecordBoundary}).
     */
    public ReentrantLock lock() {
        return lock;
    }

    /**
     * Runs {@code action} (a record of the connection's own) under {@link #lock()} at a record boundary of the
     * stream: after a message its caller began and left to the writer is finished.
     *
     * @return {@code false}, without running it, if the connection closed with a message cut off midway, or the
     *     lock could not be had within {@link ConnectionState#runLocked}'s wait
     */
    public boolean runAtRecordBoundary(Runnable action) {
        boolean[] ran = {false};
        boolean locked = ConnectionState.runLocked(lock, () -> {
            if (awaitBoundary()) {
                action.run();
                ran[0] = true;
            }
        });
        return locked && ran[0];
    }

    /** Under the lock: waits until no message is cut off midway; {@code false} if the connection closed with one. */
    private boolean awaitBoundary() {
        while (partial != null) {
            if (state.isClosed()) {
                return false;
            }
            try {
                boundary.await(10, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        }
        return true;
    }

    /**
     * Writes {@code out} here if {@code inline} and nothing is queued ahead (leaving what the write action did not
     * write to the writer), else queues it for the writer.
     *
     * @return {@code out}'s future
     */
    public CompletableFuture<MessageMetrics> submit(T out, boolean inline) {
        // The lock may be held for a moment by the connection's own record (a consumed record the reader writes
        // right after it handed a message over, as a reply is being sent): spin for it rather than wake the writer.
        if (inline
                && queued.get() == 0
                && (lock.tryLock()
                        || state.idle().spinUntil(() -> queued.get() != 0 || lock.tryLock())
                                && lock.isHeldByCurrentThread())) {
            try {
                if (queued.get() == 0) {
                    if (!writeOrFail(out, true)) {
                        // Still under the lock: every later message queues behind the rest of this one.
                        partial = out;
                        queued.incrementAndGet();
                        queue.add(out);
                        if (state.isClosed()) {
                            failQueued();
                        }
                    }
                    return out.future;
                }
            } finally {
                lock.unlock();
            }
        }
        queued.incrementAndGet();
        queue.add(out);
        if (state.isClosed()) {
            failQueued();
        }
        return out.future;
    }

    @SuppressWarnings("unchecked")
    private void writeLoop(Runnable onExit) {
        try {
            while (!state.isClosed()) {
                PendingSend out;
                try {
                    out = queue.take();
                } catch (InterruptedException e) {
                    break;
                }
                if (out == stop) {
                    break;
                }
                lock.lock();
                try {
                    if (state.isClosed()) {
                        out.fail(state.closedError());
                        break;
                    }
                    writeOrFail((T) out, false);
                } finally {
                    queued.decrementAndGet();
                    ended(out);
                    lock.unlock();
                }
            }
        } finally {
            failQueued();
            onExit.run();
        }
    }

    private boolean writeOrFail(T out, boolean onCaller) {
        if (state.isClosed()) {
            out.fail(state.closedError());
            return true;
        }
        return write.write(out, onCaller);
    }

    /**
     * Marks the record boundary after {@code out} if it was the message cut off midway and is now written whole;
     * under the lock. One that failed stays cut off: the stream never gets back to a boundary.
     */
    private void ended(PendingSend out) {
        if (out == partial && out.future.isDone() && !out.future.isCompletedExceptionally()) {
            partial = null;
            boundary.signalAll();
        }
    }

    /** Fails every queued message; the connection was closed. Leaves the writer's stop in the queue. */
    private void failQueued() {
        boolean stopped = false;
        PendingSend out;
        while ((out = queue.poll()) != null) {
            if (out == stop) {
                stopped = true;
            } else {
                out.fail(state.closedError());
            }
        }
        if (stopped) {
            queue.add(stop);
        }
    }

    /** Fails every queued message and stops the writer; the connection was closed. */
    public void close() {
        failQueued();
        queue.add(stop);
    }

    /** Waits a while for the writer to end (see {@link ConnectionState#awaitEnd}). */
    public void awaitEnd() {
        ConnectionState.awaitEnd(writer);
    }
}
