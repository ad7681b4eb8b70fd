package io.cuwire.transport.internal;

import io.cuwire.memory.Buffer;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.MemoryKind;
import io.cuwire.serialize.FrameDescriptor;
import io.cuwire.serialize.LimitExceededException;
import io.cuwire.serialize.SerializationException;
import io.cuwire.serialize.Serialized;
import io.cuwire.transport.ProtocolException;
import io.cuwire.transport.TransportConfig;
import io.cuwire.transport.TransportException;
import java.util.ArrayList;
import java.util.List;

/**
 * The receiving side's checks every transport makes the same way: a declared header against the limits before
 * anything is allocated, the header itself, then the frames from {@link TransportConfig#receiveInto()}; and the
 * frame lists its metrics are made of.
 */
public final class Frames {
    private Frames() {
    }

    /** Refuses a header of {@code headerLength} bytes declared by {@code peer} beyond the limits. */
    public static void checkHeaderLength(int headerLength, TransportConfig config, String peer) {
        if (headerLength < 0 || headerLength > config.limits().maxHeaderBytes()) {
            throw new ProtocolException("peer " + peer + " declared a header of " + headerLength
                    + " bytes", new LimitExceededException("header of " + headerLength
                    + " bytes exceeds the limit of " + config.limits().maxHeaderBytes()));
        }
    }

    /** The header of a message from {@code peer}, checked against the limits. */
    public static Serialized.Header parseHeader(byte[] headerBytes, TransportConfig config, String peer) {
        try {
            return Serialized.parseHeader(headerBytes, config.limits());
        } catch (SerializationException e) {
            throw new ProtocolException("refused a message from " + peer + ": " + e.getMessage(), e);
        }
    }

    /**
     * Allocates the frames of {@code header} into {@code frames}, one by one, so that a failure leaves what was
     * allocated there to be freed.
     *
     * @param sameMemory whether a frame must also be device memory exactly where the descriptor says so
     */
    public static void allocate(Serialized.Header header, TransportConfig config, String peer, boolean sameMemory,
            List<Buffer> frames) {
        for (FrameDescriptor d : header.frames()) {
            Buffer b;
            try {
                b = config.receiveInto().allocate(d);
            } catch (RuntimeException e) {
                throw new TransportException("cannot allocate frame " + frames.size() + " (" + d + ") of a "
                        + "message from " + peer + ": " + e.getMessage(), e);
            }
            frames.add(b);
            if (b.byteSize() != d.length()
                    || sameMemory && (b.kind() == MemoryKind.DEVICE) != (d.kind() == MemoryKind.DEVICE)) {
                throw new TransportException("frame allocator returned " + b.describe() + " for " + d);
            }
            if (b instanceof HostBuffer h && !h.segment().isNative()) {
                throw new TransportException("frame allocator returned " + b.describe() + " of heap memory for " + d
                        + ": host frames are received into native memory (a BufferAllocator's)");
            }
        }
    }

    /** Closes every frame still open: a message that failed midway. */
    public static void closeOpen(List<? extends Buffer> frames) {
        for (Buffer b : frames) {
            if (b.isOpen()) {
                b.close();
            }
        }
    }

    /** The kinds of {@code frames}, in order. */
    public static List<MemoryKind> kinds(List<? extends Buffer> frames) {
        List<MemoryKind> k = new ArrayList<>(frames.size());
        for (Buffer b : frames) {
            k.add(b.kind());
        }
        return k;
    }

    /** The lengths of {@code frames}, in order. */
    public static List<Long> lengths(List<? extends Buffer> frames) {
        List<Long> l = new ArrayList<>(frames.size());
        for (Buffer b : frames) {
            l.add(b.byteSize());
        }
        return l;
    }
}
