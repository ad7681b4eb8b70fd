package io.cuwire.ml;

/** An element-wise function of {@link ComputeBackend#map}. */
public enum UnaryOp {
    /** {@code e^x}. */
    EXP,
    /** The natural logarithm; {@code -inf} at 0, {@code NaN} below. */
    LOG,
    /** The square root; {@code NaN} below 0. */
    SQRT,
    /** {@code 1 / (1 + e^-x)}, computed without overflow. */
    SIGMOID;

    /** The function on one value, in double precision: the reference every backend is held to. */
    public double apply(double x) {
        return switch (this) {
            case EXP -> Math.exp(x);
            case LOG -> Math.log(x);
            case SQRT -> Math.sqrt(x);
            case SIGMOID -> x >= 0 ? 1 / (1 + Math.exp(-x)) : Math.exp(x) / (1 + Math.exp(x));
        };
    }
}
