/**
 * The local multi-process cluster (one worker JVM per GPU), its client API, the node runtime
 * ({@code io.cuwire.cluster.runtime}) and the request/reply layer ({@code io.cuwire.cluster.rpc}) that cuwire-spark
 * shares, and the distributed estimators. Tasks of the application's own come through
 * {@link io.cuwire.cluster.TaskProvider} ({@code provides io.cuwire.cluster.TaskProvider with ...}). Workers start on
 * the path this JVM runs on: the module path and its modules when the cluster is a named module.
 */
module io.cuwire.cluster {
    requires transitive io.cuwire.ml;
    requires transitive io.cuwire.transport;
    requires io.cuwire.cuda;
    requires jdk.jfr;

    exports io.cuwire.cluster;
    exports io.cuwire.cluster.rpc;
    exports io.cuwire.cluster.runtime;

    // the generic serializer walks the handles, requests and replies that travel between client and workers: the
    // public handles, the worker's typed requests (the package-private WorkerRequest) and the replies
    opens io.cuwire.cluster to
            io.cuwire.serialize;
    opens io.cuwire.cluster.rpc to
            io.cuwire.serialize;

    uses io.cuwire.cluster.TaskProvider;
}
