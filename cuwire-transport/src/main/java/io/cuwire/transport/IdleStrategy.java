package io.cuwire.transport;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.LongConsumer;

/**
 * How a transport's threads wait: they spin for a while, then park. Every receive loop and the UCX progress agent
 * wait this way, each with the strategy of its own {@link TransportConfig} ({@link TransportConfig#idle()}), so two
 * connections of one process may spin differently. Immutable; thread-safe.
 *
 * <p>A message or bytes that come within the spin skip a thread wake-up (tens of microseconds), which is most of a
 * small message's latency. Spinning needs cores to spare: on 2 cores the spinner competes with the sender, the JIT
 * and the GC (an in-process 1-message ping-pong turned bimodal, 4 or 70 µs, against 10 µs without; an IPC one took
 * 100 µs with a 30 µs spin and 43 µs without). So the default ({@link #fromProperty()}) is 100 µs with 8 or more
 * cores, 30 µs with 4 to 7, none with fewer, unless the system property {@value #SPIN_PROPERTY} says otherwise.
 *
 * <p>A socket transport in the middle of moving a message (the socket full under a write, a frame's next bytes not in
 * yet) retries for the same spin before it parks in {@code select}. Measured on the 2-core VM with a 512 MiB frame
 * over loopback TCP, a 50 µs retry there did not pay: the receiver waited for the slower sender about 330 times per
 * transfer either way (only 7 % fewer parks), and the retries cost it 8,500 reads per transfer of the CPU the sender
 * needed.
 *
 * <p>Where a transport knows that a message or reply is on its way — the peer is copying a message of this side out
 * of its memory, or this side is copying one in — a thread that spins at all goes on spinning while that lasts, up
 * to {@value #BUSY_MAX_NANOS} ns, and for {@link #replyNanos()} after the peer consumed one of this side's messages
 * (a reply often follows), so that a large message's end is not followed by a chain of thread wake-ups (on an H200
 * host a 1 GiB IPC message took 0.3 ms longer than its peer copy, with three such wake-ups on its path).
 *
 * <p>A thread with nothing to wait on but its own work (the UCX agent) spins for the same time after its last work,
 * then parks from 1 µs, doubling up to a bound it names ({@link Backoff}).
 */
public final class IdleStrategy {
    /** System property: the default spin, in microseconds (0: never spin). */
    public static final String SPIN_PROPERTY = "cuwire.transport.spinMicros";
    /** The longest a thread spins while a transfer it waits for is known to be in progress, in nanoseconds. */
    public static final long BUSY_MAX_NANOS = 50_000_000;
    /** A {@link Backoff}'s first park, in nanoseconds. */
    static final long MIN_PARK_NANOS = 1_000;

    private final long spinNanos;

    private IdleStrategy(long spinNanos) {
        this.spinNanos = spinNanos;
    }

    /**
     * Spins for {@code spin} ({@link Duration#ZERO}: never), then parks.
     *
     * @throws IllegalArgumentException if {@code spin} is negative or {@code null}
     */
    public static IdleStrategy spinFor(Duration spin) {
        if (spin == null || spin.isNegative()) {
            throw new IllegalArgumentException("spin: " + spin + " (expected: >= 0)");
        }
        return new IdleStrategy(spin.toNanos());
    }

    /**
     * The default: the spin the system property {@value #SPIN_PROPERTY} sets in microseconds, else one by the cores
     * of this machine (above).
     *
     * @throws IllegalArgumentException if the property is set to something other than microseconds {@code >= 0}
     */
    public static IdleStrategy fromProperty() {
        return new IdleStrategy(defaultSpinNanos(
                System.getProperty(SPIN_PROPERTY), Runtime.getRuntime().availableProcessors()));
    }

    /** The spin in nanoseconds for the property's value (or {@code null}) on a machine of {@code cores} cores. */
    static long defaultSpinNanos(String property, int cores) {
        if (property != null && !property.isBlank()) {
            long micros;
            try {
                micros = Long.parseLong(property.strip());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(
                        SPIN_PROPERTY + "=" + property + " (expected: microseconds, >= 0)", e);
            }
            if (micros < 0) {
                throw new IllegalArgumentException(SPIN_PROPERTY + "=" + property + " (expected: microseconds, >= 0)");
            }
            return micros * 1000;
        }
        return cores >= 8 ? 100_000 : cores >= 4 ? 30_000 : 0;
    }

