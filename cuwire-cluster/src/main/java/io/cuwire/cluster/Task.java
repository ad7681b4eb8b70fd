package io.cuwire.cluster;

import java.util.List;

/**
 * Code a worker runs on request, registered by name in its {@link TaskRegistry}. Arguments arrive resolved:
 * {@link ObjectRef}s are the stored values (do not close them: the store owns them), {@link ModelHandle}s the cached
 * models (likewise), anything else as it was sent (closed by the worker after the task). The result must be a new
 * value the task owns; the worker stores it or sends it back, and closes it when freed.
 */
@FunctionalInterface
public interface Task {
    /** Runs the task. */
    Object run(TaskContext context, List<Object> args);
}
