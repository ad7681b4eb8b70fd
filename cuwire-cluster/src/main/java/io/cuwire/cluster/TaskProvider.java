package io.cuwire.cluster;

/**
 * Adds tasks to a worker's {@link TaskRegistry} at start: found with {@link java.util.ServiceLoader} on the worker's
 * class path ({@code META-INF/services/io.cuwire.cluster.TaskProvider}). What the class path holds when the worker
 * starts is the whole set of code a client can ask for.
 */
public interface TaskProvider {
    /** Registers this provider's tasks. */
    void register(TaskRegistry registry);
}
