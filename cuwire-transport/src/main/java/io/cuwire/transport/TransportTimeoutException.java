package io.cuwire.transport;

/**
 * Nothing moved for the configured timeout: connect, handshake, or a stalled read or write in the middle of a
 * message.
 */
public class TransportTimeoutException extends TransportException {
    private static final long serialVersionUID = 1L;

    public TransportTimeoutException(String message) {
        super(message);
    }

    public TransportTimeoutException(String message, Throwable cause) {
        super(message, cause);
    }
}
