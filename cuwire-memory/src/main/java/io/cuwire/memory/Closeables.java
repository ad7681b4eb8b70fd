package io.cuwire.memory;

/**
 * Closes several resources, all of them even when some fail: the first failure is thrown with the later ones
 * attached as suppressed exceptions (as Arrow's {@code AutoCloseables} and Agrona's {@code CloseHelper} do).
 * {@code null} entries are skipped.
 */
public final class Closeables {
    private Closeables() {}

    /** Closes every resource; rethrows the first failure with the rest suppressed. */
    public static void closeAll(Iterable<? extends AutoCloseable> resources) {
        RuntimeException failure = null;
        for (AutoCloseable r : resources) {
            if (r == null) {
                continue;
            }
            try {
                r.close();
            } catch (Exception e) {
                RuntimeException wrapped = e instanceof RuntimeException re
                        ? re
                        : new MemoryException("closing " + r + " failed: " + e, e);
                if (failure == null) {
                    failure = wrapped;
                } else {
                    failure.addSuppressed(wrapped);
                }
            }
        }
        if (failure != null) {
            throw failure;
        }
    }
}
