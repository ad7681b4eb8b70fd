package io.cuwire.serialize;

/**
 * Raised at the sender when no family of the chain can take a value: names the value's class and the field path
 * from the root (e.g. {@code KMeans.state.centers}), so the fault is found before anything is sent.
 */
public class UnserializableException extends SerializationException {
    private static final long serialVersionUID = 1L;

    public UnserializableException(String message, String path) {
        super(message + " (at " + path + ")", path, null);
    }

    public UnserializableException(String message, String path, Throwable cause) {
        super(message + " (at " + path + ")", path, cause);
    }
}
