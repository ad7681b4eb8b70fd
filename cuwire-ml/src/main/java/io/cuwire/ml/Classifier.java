package io.cuwire.ml;

import io.cuwire.memory.NdArray;

/** An estimator of class labels (int32 class indices): scikit-learn's classifiers. */
public interface Classifier extends AutoCloseable {
    /** Fits on samples {@code x} (n x d) and int32 labels {@code y} (n); returns this. */
    Classifier fit(NdArray x, NdArray y);

    /** The predicted labels (int32, n), a new array the caller owns. */
    NdArray predict(NdArray x);

    /** The class probabilities (n x classes, the dtype of {@code x}), a new array the caller owns. */
    NdArray predictProba(NdArray x);

    /** The number of classes, once fitted. */
    int classes();

    /** The mean accuracy of the predictions for {@code x} against {@code y}. */
    default double score(NdArray x, NdArray y) {
        try (NdArray p = predict(x)) {
            return Metrics.accuracy(y, p);
        }
    }

    /** Releases the fitted state. */
    @Override
    void close();
}
