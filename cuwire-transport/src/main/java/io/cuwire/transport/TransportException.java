package io.cuwire.transport;

/**
 * Root of the transport layer's exceptions. Every failure of a connection, listener or send is one of these:
 * <ul>
 *   <li>{@link AuthenticationException}: the peer did not prove the cluster secret;</li>
 *   <li>{@link ProtocolViolationException}: bytes that are not the protocol, or more than the limits;</li>
 *   <li>{@link PeerClosedException}: the peer went away (closed, died, reset the connection);</li>
 *   <li>{@link MessageRefusedException}: the peer refused a message this side sent, said why, and closed;</li>
 *   <li>{@link TransportTimeoutException}: nothing moved for the configured timeout;</li>
 *   <li>{@link ConnectionClosedException}: this side closed the connection while the operation was pending;</li>
 *   <li>{@link TransportUnavailableException}: the transport's native library is not installed here.</li>
 * </ul>
 * Other causes (a receiver that cannot allocate a frame, an interrupted caller) are plain
 * {@code TransportException}s with the cause attached. After any of these but a timeout of
 * {@link Connection#receive(java.time.Duration)} before a message began, the connection is broken and closed.
 */
public class TransportException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public TransportException(String message) {
        super(message);
    }

    public TransportException(String message, Throwable cause) {
        super(message, cause);
    }
}
