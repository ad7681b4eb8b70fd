package io.cuwire.ml;

import io.cuwire.memory.NdArray;

/** An estimator of continuous targets: scikit-learn's regressors. */
public interface Regressor extends AutoCloseable {
    /** Fits on samples {@code x} (n x d) and targets {@code y} (n, the dtype of {@code x}); returns this. */
    Regressor fit(NdArray x, NdArray y);

    /** The predicted targets (n), a new array the caller owns. */
    NdArray predict(NdArray x);

    /** The coefficient of determination R² of the predictions for {@code x} against {@code y}. */
    default double score(NdArray x, NdArray y) {
        try (NdArray p = predict(x)) {
            return Metrics.r2(y, p);
        }
    }

    /** Releases the fitted state. */
    @Override
    void close();
}
