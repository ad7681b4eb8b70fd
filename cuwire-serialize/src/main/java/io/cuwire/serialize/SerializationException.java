package io.cuwire.serialize;

/**
 * Root of the serialization layer's exceptions: every failure to encode or decode a value is one of these. A failure
 * inside a value says where: {@link #path()}.
 */
public class SerializationException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** Set once: by the constructor, or by the decoder for a failure a serializer raised inside the value. */
    private String path;

    public SerializationException(String message) {
        super(message);
    }

    public SerializationException(String message, Throwable cause) {
        super(message, cause);
    }

    /**
     * A failure at {@code path} in the value; the message is {@code message} as given, so it should name the path
     * itself (the decoder's messages end with {@code at <path>}).
     */
    protected SerializationException(String message, String path, Throwable cause) {
        super(message, cause);
        this.path = path;
    }

    /**
     * Where in the value it failed: the field path from the root, as {@code root.layers[2].weights} for a decode
     * ({@code root} is the message's root value) and {@code KMeans.state.centers} for an encode; {@code null} when
     * the failure is not at one value (a header that is not msgpack, a limit on the whole message).
     */
    public String path() {
        return path;
    }

    /** Records where a failure raised without a path happened; a path already known is kept. */
    SerializationException locate(String where) {
        if (path == null) {
            path = where;
        }
        return this;
    }
}
