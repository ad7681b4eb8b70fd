package io.cuwire.ml.linear;

import io.cuwire.memory.NdArray;
import io.cuwire.ml.Param;
import io.cuwire.serialize.WireType;
import java.io.Serial;
import java.util.List;

/** Least squares with an L2 penalty {@code alpha ||w||²} on the coefficients (scikit-learn's {@code Ridge}). */
@WireType("cuwire.ml.Ridge")
public final class Ridge extends LinearModel {
    @Serial
    private static final long serialVersionUID = 1L;

    /** The penalty's strength, {@code >= 0}. */
    @Param
    double alpha = 1.0;

    /** A model with {@code alpha = 1} and an intercept. */
    public Ridge() {}

    /** Sets the penalty's strength; returns this. */
    public Ridge alpha(double value) {
        if (!(value >= 0)) {
            throw new IllegalArgumentException("alpha: " + value + " (expected: >= 0)");
        }
        alpha = value;
        return this;
    }

    /** Sets whether to fit an intercept; returns this. */
    public Ridge fitIntercept(boolean value) {
        fitIntercept = value;
        return this;
    }

    @Override
    public Ridge fit(NdArray x, NdArray y) {
        super.fit(x, y);
        return this;
    }

    @Override
    public Ridge merge(List<LinearStats> parts) {
        super.merge(parts);
        return this;
    }

    @Override
    public Ridge adoptFitted(NdArray coef, double intercept) {
        super.adoptFitted(coef, intercept);
        return this;
    }

    @Override
    double penalty() {
        return alpha;
    }
}
