package io.cuwire.bench;

import java.io.Serial;
import java.io.Serializable;

/**
 * The plain Java model a user sends first: a {@code float[]} of weights and a few scalars, no cuwire types. Every
 * path of {@link ModelTransferBench} moves it as it is (JDK serialization, Kryo, Fory and cuwire's generic
 * serializer all walk these fields). The weights hold {@link #weightAt}, so that a receiver can check a decoded model
 * without being told its content; {@link #intercept} carries the transfer's sequence number, so that it can also tell
 * that each model is a new one.
 */
public final class TransferModel implements Serializable {
    @Serial
    private static final long serialVersionUID = 1L;
    /** Elements a receiver checks, spread over the weights (plus the last one). */
    private static final int CHECKED_ELEMENTS = 64;

    float[] weights;
    int rows;
    int cols;
    double intercept;
    String name;

    /** For the deserializers. */
    public TransferModel() {}

    /**
     * A model of {@code weightBytes} bytes of weights (a multiple of 4, at least 4): one row of that many floats.
     *
     * @throws IllegalArgumentException if {@code weightBytes} is not a positive multiple of 4 or needs more than
     *     {@code Integer.MAX_VALUE - 8} floats
     */
    public static TransferModel of(long weightBytes) {
        if (weightBytes < Float.BYTES
                || weightBytes % Float.BYTES != 0
                || weightBytes / Float.BYTES > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("weightBytes: " + weightBytes + " (expected: a multiple of 4 from 4 to "
                    + (Integer.MAX_VALUE - 8L) * Float.BYTES + ")");
        }
        TransferModel m = new TransferModel();
        int n = (int) (weightBytes / Float.BYTES);
        m.rows = 1;
        m.cols = n;
        m.weights = new float[n];
        for (int i = 0; i < n; i++) {
            m.weights[i] = weightAt(i);
        }
        m.name = nameOf(m.rows, m.cols);
        return m;
    }

    /** The weight at index {@code i} of every model the benchmark sends. */
    static float weightAt(int i) {
        return (i & 0xffff) * 0.5f - 7.25f;
    }

    private static String nameOf(int rows, int cols) {
        return "linear-" + rows + "x" + cols;
    }

    /** Bytes of weights. */
    public long weightBytes() {
        return (long) weights.length * Float.BYTES;
    }

    /**
     * Checks a decoded model: its shape against its weights and name, {@value #CHECKED_ELEMENTS} weights spread
     * over the array and the last one against {@link #weightAt}, and its sequence number.
     *
     * @throws IllegalStateException naming the first field that differs
     */
    void check(long expectedSequence) {
        if (weights == null || (long) rows * cols != weights.length) {
            throw new IllegalStateException("weights: " + (weights == null ? "null" : weights.length + " floats")
                    + " for rows " + rows + " x cols " + cols);
        }
        if (!nameOf(rows, cols).equals(name)) {
            throw new IllegalStateException("name: '" + name + "' (expected: '" + nameOf(rows, cols) + "')");
        }
        if (intercept != expectedSequence) {
            throw new IllegalStateException(
                    "intercept: " + intercept + " (expected: the sequence number " + expectedSequence + ")");
        }
        int n = weights.length;
        for (int k = 0; k <= CHECKED_ELEMENTS; k++) {
            int i = k == CHECKED_ELEMENTS ? n - 1 : (int) ((long) n * k / CHECKED_ELEMENTS);
            if (Float.floatToRawIntBits(weights[i]) != Float.floatToRawIntBits(weightAt(i))) {
                throw new IllegalStateException(
                        "weights[" + i + "]: " + weights[i] + " (expected: " + weightAt(i) + ")");
            }
        }
    }
}
