package io.cuwire.ml.internal;

import io.cuwire.ml.ComputeBackends;
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
 * in the backend's own pool of {@link ComputeBackends#cpuThreads()} daemon threads (the setting lives with the public
 * API; the pool is made again when it changes).
 *
 * <p>Results do not depend on the threads: every operation splits its work into chunks by its shape only, each chunk
 * writes its own output (or its own partial sum, which the operation adds up in chunk order afterwards).
 */
final class CpuParallel {
    private static final AtomicInteger THREAD_IDS = new AtomicInteger();
    private static ForkJoinPool pool;

    private CpuParallel() {}

    /** The backend's own pool, of the threads {@link ComputeBackends#cpuThreads()} says now. */
    private static synchronized ForkJoinPool pool() {
        int n = ComputeBackends.cpuThreads();
        if (pool != null && pool.getParallelism() != n) {
            pool.shutdown();
            pool = null;
        }
        if (pool == null) {
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
        if (chunks <= 1 || (!inPool && ComputeBackends.cpuThreads() == 1)) {
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
