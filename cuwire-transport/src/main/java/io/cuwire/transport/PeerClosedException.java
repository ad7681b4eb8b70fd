package io.cuwire.transport;

/**
 * The peer closed the connection, died, or reset it; pending sends and the receive in progress fail with this (with
 * {@link MessageRefusedException} instead when the peer closed because it refused a message of this side).
 */
public class PeerClosedException extends TransportException {
    private static final long serialVersionUID = 1L;

    public PeerClosedException(String message) {
        super(message);
    }

    public PeerClosedException(String message, Throwable cause) {
        super(message, cause);
    }
}
