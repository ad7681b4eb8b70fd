package io.cuwire.cluster.rpc;

import java.util.Collection;
import java.util.Map;

/** Closing what a decoded value owns. */
public final class Values {
    private Values() {
    }

    /**
     * Closes {@code value} if it is {@link AutoCloseable}, or the elements of a collection or map recursively; errors
     * are dropped (the value was being discarded).
     */
    public static void close(Object value) {
        switch (value) {
            case null -> {
            }
            case AutoCloseable c -> {
                try {
                    c.close();
                } catch (Exception ignored) {
                    // discarding
                }
            }
            case Collection<?> c -> c.forEach(Values::close);
            case Map<?, ?> m -> m.values().forEach(Values::close);
            case Object[] a -> {
                for (Object o : a) {
                    close(o);
                }
            }
            default -> {
            }
        }
    }
}
