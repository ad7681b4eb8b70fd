package io.cuwire.cluster;

import java.util.Objects;

/**
 * The name of a task a worker may run, with the type of its result. Only the name travels; the worker looks it up
 * in its {@link TaskRegistry}, built when the worker started — never code or a class name from the wire.
 *
 * @param name the registered name, e.g. {@code ml.predict}
 * @param resultType what the task returns
 * @param <R> the result type
 */
public record TaskType<R>(String name, Class<R> resultType) {
    public TaskType {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(resultType, "resultType");
    }

    /** A task type. */
    public static <R> TaskType<R> of(String name, Class<R> resultType) {
        return new TaskType<>(name, resultType);
    }
}
