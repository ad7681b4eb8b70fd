package io.cuwire.cluster;

import io.cuwire.serialize.Family;
import java.util.Objects;

/**
 * How {@link Client#broadcast(Object, BroadcastOptions)} sends a model.
 *
 * @param family the serializer family of the model's arrays: {@code cuda} keeps device arrays device frames,
 *     {@code host} copies them to host frames once at the client and rebuilds them on each worker's device
 * @param strategy each worker in turn from the client, or down a chain or tree of workers
 * @param chunkBytes the size of the pieces a chain or tree forwards (at least 4 KiB)
 */
public record BroadcastOptions(Family family, Strategy strategy, long chunkBytes) {
    /** How the model's bytes reach the workers. */
    public enum Strategy {
        /** The client sends the (once serialized) model to each worker, one after the other. */
        EACH_IN_TURN,
        /**
         * The client sends the model in chunks to the first worker, which forwards each chunk to the next as it
         * arrives, and so on: the client's link carries the model once, whatever the number of workers.
         */
        CHAIN,
        /**
         * Like the chain, down a binary tree: the client sends to the first worker, and worker {@code i} (in the
         * order of the workers that need the model) forwards each chunk to workers {@code 2i+1} and {@code 2i+2} as
         * it arrives. The client's link carries the model once; the last worker is {@code log2(n)} hops away instead
         * of {@code n - 1}, and each worker's link carries it at most twice.
         */
        TREE
    }

    /** Device frames, a chain for more than two workers, 4 MiB chunks. */
    public static final BroadcastOptions DEFAULT = new BroadcastOptions(Family.CUDA, null, 4L << 20);

    public BroadcastOptions {
        Objects.requireNonNull(family, "family");
        if (chunkBytes < 4096) {
            throw new IllegalArgumentException("chunkBytes: " + chunkBytes + " (expected: >= 4096)");
        }
    }

    /** These options with {@code value} as the family. */
    public BroadcastOptions family(Family value) {
        return new BroadcastOptions(value, strategy, chunkBytes);
    }

    /** These options with {@code value} as the strategy ({@code null}: chain for more than two workers). */
    public BroadcastOptions strategy(Strategy value) {
        return new BroadcastOptions(family, value, chunkBytes);
    }

    /** These options with chunks of {@code bytes}. */
    public BroadcastOptions chunkBytes(long bytes) {
        return new BroadcastOptions(family, strategy, bytes);
    }

    /** The strategy for {@code workers} receivers. */
    Strategy strategyFor(int workers) {
        return strategy != null ? strategy : workers > 2 ? Strategy.CHAIN : Strategy.EACH_IN_TURN;
    }
}
