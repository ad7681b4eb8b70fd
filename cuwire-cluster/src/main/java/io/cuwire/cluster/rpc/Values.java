package io.cuwire.cluster.rpc;

import java.util.ArrayDeque;
import java.util.Collection;
import java.util.Collections;
import java.util.Deque;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.Set;

/** Closing what a decoded value owns. */
public final class Values {
    private Values() {
    }

    /**
     * Closes {@code value} if it is {@link AutoCloseable}, or the elements of a collection, the values of a map and the
     * elements of an object array, recursively; errors are dropped (the value was being discarded). Each container
     * is visited once however often the value shares it (a decoded value may describe exponentially many paths
     * through shared references in a few kilobytes), and each closeable is closed once, so the walk costs the number
     * of distinct objects, not of paths.
     */
    public static void close(Object value) {
        Set<Object> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        Deque<Object> todo = new ArrayDeque<>();
        push(todo, value);
        while (!todo.isEmpty()) {
            Object v = todo.pop();
            if (!seen.add(v)) {
                continue;
            }
            switch (v) {
                case AutoCloseable c -> {
                    try {
                        c.close();
                    } catch (Exception ignored) {
                        // discarding
                    }
                }
                case Collection<?> c -> pushInOrder(todo, c.toArray());
                case Map<?, ?> m -> pushInOrder(todo, m.values().toArray());
                case Object[] a -> pushInOrder(todo, a);
                default -> {
                    // nothing to close
                }
            }
        }
    }

    private static void push(Deque<Object> todo, Object o) {
        if (o != null) {
            todo.push(o);
        }
    }

    /** Pushes {@code elements} so that they are closed in their order, depth first, as a recursive walk would. */
    private static void pushInOrder(Deque<Object> todo, Object[] elements) {
        for (int i = elements.length - 1; i >= 0; i--) {
            push(todo, elements[i]);
        }
    }
}
