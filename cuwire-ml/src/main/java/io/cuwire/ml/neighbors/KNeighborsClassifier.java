package io.cuwire.ml.neighbors;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.DType;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import io.cuwire.ml.Classifier;
import io.cuwire.ml.ComputeBackend;
import io.cuwire.ml.Param;
import io.cuwire.ml.Partial;
import io.cuwire.serialize.WireType;
import java.io.Serial;
import java.util.List;

/**
 * Classification by a uniform vote of the {@code k} nearest training rows (scikit-learn's and cuML's
 * {@code KNeighborsClassifier}, brute force); ties go to the smallest class. Distributed, each partition answers with
 * its nearest neighbors' distances and class labels ({@link #partialNeighbors}); the vote runs on their merge
 * ({@link #predictFromNeighbors}). A distributed fit brings every partition's rows ({@link #partial}) to one place
 * ({@link #merge}), for a model that predicts alone.
 */
@WireType("cuwire.ml.KNeighborsClassifier")
public final class KNeighborsClassifier extends NeighborsBase implements Classifier {
    @Serial
    private static final long serialVersionUID = 1L;

    /** The number of classes, or 0 to count them from the labels. */
    @Param
    int nClasses;

    /** The training labels (int32, n): a copy owned by the estimator, or a view of the caller's ({@code fitView}). */
    NdArray fitY;

    /** The number of classes fitted. */
    int classes;

    /** Votes among 5 neighbors by default. */
    public KNeighborsClassifier() {}

    /** Sets the number of neighbors that vote; returns this. */
    public KNeighborsClassifier nNeighbors(int value) {
        if (value < 1) {
            throw new IllegalArgumentException("nNeighbors: " + value + " (expected: >= 1)");
        }
        nNeighbors = value;
        return this;
    }

    /** Sets the number of classes (0: count them); returns this. */
    public KNeighborsClassifier nClasses(int value) {
        nClasses = value;
        return this;
    }

    @Override
    public int classes() {
        checkFitted();
        return classes;
    }

    /** The training labels (int32, n): the estimator's copy, or its view of the caller's; do not close it. */
    public NdArray fitY() {
        checkFitted();
        return fitY;
    }

    /** Keeps (copies of) the training rows and labels; returns this. */
    @Override
    public KNeighborsClassifier fit(NdArray x, NdArray y) {
        String op = "KNeighborsClassifier.fit";
        return keep(op, checkedTrainingCopy(op, x), x, y, true);
    }

    /**
     * Keeps views of the training rows and labels, without copies, as scikit-learn keeps a reference to {@code X}:
     * both must stay open and unchanged while this estimator is fitted on them (see {@link NeighborsBase}); returns
     * this.
     */
    public KNeighborsClassifier fitView(NdArray x, NdArray y) {
        String op = "KNeighborsClassifier.fitView";
        return keep(op, checkedTrainingView(op, x), x, y, false);
    }

    /**
     * Checks labels {@code y} of the rows {@code x} and keeps {@code rows} (checked rows of {@code x}: a copy or a
     * view, closed here on failure) with a copy or a view of {@code y}, releasing the previous state.
     */
    private KNeighborsClassifier keep(String op, NdArray rows, NdArray x, NdArray y, boolean copy) {
        NdArray labels = null;
        try {
            checkLabels(op, y, x);
            if (nNeighbors > x.dim(0)) {
                throw new IllegalArgumentException(op + ": nNeighbors = " + nNeighbors + " is more than the " + x.dim(0)
                        + " rows of X (expected: nNeighbors <= rows)");
            }
            int k = classes(op, y, nClasses);
            labels = copy ? y.copyTo(memoryFor(x)) : view(y);
            close();
            fitX = rows;
            fitY = labels;
            classes = k;
            return this;
        } catch (RuntimeException | Error e) {
            rows.close();
            if (labels != null) {
                labels.close();
            }
            throw e;
        }
    }

    /**
     * The training rows and labels of one partition, copies owned by the partial.
     *
     * @param x the rows (n x d)
     * @param y their class labels (int32, n)
     */
    @WireType("cuwire.ml.KNeighborsClassifier.Rows")
    public record Rows(NdArray x, NdArray y) implements Partial {
        @Override
        public void close() {
            x.close();
            y.close();
        }
    }

    /** Copies of partition ({@code x}, {@code y}), checked, where {@code x} lives. */
    public Rows partial(NdArray x, NdArray y) {
        String op = "KNeighborsClassifier.partial";
        NdArray xc = checkedTrainingCopy(op, x);
        try {
            checkLabels(op, y, x);
            return new Rows(xc, y.copyTo(memoryFor(x)));
        } catch (RuntimeException | Error e) {
            xc.close();
            throw e;
        }
    }

