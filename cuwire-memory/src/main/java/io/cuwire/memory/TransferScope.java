package io.cuwire.memory;

import java.util.concurrent.atomic.AtomicLongArray;

/**
 * Counts the copies the {@link CopyEngine} makes while the scope is open. A scope of {@link CopyEngine#openScope}
 * counts them on every thread of this process, so copies made by transport or stream threads on the caller's behalf
 * are caught too; one of {@link CopyEngine#openThreadScope} counts only those its own thread makes (or enqueues, for
 * an asynchronous copy), so that two sides of a transfer in one process each count their own. A test proves "no byte
 * went to the host" with it:
 *
 * <pre>{@code
 * try (TransferScope scope = CopyEngine.openScope("send model")) {
 *     transport.send(model);
 *     assertEquals(0, scope.bytes(CopyDirection.D2H));
 * }
 * }</pre>
 *
 * Scopes may nest and overlap; each sees every copy made while it is open (by its thread, for a thread's scope).
 * Thread-safe.
 */
public final class TransferScope implements AutoCloseable {
    private static final int N = CopyDirection.values().length;

    private final String name;
    /** The one thread whose copies count, or {@code null}: every thread's. */
    private final Thread thread;

    private final AtomicLongArray bytes = new AtomicLongArray(N);
    private final AtomicLongArray copies = new AtomicLongArray(N);
    private volatile boolean open = true;

    TransferScope(String name, Thread thread) {
        this.name = name;
        this.thread = thread;
    }

    /** Counts {@code count} copies of {@code n} bytes together made by {@code by}, if this scope counts its copies. */
    void record(Thread by, CopyDirection direction, long n, long count) {
        if (thread != null && thread != by) {
            return;
        }
        bytes.addAndGet(direction.ordinal(), n);
        copies.addAndGet(direction.ordinal(), count);
    }

    /** The scope's name, for messages. */
    public String name() {
        return name;
    }

    /** Bytes copied in {@code direction} while the scope was open. */
    public long bytes(CopyDirection direction) {
        return bytes.get(direction.ordinal());
    }

    /** Copies made in {@code direction} while the scope was open. */
    public long copies(CopyDirection direction) {
        return copies.get(direction.ordinal());
    }

    /** Everything counted so far. */
    public TransferStats stats() {
        long[] b = new long[N];
        long[] c = new long[N];
        for (int i = 0; i < N; i++) {
            b[i] = bytes.get(i);
            c[i] = copies.get(i);
        }
        return new TransferStats(b, c);
    }

    /** Whether the scope still counts. */
    public boolean isOpen() {
        return open;
    }

    /** Stops counting; the counts stay readable. Closing twice is harmless. */
    @Override
    public void close() {
        open = false;
        CopyEngine.removeScope(this);
    }

    @Override
    public String toString() {
        return "TransferScope[" + name + (thread == null ? "" : " on " + thread.getName()) + ": " + stats() + "]";
    }
}
