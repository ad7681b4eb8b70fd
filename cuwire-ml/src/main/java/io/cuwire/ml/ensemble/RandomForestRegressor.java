package io.cuwire.ml.ensemble;

import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import io.cuwire.ml.Regressor;
import io.cuwire.ml.internal.HostArrays;
import io.cuwire.serialize.OpaqueBlob;
import io.cuwire.serialize.WireType;
import java.io.Serial;
import java.util.List;

/**
 * A random forest of squared-error trees (scikit-learn's and cuML's {@code RandomForestRegressor}): the prediction
 * is the mean of the trees' leaf means. By default each split tries every feature, as scikit-learn does.
 */
@WireType("cuwire.ml.RandomForestRegressor")
public final class RandomForestRegressor extends RandomForest implements Regressor {
    @Serial
    private static final long serialVersionUID = 1L;

    /** A forest of 100 trees trying every feature per split. */
    public RandomForestRegressor() {
        maxFeatures = 1.0;
    }

    /** Sets the number of trees; returns this. */
    public RandomForestRegressor nEstimators(int value) {
        nEstimators = value;
        return this;
    }

    /** Sets the deepest a tree grows; returns this. */
    public RandomForestRegressor maxDepth(int value) {
        maxDepth = value;
        return this;
    }

    /** Sets the share of features tried per split (0: square root); returns this. */
    public RandomForestRegressor maxFeatures(double value) {
        maxFeatures = value;
        return this;
    }

    /** Sets the seed; returns this. */
    public RandomForestRegressor seed(long value) {
        seed = value;
        return this;
    }

    /** Sets whether splits are exact rather than found on histograms of binned features; returns this. */
    public RandomForestRegressor exactSplits(boolean value) {
        exactSplits = value;
        return this;
    }

    /** Sets the most bins per feature for histogram splits (2 .. 256); returns this. */
    public RandomForestRegressor maxBins(int value) {
        maxBins = value;
        return this;
    }

    @Override
    int leafClasses(NdArray x, NdArray y, String op) {
        checkTargets(op, y, x);
        return 0;
    }

    @Override
    double[] targets(NdArray y) {
        return HostArrays.doubles(y);
    }

    @Override
    public RandomForestRegressor fit(NdArray x, NdArray y) {
        fitForest(x, y);
        return this;
    }

    /** Concatenates the partitions' forests; returns this. */
    public RandomForestRegressor merge(List<OpaqueBlob> parts) {
        mergeForests(parts);
        return this;
    }

    @Override
    public NdArray predict(NdArray x) {
        checkFitted();
        int features = info().features();
        checkMatrix("RandomForestRegressor.predict", "X", x);
        if (x.dim(1) != features) {
            throw new IllegalArgumentException("RandomForestRegressor.predict: X has " + x.dim(1)
                    + " features (expected: " + features + ", as fitted)");
        }
        NdArray out = NdArray.empty(memoryFor(x), x.dtype(), Order.C, x.dim(0));
        try {
            backend(x).predictForest(forest, x, out);
            return out;
        } catch (RuntimeException | Error e) {
            out.close();
            throw e;
        }
    }
}
