package io.cuwire.transport;

import io.cuwire.transport.internal.RefusalLog;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/** The lines listeners log about the peers they refuse ({@link RefusalLog}), while open. */
public final class Refusals implements AutoCloseable {
    private final Logger logger = Logger.getLogger(RefusalLog.LOGGER);
    private final List<String> lines = new ArrayList<>();
    private final Handler handler = new Handler() {
        @Override
        public void publish(LogRecord record) {
            synchronized (lines) {
                lines.add(record.getMessage());
                lines.notifyAll();
            }
        }

        @Override
        public void flush() {}

        @Override
        public void close() {}
    };

    public Refusals() {
        logger.addHandler(handler);
    }

    /** The lines logged so far. */
    public List<String> lines() {
        synchronized (lines) {
            return List.copyOf(lines);
        }
    }

    /** The lines logged so far that contain each of {@code parts}. */
    public List<String> matching(String... parts) {
        List<String> found = new ArrayList<>();
        for (String line : lines()) {
            if (Arrays.stream(parts).allMatch(line::contains)) {
                found.add(line);
            }
        }
        return found;
    }

    /**
     * Waits at most {@code timeout} for a line that contains each of {@code parts}; that line.
     *
     * @throws AssertionError if none came, listing the lines that did
     */
    public String await(Duration timeout, String... parts) throws InterruptedException {
        long end = System.nanoTime() + timeout.toNanos();
        synchronized (lines) {
            while (true) {
                for (String line : lines) {
                    if (Arrays.stream(parts).allMatch(line::contains)) {
                        return line;
                    }
                }
                long left = end - System.nanoTime();
                if (left <= 0) {
                    throw new AssertionError("no refusal logged with " + Arrays.toString(parts) + " within " + timeout
                            + "; logged: " + lines);
                }
                lines.wait(Math.max(1, left / 1_000_000));
            }
        }
    }

    @Override
    public void close() {
        logger.removeHandler(handler);
    }
}
