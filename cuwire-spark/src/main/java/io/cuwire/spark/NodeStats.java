package io.cuwire.spark;

import io.cuwire.memory.CopyDirection;

/**
 * What one cuwire endpoint of a Spark application (the driver's or an executor's) did so far.
 *
 * @param executorId the Spark executor id, or {@code driver}
 * @param address where the endpoint listens
 * @param device the endpoint's device, platform and ordinal ({@code cuda0}; {@code emulated0} without a GPU): where
 *     the stages' partial fits and predictions of that executor compute
 * @param fetchedFromDriver models this executor received from the driver
 * @param fetchedFromPeers models this executor received from another executor
 * @param fetchedBytes frame bytes received with those models
 * @param servedToPeers models this endpoint sent to executors that asked it (the driver counts its own here too)
 * @param redirects fetches the driver sent on to an executor that holds the model
 * @param evicted models dropped from the cache on release
 * @param cachedModels models in the cache now
 * @param copyBytes the process's bytes copied by the copy engine, by {@link CopyDirection} ordinal
 * @param deviceBytes bytes of device memory the endpoint holds now
 */
public record NodeStats(
        String executorId,
        String address,
        String device,
        long fetchedFromDriver,
        long fetchedFromPeers,
        long fetchedBytes,
        long servedToPeers,
        long redirects,
        long evicted,
        long cachedModels,
        long[] copyBytes,
        long deviceBytes) {
    /** Bytes the process copied in {@code direction}. */
    public long copied(CopyDirection direction) {
        return copyBytes[direction.ordinal()];
    }

    /** Models this executor received, from anyone. */
    public long fetched() {
        return fetchedFromDriver + fetchedFromPeers;
    }

    @Override
    public String toString() {
        return "NodeStats[" + executorId + " at " + address + " on " + device + ": fetched " + fetchedFromDriver
                + " from driver, "
                + fetchedFromPeers + " from peers (" + fetchedBytes + " bytes), served " + servedToPeers
                + ", redirects " + redirects + ", evicted " + evicted + ", cached " + cachedModels + ", D2H "
                + copied(CopyDirection.D2H) + ", H2D " + copied(CopyDirection.H2D) + ", H2H "
                + copied(CopyDirection.H2H) + "]";
    }
}
