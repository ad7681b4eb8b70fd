package io.cuwire.memory;

/** Root of the memory layer's exceptions: allocation limits, leaks, failed copies, unavailable devices. */
public class MemoryException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public MemoryException(String message) {
        super(message);
    }

    public MemoryException(String message, Throwable cause) {
        super(message, cause);
    }
}
