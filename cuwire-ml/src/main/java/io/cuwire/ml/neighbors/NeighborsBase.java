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
 * Brute-force nearest neighbors in Euclidean distance, as cuML's and scikit-learn's {@code brute} algorithm: the
 * {@code k} training rows nearest to each query ({@link ComputeBackend#kNearestRows}: on CUDA a GEMM plus row norms
 * for a block of queries at a time, then the {@code k} smallest of each row; on the CPU blocks of queries against
 * blocks of rows with a bounded heap per query), their distances the roots of sums of squared differences. A
 * partition answers with its own top {@code k} and global row ids ({@link #partialKneighbors}); the top {@code k} of
 * all partitions is their merge ({@link Neighbors#merge}).
 *
 * <h2>The training rows: a copy, or a view</h2>
 * {@code fit} keeps a copy of the training rows, owned by the estimator: the caller may close or change its array
 * afterwards. {@code fitView} keeps a view of them ({@link NdArray#view}), as scikit-learn's and cuML's {@code fit}
 * keep a reference to {@code X}: no copy and no new memory, the rows read once for the finiteness check; the caller
 * keeps the array open and unchanged while the estimator is fitted on it (a later change shows in the neighbors; a
 * closed array makes every query fail with {@link IllegalStateException}), and closing the estimator ends the view,
 * not the array. A serialized estimator carries the rows either way; the one decoded owns them.
 */
public abstract sealed class NeighborsBase extends Estimator permits NearestNeighbors, KNeighborsClassifier {
    @Serial
    private static final long serialVersionUID = 1L;

    /** The number of neighbors to find by default. */
    @Param
    int nNeighbors = 5;

    /** The training rows (n x d): a copy owned by the estimator, or a view of the caller's ({@code fitView}). */
    NdArray fitX;

    NeighborsBase() {}

    @Override
    public boolean isFitted() {
        return fitX != null;
    }

    /** The training rows (n x d): the estimator's copy, or its view of the caller's rows; do not close it. */
    public NdArray fitX() {
        checkFitted();
        return fitX;
    }

    /** Checks the training rows ({@link #checkTraining}) and keeps a copy of them, where they live, in one pass. */
    void store(String op, NdArray x) {
        close();
        fitX = checkedTrainingCopy(op, x);
    }

    /** Checks the training rows ({@link #checkTraining}) and keeps a view of them, releasing the previous state. */
    void storeView(String op, NdArray x) {
        NdArray view = checkedTrainingView(op, x);
        close();
        fitX = view;
    }

    /** A view of training rows {@code x} (checked by {@link #checkTraining}): what {@code fitView} keeps. */
    static NdArray checkedTrainingView(String op, NdArray x) {
        checkTraining(op, x);
        return view(x);
    }

    /** A view of all of {@code a}: it uses {@code a}'s buffer, which stays {@code a}'s owner's to close. */
    static NdArray view(NdArray a) {
        return NdArray.view(a.buffer(), 0, a.dtype(), a.order(), a.shape());
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
        long m = q.dim(0);
        long kk = Math.min(k, fitX.dim(0));
        NdArray dist = NdArray.empty(mem, q.dtype(), Order.C, m, kk);
        NdArray ids = null;
        try {
            ids = NdArray.empty(mem, DType.INT64, Order.C, m, kk);
            b.kNearestRows(q, fitX, idOffset, dist, ids);
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
