package io.cuwire.serialize;

/** A header names a type this registry does not know; raised before any class is looked up or instantiated. */
public class UnknownTypeException extends SerializationException {
    private static final long serialVersionUID = 1L;

    public UnknownTypeException(String message) {
        super(message);
    }
}
