package io.cuwire.ml;

/** An element-wise operator of {@link ComputeBackend#broadcastRows}: {@code a[i, j] = a[i, j] op v[j]}. */
public enum BinaryOp {
    ADD,
    SUB,
    MUL,
    DIV;

    /** The operator on one pair, in double precision. */
    public double apply(double a, double b) {
        return switch (this) {
            case ADD -> a + b;
            case SUB -> a - b;
            case MUL -> a * b;
            case DIV -> a / b;
        };
    }
}
