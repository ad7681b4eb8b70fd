package io.cuwire.transport.internal;

import io.cuwire.transport.ConnectionClosedException;
import io.cuwire.transport.FamilyRefusedException;
import io.cuwire.transport.IdleStrategy;
import io.cuwire.transport.MessageRefusedException;
import io.cuwire.transport.PeerClosedException;
import io.cuwire.transport.ProtocolViolationException;
import io.cuwire.transport.TransportException;
import io.cuwire.transport.TransportTimeoutException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;

/**
 * The open, closed or broken state of one connection, its bytes in flight, and the failure policy the socket-based
 * transports (tcp, ipc, ucx) share, as {@link io.cuwire.transport.Connection}'s javadoc describes it: the first
 * failure breaks the connection and is kept; every later use gets a copy of it (same type, its own stack, the
 * connection named in the message); a local {@link #close} is not a failure and makes uses throw
 * {@link ConnectionClosedException}. Thread-safe.
 */
public final class ConnectionState {
    /** How long {@code close} waits for a transport thread or lock before it gives up on it. */
    private static final long CLOSE_WAIT_SECONDS = 10;

    private final String name;
    private final String peer;
    private final InFlight inFlight;
    private final IdleStrategy idle;
    private volatile TransportException failure;
    private volatile boolean closed;

    /**
     * @param name the connection's name, e.g. {@code tcp-3-client}
     * @param peer the peer's address as messages show it
     * @param maxBytesInFlight the bound of {@link #acquire}
     * @param idle how the connection's threads wait, and a caller waiting for one of its sends
     *     ({@link PendingSend#future})
     */
    public ConnectionState(String name, String peer, long maxBytesInFlight, IdleStrategy idle) {
        this.name = name;
        this.peer = peer;
        this.inFlight = new InFlight(maxBytesInFlight);
        this.idle = idle;
    }

    /** How the connection's threads wait. */
    public IdleStrategy idle() {
        return idle;
    }

    /** Whether the connection was closed, locally or by a failure. */
    public boolean isClosed() {
        return closed;
    }

    /** The failure that broke the connection, or {@code null}. */
    public TransportException failure() {
        return failure;
    }

    /** Throws (a copy of) the failure, or {@link ConnectionClosedException} if closed; returns if usable. */
    public void checkUsable() {
        TransportException f = failure;
        if (f != null) {
            throw copyOf(f);
        }
        if (closed) {
            throw closedError();
        }
    }

    /** What a use of the closed connection gets: a copy of the failure, else a {@link ConnectionClosedException}. */
    public TransportException closedError() {
        TransportException f = failure;
        return f != null ? copyOf(f) : new ConnectionClosedException(name + " to " + peer + " is closed");
    }

    /** A new exception of the same type as {@code f}, so each caller gets its own stack. */
    public TransportException copyOf(TransportException f) {
        String msg = name + " to " + peer + " is broken: " + f.getMessage();
        return switch (f) {
            case PeerClosedException _ -> new PeerClosedException(msg, f);
            case TransportTimeoutException _ -> new TransportTimeoutException(msg, f);
            case FamilyRefusedException r -> new FamilyRefusedException(msg, r);
            case ProtocolViolationException _ -> new ProtocolViolationException(msg, f);
            case ConnectionClosedException _ -> new ConnectionClosedException(msg, f);
            case MessageRefusedException r -> new MessageRefusedException(msg, r.reason(), f);
            default -> new TransportException(msg, f);
        };
    }

    /** {@link #translate(Throwable, String, Function)} without transport-specific failures. */
    public TransportException translate(Throwable e, String what) {
        return translate(e, what, x -> null);
    }

    /**
     * The typed exception for {@code e}, thrown while {@code what} ({@code "sending to"}, {@code "receiving from"})
     * the peer: a transport exception stays itself (but a {@link ConnectionClosedException} caused by a failure
     * becomes a copy of the failure); anything else on a broken or closed connection becomes {@link #closedError};
     * else {@code specific}'s answer if not {@code null}, else a {@link TransportException} that names the peer.
     */
    public TransportException translate(Throwable e, String what, Function<Throwable, TransportException> specific) {
        TransportException f = failure;
        if (e instanceof TransportException t) {
            if (f != null && t instanceof ConnectionClosedException) {
                return copyOf(f);
            }
            return t;
        }
        if (f != null) {
            return copyOf(f);
        }
        if (closed) {
            return closedError();
        }
        TransportException s = specific.apply(e);
        return s != null ? s : new TransportException(what + " " + peer + " failed: " + e, e);
    }

    /**
     * Marks the connection closed because of {@code cause} (a local close when it is a
     * {@link ConnectionClosedException}, else the failure kept from now on) and refuses senders waiting for room.
     *
     * @return whether this call closed it ({@code false}: it was closed already and nothing changed)
     */
    public boolean close(TransportException cause) {
        synchronized (this) {
            if (closed) {
                return false;
            }
            if (!(cause instanceof ConnectionClosedException)) {
                failure = cause;
            }
            closed = true;
        }
        inFlight.close();
        return true;
    }

    /**
     * Counts a message of {@code bytes} in flight, waiting while the bound would be passed.
     *
     * @throws TransportException the failure, or {@link ConnectionClosedException} if closed meanwhile, or if
     *     interrupted
     */
    public void acquire(long bytes) {
        try {
            if (!inFlight.acquire(bytes)) {
                checkUsable();
                throw new ConnectionClosedException(name + " closed while sending");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new TransportException("interrupted while waiting to send on " + name, e);
        }
    }

    /** Gives back {@code bytes} counted by {@link #acquire}. */
    public void release(long bytes) {
        inFlight.release(bytes);
    }

    /** Bytes in flight now. */
    public long bytesInFlight() {
        return inFlight.used();
    }

    /** Waits a while for {@code thread} to end, unless it is this thread; keeps an interrupt. */
    public static void awaitEnd(Thread thread) {
        if (Thread.currentThread() != thread) {
            try {
                thread.join(TimeUnit.SECONDS.toMillis(CLOSE_WAIT_SECONDS));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /**
     * Runs {@code action} under {@code lock} if the lock comes within a while, else skips it; keeps an interrupt.
     *
     * @return whether it ran
     */
    public static boolean runLocked(ReentrantLock lock, Runnable action) {
        boolean locked = false;
        try {
            locked = lock.tryLock(CLOSE_WAIT_SECONDS, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (!locked) {
            return false;
        }
        try {
            action.run();
        } finally {
            lock.unlock();
        }
        return true;
    }
}
