package io.cuwire.memory;

/** A copy was refused (bad range, closed buffer, unsupported pair of devices) or failed on the device. */
public class CopyException extends MemoryException {
    private static final long serialVersionUID = 1L;

    public CopyException(String message) {
        super(message);
    }

    public CopyException(String message, Throwable cause) {
        super(message, cause);
    }
}
