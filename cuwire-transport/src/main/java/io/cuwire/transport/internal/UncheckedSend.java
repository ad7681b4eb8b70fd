package io.cuwire.transport.internal;

import io.cuwire.transport.Message;
import io.cuwire.transport.MessageMetrics;
import java.util.concurrent.CompletableFuture;

/**
 * A connection's send without the sender's family check ({@link Frames#checkSendable}); {@code send} is this after
 * the check. The receiver's check ({@link Frames#parseHeader}) is the one that must hold, whatever a peer sends: tests
 * send through this what a peer that does not check would. Not for applications.
 */
public interface UncheckedSend {
    /** Sends {@code message} as {@link io.cuwire.transport.Connection#send} does, less the family check. */
    CompletableFuture<MessageMetrics> sendUnchecked(Message message);
}
