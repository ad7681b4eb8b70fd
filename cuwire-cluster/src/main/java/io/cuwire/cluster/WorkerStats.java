package io.cuwire.cluster;

import io.cuwire.serialize.WireType;

/**
 * One worker's copy counters (process totals since start) and memory in use.
 *
 * @param worker the worker's index
 * @param deviceToHostBytes bytes its copy engine moved device to host
 * @param hostToDeviceBytes bytes moved host to device
 * @param deviceToDeviceBytes bytes moved within its device
 * @param peerBytes bytes moved between devices
 * @param deviceBytes device memory its allocator holds
 * @param hostBytes host memory its allocator holds
 * @param objects values in its store
 * @param models models in its cache
 * @param evictedModels models its cache evicted so far to make room in the device's memory
 */
@WireType("cuwire.cluster.WorkerStats")
public record WorkerStats(
        int worker,
        long deviceToHostBytes,
        long hostToDeviceBytes,
        long deviceToDeviceBytes,
        long peerBytes,
        long deviceBytes,
        long hostBytes,
        long objects,
        long models,
        long evictedModels) {}
