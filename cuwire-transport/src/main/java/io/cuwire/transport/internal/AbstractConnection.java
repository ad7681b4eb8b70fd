package io.cuwire.transport.internal;

import io.cuwire.serialize.Family;
import io.cuwire.transport.Capabilities;
import io.cuwire.transport.Connection;
import io.cuwire.transport.Message;
import io.cuwire.transport.MessageMetrics;
import io.cuwire.transport.ReceivedMessage;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * What every transport's connection does the same way: its name, the peer and the family chain as the handshake
 * established them, the sender's family check before {@link #sendUnchecked}, and {@link #receive()} as a receive
 * without timeout. The rest is shared by composition: the failure and close policy and the bytes in flight
 * ({@link ConnectionState}), the send queue ({@link SendQueue}), framing ({@link Frames}) and metrics
 * ({@link MessageRecorder}).
 */
public abstract class AbstractConnection implements Connection, UncheckedSend {
    private final String transport;

    /** A connection of the transport named {@code transport} ({@code tcp}). */
    protected AbstractConnection(String transport) {
        this.transport = transport;
    }

    /** What the handshake established; asked only after it completed. */
    protected abstract Handshake.Result handshake();

    /** The peer as error messages name it: its address. */
    protected abstract String peerName();

    @Override
    public final String transport() {
        return transport;
    }

    @Override
    public final Capabilities peer() {
        return handshake().peer();
    }

    @Override
    public final List<Family> families() {
        return handshake().families();
    }

    @Override
    public final CompletableFuture<MessageMetrics> send(Message message) {
        Frames.checkSendable(message, handshake().families(), peerName());
        return sendUnchecked(message);
    }

    @Override
    public final ReceivedMessage receive() {
        return receive(null);
    }
}
