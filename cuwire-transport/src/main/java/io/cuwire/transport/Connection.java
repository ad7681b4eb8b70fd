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
 * {@link #receive} reads the header, checks it against {@link TransportConfig#limits()} and against the connection
 * (its format version, and that it uses only the agreed {@link #families()}: else {@link FamilyRefusedException}),
 * allocates every frame from
 * {@link TransportConfig#receiveInto()} (device frames on this side's device), then receives the bytes into them.
 * The socket transports ({@code tcp}, {@code ipc}) allocate each frame as its bytes begin, and take a frame that was
 * a Java primitive array at the sender into a fresh array of that type instead (see {@link FrameAllocator}), which
 * the decoder keeps without a copy. The {@link ReceivedMessage} owns its frames. One thread receives at a time.
 *
 * <h2>Failures</h2>
 * A peer that dies, resets or stalls longer than {@link TransportConfig#ioTimeout()} inside a message, or sends
 * what is not the protocol, breaks the connection: the receive in progress and every pending send fail with the
 * typed {@link TransportException}, frames allocated for the broken message are freed, and the connection closes.
 *
 * <p>A message the receiver refuses — a header or frame beyond its {@link TransportConfig#limits()}, a malformed
 * header, one it does not take — is refused before anything beyond the limits is allocated: the receiver's
 * {@code receive} throws {@link ProtocolViolationException}, and before the connection closes the receiver tells the
 * sender why in one small record (its reason, at most {@value MessageRefusedException#MAX_REASON_BYTES} bytes; sent
 * only on an authenticated connection, as every message is). The sender's pending sends, its receive in progress
 * and its later {@code send} and {@code receive} then fail with {@link MessageRefusedException} carrying that reason,
 * instead of a bare {@link PeerClosedException}. A send whose future had completed stays completed (its frames were
 * done with); the reason arrives with the sender's next {@code receive} — or, where receiving is the caller's own
 * ({@code tcp}), with a later {@code send} when no {@code receive} runs. The receiver keeps its end open a short
 * while (dropping what the sender still sends) so that the record reaches the sender before the connection ends; the
 * record is best effort, and a sender whose connection was reset before the record left the receiver sees only
 * {@link PeerClosedException}.
 *
 * <p>A message the transport delivered but the application cannot decode ({@code TypeRegistry.deserialize}: an
 * unknown type, a refused family, a value beyond its limits) is not the transport's to report: the connection stays
 * usable, and telling the sender is the application's — cuwire-cluster's request/reply layer answers such a request
 * with the error and its field path.
 *
 * <h2>Close policy</h2>
 * {@link #close()} never waits for the peer: it refuses new sends, fails every send not yet completed and a blocked
 * {@code send} or {@code receive} with {@link ConnectionClosedException}, drops messages that arrived but were not
 * received (freeing their frames), releases the transport's staging memory and closes the channel (ending the wait
 * for the peer after a refusal). Messages already received stay valid. Closing twice is harmless. Thread-safe.
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
     * @throws MessageRefusedException if the peer refused a message this side sent (see "Failures")
     * @throws FamilyRefusedException if the message uses a family outside {@link #families()}, which the receiver
     *     would refuse; nothing is sent and the connection stays usable
     */
    CompletableFuture<MessageMetrics> send(Message message);

    /**
     * Waits for the next message, as long as it takes.
     *
     * @throws PeerClosedException if the peer closed or died
     * @throws ProtocolViolationException if the peer sent garbage or more than the limits
     * @throws MessageRefusedException if the peer refused a message this side sent
     * @throws FamilyRefusedException if the message uses a family the connection did not agree (refused before any
     *     of its frames was allocated)
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
