package io.cuwire.transport;

import java.util.concurrent.CompletableFuture;
import java.util.function.BooleanSupplier;

/**
 * How long a transport's threads spin for a message or for bytes before they block: one that comes within the spin
 * skips a thread wake-up (tens of microseconds), which is most of a small message's latency. Spinning needs cores to
 * spare: on 2 cores the spinner competes with the sender, the JIT and the GC (an in-process 1-message ping-pong
 * turned bimodal, 4 or 70 µs, against 10 µs without; an IPC one took 100 µs with a 30 µs spin and 43 µs without).
 *
 * <p>The system property {@value #PROPERTY} sets it in microseconds (0: never spin); by default 100 µs with 8 or
 * more cores, 30 µs with 4 to 7, none with fewer.
 *
 * <p>A socket transport in the middle of moving a message (the socket full under a write, a frame's next bytes not in
 * yet) retries for the same {@link #NANOS} before it parks in {@code select}. Measured on the 2-core VM with a 512 MiB
 * frame over loopback TCP, a 50 µs retry there did not pay: the receiver waited for the slower sender about 330 times
 * per transfer either way (only 7 % fewer parks), and the retries cost it 8,500 reads per transfer of the CPU the
 * sender needed.
 *
 * <p>Where a transport knows that a message or reply is on its way — the peer is copying a message of this side out
 * of its memory, or this side is copying one in — a thread that spins at all goes on spinning while that lasts, up
 * to {@value #BUSY_MAX_NANOS} ns, and for {@link #REPLY_NANOS} after the peer consumed one of this side's messages
 * (a reply often follows), so that a large message's end is not followed by a chain of thread wake-ups (on an
 * H200 host a 1 GiB IPC message took 0.3 ms longer than its peer copy, with three such wake-ups on its path).
 */
public final class Spin {
    /** System property: the spin, in microseconds. */
    public static final String PROPERTY = "cuwire.transport.spinMicros";
    /** The longest a thread spins while a transfer it waits for is known to be in progress, in nanoseconds. */
    public static final long BUSY_MAX_NANOS = 50_000_000;
    /** The spin of this process, in nanoseconds. */
    public static final long NANOS = nanos(System.getProperty(PROPERTY), Runtime.getRuntime().availableProcessors());
    /**
     * How long after the peer consumed a message of this side its receiving threads go on spinning for a reply:
     * 10 × {@link #NANOS} (0 when spinning is off).
     */
    public static final long REPLY_NANOS = 10 * NANOS;

    private Spin() {
    }

    /**
     * Waits for {@code future} and returns its value as {@link CompletableFuture#join()} does, spinning on it first
     * for up to {@value #BUSY_MAX_NANOS} ns where spinning is on ({@link #NANOS} above 0): for a caller that waits for
     * a transfer in progress, such as a broadcast's acknowledgement, which then skips a thread wake-up.
     */
    public static <T> T await(CompletableFuture<T> future) {
        if (NANOS > 0 && !future.isDone()) {
            long start = System.nanoTime();
            while (!future.isDone() && System.nanoTime() - start < BUSY_MAX_NANOS) {
                Thread.onSpinWait();
            }
        }
        return future.join();
    }

    /**
     * Whether a thread that has spun {@code spunNanos} for something goes on spinning: within {@link #NANOS}, or,
     * while {@code busy} says a transfer it waits for is in progress, within {@link #BUSY_MAX_NANOS}. Never when
     * spinning is off. {@code busy} is asked only past the plain spin.
     */
    public static boolean keepSpinning(long spunNanos, BooleanSupplier busy) {
        return NANOS > 0 && (spunNanos < NANOS || spunNanos < BUSY_MAX_NANOS && busy.getAsBoolean());
    }

    /** The spin in nanoseconds for the property's value (or {@code null}) on a machine of {@code cores} cores. */
    static long nanos(String property, int cores) {
        if (property != null && !property.isBlank()) {
            long micros;
            try {
                micros = Long.parseLong(property.strip());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(PROPERTY + "=" + property + " (expected: microseconds, >= 0)", e);
            }
            if (micros < 0) {
                throw new IllegalArgumentException(PROPERTY + "=" + property + " (expected: microseconds, >= 0)");
            }
            return micros * 1000;
        }
        return cores >= 8 ? 100_000 : cores >= 4 ? 30_000 : 0;
    }
}
