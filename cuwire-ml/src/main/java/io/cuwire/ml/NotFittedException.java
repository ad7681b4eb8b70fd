package io.cuwire.ml;

/** An estimator was asked to predict, transform or score before it was fitted (or after it was closed). */
public class NotFittedException extends IllegalStateException {
    private static final long serialVersionUID = 1L;

    public NotFittedException(String message) {
        super(message);
    }
}
