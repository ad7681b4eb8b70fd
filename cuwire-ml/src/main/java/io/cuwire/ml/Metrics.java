package io.cuwire.ml;

import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;

/** Scores computed where the arrays live, returning only the number. */
public final class Metrics {
    private Metrics() {}

    /**
     * The coefficient of determination {@code 1 - SS_res / SS_tot} of {@code predicted} against {@code y} (vectors
     * of one dtype and length); 1 when both sums are 0, as scikit-learn scores a perfect constant fit.
     */
    public static double r2(NdArray y, NdArray predicted) {
        ComputeBackend b = ComputeBackends.forArray(y);
        long n = y.size();
        if (n == 0) {
            throw new IllegalArgumentException("r2: no samples");
        }
        try (NdArray r = NdArray.empty(
                y.buffer().allocator() != null
                        ? y.buffer().allocator()
                        : predicted.buffer().allocator(),
                y.dtype(),
                Order.C,
                y.shape())) {
            b.fill(r, 0);
            b.axpy(1, predicted, r);
            b.axpy(-1, y, r);
            double ssRes = b.dot(r, r);
            double mean = b.reduce(Reduction.SUM, y) / n;
            b.fill(r, -mean);
            b.axpy(1, y, r);
            double ssTot = b.dot(r, r);
            if (ssTot == 0) {
                return ssRes == 0 ? 1.0 : 0.0;
            }
            return 1 - ssRes / ssTot;
        }
    }

    /** The fraction of equal labels in two int32 vectors of one length. */
    public static double accuracy(NdArray y, NdArray predicted) {
        if (y.size() == 0) {
            throw new IllegalArgumentException("accuracy: no samples");
        }
        return (double) ComputeBackends.forArray(y).countEqual(y, predicted) / y.size();
    }
}
