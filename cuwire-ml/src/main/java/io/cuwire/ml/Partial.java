package io.cuwire.ml;

/**
 * Partial statistics of one partition — sums, counts, Gram matrices, per-iteration gradients — that merge into one
 * fitted estimator. Implementations are records of {@link io.cuwire.memory.NdArray}s and scalars, so they travel
 * with the generic serializer like estimators do (device arrays as device frames). A partial owns its arrays:
 * {@link #close()} releases them, once.
 */
public interface Partial extends AutoCloseable {
    /** Releases the arrays. */
    @Override
    void close();
}
