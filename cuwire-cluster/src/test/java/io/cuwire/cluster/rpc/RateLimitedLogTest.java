package io.cuwire.cluster.rpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.text.MessageFormat;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.ResourceBundle;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.junit.jupiter.api.Test;

/** The refusal log: a line per event, at most a burst per window per kind, and a count of what it left out. */
class RateLimitedLogTest {
    /** A logger that keeps its lines. */
    private static final class Lines implements System.Logger {
        final List<String> lines = new ArrayList<>();

        @Override
        public String getName() {
            return "test";
        }

        @Override
        public boolean isLoggable(Level level) {
            return true;
        }

        @Override
        public void log(Level level, ResourceBundle bundle, String msg, Throwable thrown) {
            lines.add(level + " " + msg);
        }

        @Override
        public void log(Level level, ResourceBundle bundle, String format, Object... params) {
            lines.add(level + " "
                    + (params == null || params.length == 0 ? format : MessageFormat.format(format, params)));
        }

        @Override
        public void log(Level level, Supplier<String> msgSupplier) {
            lines.add(level + " " + msgSupplier.get());
        }
    }

    @Test
    void shouldWriteABurstPerWindowAndCountTheRestIntoTheNextLine() {
        Lines logger = new Lines();
        AtomicLong now = new AtomicLong();
        RateLimitedLog log = new RateLimitedLog(logger, 2, Duration.ofSeconds(10), now::get);
        assertTrue(log.log(System.Logger.Level.WARNING, "peer", "refused peer a"));
        assertTrue(log.log(System.Logger.Level.WARNING, "peer", "refused peer b"));
        assertFalse(log.log(System.Logger.Level.WARNING, "peer", "refused peer c"));
        assertFalse(log.log(System.Logger.Level.WARNING, "peer", "refused peer d"));
        assertTrue(log.log(System.Logger.Level.WARNING, "connection", "refused a connection"), "another kind");
        now.addAndGet(Duration.ofSeconds(10).toNanos());
        assertTrue(log.log(System.Logger.Level.WARNING, "peer", "refused peer e"));
        assertEquals(
                List.of(
                        "WARNING refused peer a",
                        "WARNING refused peer b",
                        "WARNING refused a connection",
                        "WARNING refused peer e (and 2 more of this kind not logged, at most 2 per PT10S)"),
                logger.lines);
    }

    @Test
    void shouldSayOnFlushHowManyLinesItLeftOut() {
        Lines logger = new Lines();
        RateLimitedLog log = new RateLimitedLog(logger, 1, Duration.ofSeconds(10), () -> 0);
        log.log(System.Logger.Level.WARNING, "peer", "one");
        log.log(System.Logger.Level.WARNING, "peer", "two");
        log.log(System.Logger.Level.WARNING, "peer", "three");
        log.flush();
        log.flush();
        assertEquals(
                List.of("WARNING one", "WARNING 2 more of kind 'peer' not logged (at most 1 per PT10S)"), logger.lines);
    }
}
