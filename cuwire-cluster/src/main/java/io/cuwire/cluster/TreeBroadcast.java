package io.cuwire.cluster;

/**
 * The workers in a binary tree: worker {@code i}'s children are {@code 2i+1} and {@code 2i+2}
 * ({@link BroadcastOptions.Strategy#TREE}).
 */
final class TreeBroadcast extends ForwardedBroadcast {
    TreeBroadcast(Links links, long chunkBytes) {
        super(links, chunkBytes);
    }

    @Override
    int parent(int i) {
        return (i - 1) / 2;
    }
}
