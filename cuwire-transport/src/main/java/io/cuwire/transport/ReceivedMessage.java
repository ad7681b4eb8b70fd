package io.cuwire.transport;

import io.cuwire.serialize.Serialized;
import java.util.Objects;

/**
 * A message as it arrived: the value (header and frames, the frames owned by it, in the receiver's memory) and what
 * receiving it cost. Closing it closes the value, which closes every frame a decoder did not take.
 *
 * @param value the received value; decode it with {@link io.cuwire.serialize.TypeRegistry#deserialize}
 * @param metrics bytes, time and copies of this message
 */
public record ReceivedMessage(Serialized value, MessageMetrics metrics) implements AutoCloseable {
    public ReceivedMessage {
        Objects.requireNonNull(value, "value");
        Objects.requireNonNull(metrics, "metrics");
    }

    /** Closes the value (and the frames no decoder took). */
    @Override
    public void close() {
        value.close();
    }
}
