package io.cuwire.cluster;

import io.cuwire.cluster.rpc.Endpoint;
import io.cuwire.cluster.rpc.Reply;
import io.cuwire.memory.Buffer;
import io.cuwire.memory.DType;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.Serialized;
import io.cuwire.transport.MessageMetrics;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * The client sends the model in chunks to the first worker, which forwards each chunk as it arrives to its children,
 * and they to theirs ({@link WorkerRequest.BroadcastBegin}, then {@link WorkerRequest.BroadcastChunk}s): a chain
 * ({@link ChainBroadcast}) or a tree ({@link TreeBroadcast}) of the workers that need it. When a worker fails, or
 * reports a child it could not reach, the workers below it are told to drop their copy
 * ({@link WorkerRequest.BroadcastAbort}), so that every acknowledgement comes.
 */
abstract sealed class ForwardedBroadcast implements BroadcastSender permits ChainBroadcast, TreeBroadcast {
    private final Links links;
    private final long chunkBytes;

    ForwardedBroadcast(Links links, long chunkBytes) {
        this.links = links;
        this.chunkBytes = chunkBytes;
    }

    /** The parent of node {@code i > 0} of the topology (node 0, the first worker, is the client's child). */
    abstract int parent(int i);

    @Override
    public final long send(
            long bid,
            long id,
            long version,
            Serialized model,
            List<Integer> need,
            List<CompletableFuture<Reply>> acks) {
        int[] parent = new int[need.size()];
        for (int i = 0; i < parent.length; i++) {
            parent[i] = i == 0 ? -1 : parent(i);
        }
        for (int i = 0; i < parent.length; i++) {
            int node = i;
            acks.get(i).whenComplete((r, e) -> {
                if (e != null || !(r instanceof Reply.Ok ok)) {
                    abortBelow(bid, id, version, need, parent, node, "worker " + need.get(node) + " above it failed");
                } else if (ok.value() instanceof List<?> unreached) {
                    for (Object w : unreached) {
                        int child = w instanceof Integer worker ? need.indexOf(worker) : -1;
                        if (child >= 0) {
                            abort(
                                    bid,
                                    id,
                                    version,
                                    need.get(child),
                                    "worker " + need.get(node) + " could not reach " + "it");
                            abortBelow(
                                    bid,
                                    id,
                                    version,
                                    need,
                                    parent,
                                    child,
                                    "worker " + need.get(node) + " could " + "not reach worker " + need.get(child));
                        }
                    }
                }
            });
        }
        Endpoint first = links.endpoint(need.getFirst());
        List<CompletableFuture<MessageMetrics>> sends = new ArrayList<>();
        List<NdArray> views = new ArrayList<>();
        try {
            sends.add(first.send(new WorkerRequest.BroadcastBegin(
                    bid, id, version, model.encodeHeader(), subtree(need, parent, 0))));
            for (int i = 0; i < model.frames().size(); i++) {
                Buffer b = model.frames().get(i).buffer();
                for (long off = 0; off < b.byteSize(); off += chunkBytes) {
                    long len = Math.min(chunkBytes, b.byteSize() - off);
                    NdArray view = NdArray.view(b, off, DType.UINT8, Order.C, len);
                    views.add(view);
                    sends.add(first.send(new WorkerRequest.BroadcastChunk(bid, i, off, view), Family.CUDA));
                }
            }
            long bytes = 0;
            for (CompletableFuture<MessageMetrics> f : sends) {
                MessageMetrics m = f.handle((sent, x) -> {
                            if (x != null) {
                                first.failExpected(bid, x);
                            }
                            return sent;
                        })
                        .join();
                bytes += m == null ? 0 : m.totalBytes();
            }
            return bytes;
        } finally {
            for (NdArray v : views) {
                v.close();
            }
        }
    }

    /** The workers below {@code node}, as the subtrees a worker forwards to. */
    private static List<WorkerRequest.Subtree> subtree(List<Integer> need, int[] parent, int node) {
        List<WorkerRequest.Subtree> children = new ArrayList<>();
        for (int c = 0; c < parent.length; c++) {
            if (parent[c] == node) {
                children.add(new WorkerRequest.Subtree(need.get(c), subtree(need, parent, c)));
            }
        }
        return children;
    }

    private void abortBelow(long bid, long id, long version, List<Integer> need, int[] parent, int node, String why) {
        for (int c = 0; c < parent.length; c++) {
            if (parent[c] == node) {
                abort(bid, id, version, need.get(c), why);
                abortBelow(bid, id, version, need, parent, c, why);
            }
        }
    }

    /** Tells {@code worker} to drop broadcast {@code bid}; it answers the broadcast's own acknowledgement. */
    private void abort(long bid, long id, long version, int worker, String why) {
        Endpoint e = links.endpoint(worker);
        e.send(new WorkerRequest.BroadcastAbort(links.nextRequestId(), bid, id, version, why))
                .exceptionally(x -> {
                    e.failExpected(bid, x);
                    return null;
                });
    }
}
