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
}
