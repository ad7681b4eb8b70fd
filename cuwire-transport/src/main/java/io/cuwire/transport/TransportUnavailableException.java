package io.cuwire.transport;

/**
 * A transport cannot run in this process because what it needs is not installed: the message names the missing
 * library and how to get it, e.g. {@code UCX not available: libucp.so.0 not found; install libucx0}. Nothing was
 * connected; other transports still work.
 */
public class TransportUnavailableException extends TransportException {
    private static final long serialVersionUID = 1L;

    public TransportUnavailableException(String message) {
        super(message);
    }

    public TransportUnavailableException(String message, Throwable cause) {
        super(message, cause);
    }
}
