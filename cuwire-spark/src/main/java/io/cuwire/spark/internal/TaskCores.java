package io.cuwire.spark.internal;

import java.util.concurrent.ExecutionException;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.ForkJoinWorkerThread;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.apache.spark.TaskContext;

/**
 * A Spark task's CPU work on the cores Spark gave the task ({@code spark.task.cpus}), not the machine's: the CPU
 * backend runs large products as parallel streams, which would otherwise fill the JVM's common fork-join pool (as
 * many threads as the machine has cores, shared by every task of the executor). {@link #run} runs the work in a
 * fork-join pool of the task's own parallelism, where the streams it starts stay.
 */
public final class TaskCores {
    private static final AtomicInteger THREADS = new AtomicInteger();

    private TaskCores() {}

    /** The cores of the running Spark task ({@code spark.task.cpus}); outside a task, the machine's. */
    public static int cores() {
        TaskContext t = TaskContext.get();
        return t == null ? Runtime.getRuntime().availableProcessors() : Math.max(1, t.cpus());
    }

    /** Runs {@code work} on {@link #cores()} cores and returns its result; its exceptions come through as they are. */
    public static <T> T run(Supplier<T> work) {
        int cores = cores();
        ClassLoader loader = Thread.currentThread().getContextClassLoader();
        ForkJoinPool pool = new ForkJoinPool(
                cores,
                p -> {
                    ForkJoinWorkerThread t = ForkJoinPool.defaultForkJoinWorkerThreadFactory.newThread(p);
                    t.setName("cuwire-task-cores-" + cores + "-" + THREADS.incrementAndGet());
                    t.setDaemon(true);
                    t.setContextClassLoader(loader);
                    return t;
                },
                null,
                false);
        try {
            return pool.submit(work::get).get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while the task's work ran", e);
        } catch (ExecutionException e) {
            Throwable c = e.getCause();
            if (c instanceof RuntimeException r) {
                throw r;
            }
            if (c instanceof Error err) {
                throw err;
            }
            throw new IllegalStateException(c);
        } finally {
            pool.shutdown();
        }
    }
}
