package io.cuwire.ml.internal;

import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.ForkJoinTask;
import java.util.concurrent.ForkJoinWorkerThread;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntConsumer;
import java.util.stream.IntStream;

/**
 * The CPU backend's threads: runs the chunks of one operation in parallel.
 *
 * <p>How many threads: called from a fork-join worker thread (a Spark task's pool of {@code spark.task.cpus}
 * threads, a caller's own pool), the chunks run in that thread's pool, at its parallelism; from any other thread,
 * in the backend's own pool of {@link #threads()} daemon threads: the {@value #THREADS_PROPERTY} system property
 * when set, else {@link Runtime#availableProcessors()}, or what {@link #setThreads} set last.
 *
 * <p>Results do not depend on the threads: every operation splits its work into chunks by its shape only, each chunk
 * writes its own output (or its own partial sum, which the operation adds up in chunk order afterwards).
 */
public final class CpuParallel {
    /** The system property that sets the threads of the backend's own pool. */
    public static final String THREADS_PROPERTY = "cuwire.ml.cpuThreads";

    private static final AtomicInteger THREAD_IDS = new AtomicInteger();
    private static volatile int threads = fromProperty();
    private static ForkJoinPool pool;

    private CpuParallel() {}

    private static int fromProperty() {
        String v = System.getProperty(THREADS_PROPERTY);
        if (v == null || v.isBlank()) {
            return Runtime.getRuntime().availableProcessors();
        }
        try {
            int n = Integer.parseInt(v.strip());
            if (n >= 1) {
                return n;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new IllegalArgumentException("-D" + THREADS_PROPERTY + "=" + v + " (expected: an integer >= 1)");
    }

    /** The threads of the backend's own pool (the chunks of a call from a fork-join worker run in its pool). */
    public static int threads() {
        return threads;
    }

    /**
     * Sets the threads of the backend's own pool, for the calls that start after this one.
     *
     * @throws IllegalArgumentException if {@code n < 1}
     */
    public static synchronized void setThreads(int n) {
        if (n < 1) {
            throw new IllegalArgumentException("CPU backend threads: " + n + " (expected: >= 1)");
        }
        if (n != threads && pool != null) {
            pool.shutdown();
            pool = null;
        }
        threads = n;
    }

    private static synchronized ForkJoinPool pool() {
        if (pool == null) {
            int n = threads;
            pool = new ForkJoinPool(
                    n,
                    p -> {
                        ForkJoinWorkerThread t = ForkJoinPool.defaultForkJoinWorkerThreadFactory.newThread(p);
                        t.setName("cuwire-cpu-" + THREAD_IDS.incrementAndGet());
                        t.setDaemon(true);
                        return t;
                    },
                    null,
                    false);
        }
        return pool;
    }

    /** The chunks of {@code count} items taken {@code perChunk} at a time. */
    static int chunks(long count, long perChunk) {
        return Math.toIntExact((count + perChunk - 1) / perChunk);
    }

    /** Runs {@code body} for every chunk in {@code [0, chunks)}, in parallel where there is more than one. */
    static void forEach(int chunks, IntConsumer body) {
        boolean inPool = Thread.currentThread() instanceof ForkJoinWorkerThread;
        if (chunks <= 1 || (!inPool && threads == 1)) {
            for (int c = 0; c < chunks; c++) {
                body.accept(c);
            }
            return;
        }
        Runnable all = () -> IntStream.range(0, chunks).parallel().forEach(body);
        if (inPool) {
            all.run();
        } else {
            pool().invoke(ForkJoinTask.adapt(all));
        }
    }
}
