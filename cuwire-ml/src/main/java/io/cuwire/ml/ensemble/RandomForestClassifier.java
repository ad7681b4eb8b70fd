package io.cuwire.ml.ensemble;

import io.cuwire.memory.DType;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import io.cuwire.ml.Classifier;
import io.cuwire.ml.ComputeBackend;
import io.cuwire.ml.Param;
import io.cuwire.ml.internal.HostArrays;
import io.cuwire.serialize.OpaqueBlob;
import io.cuwire.serialize.WireType;
import java.io.Serial;
import java.util.List;

/**
 * A random forest of Gini-split trees (scikit-learn's and cuML's {@code RandomForestClassifier}): the predicted
 * probabilities are the mean of the trees' leaf class frequencies, the label their argmax. By default each split
 * tries {@code sqrt(features)} features.
 */
@WireType("cuwire.ml.RandomForestClassifier")
public final class RandomForestClassifier extends RandomForest implements Classifier {
    @Serial
    private static final long serialVersionUID = 1L;

    /** The number of classes, or 0 to count them from the labels; partitions need it set. */
    @Param
    int nClasses;

    /** A forest of 100 trees. */
    public RandomForestClassifier() {}

    /** Sets the number of trees; returns this. */
    public RandomForestClassifier nEstimators(int value) {
        nEstimators = value;
        return this;
    }

    /** Sets the deepest a tree grows; returns this. */
    public RandomForestClassifier maxDepth(int value) {
        maxDepth = value;
        return this;
    }

    /** Sets the share of features tried per split (0: square root); returns this. */
    public RandomForestClassifier maxFeatures(double value) {
        maxFeatures = value;
        return this;
    }

    /** Sets the seed; returns this. */
    public RandomForestClassifier seed(long value) {
        seed = value;
        return this;
    }

    /** Sets whether splits are exact rather than found on histograms of binned features; returns this. */
    public RandomForestClassifier exactSplits(boolean value) {
        exactSplits = value;
        return this;
    }

    /** Sets the most bins per feature for histogram splits (2 .. 256); returns this. */
    public RandomForestClassifier maxBins(int value) {
        maxBins = value;
        return this;
    }

    /** Sets the number of classes (0: count them); returns this. */
    public RandomForestClassifier nClasses(int value) {
        nClasses = value;
        return this;
    }

    @Override
    int leafClasses(NdArray x, NdArray y, String op) {
        checkLabels(op, y, x);
        return classes(op, y, nClasses);
    }

    @Override
    double[] targets(NdArray y) {
        return HostArrays.numbers(y);
    }

    @Override
    public int classes() {
        return info().classes();
    }

    @Override
    public RandomForestClassifier fit(NdArray x, NdArray y) {
        fitForest(x, y);
        return this;
    }

    /** Concatenates the partitions' forests; returns this. */
    public RandomForestClassifier merge(List<OpaqueBlob> parts) {
        mergeForests(parts);
        return this;
    }

    @Override
    public NdArray predictProba(NdArray x) {
        checkFitted();
        int features = info().features();
        checkMatrix("RandomForestClassifier.predictProba", "X", x);
        if (x.dim(1) != features) {
            throw new IllegalArgumentException("RandomForestClassifier.predictProba: X has " + x.dim(1)
                    + " features (expected: " + features + ", as fitted)");
        }
        NdArray out = NdArray.empty(memoryFor(x), x.dtype(), Order.C, x.dim(0), info().classes());
        try {
            backend(x).predictForest(forest, x, out);
            return out;
        } catch (RuntimeException | Error e) {
            out.close();
            throw e;
        }
    }

    @Override
    public NdArray predict(NdArray x) {
        ComputeBackend b = backend(x);
        try (NdArray p = predictProba(x)) {
            NdArray labels = NdArray.empty(memoryFor(x), DType.INT32, Order.C, x.dim(0));
            try {
                b.argmaxRows(p, labels);
                return labels;
            } catch (RuntimeException | Error e) {
                labels.close();
                throw e;
            }
        }
    }
}
