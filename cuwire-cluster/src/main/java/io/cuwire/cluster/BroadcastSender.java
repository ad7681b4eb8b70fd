package io.cuwire.cluster;

import io.cuwire.cluster.rpc.Endpoint;
import io.cuwire.cluster.rpc.Reply;
import io.cuwire.serialize.Serialized;
import io.cuwire.serialize.TypeRegistry;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * How a broadcast's frames reach the workers that need them: one class per {@link BroadcastOptions.Strategy}
 * ({@link EachInTurnBroadcast}, {@link ChainBroadcast}, {@link TreeBroadcast}). The client serializes the model once
 * and hands that form to the sender, which sends it and returns; the workers' acknowledgements settle the broadcast.
 */
sealed interface BroadcastSender permits EachInTurnBroadcast, ForwardedBroadcast {
    /** What a sender needs of the client: the workers' endpoints and fresh request ids. */
    interface Links {
        /** The endpoint of worker {@code worker}. */
        Endpoint endpoint(int worker);

        /** A request id not used before on any endpoint of the client. */
        long nextRequestId();

        /** The client's registry, which serializes the requests. */
        TypeRegistry registry();
    }

    /**
     * Sends model {@code id} v{@code version}, serialized as {@code model} (the caller closes it once this returned),
     * to the workers {@code need}, as broadcast {@code bid}; {@code acks.get(i)} is the acknowledgement the client
     * expects from {@code need.get(i)}. A send that fails fails that acknowledgement.
     *
     * @return the bytes the client sent
     */
    long send(
            long bid, long id, long version, Serialized model, List<Integer> need, List<CompletableFuture<Reply>> acks);

    /** The sender of {@code strategy}; forwarded strategies send chunks of {@code chunkBytes}. */
    static BroadcastSender of(BroadcastOptions.Strategy strategy, Links links, long chunkBytes) {
        return switch (strategy) {
            case EACH_IN_TURN -> new EachInTurnBroadcast(links);
            case CHAIN -> new ChainBroadcast(links, chunkBytes);
            case TREE -> new TreeBroadcast(links, chunkBytes);
        };
    }
}
