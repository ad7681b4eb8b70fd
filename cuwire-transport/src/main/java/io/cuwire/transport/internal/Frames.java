package io.cuwire.transport.internal;

import io.cuwire.memory.Buffer;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.MemoryKind;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.Frame;
import io.cuwire.serialize.FrameDescriptor;
import io.cuwire.serialize.IncompatibleVersionException;
import io.cuwire.serialize.LimitExceededException;
import io.cuwire.serialize.SerializationException;
import io.cuwire.serialize.Serialized;
import io.cuwire.transport.FamilyRefusedException;
import io.cuwire.transport.Message;
import io.cuwire.transport.MessageRefusedException;
import io.cuwire.transport.ProtocolViolationException;
import io.cuwire.transport.TransportConfig;
import io.cuwire.transport.TransportException;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetEncoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The checks every transport makes the same way: on the receiving side a declared header against the limits before
 * anything is allocated, the header itself (format version and families included), then the frames from
 * {@link TransportConfig#receiveInto()}, and the refusal a receiver tells its peer when a check fails; on the sending
 * side a message's families; and the frame lists its metrics are made of.
 *
 * <h2>Refusals</h2>
 * A message the receiver's checks refuse (a {@link ProtocolViolationException}: beyond the limits, malformed, not the
 * protocol, a family the connection did not agree) breaks the connection, as every failure does; before it closes,
 * the receiver sends the peer one small record with its reason ({@link #refusal}), at a record boundary of its own
 * stream, and keeps its end open (on a thread of its own) until the peer closed or {@link #REFUSAL_LINGER_NANOS}
 * passed. The peer makes a {@link MessageRefusedException} of it ({@link #refused}) and breaks its side with that.
 * I/O failures (the peer gone, a stall, a local close) are not refusals: there is nothing to tell.
 */
public final class Frames {
    /** How long a receiver that refused a message waits for its peer to close before it closes itself. */
    public static final long REFUSAL_LINGER_NANOS = TimeUnit.SECONDS.toNanos(2);

    private Frames() {}

    /** Refuses a header of {@code headerLength} bytes declared by {@code peer} beyond the limits. */
    public static void checkHeaderLength(int headerLength, TransportConfig config, String peer) {
        if (headerLength < 0 || headerLength > config.limits().maxHeaderBytes()) {
            throw new ProtocolViolationException(
                    "peer " + peer + " declared a header of " + headerLength + " bytes",
                    new LimitExceededException("header of " + headerLength + " bytes exceeds the limit of "
                            + config.limits().maxHeaderBytes()));
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
     * @throws ProtocolViolationException if the header is refused for any other reason (its cause says why)
     */
    public static Serialized.Header parseHeader(
            byte[] headerBytes, TransportConfig config, String peer, List<Family> accepted) {
        Serialized.Header header;
        try {
            header = Serialized.parseHeader(headerBytes, config.limits());
        } catch (SerializationException e) {
            throw new ProtocolViolationException("refused a message from " + peer + ": " + e.getMessage(), e);
        }
        if (header.version() != Serialized.FORMAT_VERSION) {
            throw new ProtocolViolationException(
                    "refused a message from " + peer + ": header format version " + header.version()
                            + ", this connection agreed version " + Serialized.FORMAT_VERSION,
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
     * Allocates the frames of {@code header} into {@code frames}, one by one, from
     * {@link TransportConfig#receiveInto()} (as {@link #allocate(FrameDescriptor, int, TransportConfig, String,
     * boolean, boolean)} without arrays), so that a failure leaves what was allocated there to be freed.
     *
     * @param sameMemory whether a frame must also be device memory exactly where the descriptor says so
     */
    public static void allocate(
            Serialized.Header header, TransportConfig config, String peer, boolean sameMemory, List<Buffer> frames) {
        for (int i = 0; i < header.frames().size(); i++) {
            frames.add(allocate(header.frames().get(i), i, config, peer, sameMemory, false)
                    .buffer());
        }
    }

    /**
     * Allocates frame {@code index} of a message from {@code peer}, described by {@code d}, owned by the message:
     * from {@link TransportConfig#receiveInto()} (held to its contract: exactly the length, native memory for a host
     * frame, device memory where the descriptor says so if {@code sameMemory}); or, if {@code arrays} and the
     * descriptor names an {@linkplain FrameDescriptor#arrayType() array type}, as a fresh heap array of that type and
     * length, with that type ({@link Frame#arrayType()}), for the decoder to keep. Such an array is the transport's
     * own memory, not an allocator's: only a byte-stream transport, which fills host frames itself through native
     * staging, asks for it. It is bounded by the limits every frame is (checked with the header) and by the heap; it
     * costs the JVM's zeroing of the new array (about 10-20 ms for 512 MiB on the 2-core VMs).
     *
     * @throws TransportException if the memory could not be had, or the allocator broke its contract
     */
    public static Frame allocate(
            FrameDescriptor d, int index, TransportConfig config, String peer, boolean sameMemory, boolean arrays) {
        if (arrays && d.arrayType() != null) {
            try {
                return new Frame(HostBuffer.wrap(d.arrayType().newArraySegment(d.arrayLength())), true, d.arrayType());
            } catch (OutOfMemoryError e) {
                // One allocation of the peer's declared size failed; nothing else was taken.
                throw new TransportException(
                        "cannot allocate frame " + index + " (" + d + ") of a message from "
                                + peer + " as a " + d.arrayType().arrayClass().getTypeName() + " of " + d.arrayLength()
                                + " elements: " + e.getMessage(),
                        e);
            }
        }
        Buffer b;
        try {
            b = config.receiveInto().allocate(d);
        } catch (RuntimeException e) {
            throw new TransportException(
                    "cannot allocate frame " + index + " (" + d + ") of a message from " + peer + ": " + e.getMessage(),
                    e);
        }
        String wrong = null;
        if (b.byteSize() != d.length()
                || sameMemory && (b.kind() == MemoryKind.DEVICE) != (d.kind() == MemoryKind.DEVICE)) {
            wrong = "frame allocator returned " + b.describe() + " for " + d;
        } else if (b instanceof HostBuffer h && !h.segment().isNative()) {
            wrong = "frame allocator returned " + b.describe() + " of heap memory for " + d + ": host frames are "
                    + "received into native memory (a BufferAllocator's)";
        }
        if (wrong != null) {
            b.close();
            throw new TransportException(wrong);
        }
        return new Frame(b, true);
    }

    /** The most bytes of one frame that {@link #allocateRun} puts into a shared block. */
    public static final long RUN_FRAME_BYTES = 1 << 20;
    /** The most bytes of one shared block of {@link #allocateRun}. */
    public static final long RUN_BYTES = 16 << 20;

    /**
     * How many frames from {@code first} on {@link #allocateRun} takes into one block: the consecutive device frames
     * of {@code first}'s device, none over {@value #RUN_FRAME_BYTES} bytes and none a Java array's, together at most
     * {@value #RUN_BYTES} bytes; 1 when fewer than two such frames come.
     */
    public static int runLength(List<FrameDescriptor> descriptors, int first) {
        FrameDescriptor d = descriptors.get(first);
        if (!inRun(d, d)) {
            return 1;
        }
        long bytes = 0;
        int n = 0;
        while (first + n < descriptors.size()
                && inRun(descriptors.get(first + n), d)
                && bytes + descriptors.get(first + n).length() <= RUN_BYTES) {
            bytes += descriptors.get(first + n).length();
            n++;
        }
        return Math.max(n, 1);
    }

    private static boolean inRun(FrameDescriptor d, FrameDescriptor head) {
        return d.kind() == MemoryKind.DEVICE
                && d.arrayType() == null
                && d.deviceOrdinal() == head.deviceOrdinal()
                && d.length() <= RUN_FRAME_BYTES;
    }

    /**
     * Allocates frames {@code first} to {@code first + count - 1} of {@code descriptors} (a run of
     * {@link #runLength}) as one block from {@link TransportConfig#receiveInto()}, each frame a loan of its range of
     * the block, and adds them to {@code frames}; the block is freed when the last loan is closed. So a message of
     * many small device frames costs one allocation per {@value #RUN_BYTES} bytes instead of one per frame, and is
     * read into contiguous memory; a peer gets at most that many bytes allocated ahead of the bytes it sent. The
     * loans name the block's allocator ({@link io.cuwire.memory.DeviceBuffer#lend(Buffer.Releaser,
     * io.cuwire.memory.BufferAllocator)}), which accounts the block's bytes until the last one is closed.
     *
     * @param sameMemory whether the block must also be device memory, as the descriptors say (a transport that copies
     *     into the frames device to device)
     * @return the block, for a transport that fills it at once
     * @throws TransportException if the memory could not be had, or the allocator broke its contract
     */
    public static Buffer allocateRun(
            List<FrameDescriptor> descriptors,
            int first,
            int count,
            TransportConfig config,
            String peer,
            boolean sameMemory,
            List<Frame> frames) {
        FrameDescriptor head = descriptors.get(first);
        long total = 0;
        for (int i = first; i < first + count; i++) {
            total += descriptors.get(i).length();
        }
        Buffer block = allocate(
                        new FrameDescriptor(head.kind(), head.deviceOrdinal(), total),
                        first,
                        config,
                        peer,
                        sameMemory,
                        false)
                .buffer();
        AtomicInteger unreturned = new AtomicInteger(count);
        Buffer.Releaser returned = () -> {
            if (unreturned.decrementAndGet() == 0) {
                block.close();
            }
        };
        long offset = 0;
        for (int i = first; i < first + count; i++) {
            long length = descriptors.get(i).length();
            Buffer range = block.slice(offset, length);
            Buffer loan = range instanceof DeviceBuffer d && block.allocator() != null
                    ? d.lend(returned, castDevice(block.allocator()))
                    : range.lend(returned);
            frames.add(new Frame(loan, true));
            offset += length;
        }
        return block;
    }

    @SuppressWarnings("unchecked")
    private static BufferAllocator<DeviceBuffer> castDevice(BufferAllocator<?> allocator) {
        return (BufferAllocator<DeviceBuffer>) allocator;
    }

    /**
     * The reason to send the peer before breaking the connection over {@code failure}: the refused check's simple
     * class name and message (the serialization check's, when one refused the header), as at most
     * {@link MessageRefusedException#MAX_REASON_BYTES} bytes of UTF-8; {@code null} when {@code failure} is not this
     * side refusing a message of the peer.
     */
    public static byte[] refusal(TransportException failure) {
        if (!(failure instanceof ProtocolViolationException)) {
            return null;
        }
        Throwable why = failure.getCause() instanceof SerializationException s ? s : failure;
        ByteBuffer out = ByteBuffer.allocate(MessageRefusedException.MAX_REASON_BYTES);
        CharsetEncoder utf8 = StandardCharsets.UTF_8
                .newEncoder()
                .onMalformedInput(CodingErrorAction.REPLACE)
                .onUnmappableCharacter(CodingErrorAction.REPLACE);
        utf8.encode(CharBuffer.wrap(why.getClass().getSimpleName() + ": " + why.getMessage()), out, true);
        byte[] reason = new byte[out.flip().remaining()];
        out.get(reason);
        return reason;
    }

    /** The exception a refusal with {@code reason} from {@code peer} makes on the refused side. */
    public static MessageRefusedException refused(String peer, byte[] reason) {
        String text = new String(reason, StandardCharsets.UTF_8);
        return new MessageRefusedException("peer " + peer + " refused a message: " + text, text);
    }

    /** Refuses a refusal record of {@code length} bytes declared by {@code peer} beyond the bound of its reason. */
    public static void checkRefusalLength(int length, String peer) {
        if (length < 0 || length > MessageRefusedException.MAX_REASON_BYTES) {
            throw new ProtocolViolationException("peer " + peer + " declared a refusal of " + length
                    + " bytes (expected: "
                    + "0.." + MessageRefusedException.MAX_REASON_BYTES + ")");
        }
    }

    /** Closes the buffer of every frame still open: a message that failed midway. */
    public static void closeFrames(List<Frame> frames) {
        for (Frame f : frames) {
            if (f.buffer().isOpen()) {
                f.buffer().close();
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
