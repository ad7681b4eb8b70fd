package io.cuwire.memory.spi;

/** A device platform can't be used on this machine; the message says why (for the log and {@code cuwire info}). */
public class DeviceUnavailableException extends Exception {
    private static final long serialVersionUID = 1L;

    public DeviceUnavailableException(String message) {
        super(message);
    }

    public DeviceUnavailableException(String message, Throwable cause) {
        super(message, cause);
    }
}
