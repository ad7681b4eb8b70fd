package io.cuwire.cluster.runtime;

import io.cuwire.cluster.rpc.RateLimitedLog;
import io.cuwire.transport.Connection;
import io.cuwire.transport.ConnectionClosedException;
import io.cuwire.transport.PeerClosedException;
import io.cuwire.transport.ProtocolViolationException;
import java.time.Duration;
import java.util.concurrent.CompletionException;

/**
 * What a node (the cluster worker, the Spark executor's endpoint) logs of the peers that connect to it: connections
 * it refused before they were a peer's, and peers whose connections broke otherwise than by closing — refused
 * ({@link ProtocolViolationException}: it broke the protocol) or lost. Each at {@code WARNING}, one line naming the
 * node, the connection, the peer's pid and the reason, at most 10 lines of a kind per 10 seconds
 * ({@link RateLimitedLog}): a peer can cause these at will. Thread-safe.
 */
public final class PeerLog {
    private final String node;
    private final RateLimitedLog log;

    /**
     * A log that writes to {@code logger}, each line starting with {@code node} (such as {@code "cuwire worker 0"}).
     */
    public PeerLog(System.Logger logger, String node) {
        this.node = node;
        this.log = new RateLimitedLog(logger, 10, Duration.ofSeconds(10));
    }

    /** A connection refused before it was a peer's (its handshake failed, say): {@code cause} says why. */
    public void connectionRefused(Throwable cause) {
        log.log(
                System.Logger.Level.WARNING,
                "connection",
                node + ": refused a connection: " + unwrap(cause).getMessage());
    }

    /** A peer's request refused: {@code why} names the peer and the reason. */
    public void requestRefused(String why) {
        log.log(System.Logger.Level.WARNING, "peer", node + ": " + why);
    }

    /**
     * A peer's connection {@code c} broke with {@code cause}: logged as a refused peer when it broke the protocol, as
     * a lost one otherwise, and not at all when it simply closed (either side).
     */
    public void peerBroken(Connection c, Throwable cause) {
        Throwable t = unwrap(cause);
        if (t instanceof PeerClosedException || t instanceof ConnectionClosedException) {
            return;
        }
        String what = t instanceof ProtocolViolationException ? "refused peer " : "lost peer ";
        log.log(
                System.Logger.Level.WARNING,
                "peer",
                node + ": " + what + c + " (pid " + c.peer().pid() + "): " + describe(t));
    }

    /** Writes how many lines of each kind were left out, if any (before the node stops). */
    public void flush() {
        log.flush();
    }

    /** The cause a {@link CompletionException} wraps, else {@code e}. */
    public static Throwable unwrap(Throwable e) {
        return e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
    }

    /** {@code SimpleName: message} of {@code t}, unwrapped. */
    public static String describe(Throwable t) {
        Throwable e = unwrap(t);
        return e.getClass().getSimpleName() + ": " + e.getMessage();
    }
}
