package io.cuwire.ml.decomposition;

import io.cuwire.memory.NdArray;
import io.cuwire.ml.Partial;
import io.cuwire.serialize.WireType;

/**
 * The partial statistics of PCA over one partition, centered on the partition's mean; merged with the
 * parallel-variance formula (Chan et al.) they give the covariance of all the data without cancellation.
 *
 * @param n samples
 * @param mean mean of each feature (d)
 * @param scatter {@code (X - mean)^T (X - mean)} (d x d)
 */
@WireType("cuwire.ml.PcaStats")
public record PcaStats(long n, NdArray mean, NdArray scatter) implements Partial {
    @Override
    public void close() {
        mean.close();
        scatter.close();
    }
}
