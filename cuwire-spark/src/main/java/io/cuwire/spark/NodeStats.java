package io.cuwire.spark;

import io.cuwire.memory.CopyDirection;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeSet;

/**
 * What one cuwire endpoint of a Spark application (the driver's or an executor's) did so far.
 *
 * @param executorId the Spark executor id, or {@code driver}
 * @param address where the endpoint listens on TCP
 * @param ipcAddress where it listens on CUDA IPC ({@code ipc://host:port}), or empty where it cannot use IPC
 * @param device the endpoint's device, platform and ordinal ({@code cuda0}; {@code emulated0} without a GPU): where
 *     the stages' partial fits and predictions of that executor compute
 * @param partialFits the stages' partial-fit tasks this executor's JVM ran, by the name of the compute backend they
 *     ran on ({@code cuda} on a CUDA device, {@code cpu} on the emulated device and host memory)
 * @param scoredRows the rows this executor's JVM scored for the models' transforms, by compute backend
 * @param fetchedFromDriver models this executor received from the driver
 * @param fetchedFromPeers models this executor received from another executor
 * @param fetchedBytes frame bytes received with those models
 * @param fetchedOver those fetches by the transport that carried the model: {@code ipc} (device frames copied device
 *     to device) or {@code tcp} (staged through host memory)
 * @param fetchStagedBytes bytes this executor's process copied host to device while its fetches ran: the device
 *     frames staged through host memory, 0 when every fetch came over CUDA IPC (a process-wide count: other copies
 *     of that JVM made meanwhile count too)
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
        String ipcAddress,
        String device,
        SortedMap<String, Long> partialFits,
        SortedMap<String, Long> scoredRows,
        long fetchedFromDriver,
        long fetchedFromPeers,
        long fetchedBytes,
        SortedMap<String, Long> fetchedOver,
        long fetchStagedBytes,
        long servedToPeers,
        long redirects,
        long evicted,
        long cachedModels,
        long[] copyBytes,
        long deviceBytes) {
    /** Models this executor received over {@code transport} ({@code ipc}, {@code tcp}). */
    public long fetchedOver(String transport) {
        return fetchedOver.getOrDefault(transport, 0L);
    }
    /** Bytes the process copied in {@code direction}. */
    public long copied(CopyDirection direction) {
        return copyBytes[direction.ordinal()];
    }

    /** The compute backends this executor's stages ran on so far: the keys of the two counts by backend. */
    public Set<String> backends() {
        Set<String> out = new TreeSet<>(partialFits.keySet());
        out.addAll(scoredRows.keySet());
        return out;
    }

    /** Models this executor received, from anyone. */
    public long fetched() {
        return fetchedFromDriver + fetchedFromPeers;
    }

    @Override
    public String toString() {
        return "NodeStats[" + executorId + " at " + address + " on " + device + ": partial fits " + partialFits
                + ", scored rows " + scoredRows + ", fetched " + fetchedFromDriver
                + " from driver, "
                + fetchedFromPeers + " from peers (" + fetchedBytes + " bytes, over " + fetchedOver + ", "
                + fetchStagedBytes + " staged), served " + servedToPeers
                + ", redirects " + redirects + ", evicted " + evicted + ", cached " + cachedModels + ", D2H "
                + copied(CopyDirection.D2H) + ", H2D " + copied(CopyDirection.H2D) + ", H2H "
                + copied(CopyDirection.H2H) + "]";
    }
}
