package io.cuwire.cluster;

/** The workers in a chain: each forwards to the next ({@link BroadcastOptions.Strategy#CHAIN}). */
final class ChainBroadcast extends ForwardedBroadcast {
    ChainBroadcast(Links links, long chunkBytes) {
        super(links, chunkBytes);
    }

    @Override
    int parent(int i) {
        return i - 1;
    }
}
