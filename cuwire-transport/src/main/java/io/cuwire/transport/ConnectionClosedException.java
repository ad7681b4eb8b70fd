package io.cuwire.transport;

/** This side closed the connection (or listener) while the operation was pending or after it was closed. */
public class ConnectionClosedException extends TransportException {
    private static final long serialVersionUID = 1L;

    public ConnectionClosedException(String message) {
        super(message);
    }

    public ConnectionClosedException(String message, Throwable cause) {
        super(message, cause);
    }
}
