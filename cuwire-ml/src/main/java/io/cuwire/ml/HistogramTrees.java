package io.cuwire.ml;

import java.util.function.Supplier;

/**
 * A backend's own builder of histogram-split trees for one partition ({@link ComputeBackend#histogramTrees}): the
 * partition's features quantized where they live, at the edges the estimator gave, and each tree grown level by
 * level there (histograms of class counts or target sums per node, the best split per node, the rows moved to the
 * children). The estimator keeps what makes a forest a function of its seed: each tree's sample of rows and the
 * features each node draws, asked of {@code draw} for every node that may split, in breadth-first order, as the
 * host's trees ask. Owns device memory until closed; one tree at a time.
 */
public interface HistogramTrees extends AutoCloseable {
    /**
     * How a tree grows.
     *
     * @param maxDepth the deepest a node splits below the root
     * @param minSamplesSplit the fewest sample entries a node needs to split
     * @param minSamplesLeaf the fewest sample entries each side of a split keeps
     */
    record Params(int maxDepth, int minSamplesSplit, int minSamplesLeaf) {}

    /**
     * Grows one tree on the sample {@code rows} (row numbers of the partition, repeats allowed: a bootstrap),
     * numbered as {@link ForestLayout} wants (children consecutive, breadth first).
     *
     * @param draw the features a node tries, asked once for each node that may split, in breadth-first order
     * @throws IllegalStateException if this builder was closed
     */
    ForestLayout.Tree grow(int[] rows, Supplier<int[]> draw, Params params);

    /**
     * Frees what the builder holds.
     *
     * @throws IllegalStateException if the builder was closed already
     */
    @Override
    void close();
}
