package io.cuwire.cluster.internal;

/** The workers in a chain: each forwards to the next ({@link io.cuwire.cluster.BroadcastOptions.Strategy#CHAIN}). */
public final class ChainBroadcast extends ForwardedBroadcast {
    ChainBroadcast(Links links, long chunkBytes) {
        super(links, chunkBytes);
    }

    @Override
    int parent(int i) {
        return i - 1;
    }
}
