package io.cuwire.transport;

import io.cuwire.serialize.Family;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * One authenticated, two-way, ordered connection between two processes (or two parts of one): messages sent on one
 * side arrive whole and in order on the other.
 *
 * <h2>Sending and ownership</h2>
 * {@link #send} borrows the message's frames. Its future completes, with the send's {@link MessageMetrics}, once
 * the transport no longer uses them: the sender keeps every frame open until then and may reuse or close it
 * afterwards. When that is depends on the transport — TCP: the bytes were handed to the socket; in-process: the
 * receiver closed the frames it was lent (no copy was made). A completed future means "done with your memory", not
 * "the peer decoded it". Callbacks attached to the future without an executor run on a transport thread; keep them
 * short.
 *
 * <p>Host frames of heap memory (a Java array's own segment, as the generic serializer hands primitive arrays over)
 * are copied as they are written, chunk by chunk, through a small native staging buffer of the connection's (sockets
 * and UCX take only native memory), never whole; the in-process transport hands them over like any frame.
 *
 * <h2>Backpressure</h2>
 * Messages sent and not yet completed count against {@link TransportConfig#maxBytesInFlight()}. {@code send}
 * blocks its caller while the next message would pass the bound (a message larger than the bound waits until
 * nothing else is in flight), so a slow receiver slows the sender instead of filling its memory.
 *
 * <h2>Receiving</h2>
 * {@link #receive} reads the header, checks it against {@link TransportConfig#limits()}, allocates every frame from
 * {@link TransportConfig#receiveInto()} (device frames on this side's device), then receives the bytes into them.
 * The {@link ReceivedMessage} owns its frames. One thread receives at a time.
 *
 * <h2>Failures</h2>
 * A peer that dies, resets or stalls longer than {@link TransportConfig#ioTimeout()} inside a message, or sends
 * what is not the protocol, breaks the connection: the receive in progress and every pending send fail with the
 * typed {@link TransportException}, frames allocated for the broken message are freed, and the connection closes.
 *
 * <h2>Close policy</h2>
 * {@link #close()} never waits for the peer: it refuses new sends, fails every send not yet completed and a blocked
 * {@code send} or {@code receive} with {@link ConnectionClosedException}, drops messages that arrived but were not
 * received (freeing their frames), releases the transport's staging memory and closes the channel. Messages
 * already received stay valid. Closing twice is harmless. Thread-safe.
 */
public interface Connection extends AutoCloseable {
    /** The transport's name. */
    String transport();

    /** What the peer told in the handshake. */
    Capabilities peer();

    /** The family chain agreed for this connection: the client's chain, less what the server does not take. */
    List<Family> families();

    /**
     * Sends {@code message}; may block while the connection's bytes in flight are at their bound.
     *
     * @return completes with the send's metrics when the frames are free again, or exceptionally with a
     *     {@link TransportException}
     * @throws ConnectionClosedException if the connection is closed (the future is not made)
     */
    CompletableFuture<MessageMetrics> send(Message message);

    /**
     * Waits for the next message, as long as it takes.
     *
     * @throws PeerClosedException if the peer closed or died
     * @throws ProtocolException if the peer sent garbage or more than the limits
     * @throws TransportTimeoutException if a message stalled midway for longer than the I/O timeout
     */
    ReceivedMessage receive();

    /**
     * Waits at most {@code timeout} for the next message to begin. A timeout before the message's first byte
     * leaves the connection usable; once a message has begun, the I/O timeout applies.
     *
     * @throws TransportTimeoutException if no message began in time
     */
    ReceivedMessage receive(Duration timeout);

    /** Header and frame bytes of messages sent and not yet completed. */
    long bytesInFlight();

    /** Whether the connection is still usable. */
    boolean isOpen();

    /** Closes the connection as described above. */
    @Override
    void close();
}
