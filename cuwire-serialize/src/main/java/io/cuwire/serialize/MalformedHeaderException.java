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

    /** A malformed node at {@code path} in the value: the message ends with {@code at <path>}. */
    public MalformedHeaderException(String message, String path) {
        super(message + " at " + path, path, null);
    }

    /** Like {@link #MalformedHeaderException(String, String)}, with the failure that made the node unreadable. */
    public MalformedHeaderException(String message, String path, Throwable cause) {
        super(message + " at " + path, path, cause);
    }
}
