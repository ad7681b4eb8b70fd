package io.cuwire.serialize;

import io.cuwire.memory.Buffer;
import io.cuwire.memory.HostBuffer;
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
 * @param arrayType the type of the Java primitive array whose whole memory {@code buffer} is, or {@code null}: set by
 *     the encoder on a primitive array's frame (the header's descriptor then names the type), and by a byte-stream
 *     transport on a frame it received into a fresh array of its own. An owned frame with an array type is an array
 *     nobody else holds, which the decoder returns as the value itself; a frame that lends another's array (the
 *     in-process transport's) has none
 */
public record Frame(Buffer buffer, boolean owned, PrimitiveArrayType arrayType) {
    /**
     * Checks the components.
     *
     * @throws IllegalArgumentException if {@code arrayType} is given and {@code buffer} is not the whole memory of an
     *     array of that type
     */
    public Frame {
        Objects.requireNonNull(buffer, "buffer");
        if (arrayType != null && !(buffer instanceof HostBuffer h && arrayType.isWholeArray(h.segment()))) {
            throw new IllegalArgumentException(buffer.describe() + " is not the whole memory of a "
                    + arrayType.arrayClass().getTypeName());
        }
    }

    /** A frame of bytes: no array type. */
    public Frame(Buffer buffer, boolean owned) {
        this(buffer, owned, null);
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
