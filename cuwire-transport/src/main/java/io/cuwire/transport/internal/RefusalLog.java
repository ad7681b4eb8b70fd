package io.cuwire.transport.internal;

import java.lang.System.Logger.Level;

/**
 * The log of the peers one listener refused: one line each, with the peer and the reason, on the
 * {@value #LOGGER} logger at {@code WARNING}; at most {@value #LINES_PER_WINDOW} lines per
 * {@value #WINDOW_SECONDS} seconds, the refusals beyond counted and the count logged with the next line after the
 * window. Thread-safe.
 */
public final class RefusalLog {
    /** The name of the logger refusals go to. */
    public static final String LOGGER = "io.cuwire.transport.Listener";

    static final int LINES_PER_WINDOW = 20;
    static final int WINDOW_SECONDS = 10;
    private static final long WINDOW_NANOS = WINDOW_SECONDS * 1_000_000_000L;
    private static final System.Logger LOG = System.getLogger(LOGGER);

    private final String listener;
    private long windowStart = System.nanoTime();
    private int lines;
    private long unlogged;

    /** The log of {@code listener} (its address). */
    public RefusalLog(String listener) {
        this.listener = listener;
    }

    /** Logs that {@code peer} was refused because of {@code reason}, unless too many lines were logged lately. */
    public void refused(String peer, String reason) {
        long before;
        synchronized (this) {
            long now = System.nanoTime();
            before = 0;
            if (now - windowStart >= WINDOW_NANOS) {
                before = unlogged;
                unlogged = 0;
                lines = 0;
                windowStart = now;
            }
            if (lines == LINES_PER_WINDOW) {
                unlogged++;
                return;
            }
            lines++;
        }
        if (before > 0) {
            LOG.log(
                    Level.WARNING,
                    listener + ": " + before + " more refused peers were not logged (at most " + LINES_PER_WINDOW
                            + " lines per " + WINDOW_SECONDS + " s)");
        }
        LOG.log(Level.WARNING, listener + " refused " + peer + ": " + reason);
    }

    /** Logs that {@code peer} was refused because of {@code failure} (its type and message). */
    public void refused(String peer, Throwable failure) {
        refused(peer, failure.getClass().getSimpleName() + ": " + failure.getMessage());
    }
}
