package io.cuwire.spark.internal;

import io.cuwire.cluster.rpc.Request;
import io.cuwire.serialize.WireType;

/**
 * The requests a Spark application's cuwire node serves ({@link Node}): one record per kind, each a registered type
 * of its own, answered by {@link io.cuwire.cluster.rpc.Reply} records. Spark's own: the fetch of a published model
 * and the redirects it may answer live here, not in the cluster's request/reply layer.
 */
sealed interface SparkRequest extends Request {
    /**
     * The request for a model: answered {@code Ok} with the model (sent with the family chain {@code cuda, host}:
     * device arrays travel as device frames), {@code Ok} with a {@link Node.Redirect} (ask that peer instead), or
     * {@code Missing}.
     *
     * @param id the request's id
     * @param model the model's id
     * @param version its version
     * @param requester the listening address of the node that asks (the driver counts it as a holder)
     * @param direct whether the driver must answer with the model itself, not a redirect
     * @param failedPeer the address of a peer the requester was sent to and could not fetch from, or empty
     */
    @WireType("cuwire.spark.Fetch")
    record Fetch(long id, long model, long version, String requester, boolean direct, String failedPeer)
            implements SparkRequest {
        public Fetch {
            if (requester == null || failedPeer == null) {
                throw new IllegalArgumentException("fetch of model " + model + " v" + version + ": no "
                        + (requester == null ? "requester" : "failed peer"));
            }
        }
    }

    /**
     * Drops the model's cached version if it is at most {@code version}; answered {@code Ok}.
     *
     * @param id the request's id
     * @param model the model's id
     * @param version the newest version to drop
     */
    @WireType("cuwire.spark.Evict")
    record Evict(long id, long model, long version) implements SparkRequest {}

    /**
     * The node's {@link Node.Counters}, answered {@code Ok}.
     *
     * @param id the request's id
     * @param reset whether the counters are zeroed afterwards
     */
    @WireType("cuwire.spark.Stats")
    record Stats(long id, boolean reset) implements SparkRequest {}
}
