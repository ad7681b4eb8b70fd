package io.cuwire.transport.internal;

import io.cuwire.transport.MessageMetrics;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;

/**
 * The ordered send path of a connection over one byte stream (tcp, ipc): a small message goes out on the caller's
 * thread when nothing is queued ahead (skipping the hand-off to the writer thread and its wake-up), every other one
 * is queued and written in order by a writer thread of the queue's own. Each message is written under
 * {@link #lock()} by the connection's write action, which completes it or fails it (and the connection); messages
 * of a closed connection fail with {@link ConnectionState#closedError()} instead.
 *
 * @param <T> the connection's record of a send
 */
public final class SendQueue<T extends PendingSend> {
    private final ConnectionState state;
    private final Consumer<T> write;
    private final LinkedBlockingQueue<PendingSend> queue = new LinkedBlockingQueue<>();
    private final AtomicInteger queued = new AtomicInteger();
    private final ReentrantLock lock = new ReentrantLock();
    private final PendingSend stop;
    private final Thread writer;

    /**
     * Starts the writer thread, {@code cuwire-<name>-writer}.
     *
     * @param write writes one message and completes or fails it; called under {@link #lock()}
     * @param onWriterExit runs on the writer thread when it ends (frees what only writes use)
     */
    public SendQueue(String name, ConnectionState state, Consumer<T> write, Runnable onWriterExit) {
        this.state = state;
        this.write = write;
        this.stop = new PendingSend(state, 0) { };
        this.writer = Thread.ofPlatform().daemon().name("cuwire-" + name + "-writer")
                .start(() -> writeLoop(onWriterExit));
    }

    /** The lock every write of the stream holds, messages and the connection's own records alike. */
    public ReentrantLock lock() {
        return lock;
    }

    /**
     * Writes {@code out} here if {@code inline} and nothing is queued ahead, else queues it for the writer.
     *
     * @return {@code out}'s future
     */
    public CompletableFuture<MessageMetrics> submit(T out, boolean inline) {
        if (inline && queued.get() == 0 && lock.tryLock()) {
            try {
                if (queued.get() == 0) {
                    writeOrFail(out);
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
                    writeOrFail((T) out);
                } finally {
                    queued.decrementAndGet();
                    lock.unlock();
                }
            }
        } finally {
            failQueued();
            onExit.run();
        }
    }

    private void writeOrFail(T out) {
        if (state.isClosed()) {
            out.fail(state.closedError());
            return;
        }
        write.accept(out);
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
