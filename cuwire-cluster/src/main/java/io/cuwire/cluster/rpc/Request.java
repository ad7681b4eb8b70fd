package io.cuwire.cluster.rpc;

/**
 * A request over an {@link Endpoint}: in the local cluster from the client to a worker (or worker to worker), in the
 * Spark integration between cuwire nodes. Each server defines its requests as a sealed set of records implementing
 * this interface, one record per kind, each a registered type of its own on the wire
 * ({@link Endpoint#registerMessages}), and dispatches them with an exhaustive {@code switch}: the cluster worker's
 * are {@code io.cuwire.cluster.WorkerRequest}, a Spark node's {@code io.cuwire.spark.internal.SparkRequest}.
 * Values a request carries are serialized values (device arrays travel as device frames).
 */
public interface Request {
    /** The request's number, unique per sender; the reply carries it back. */
    long id();
}
