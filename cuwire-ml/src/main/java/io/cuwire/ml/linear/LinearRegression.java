package io.cuwire.ml.linear;

import io.cuwire.memory.NdArray;
import io.cuwire.serialize.WireType;
import java.io.Serial;
import java.util.List;

/**
 * Ordinary least squares (scikit-learn's {@code LinearRegression}). A singular system gets the minimum-norm
 * solution, as {@code lstsq} gives.
 */
@WireType("cuwire.ml.LinearRegression")
public final class LinearRegression extends LinearModel {
    @Serial
    private static final long serialVersionUID = 1L;

    /** A model with an intercept. */
    public LinearRegression() {}

    /** Sets whether to fit an intercept; returns this. */
    public LinearRegression fitIntercept(boolean value) {
        fitIntercept = value;
        return this;
    }

    @Override
    public LinearRegression fit(NdArray x, NdArray y) {
        super.fit(x, y);
        return this;
    }

    @Override
    public LinearRegression merge(List<LinearStats> parts) {
        super.merge(parts);
        return this;
    }

    @Override
    public LinearRegression adoptFitted(NdArray coef, double intercept) {
        super.adoptFitted(coef, intercept);
        return this;
    }

    @Override
    double penalty() {
        return 0;
    }
}
