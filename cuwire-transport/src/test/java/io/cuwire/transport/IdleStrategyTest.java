package io.cuwire.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class IdleStrategyTest {
    @Test
    void shouldSpinOnlyWithCoresToSpareUnlessThePropertySays() {
        assertEquals(0, IdleStrategy.defaultSpinNanos(null, 2));
        assertEquals(30_000, IdleStrategy.defaultSpinNanos(null, 4));
        assertEquals(100_000, IdleStrategy.defaultSpinNanos(null, 32));
        assertEquals(0, IdleStrategy.defaultSpinNanos("0", 32));
        assertEquals(250_000, IdleStrategy.defaultSpinNanos(" 250 ", 2));
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> IdleStrategy.defaultSpinNanos("-1", 8));
        assertEquals(IdleStrategy.SPIN_PROPERTY + "=-1 (expected: microseconds, >= 0)", e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> IdleStrategy.defaultSpinNanos("fast", 8));
    }

    @Test
    void shouldTakeTheDefaultOfEveryConfigurationFromThePropertyAndTheCores() {
        // The module's build sets spinMicros=20, the GPU bundle's test launcher sets nothing (so 100 µs on a GPU
        // host's many cores).
        long expected = IdleStrategy.defaultSpinNanos(
                System.getProperty(IdleStrategy.SPIN_PROPERTY),
                Runtime.getRuntime().availableProcessors());
        assertEquals(
                expected,
                TransportConfig.builder()
                        .allowUnauthenticated(true)
                        .receiveInto(d -> null)
                        .build()
                        .idle()
                        .spinNanos());
    }

    @Test
    void shouldKeepTheStrategyOfEachConfigurationApart() {
        TransportConfig.Builder b =
                TransportConfig.builder().allowUnauthenticated(true).receiveInto(d -> null);
        TransportConfig spinning =
                b.idle(IdleStrategy.spinFor(Duration.ofMillis(1))).build();
        TransportConfig still = b.idle(IdleStrategy.spinFor(Duration.ZERO)).build();
        assertEquals(1_000_000, spinning.idle().spinNanos());
        assertEquals(0, still.idle().spinNanos());
        assertEquals(1_000_000, spinning.toBuilder().build().idle().spinNanos(), "toBuilder keeps it");
        assertNotSame(spinning.idle(), still.idle());
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> IdleStrategy.spinFor(Duration.ofNanos(-1)));
        assertEquals("spin: PT-0.000000001S (expected: >= 0)", e.getMessage());
    }

    @Test
    void shouldKeepSpinningPastTheSpinOnlyWhileBusyAndNeverPastTheBusyLimit() {
        IdleStrategy s = IdleStrategy.spinFor(Duration.ofNanos(20_000));
        assertTrue(s.keepSpinning(0, () -> false));
        assertFalse(s.keepSpinning(s.spinNanos(), () -> false));
        assertTrue(s.keepSpinning(s.spinNanos(), () -> true));
        assertFalse(s.keepSpinning(IdleStrategy.BUSY_MAX_NANOS, () -> true));
        assertEquals(10 * s.spinNanos(), s.replyNanos());
        IdleStrategy none = IdleStrategy.spinFor(Duration.ZERO);
        assertFalse(none.keepSpinning(0, () -> true), "no spin at all when it is off");
        assertEquals(0, none.replyNanos());
    }

    @Test
    void shouldParkFromAMicrosecondDoublingUpToTheBoundOnceTheSpinIsOver() {
        IdleStrategy.Backoff b = IdleStrategy.spinFor(Duration.ZERO).backoff();
        assertEquals(1_000, b.idle(5_000));
        assertEquals(2_000, b.idle(5_000));
        assertEquals(4_000, b.idle(5_000));
        assertEquals(5_000, b.idle(5_000));
        assertEquals(5_000, b.idle(5_000));
        b.worked();
        assertEquals(1_000, b.idle(5_000), "work starts the back-off over");
        IdleStrategy.Backoff spinning =
                IdleStrategy.spinFor(Duration.ofSeconds(30)).backoff();
        assertEquals(0, spinning.idle(5_000), "within the spin it spins");
    }

    @Test
    void shouldHandTheParkBoundToAWaiterInsteadOfParking() {
        List<Long> bounds = new ArrayList<>();
        IdleStrategy.Backoff b = IdleStrategy.spinFor(Duration.ZERO).backoff();
        assertEquals(1_000, b.idle(3_000, bounds::add));
        assertEquals(2_000, b.idle(3_000, bounds::add));
        assertEquals(3_000, b.idle(3_000, bounds::add));
        assertEquals(List.of(1_000L, 2_000L, 3_000L), bounds);
        IdleStrategy.Backoff spinning =
                IdleStrategy.spinFor(Duration.ofSeconds(30)).backoff();
        assertEquals(0, spinning.idle(3_000, bounds::add));
        assertEquals(3, bounds.size(), "within the spin the waiter is not asked");
    }

    @Test
    void shouldReturnAFuturesValueWhetherItSpinsOrNot() {
        assertEquals(
                "done",
                IdleStrategy.spinFor(Duration.ofNanos(20_000)).await(CompletableFuture.completedFuture("done")));
        CompletableFuture<String> later = CompletableFuture.supplyAsync(() -> "later");
        assertEquals("later", IdleStrategy.spinFor(Duration.ZERO).await(later));
    }

    @Test
    void shouldSpinUntilDoneOrTheBoundAndNeverWhereItDoesNotSpin() {
        AtomicInteger asked = new AtomicInteger();
        assertFalse(IdleStrategy.spinFor(Duration.ZERO).spinUntil(() -> asked.incrementAndGet() > 1_000_000));
        assertEquals(1, asked.get(), "a strategy that never spins asks once");
        IdleStrategy s = IdleStrategy.spinFor(Duration.ofMillis(5));
        long t0 = System.nanoTime();
        assertFalse(s.spinUntil(1_000, () -> false));
        assertFalse(s.spinUntil(() -> false));
        assertTrue(System.nanoTime() - t0 >= 5_000_000, "the plain spin is spun out");
        asked.set(0);
        assertTrue(s.spinUntil(() -> asked.incrementAndGet() == 3));
        assertEquals(3, asked.get());
        assertFalse(
                IdleStrategy.spinFor(Duration.ofNanos(100)).spinUntil(60_000_000_000L, () -> false),
                "a longer bound than the spin is cut to the spin");
    }
}
