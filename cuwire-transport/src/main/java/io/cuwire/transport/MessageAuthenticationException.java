package io.cuwire.transport;

/**
 * A record of the peer, after a handshake that derived session keys, failed its message authentication code: bytes
 * changed on the way, a record replayed, reordered or taken from another connection. Nothing of the record was
 * parsed, allocated or mapped. The connection is closed; the peer is told why (it gets a
 * {@link MessageRefusedException}).
 */
public class MessageAuthenticationException extends ProtocolViolationException {
    private static final long serialVersionUID = 1L;

    public MessageAuthenticationException(String message) {
        super(message);
    }
}
