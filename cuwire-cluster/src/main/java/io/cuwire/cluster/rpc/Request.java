package io.cuwire.cluster.rpc;

import io.cuwire.serialize.WireType;
import java.util.List;

/**
 * A request over an {@link Endpoint}: in the local cluster from the client to a worker (or worker to worker), in the
 * Spark integration between cuwire nodes. An operation, for {@code run} and
 * {@code call} a task name, and arguments that are serialized values (device arrays travel as device frames).
 *
 * @param id the request's number, unique per sender; the reply carries it back
 * @param op the operation, named by whoever serves it (the local cluster's worker, a Spark node)
 * @param name the task name, or {@code null}
 * @param args the arguments
 */
@WireType("cuwire.cluster.Request")
public record Request(long id, String op, String name, List<Object> args) {
    public Request {
        args = args == null ? List.of() : args;
    }
}
