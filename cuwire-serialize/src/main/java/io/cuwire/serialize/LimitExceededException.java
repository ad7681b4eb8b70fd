package io.cuwire.serialize;

/** A header, frame count, depth or frame size beyond the configured {@link Limits}; refused before allocating. */
public class LimitExceededException extends SerializationException {
    private static final long serialVersionUID = 1L;

    public LimitExceededException(String message) {
        super(message);
    }

    public LimitExceededException(String message, Throwable cause) {
        super(message, cause);
    }

    /** A limit passed at {@code path} in the value: the message ends with {@code at <path>}. */
    public LimitExceededException(String message, String path) {
        super(message + " at " + path, path, null);
    }
}
