package io.cuwire.transport;

/**
 * The peer sent bytes that are not the cuwire protocol, an incompatible version, or a header or frame beyond this
 * side's limits; refused before anything beyond the limits was allocated. The peer is told why (it gets a
 * {@link MessageRefusedException}).
 */
public class ProtocolViolationException extends TransportException {
    private static final long serialVersionUID = 1L;

    public ProtocolViolationException(String message) {
        super(message);
    }

    public ProtocolViolationException(String message, Throwable cause) {
        super(message, cause);
    }
}
