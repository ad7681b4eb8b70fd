package io.cuwire.onnx;

import java.io.Serial;

/** An estimator that cannot be written as an ONNX model: its kind has no ONNX form, it is not fitted, or too large. */
public final class OnnxExportException extends RuntimeException {
    @Serial
    private static final long serialVersionUID = 1L;

    /** An export refused for the reason {@code message} gives. */
    public OnnxExportException(String message) {
        super(message);
    }
}
