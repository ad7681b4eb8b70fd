package io.cuwire.cluster;

import io.cuwire.serialize.TypeRegistry;

/**
 * Adds tasks to a worker's {@link TaskRegistry} at start, and the types they take and give to the type registry the
 * client and workers share: found with {@link java.util.ServiceLoader} on the class path
 * ({@code META-INF/services/io.cuwire.cluster.TaskProvider}). What the class path holds when the worker starts is
 * the whole set of code a client can ask for.
 */
public interface TaskProvider {
    /** Registers this provider's tasks. */
    void register(TaskRegistry registry);

    /**
     * Registers the types this provider's tasks take or return, and models it broadcasts, beyond the estimators the
     * registry already knows; by default none. Called for every registry of the cluster (the client's and each
     * worker's), so both sides decode the same names.
     */
    default void registerTypes(TypeRegistry registry) {}
}
