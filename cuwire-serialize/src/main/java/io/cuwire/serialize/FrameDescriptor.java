package io.cuwire.serialize;

import io.cuwire.memory.Buffer;
import io.cuwire.memory.MemoryKind;

/**
 * What a receiver needs to know about a frame before its bytes arrive: where it lived at the sender and how long
 * it is. The receiver allocates each frame from its own memory of the same kind.
 *
 * @param kind the sender's memory kind
 * @param deviceOrdinal the sender's device, or {@link Buffer#HOST_ORDINAL}
 * @param length bytes
 */
public record FrameDescriptor(MemoryKind kind, int deviceOrdinal, long length) {
    public FrameDescriptor {
        if (length < 0) {
            throw new IllegalArgumentException("length: " + length + " (expected: >= 0)");
        }
    }

    /** The descriptor of {@code frame}. */
    public static FrameDescriptor of(Frame frame) {
        return new FrameDescriptor(frame.kind(), frame.deviceOrdinal(), frame.length());
    }
}
