package io.cuwire.serialize;

/** Root of the serialization layer's exceptions: every failure to encode or decode a value is one of these. */
public class SerializationException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public SerializationException(String message) {
        super(message);
    }

    public SerializationException(String message, Throwable cause) {
        super(message, cause);
    }
}
