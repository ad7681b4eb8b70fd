package io.cuwire.cluster.rpc;

import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

/**
 * A log of events that a peer can cause at will (refused connections, refused messages): each event is one line, at
 * most {@code burst} lines of one kind per {@code window}. Past that, lines of the kind are counted instead of
 * written, and the next line of the kind that is written — or {@link #flush()} — says how many were left out, so no
 * event goes unmentioned and a flood of them costs a few lines. Thread-safe.
 */
public final class RateLimitedLog {
    private final System.Logger logger;
    private final int burst;
    private final long windowNanos;
    private final Duration window;
    private final LongSupplier nanoClock;
    private final Map<String, Kind> kinds = new ConcurrentHashMap<>();

    /** One kind's window: when it began, lines written in it, lines left out since the last line written. */
    private static final class Kind {
        long start;
        int written;
        long leftOut;
        System.Logger.Level level;
    }

    /** Writes to {@code logger} at most {@code burst} lines of a kind per {@code window}. */
    public RateLimitedLog(System.Logger logger, int burst, Duration window) {
        this(logger, burst, window, System::nanoTime);
    }

    /** As above, with {@code nanoClock} for {@link System#nanoTime()} (for tests). */
    RateLimitedLog(System.Logger logger, int burst, Duration window, LongSupplier nanoClock) {
        if (burst < 1 || window.isNegative() || window.isZero()) {
            throw new IllegalArgumentException("burst: " + burst + ", window: " + window + " (expected: >= 1, > 0)");
        }
        this.logger = Objects.requireNonNull(logger, "logger");
        this.burst = burst;
        this.window = window;
        this.windowNanos = window.toNanos();
        this.nanoClock = nanoClock;
    }

    /**
     * Logs {@code message} as a line of {@code kind} at {@code level}, unless the kind's lines of this window are
     * written already; then counts it.
     *
     * @return whether the line was written
     */
    public boolean log(System.Logger.Level level, String kind, String message) {
        long leftOut;
        Kind k = kinds.computeIfAbsent(kind, x -> new Kind());
        synchronized (k) {
            long now = nanoClock.getAsLong();
            if (k.written == 0 || now - k.start >= windowNanos) {
                k.start = now;
                k.written = 0;
            }
            if (k.written >= burst) {
                k.leftOut++;
                k.level = level;
                return false;
            }
            k.written++;
            leftOut = k.leftOut;
            k.leftOut = 0;
        }
        logger.log(
                level,
                leftOut == 0
                        ? message
                        : message + " (and " + leftOut + " more of this kind not logged, at most " + burst + " per "
                                + window + ")");
        return true;
    }

    /** Writes, per kind, how many lines were left out since its last line written, if any. */
    public void flush() {
        for (Map.Entry<String, Kind> e : kinds.entrySet()) {
            long leftOut;
            System.Logger.Level level;
            Kind k = e.getValue();
            synchronized (k) {
                leftOut = k.leftOut;
                level = k.level;
                k.leftOut = 0;
            }
            if (leftOut > 0) {
                logger.log(
                        level,
                        leftOut + " more of kind '" + e.getKey() + "' not logged (at most " + burst + " per " + window
                                + ")");
            }
        }
    }
}
