package io.cuwire.transport.internal;

import io.cuwire.memory.Buffer;
import io.cuwire.memory.MemoryKind;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.FrameDescriptor;
import io.cuwire.serialize.IncompatibleVersionException;
import io.cuwire.serialize.LimitExceededException;
import io.cuwire.serialize.SerializationException;
import io.cuwire.serialize.Serialized;
import io.cuwire.transport.FamilyRefusedException;
import io.cuwire.transport.Message;
import io.cuwire.transport.ProtocolException;
import io.cuwire.transport.TransportConfig;
import io.cuwire.transport.TransportException;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * The checks every transport makes the same way: on the receiving side a declared header against the limits before
 * anything is allocated, the header itself (format version and families included), then the frames from
 * {@link TransportConfig#receiveInto()}; on the sending side a message's families; and the frame lists its metrics
 * are made of.
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

    /**
     * The header of a message from {@code peer}, checked as {@link Serialized#parseHeader} checks it (limits, checksum,
     * shape), then held to the connection: it must be of the format version the handshake agreed
     * ({@link Serialized#FORMAT_VERSION}; a version-1 header lists no families and could carry any), and it may use
     * only the families of the connection's agreed chain — all before any frame is allocated.
     *
     * @param accepted the connection's agreed family chain ({@link Handshake.Result#families()})
     * @throws FamilyRefusedException if the header uses a family outside {@code accepted}
     * @throws ProtocolException if the header is refused for any other reason (its cause says why)
     */
    public static Serialized.Header parseHeader(byte[] headerBytes, TransportConfig config, String peer,
            List<Family> accepted) {
        Serialized.Header header;
        try {
            header = Serialized.parseHeader(headerBytes, config.limits());
        } catch (SerializationException e) {
            throw new ProtocolException("refused a message from " + peer + ": " + e.getMessage(), e);
        }
        if (header.version() != Serialized.FORMAT_VERSION) {
            throw new ProtocolException("refused a message from " + peer + ": header format version "
                    + header.version() + ", this connection agreed version " + Serialized.FORMAT_VERSION,
                    new IncompatibleVersionException("header format version " + header.version() + " on a "
                            + "connection of version " + Serialized.FORMAT_VERSION));
        }
        List<Family> refused = outside(header.families(), accepted);
        if (!refused.isEmpty()) {
            throw new FamilyRefusedException("refused a message from " + peer, refused, accepted);
        }
        return header;
    }

    /**
     * The sender's side of the family check: refuses to send {@code message} to {@code peer} if it uses a family
     * outside the connection's agreed chain, which the receiver would refuse (breaking the connection).
     *
     * @throws FamilyRefusedException if it does
     */
    public static void checkSendable(Message message, List<Family> accepted, String peer) {
        List<Family> refused = outside(message.families(), accepted);
        if (!refused.isEmpty()) {
            throw new FamilyRefusedException("cannot send to " + peer, refused, accepted);
        }
    }

    private static List<Family> outside(Set<Family> used, List<Family> accepted) {
        List<Family> refused = new ArrayList<>(0);
        for (Family f : used) {
            if (!accepted.contains(f)) {
                refused.add(f);
            }
        }
        return refused;
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
