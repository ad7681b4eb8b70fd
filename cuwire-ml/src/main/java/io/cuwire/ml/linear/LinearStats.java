package io.cuwire.ml.linear;

import io.cuwire.memory.NdArray;
import io.cuwire.ml.Partial;
import io.cuwire.serialize.WireType;

/**
 * The partial statistics of least squares over one partition, centered on the partition's own means so that float32
 * data loses nothing to cancellation: merged with the parallel-variance formula (Chan et al.) they give the Gram
 * matrix and {@code X^T y} of all the data, centered or not.
 *
 * @param n samples
 * @param yMean mean target
 * @param xMean mean of each feature (d)
 * @param gram centered Gram matrix {@code (X - xMean)^T (X - xMean)} (d x d)
 * @param xty centered {@code (X - xMean)^T (y - yMean)} (d)
 */
@WireType("cuwire.ml.LinearStats")
public record LinearStats(long n, double yMean, NdArray xMean, NdArray gram, NdArray xty) implements Partial {
    @Override
    public void close() {
        xMean.close();
        gram.close();
        xty.close();
    }
}
