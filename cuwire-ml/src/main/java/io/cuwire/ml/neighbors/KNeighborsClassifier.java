package io.cuwire.ml.neighbors;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DType;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import io.cuwire.ml.Classifier;
import io.cuwire.ml.ComputeBackend;
import io.cuwire.ml.Param;
import io.cuwire.serialize.WireType;
import java.io.Serial;

/**
 * Classification by a uniform vote of the {@code k} nearest training rows (scikit-learn's and cuML's
 * {@code KNeighborsClassifier}, brute force); ties go to the smallest class. Distributed, each partition answers with
 * its nearest neighbors' distances and class labels ({@link #partialNeighbors}); the vote runs on their merge
 * ({@link #predictFromNeighbors}).
 */
@WireType("cuwire.ml.KNeighborsClassifier")
public final class KNeighborsClassifier extends NeighborsBase implements Classifier {
    @Serial
    private static final long serialVersionUID = 1L;

    /** The number of classes, or 0 to count them from the labels. */
    @Param
    int nClasses;

    /** The training labels (int32, n), a copy owned by the estimator. */
    NdArray fitY;

    /** The number of classes fitted. */
    int classes;

    /** Votes among 5 neighbors by default. */
    public KNeighborsClassifier() {
    }

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

    /** Keeps (copies of) the training rows and labels; returns this. */
    @Override
    public KNeighborsClassifier fit(NdArray x, NdArray y) {
        String op = "KNeighborsClassifier.fit";
        checkTraining(op, x);
        checkLabels(op, y, x);
        if (nNeighbors > x.dim(0)) {
            throw new IllegalArgumentException(op + ": nNeighbors = " + nNeighbors + " is more than the " + x.dim(0)
                    + " rows of X (expected: nNeighbors <= rows)");
        }
        int k = classes(op, y, nClasses);
        store(x);
        fitY = y.copyTo(memoryFor(x));
        classes = k;
        return this;
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
        NdArray out = NdArray.empty(memoryFor(labelled.ids()), DType.INT32, Order.C, labelled.ids().dim(0));
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
            throw new IllegalArgumentException("KNeighborsClassifier: neighbors with " + labelled.ids().dtype()
                    .wireName() + " ids (expected: int32 class labels, from partialNeighbors)");
        }
        NdArray votes = NdArray.empty(memoryFor(labelled.ids()), labelled.distances().dtype(), Order.C,
                labelled.ids().dim(0), classes);
        try {
            backend(votes).countRows(labelled.ids(), votes);
            return votes;
        } catch (RuntimeException | Error e) {
            votes.close();
            throw e;
        }
    }
}