    /**
     * Fits on the rows of every partition, concatenated in partition order, where the first partition's rows live
     * (or in the allocator given); returns this.
     */
    public KNeighborsClassifier merge(List<Rows> parts) {
        String op = "KNeighborsClassifier.merge";
        if (parts.isEmpty()) {
            throw new IllegalArgumentException(op + ": no partials");
        }
        NdArray first = parts.getFirst().x();
        long n = 0;
        for (Rows p : parts) {
            if (p.x().dim(1) != first.dim(1) || p.x().dtype() != first.dtype()) {
                throw new IllegalArgumentException(op + ": rows of shape " + shape(p.x()) + " "
                        + p.x().dtype().wireName() + " (expected: " + first.dim(1) + " features, "
                        + first.dtype().wireName()
                        + ", as the first)");
            }
            if (p.y().dtype() != DType.INT32 || p.y().rank() != 1 || p.y().dim(0) != p.x().dim(0)) {
                throw new IllegalArgumentException(op + ": labels " + shape(p.y()) + " "
                        + p.y().dtype().wireName() + " for " + p.x().dim(0) + " rows (expected: int32, one per row)");
            }
            n += p.x().dim(0);
        }
        if (nNeighbors > n) {
            throw new IllegalArgumentException(op + ": nNeighbors = " + nNeighbors + " is more than the " + n
                    + " rows of all partitions (expected: nNeighbors <= rows)");
        }
        BufferAllocator<?> mem = memoryFor(first);
        NdArray x = NdArray.empty(mem, first.dtype(), Order.C, n, first.dim(1));
        NdArray y = null;
        try {
            y = NdArray.empty(mem, DType.INT32, Order.C, n);
            long xAt = 0;
            long yAt = 0;
            for (Rows p : parts) {
                CopyEngine.copy(p.x().buffer(), 0, x.buffer(), xAt, p.x().byteSize());
                CopyEngine.copy(p.y().buffer(), 0, y.buffer(), yAt, p.y().byteSize());
                xAt += p.x().byteSize();
                yAt += p.y().byteSize();
            }
            int k = classes(op, y, nClasses);
            close();
            fitX = x;
            fitY = y;
            classes = k;
            return this;
        } catch (RuntimeException | Error e) {
            x.close();
            if (y != null) {
                y.close();
            }
            throw e;
        }
    }

    /** The {@code min(k, rows)} nearest training rows of each query in this partition, with their class labels. */
    public Neighbors partialNeighbors(NdArray q, int k) {
        try (Neighbors rows = partialKneighbors(q, k, 0)) {
            ComputeBackend b = backend(q);
            BufferAllocator<?> mem = memoryFor(q);
            long m = rows.ids().dim(0);
            long kk = rows.ids().dim(1);
            NdArray labels = NdArray.empty(mem, DType.INT32, Order.C, m, kk);
            try (NdArray flatIds = NdArray.view(rows.ids().buffer(), 0, DType.INT64, Order.C, m * kk);
                    NdArray flatLabels = NdArray.view(labels.buffer(), 0, DType.INT32, Order.C, m * kk)) {
                b.gatherRows(fitY, flatIds, flatLabels);
                return new Neighbors(rows.distances().copyTo(mem), labels);
            } catch (RuntimeException | Error e) {
                labels.close();
                throw e;
            }
        }
    }

    @Override
    public NdArray predict(NdArray x) {
        try (Neighbors nb = partialNeighbors(x, nNeighbors)) {
            return predictFromNeighbors(nb);
        }
    }

    @Override
    public NdArray predictProba(NdArray x) {
        try (Neighbors nb = partialNeighbors(x, nNeighbors)) {
            return predictProbaFromNeighbors(nb);
        }
    }

    /** The labels voted by neighbors with class labels (merged from every partition). */
    public NdArray predictFromNeighbors(Neighbors labelled) {
        ComputeBackend b = backend(labelled.ids());
        NdArray out = NdArray.empty(
                memoryFor(labelled.ids()), DType.INT32, Order.C, labelled.ids().dim(0));
        try (NdArray votes = votes(labelled)) {
            b.argmaxRows(votes, out);
            return out;
        } catch (RuntimeException | Error e) {
            out.close();
            throw e;
        }
    }

    /** The share of each class among neighbors with class labels (queries x classes). */
    public NdArray predictProbaFromNeighbors(Neighbors labelled) {
        NdArray votes = votes(labelled);
        try {
            backend(votes).scale(1.0 / labelled.ids().dim(1), votes);
            return votes;
        } catch (RuntimeException | Error e) {
            votes.close();
            throw e;
        }
    }

    private NdArray votes(Neighbors labelled) {
        checkFitted();
        if (labelled.ids().dtype() != DType.INT32) {
            throw new IllegalArgumentException("KNeighborsClassifier: neighbors with "
                    + labelled.ids().dtype().wireName() + " ids (expected: int32 class labels, from partialNeighbors)");
        }
        NdArray votes = NdArray.empty(
                memoryFor(labelled.ids()),
                labelled.distances().dtype(),
                Order.C,
                labelled.ids().dim(0),
                classes);
        try {
            backend(votes).countRows(labelled.ids(), votes);
            return votes;
        } catch (RuntimeException | Error e) {
            votes.close();
            throw e;
        }
    }
}
