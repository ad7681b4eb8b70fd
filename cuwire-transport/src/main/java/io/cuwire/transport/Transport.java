package io.cuwire.transport;

/**
 * One way of moving messages: TCP, in-process (later UCX and CUDA IPC). A transport makes listeners and connections
 * from addresses of its own scheme ({@code tcp://host:port}, {@code inproc://name}); every connection starts with
 * the handshake (format version, proof of the cluster secret, capabilities, family chain) before any message moves.
 * Transports hold no state of their own beyond their listeners and connections; thread-safe.
 *
 * <p>Every implementation passes the transport conformance suite.
 */
public interface Transport {
    /** The transport's name and address scheme, e.g. {@code tcp}. */
    String name();

    /**
     * Starts listening at {@code address} ({@code tcp://127.0.0.1:0} picks a free port; see
     * {@link Listener#address()} for the one bound).
     *
     * @throws TransportException if the address is taken or malformed
     */
    Listener listen(String address, TransportConfig config);

    /**
     * Connects to a listener and runs the handshake, as the client side.
     *
     * @throws AuthenticationException if either side's proof of the secret fails
     * @throws ProtocolViolationException if the peer does not speak the protocol or a compatible version
     * @throws TransportTimeoutException if connecting or the handshake takes longer than configured
     * @throws TransportException if nothing listens there
     */
    Connection connect(String address, TransportConfig config);
}
