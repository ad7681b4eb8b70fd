package io.cuwire.ml.neighbors;

import io.cuwire.memory.NdArray;
import io.cuwire.serialize.WireType;
import java.io.Serial;

/** Unsupervised brute-force nearest neighbors (scikit-learn's and cuML's {@code NearestNeighbors}). */
@WireType("cuwire.ml.NearestNeighbors")
public final class NearestNeighbors extends NeighborsBase {
    @Serial
    private static final long serialVersionUID = 1L;

    /** Finds 5 neighbors by default. */
    public NearestNeighbors() {}

    /** Sets the default number of neighbors; returns this. */
    public NearestNeighbors nNeighbors(int value) {
        if (value < 1) {
            throw new IllegalArgumentException("nNeighbors: " + value + " (expected: >= 1)");
        }
        nNeighbors = value;
        return this;
    }

    /** Keeps (a copy of) the training rows {@code x}; returns this. */
    public NearestNeighbors fit(NdArray x) {
        store("NearestNeighbors.fit", x);
        return this;
    }

    /**
     * Keeps a view of the training rows {@code x}, without a copy, as scikit-learn keeps a reference: {@code x} must
     * stay open and unchanged while this estimator is fitted on it (see {@link NeighborsBase}); returns this.
     */
    public NearestNeighbors fitView(NdArray x) {
        storeView("NearestNeighbors.fitView", x);
        return this;
    }
}
