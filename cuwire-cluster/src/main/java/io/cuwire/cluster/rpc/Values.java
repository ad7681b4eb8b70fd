package io.cuwire.cluster.rpc;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.RecordComponent;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.Deque;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/** Closing what a decoded value owns. */
public final class Values {
    private Values() {}

    /**
     * Closes {@code value} if it is {@link AutoCloseable}, or the elements of a collection, the keys and values of a
     * map, the elements of an object array, the value of an {@link Optional} and the components of a record (a
     * {@link Request}'s values, a {@link Reply}'s value: a peer may nest either in what it sends), recursively;
     * errors are dropped (the value was being discarded), and so is a record whose accessors cannot be called. Each
     * container is visited once however often the value shares it (a decoded value may describe exponentially many
     * paths through shared references in a few kilobytes), and each closeable is closed once, so the walk costs the
     * number of distinct objects, not of paths.
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
                case Map<?, ?> m -> {
                    List<Object> entries = new ArrayList<>(2 * m.size());
                    for (Map.Entry<?, ?> e : m.entrySet()) {
                        entries.add(e.getKey());
                        entries.add(e.getValue());
                    }
                    pushInOrder(todo, entries.toArray());
                }
                case Object[] a -> pushInOrder(todo, a);
                case Optional<?> o -> o.ifPresent(todo::push);
                case Record r -> pushInOrder(todo, components(r));
                default -> {
                    // nothing to close
                }
            }
        }
    }

    /** The values of {@code r}'s components, none where its accessors cannot be called. */
    private static Object[] components(Record r) {
        RecordComponent[] parts = r.getClass().getRecordComponents();
        Object[] values = new Object[parts.length];
        try {
            for (int i = 0; i < parts.length; i++) {
                values[i] = parts[i].getAccessor().invoke(r);
            }
            return values;
        } catch (IllegalAccessException | InvocationTargetException | RuntimeException e) {
            return new Object[0];
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
