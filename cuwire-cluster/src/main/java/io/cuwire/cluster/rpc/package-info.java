/**
 * Requests and replies over one transport {@link io.cuwire.transport.Connection}: an {@link
 * io.cuwire.cluster.rpc.Endpoint} reads every message on its own thread, completes the pending call a {@link
 * io.cuwire.cluster.rpc.Reply} answers and hands each {@link io.cuwire.cluster.rpc.Request} to a handler; values travel
 * through the serializer registry, so device arrays stay device frames. The one request/reply layer of cuwire: the
 * local cluster's client and workers and the Spark integration's nodes both speak it.
 */
package io.cuwire.cluster.rpc;
