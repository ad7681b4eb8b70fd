package io.cuwire.ml.neighbors;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import io.cuwire.ml.ComputeBackend;
import io.cuwire.ml.ComputeBackends;
import io.cuwire.ml.Partial;
import io.cuwire.serialize.WireType;
import java.util.List;

/**
 * The k nearest neighbors of each query row, nearest first: a partition's answer, or the merge of all of them.
 *
 * @param distances Euclidean distances (queries x k, the data's dtype), ascending per row
 * @param ids what each neighbor is: its global row id (int64) from {@link NearestNeighbors}, or its class label
 *     (int32) from {@link KNeighborsClassifier#partialNeighbors}
 */
@WireType("cuwire.ml.Neighbors")
public record Neighbors(NdArray distances, NdArray ids) implements Partial {
    /**
     * The {@code k} nearest among the neighbors that every partition found for the same queries (each at most
     * {@code k} per query, ascending), merged pairwise where they live with {@link ComputeBackend#mergeNeighbors}.
     * New arrays, from the allocator of the first part's distances.
     */
    public static Neighbors merge(List<Neighbors> parts, int k) {
        if (parts.isEmpty()) {
            throw new IllegalArgumentException("Neighbors.merge: no partials");
        }
        Neighbors first = parts.getFirst();
        BufferAllocator<?> mem = first.distances().buffer().allocator();
        if (mem == null) {
            throw new IllegalStateException(
                    "Neighbors.merge: " + first.distances() + " has no allocator to put the " + "merge in");
        }
        long total = 0;
        for (Neighbors p : parts) {
            if (p.distances().rank() != 2 || p.distances().dim(1) > k) {
                throw new IllegalArgumentException("Neighbors.merge: a part of shape " + p.distances()
                        + " (expected: at most k = " + k + " neighbors per query)");
            }
            total += p.distances().dim(1);
        }
        if (total < k) {
            throw new IllegalArgumentException("Neighbors.merge: the parts hold " + total + " neighbors per query "
                    + "(expected: at least k = " + k + ")");
        }
        ComputeBackend b = ComputeBackends.forArray(first.distances());
        long n = first.distances().dim(0);
        Neighbors acc = new Neighbors(first.distances().copyTo(mem), first.ids().copyTo(mem));
        for (Neighbors p : parts.subList(1, parts.size())) {
            long width = Math.min(k, acc.distances().dim(1) + p.distances().dim(1));
            NdArray d = null;
            NdArray i = null;
            try {
                d = NdArray.empty(mem, first.distances().dtype(), Order.C, n, width);
                i = NdArray.empty(mem, first.ids().dtype(), Order.C, n, width);
                b.mergeNeighbors(acc.distances(), acc.ids(), p.distances(), p.ids(), d, i);
            } catch (RuntimeException | Error e) {
                acc.close();
                if (d != null) {
                    d.close();
                }
                if (i != null) {
                    i.close();
                }
                throw e;
            }
            acc.close();
            acc = new Neighbors(d, i);
        }
        return acc;
    }

    @Override
    public void close() {
        distances.close();
        ids.close();
    }
}
