package io.cuwire.transport;

/**
 * The peer refused a message this side sent — a header beyond its limits, malformed, or otherwise not what it
 * accepts — and closed the connection after saying why. Pending sends, the receive in progress and later uses of
 * the connection fail with this instead of a bare {@link PeerClosedException}.
 */
public class MessageRefusedException extends TransportException {
    /** The longest reason a peer may send, in UTF-8 bytes; a longer one is cut. */
    public static final int MAX_REASON_BYTES = 1024;

    private static final long serialVersionUID = 1L;

    private final String reason;

    /**
     * @param message the whole message, naming the peer and the reason
     * @param reason the peer's reason, as it sent it
     */
    public MessageRefusedException(String message, String reason) {
        super(message);
        this.reason = reason;
    }

    /** Like {@link #MessageRefusedException(String, String)}, as a copy of {@code cause} (the first report). */
    public MessageRefusedException(String message, String reason, Throwable cause) {
        super(message, cause);
        this.reason = reason;
    }

    /**
     * The peer's reason: its exception's simple class name and message, e.g. {@code LimitExceededException: header
     * of 2097152 bytes exceeds the limit of 65536}; at most {@value #MAX_REASON_BYTES} bytes of UTF-8.
     */
    public String reason() {
        return reason;
    }
}
