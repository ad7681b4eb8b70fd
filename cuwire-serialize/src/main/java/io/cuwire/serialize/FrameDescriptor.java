package io.cuwire.serialize;

import io.cuwire.memory.Buffer;
import io.cuwire.memory.MemoryKind;

/**
 * What a receiver needs to know about a frame before its bytes arrive: where it lived at the sender, how long it is
 * and, for a frame that is a Java primitive array's memory, the array's type. The receiver allocates each frame from
 * its own memory of the same kind; a byte-stream transport takes a frame with an array type into a fresh array of
 * that type, which the decoder then returns as the array itself.
 *
 * @param kind the sender's memory kind
 * @param deviceOrdinal the sender's device, or {@link Buffer#HOST_ORDINAL}
 * @param length bytes
 * @param arrayType the type of the primitive array whose whole memory the frame is, or {@code null} for a frame of
 *     bytes; only for host frames, whose length is a whole number of elements, at most
 *     {@link PrimitiveArrayType#MAX_LENGTH}
 */
public record FrameDescriptor(MemoryKind kind, int deviceOrdinal, long length, PrimitiveArrayType arrayType) {
    /**
     * Checks the components.
     *
     * @throws IllegalArgumentException if {@code length} is negative, or an array type is given for a frame that is
     *     not host memory or whose length is not a whole number of its elements (at most
     *     {@link PrimitiveArrayType#MAX_LENGTH})
     */
    public FrameDescriptor {
        if (length < 0) {
            throw new IllegalArgumentException("length: " + length + " (expected: >= 0)");
        }
        String wrong = arrayType == null ? null : arrayFrameProblem(kind, deviceOrdinal, length, arrayType);
        if (wrong != null) {
            throw new IllegalArgumentException(wrong);
        }
    }

    /** A frame of bytes: no array type. */
    public FrameDescriptor(MemoryKind kind, int deviceOrdinal, long length) {
        this(kind, deviceOrdinal, length, null);
    }

    /** The descriptor of {@code frame}. */
    public static FrameDescriptor of(Frame frame) {
        return new FrameDescriptor(frame.kind(), frame.deviceOrdinal(), frame.length(), frame.arrayType());
    }

    /** The elements of the array a frame with an {@link #arrayType()} holds. */
    public int arrayLength() {
        if (arrayType == null) {
            throw new IllegalStateException(this + " is a frame of bytes, not an array");
        }
        return (int) (length / arrayType.elementSize());
    }

    /** Why a frame of {@code kind}, {@code device} and {@code length} cannot be an array of {@code type}, or null. */
    static String arrayFrameProblem(MemoryKind kind, int device, long length, PrimitiveArrayType type) {
        if (kind != MemoryKind.HOST || device != Buffer.HOST_ORDINAL) {
            return "a " + type.tag() + " frame of " + kind + " memory on device " + device + " (expected: HOST memory, "
                    + "device " + Buffer.HOST_ORDINAL + ")";
        }
        if (length % type.elementSize() != 0) {
            return "a " + type.tag() + " frame of " + length + " bytes, not a whole number of " + type.elementSize()
                    + "-byte elements";
        }
        if (length / type.elementSize() > PrimitiveArrayType.MAX_LENGTH) {
            return "a " + type.tag() + " frame of " + length / type.elementSize() + " elements, more than an array "
                    + "holds (" + PrimitiveArrayType.MAX_LENGTH + ")";
        }
        return null;
    }
}
