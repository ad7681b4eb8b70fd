package io.cuwire.serialize;

/** A header names a type this registry does not know; raised before any class is looked up or instantiated. */
public class UnknownTypeException extends SerializationException {
    private static final long serialVersionUID = 1L;

    public UnknownTypeException(String message) {
        super(message);
    }

    /** An unknown type at {@code path} in the value: the message ends with {@code at <path>}. */
    public UnknownTypeException(String message, String path) {
        super(message + " at " + path, path, null);
    }
}
