package io.cuwire.transport;

import java.time.Duration;

/**
 * Accepts connections at one address. {@code accept} returns connections whose peer completed the handshake only: a
 * peer that fails it (a wrong or missing proof, not the protocol, too slow) is closed and logged, once, with the
 * reason, on the {@code io.cuwire.transport.Listener} logger ({@link System.Logger}, {@code WARNING}, rate-limited),
 * and never seen by the caller. Listeners over sockets run handshakes by themselves from the start, each
 * concurrently with the others, with bounds and deadlines that {@link TransportConfig} sets
 * ({@code handshakeTimeout}, {@code maxUnauthenticated}); a peer that stalls its handshake delays nobody else's.
 *
 * <p>Close policy: {@link #close()} stops accepting and makes a pending {@code accept} throw
 * {@link ConnectionClosedException}; connections already accepted live on. Closing twice is harmless. Thread-safe.
 */
public interface Listener extends AutoCloseable {
    /** The address peers connect to, with the port actually bound. */
    String address();

    /**
     * Waits for the next peer that completes the handshake, as the server side.
     *
     * @throws ConnectionClosedException if the listener is or gets closed
     * @throws TransportException if the waiting thread is interrupted
     */
    Connection accept();

    /**
     * Like {@link #accept()}, waiting at most {@code timeout} for a peer to complete its handshake.
     *
     * @throws TransportTimeoutException if none did in time
     * @throws ConnectionClosedException if the listener is or gets closed
     */
    Connection accept(Duration timeout);

    /**
     * The peers connected to this listener whose handshake has not ended yet (neither accepted nor refused): over
     * sockets what {@link TransportConfig}'s {@code maxUnauthenticated} bounds; in-process the connections waiting
     * for {@link #accept}, which runs their handshake. For monitoring and benchmarks; 0 once closed.
     */
    int handshaking();

    /** Stops listening. */
    @Override
    void close();
}
