package io.cuwire.serialize;

import io.cuwire.memory.Buffer;
import io.cuwire.memory.MemoryKind;
import java.util.Objects;

/**
 * One out-of-band frame: a buffer as it is (device memory stays device memory), never copied to be serialized —
 * except where the copy is the point or cannot be avoided: the {@code host} family's host copies of device memory, the
 * {@code java} family's stream, and a {@code boolean[]}, which the JVM offers no byte view of and which is packed into
 * a byte copy. A primitive array's frame is the array's own heap memory; a transport between processes copies it
 * chunk by chunk through native staging memory as it sends it (sockets and UCX take only native memory), never whole.
 *
 * @param buffer the bytes
 * @param owned whether the {@link Serialized} that holds this frame owns the buffer (a host copy it made, a buffer a
 *     transport received) and must close it; {@code false} when the frame is a value's own memory
 */
public record Frame(Buffer buffer, boolean owned) {
    public Frame {
        Objects.requireNonNull(buffer, "buffer");
    }

    /** Where the bytes are. */
    public MemoryKind kind() {
        return buffer.kind();
    }

    /** The device holding them, or {@link Buffer#HOST_ORDINAL}. */
    public int deviceOrdinal() {
        return buffer.deviceOrdinal();
    }

    /** Length in bytes. */
    public long length() {
        return buffer.byteSize();
    }
}
