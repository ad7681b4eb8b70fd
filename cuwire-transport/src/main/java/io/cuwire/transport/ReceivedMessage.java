package io.cuwire.transport;

import io.cuwire.serialize.Serialized;
import java.util.Objects;

/**
 * A message as it arrived: the value (header and frames, the frames owned by it, in the receiver's memory) and what
 * receiving it cost. Closing it closes the value, which closes every frame a decoder did not take; closing it twice is
 * an error, as for the value.
 *
 * @param value the received value; decode it with {@link io.cuwire.serialize.TypeRegistry#deserialize}
 * @param metrics bytes, time and copies of this message
 */
public record ReceivedMessage(Serialized value, MessageMetrics metrics) implements AutoCloseable {
    public ReceivedMessage {
        Objects.requireNonNull(value, "value");
        Objects.requireNonNull(metrics, "metrics");
    }

    /**
     * Closes the value (and the frames no decoder took).
     *
     * @throws IllegalStateException if the value is already closed (this message closed twice, or its value closed
     *     on its own before)
     */
    @Override
    public void close() {
        value.close();
    }
}
