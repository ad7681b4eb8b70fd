package io.cuwire.transport;

/**
 * The peer failed the handshake's proof of the cluster secret (or offered none where one is required); it was
 * closed before any of its message bytes were read.
 */
public class AuthenticationException extends TransportException {
    private static final long serialVersionUID = 1L;

    public AuthenticationException(String message) {
        super(message);
    }

    public AuthenticationException(String message, Throwable cause) {
        super(message, cause);
    }
}
