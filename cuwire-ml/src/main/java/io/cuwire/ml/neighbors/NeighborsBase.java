package io.cuwire.ml.neighbors;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DType;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import io.cuwire.ml.ComputeBackend;
import io.cuwire.ml.Estimator;
import io.cuwire.ml.Param;
import io.cuwire.ml.UnaryOp;
import java.io.Serial;

/**
 * Brute-force nearest neighbors in Euclidean distance, as cuML's {@code brute} algorithm: the squared distances of a
 * block of queries to every training row (one GEMM plus row norms), then the {@code k} smallest of each row. A
 * partition answers with its own top {@code k} and global row ids ({@link #partialKneighbors}); the top {@code k} of
 * all partitions is their merge ({@link Neighbors#merge}).
 */
public abstract sealed class NeighborsBase extends Estimator permits NearestNeighbors, KNeighborsClassifier {
    @Serial
    private static final long serialVersionUID = 1L;

    /** Distance matrix elements computed at once: queries are taken in blocks of this many divided by the rows. */
    private static final long BLOCK_ELEMENTS = 1L << 22;

    /** The number of neighbors to find by default. */
    @Param
    int nNeighbors = 5;

    /** The training rows (n x d), a copy owned by the estimator. */
    NdArray fitX;

    NeighborsBase() {
    }

    @Override
    public boolean isFitted() {
        return fitX != null;
    }

    /** The training rows (n x d); owned by the estimator. */
    public NdArray fitX() {
        checkFitted();
        return fitX;
    }

    /** Keeps a copy of the training rows, where they live. */
    void store(NdArray x) {
        close();
        fitX = x.copyTo(memoryFor(x));
    }

    /** The {@link #nNeighbors} nearest training rows of each row of {@code q}. */
    public Neighbors kneighbors(NdArray q) {
        return kneighbors(q, nNeighbors);
    }

    /** The {@code k} nearest training rows of each row of {@code q}; ids are row numbers (int64). */
    public Neighbors kneighbors(NdArray q, int k) {
        checkFitted();
        if (k < 1 || k > fitX.dim(0)) {
            throw new IllegalArgumentException(getClass().getSimpleName() + ".kneighbors: k = " + k
                    + " (expected: 1 <= k <= " + fitX.dim(0) + ", the training rows)");
        }
        return partialKneighbors(q, k, 0);
    }

    /**
     * This partition's {@code min(k, rows)} nearest training rows of each row of {@code q}, their ids the row
     * numbers plus {@code idOffset} (the partition's first global row).
     */
    public Neighbors partialKneighbors(NdArray q, int k, long idOffset) {
        String op = getClass().getSimpleName() + ".partialKneighbors";
        checkFitted();
        checkInput(op, q, fitX.dim(1), fitX.dtype(), fitX);
        if (k < 1) {
            throw new IllegalArgumentException(op + ": k = " + k + " (expected: >= 1)");
        }
        ComputeBackend b = backend(q);
        BufferAllocator<?> mem = memoryFor(q);
        long n = fitX.dim(0);
        long m = q.dim(0);
        long kk = Math.min(k, n);
        long es = q.dtype().byteSize();
        long block = Math.max(1, Math.min(m, BLOCK_ELEMENTS / Math.max(n, 1)));
        NdArray dist = NdArray.empty(mem, q.dtype(), Order.C, m, kk);
        NdArray ids = null;
        try {
            ids = NdArray.empty(mem, DType.INT64, Order.C, m, kk);
            for (long first = 0; first < m; first += block) {
                long rows = Math.min(block, m - first);
                try (NdArray qv = NdArray.view(q.buffer(), first * q.dim(1) * es, q.dtype(), Order.C, rows,
                        q.dim(1));
                        NdArray dv = NdArray.view(dist.buffer(), first * kk * es, q.dtype(), Order.C, rows, kk);
                        NdArray iv = NdArray.view(ids.buffer(), first * kk * 8, DType.INT64, Order.C, rows, kk);
                        NdArray d = NdArray.empty(mem, q.dtype(), Order.C, rows, n)) {
                    b.squaredDistances(qv, fitX, d);
                    b.smallestK(d, idOffset, dv, iv);
                }
            }
            b.map(UnaryOp.SQRT, dist, dist);
            return new Neighbors(dist, ids);
        } catch (RuntimeException | Error e) {
            dist.close();
            if (ids != null) {
                ids.close();
            }
            throw e;
        }
    }
}
