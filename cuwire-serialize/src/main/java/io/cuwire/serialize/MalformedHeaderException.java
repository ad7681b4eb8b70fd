package io.cuwire.serialize;

/** Header bytes that are not valid msgpack, or not the shape cuwire writes; nothing was instantiated. */
public class MalformedHeaderException extends SerializationException {
    private static final long serialVersionUID = 1L;

    public MalformedHeaderException(String message) {
        super(message);
    }

    public MalformedHeaderException(String message, Throwable cause) {
        super(message, cause);
    }
}
