package io.cuwire.transport;

/**
 * The peer sent bytes that are not the cuwire protocol, an incompatible version, or a header or frame beyond this
 * side's limits; refused before anything beyond the limits was allocated. The peer is told why (it gets a
 * {@link MessageRefusedException}).
 */
public class ProtocolException extends TransportException {
    private static final long serialVersionUID = 1L;

    public ProtocolException(String message) {
        super(message);
    }

    public ProtocolException(String message, Throwable cause) {
        super(message, cause);
    }
}
