package io.cuwire.serialize;

/** The header's format version, or a type's version, is newer than this reader understands. */
public class IncompatibleVersionException extends SerializationException {
    private static final long serialVersionUID = 1L;

    public IncompatibleVersionException(String message) {
        super(message);
    }

    /** A type version at {@code path} in the value that is too new: the message ends with {@code at <path>}. */
    public IncompatibleVersionException(String message, String path) {
        super(message + " at " + path, path, null);
    }
}
