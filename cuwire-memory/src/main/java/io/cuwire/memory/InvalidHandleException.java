package io.cuwire.memory;

/**
 * A device refused to open an {@link IpcHandle}: made by another platform, malformed, naming no allocation that a
 * device of the platform issued (or one this process may not open), or reaching past the allocation it names. Nothing
 * was mapped.
 */
public class InvalidHandleException extends MemoryException {
    private static final long serialVersionUID = 1L;

    public InvalidHandleException(String message) {
        super(message);
    }

    public InvalidHandleException(String message, Throwable cause) {
        super(message, cause);
    }
}
