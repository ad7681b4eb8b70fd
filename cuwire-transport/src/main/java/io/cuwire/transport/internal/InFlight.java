package io.cuwire.transport.internal;

/**
 * The bytes a connection has in flight, bounded: {@link #acquire} blocks while a message would pass the bound
 * (one larger than the bound passes when nothing else is in flight). Thread-safe.
 */
public final class InFlight {
    private final long max;
    private long used;
    private boolean closed;

    public InFlight(long max) {
        this.max = max;
    }

    /**
     * Waits until {@code bytes} fit, then counts them.
     *
     * @return {@code false} if the budget was closed meanwhile (nothing counted)
     */
    public synchronized boolean acquire(long bytes) throws InterruptedException {
        while (!closed && used > 0 && used + bytes > max) {
            wait();
        }
        if (closed) {
            return false;
        }
        used += bytes;
        return true;
    }

    /** Gives back {@code bytes} counted by {@link #acquire}. */
    public synchronized void release(long bytes) {
        used -= bytes;
        notifyAll();
    }

    /** Wakes and refuses every waiter from now on. */
    public synchronized void close() {
        closed = true;
        notifyAll();
    }

    /** Bytes counted now. */
    public synchronized long used() {
        return used;
    }
}
