package io.cuwire.cluster;

import java.util.Map;
import java.util.Objects;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A worker's closed set of tasks, by name: the built-in ones ({@link MlTasks}: partial fits, predict, transform)
 * plus those of every {@link TaskProvider} on the class path. A request naming anything else is refused with
 * {@link UnknownTaskException} before anything runs. Filled at worker start; thread-safe.
 */
public final class TaskRegistry {
    private final Map<String, Task> tasks = new ConcurrentHashMap<>();

    /** An empty registry. */
    public TaskRegistry() {}

    /** The built-in tasks and those of the {@link TaskProvider}s on the class path. */
    public static TaskRegistry standard() {
        TaskRegistry r = new TaskRegistry();
        MlTasks.registerAll(r);
        for (TaskProvider p : ServiceLoader.load(TaskProvider.class, TaskRegistry.class.getClassLoader())) {
            p.register(r);
        }
        return r;
    }

    /**
     * Registers {@code task} under {@code type}'s name.
     *
     * @throws IllegalArgumentException if the name is taken
     */
    public TaskRegistry register(TaskType<?> type, Task task) {
        Objects.requireNonNull(task, "task");
        if (tasks.putIfAbsent(type.name(), task) != null) {
            throw new IllegalArgumentException("task '" + type.name() + "' is already registered");
        }
        return this;
    }

    /**
     * The task named {@code name}.
     *
     * @throws UnknownTaskException if there is none
     */
    public Task get(String name) {
        Task t = tasks.get(name);
        if (t == null) {
            String shown = name == null ? "null" : name.length() > 100 ? name.substring(0, 100) + "…" : name;
            throw new UnknownTaskException(
                    "no task named '" + shown + "' on this worker (registered: " + names().size() + " tasks)");
        }
        return t;
    }

    /** The registered names, sorted. */
    public Set<String> names() {
        return new TreeSet<>(tasks.keySet());
    }
}