    /** The spin. */
    public Duration spin() {
        return Duration.ofNanos(spinNanos);
    }

    /** The spin, in nanoseconds; 0 when this strategy never spins. */
    public long spinNanos() {
        return spinNanos;
    }

    /**
     * How long after the peer consumed a message of this side its receiving threads go on spinning for a reply:
     * 10 × the spin (0 when spinning is off).
     */
    public long replyNanos() {
        return 10 * spinNanos;
    }

    /**
     * Whether a thread that has spun {@code spunNanos} for something goes on spinning: within the spin, or, while
     * {@code busy} says a transfer it waits for is in progress, within {@value #BUSY_MAX_NANOS} ns. Never when
     * spinning is off. {@code busy} is asked only past the plain spin.
     */
    public boolean keepSpinning(long spunNanos, BooleanSupplier busy) {
        return spinNanos > 0 && (spunNanos < spinNanos || spunNanos < BUSY_MAX_NANOS && busy.getAsBoolean());
    }

    /**
     * Waits for {@code future} and returns its value as {@link CompletableFuture#join()} does, spinning on it first
     * for up to {@value #BUSY_MAX_NANOS} ns where this strategy spins at all: for a caller that waits for a transfer
     * in progress, such as a broadcast's acknowledgement, which then skips a thread wake-up.
     */
    public <T> T await(CompletableFuture<T> future) {
        if (spinNanos > 0 && !future.isDone()) {
            long start = System.nanoTime();
            while (!future.isDone() && System.nanoTime() - start < BUSY_MAX_NANOS) {
                Thread.onSpinWait();
            }
        }
        return future.join();
    }

    /**
     * Spins until {@code done} says so or this strategy's plain spin is over (at once where it never spins).
     *
     * @return whether {@code done} said so
     */
    public boolean spinUntil(BooleanSupplier done) {
        return spinUntil(spinNanos, done);
    }

    /**
     * Spins until {@code done} says so or {@code nanos} (at most this strategy's plain spin) have passed; at once
     * where it never spins.
     *
     * @return whether {@code done} said so
     */
    public boolean spinUntil(long nanos, BooleanSupplier done) {
        if (done.getAsBoolean()) {
            return true;
        }
        long bound = Math.min(nanos, spinNanos);
        if (bound > 0) {
            long start = System.nanoTime();
            while (System.nanoTime() - start < bound) {
                Thread.onSpinWait();
                if (done.getAsBoolean()) {
                    return true;
                }
            }
        }
        return false;
    }

    /** The back-off of one thread that polls for work. */
    public Backoff backoff() {
        return new Backoff();
    }

    @Override
    public String toString() {
        return "IdleStrategy[spin " + spin() + ", then park]";
    }

    /**
     * One polling thread's back-off: after its last work it spins for the strategy's spin, then parks, from 1 µs and
     * doubling up to the bound each {@link #idle} names. Not thread-safe: one per thread.
     */
    public final class Backoff {
        private long idleSince;
        private boolean idle;
        private long parkNanos = MIN_PARK_NANOS;

        private Backoff() {}

        /** The thread did work: the next idle spell starts over with spinning. */
        public void worked() {
            idle = false;
            parkNanos = MIN_PARK_NANOS;
        }

        /**
         * The thread found no work: spins once while within the spin of its last work, else parks, at most
         * {@code maxParkNanos} (an unpark wakes it early).
         *
         * @return the nanoseconds it parked for, 0 if it spun
         */
        public long idle(long maxParkNanos) {
            return idle(maxParkNanos, LockSupport::parkNanos);
        }

        /**
         * As {@link #idle(long)}, but where it would park it has {@code waiter} wait instead, given the bound in
         * nanoseconds: for a thread that can wait on something that wakes it when work comes (the UCX agent waits on
         * its worker's event descriptor), the back-off then only bounds the wait. {@code waiter} may return early.
         *
         * @return the bound {@code waiter} was given, 0 if it spun
         */
        public long idle(long maxParkNanos, LongConsumer waiter) {
            long now = System.nanoTime();
            if (!idle) {
                idle = true;
                idleSince = now;
            }
            if (now - idleSince < spinNanos) {
                Thread.onSpinWait();
                return 0;
            }
            long park = Math.min(parkNanos, maxParkNanos);
            waiter.accept(park);
            parkNanos = Math.min(maxParkNanos, parkNanos * 2);
            return park;
        }
    }
}
