package io.cuwire.cluster;

/**
 * What one {@link Client#broadcast(Object, BroadcastOptions)} did.
 *
 * @param handle the model's identity and version, for tasks
 * @param sent workers that received the model's frames
 * @param cacheHits workers that already held this version and got only its identity
 * @param strategy how the frames went
 * @param clientBytes header and frame bytes the client sent
 * @param nanos from the call to the last worker's acknowledgement
 */
public record BroadcastResult(
        ModelHandle handle,
        int sent,
        int cacheHits,
        BroadcastOptions.Strategy strategy,
        long clientBytes,
        long nanos) {}
