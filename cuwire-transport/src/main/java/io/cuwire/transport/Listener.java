package io.cuwire.transport;

import java.time.Duration;

/**
 * Accepts connections at one address. A failed handshake of one peer fails that {@code accept} with the typed
 * exception (the peer is already closed) and leaves the listener open for the next.
 *
 * <p>Close policy: {@link #close()} stops accepting and makes a pending {@code accept} throw
 * {@link ConnectionClosedException}; connections already accepted live on. Closing twice is harmless. Thread-safe.
 */
public interface Listener extends AutoCloseable {
    /** The address peers connect to, with the port actually bound. */
    String address();

    /**
     * Waits for the next peer and runs the handshake, as the server side.
     *
     * @throws AuthenticationException if the peer's proof of the secret fails
     * @throws ProtocolException if the peer sends what is not the protocol
     * @throws TransportTimeoutException if the handshake takes longer than configured
     * @throws ConnectionClosedException if the listener is or gets closed
     */
    Connection accept();

    /**
     * Like {@link #accept()}, waiting at most {@code timeout} for a peer to arrive.
     *
     * @throws TransportTimeoutException if no peer arrived in time
     */
    Connection accept(Duration timeout);

    /** Stops listening. */
    @Override
    void close();
}
