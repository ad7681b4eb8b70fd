package io.cuwire.transport;

import io.cuwire.memory.Buffer;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.Frame;
import io.cuwire.serialize.FrameDescriptor;
import io.cuwire.serialize.Limits;
import io.cuwire.serialize.SerializationException;
import io.cuwire.serialize.Serialized;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * What a transport moves: a small msgpack header (a {@link Serialized} header, which carries the frame descriptors)
 * plus the frames, each a buffer as it is — device frames stay on the device.
 *
 * <p>Ownership: a message borrows its frames from the sender. {@link Connection#send} uses them until its future
 * completes; the sender keeps them open until then and may reuse or close them afterwards, on every transport. The
 * message itself holds nothing to close. Immutable.
 */
public final class Message {
    private final byte[] header;
    private final List<Buffer> frames;
    private final Set<Family> families;

    private Message(byte[] header, List<Buffer> frames, Set<Family> families) {
        this.header = header;
        this.frames = List.copyOf(frames);
        this.families = families;
    }

    /** The message of a serialized value: its encoded header and its frames' buffers. */
    public static Message of(Serialized value) {
        List<Buffer> buffers = new ArrayList<>(value.frames().size());
        for (Frame f : value.frames()) {
            buffers.add(f.buffer());
        }
        return new Message(value.encodeHeader(), buffers, value.families());
    }

    /**
     * A message of encoded {@code header} bytes and {@code frames}; the header's frame descriptors must describe the
     * frames exactly (kind, device, length), as a receiver will trust them. The header must be of the current
     * format version ({@link Serialized#FORMAT_VERSION}): connections carry no other.
     *
     * @throws IllegalArgumentException if the header does not parse, is of another format version or does not
     *     describe the frames
     */
    public static Message of(byte[] header, List<? extends Buffer> frames) {
        Serialized.Header parsed;
        try {
            parsed = Serialized.parseHeader(header, Limits.DEFAULT);
        } catch (SerializationException e) {
            throw new IllegalArgumentException("not a cuwire header: " + e.getMessage(), e);
        }
        if (parsed.version() != Serialized.FORMAT_VERSION) {
            throw new IllegalArgumentException("a header of format version " + parsed.version() + ": messages carry "
                    + "version " + Serialized.FORMAT_VERSION);
        }
        if (parsed.frames().size() != frames.size()) {
            throw new IllegalArgumentException(
                    "header describes " + parsed.frames().size() + " frames, " + frames.size() + " given");
        }
        for (int i = 0; i < frames.size(); i++) {
            Buffer b = frames.get(i);
            FrameDescriptor d = parsed.frames().get(i);
            if (b.kind() != d.kind() || b.deviceOrdinal() != d.deviceOrdinal() || b.byteSize() != d.length()) {
                throw new IllegalArgumentException("frame " + i + " is " + b.describe() + " on device "
                        + b.deviceOrdinal() + ", header says " + d);
            }
        }
        return new Message(header.clone(), new ArrayList<>(frames), parsed.families());
    }

    /**
     * The families the header says its values use: what {@link Connection#send} checks against the connection's
     * agreed chain, and the receiver checks again before it allocates a frame.
     */
    public Set<Family> families() {
        return families;
    }

    /** The encoded header. */
    public byte[] header() {
        return header.clone();
    }

    /** The header's length in bytes. */
    public int headerLength() {
        return header.length;
    }

    /** The frames, in header order. */
    public List<Buffer> frames() {
        return frames;
    }

    /** Sum of the frame lengths. */
    public long frameBytes() {
        long total = 0;
        for (Buffer b : frames) {
            total += b.byteSize();
        }
        return total;
    }

    /** Header plus frames: what the message counts against a connection's bytes in flight. */
    public long totalBytes() {
        return header.length + frameBytes();
    }

    @Override
    public String toString() {
        return "Message[header " + header.length + " bytes, " + frames.size() + " frames, " + frameBytes() + " bytes]";
    }
}
