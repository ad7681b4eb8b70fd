package io.cuwire.cluster;

import io.cuwire.cluster.rpc.Endpoint;
import io.cuwire.cluster.rpc.Reply;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.Frame;
import io.cuwire.serialize.Serialized;
import io.cuwire.transport.IdleStrategy;
import io.cuwire.transport.Message;
import io.cuwire.transport.MessageMetrics;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * The client sends the whole model to each worker in turn, one {@link WorkerRequest.CacheModel} request:
 * the model's encoded header and its frames as they are ({@link ModelFrame}), so that the form the client serialized
 * once is what travels (device frames stay device frames). The request is serialized once too, and the same message
 * goes to every worker.
 */
final class EachInTurnBroadcast implements BroadcastSender {
    private final Links links;
    /** How the client waits for each send: the transports' default (spin, then park). */
    private final IdleStrategy idle = IdleStrategy.fromProperty();

    EachInTurnBroadcast(Links links) {
        this.links = links;
    }

    @Override
    public long send(
            long bid,
            long id,
            long version,
            Serialized model,
            List<Integer> need,
            List<CompletableFuture<Reply>> acks) {
        List<ModelFrame> frames = new ArrayList<>(model.frames().size());
        for (Frame f : model.frames()) {
            frames.add(ModelFrame.borrowed(f.buffer()));
        }
        long bytes = 0;
        WorkerRequest r = new WorkerRequest.CacheModel(bid, id, version, model.encodeHeader(), frames);
        try (Serialized s = links.registry().serialize(r, Family.CUDA)) {
            Message message = Message.of(s);
            for (int w : need) {
                Endpoint e = links.endpoint(w);
                MessageMetrics m = idle.await(e.sendMessage(message).handle((sent, x) -> {
                    if (x != null) {
                        e.failExpected(bid, x);
                    }
                    return sent;
                }));
                bytes += m == null ? 0 : m.totalBytes();
            }
        }
        return bytes;
    }
}
