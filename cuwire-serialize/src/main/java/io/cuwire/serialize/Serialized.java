package io.cuwire.serialize;

import io.cuwire.memory.Buffer;
import io.cuwire.memory.Closeables;
import io.cuwire.memory.MemoryKind;
import io.cuwire.serialize.msgpack.MsgpackReader;
import io.cuwire.serialize.msgpack.MsgpackWriter;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A serialized value: a small msgpack header plus out-of-band frames. A frame is a value's own buffer (device
 * memory stays device memory) or, for the {@code host} family, a host copy that this object owns.
 *
 * <h2>Header</h2>
 * {@code {"v": format version, "root": value node, "frames": [[kind, device, length], ...]}}. A value node is a
 * simple value (nil, boolean, integer, float, string, binary) or a map whose {@code "t"} names its type: a
 * registered type ({@code {"t": name, "f": family, "tv": type version, "frames": [first, count], "d": {fields}}};
 * {@code "tv"} absent for version 0, {@code "frames"} absent when the value and its nested values have no frames, else
 * the contiguous run of frames they use, which the decoder checks), a structure
 * ({@code list}, {@code set} or {@code map} with {@code "k"} naming the collection class when it is not
 * {@code ArrayList}, {@code LinkedHashSet} or {@code LinkedHashMap}, {@code "n"} an {@code EnumSet}'s or
 * {@code EnumMap}'s enum and {@code "cmp"} a tree's comparator; {@code opt}; or {@code arr} with {@code "c"} naming
 * the element type when it has a wire name), a boxed or primitive-array value, or a back-reference to an earlier node:
 * {@code {"t": "ref", "id": n}} counts structures and registered types in the order they appear,
 * {@code {"t": "pref", "id": n}} primitive arrays.
 *
 * <h2>Ownership</h2>
 * Frames marked {@linkplain Frame#owned() owned} belong to this object until a decoder takes them; {@code close()}
 * closes those not taken. Frames that are a live value's own memory are never closed here. Not thread-safe.
 */
public final class Serialized implements AutoCloseable {
    /** The header format this code writes and reads. */
    public static final int FORMAT_VERSION = 1;

    private final Object root;
    private final List<Frame> frames;
    private final BitSet taken = new BitSet();
    private boolean closed;

    Serialized(Object root, List<Frame> frames) {
        this.root = root;
        this.frames = List.copyOf(frames);
    }

    /** A parsed header: the root value node and the frame descriptors. */
    public record Header(Object root, List<FrameDescriptor> frames) {
        public Header {
            frames = List.copyOf(frames);
        }

        /** Sum of all frame lengths. */
        public long totalFrameBytes() {
            long total = 0;
            for (FrameDescriptor d : frames) {
                total += d.length();
            }
            return total;
        }
    }

    /**
     * Parses and checks header bytes from a peer: format version, limits on size, depth, entry counts, frame count
     * and each frame's size — all before anything is allocated for the frames.
     *
     * @throws MalformedHeaderException, LimitExceededException, IncompatibleVersionException
     */
    public static Header parseHeader(byte[] bytes, Limits limits) {
        if (bytes.length > limits.maxHeaderBytes()) {
            throw new LimitExceededException("header of " + bytes.length + " bytes exceeds the limit of "
                    + limits.maxHeaderBytes());
        }
        MsgpackReader reader = new MsgpackReader(bytes, 0, bytes.length, limits.maxDepth(),
                limits.maxCollectionSize());
        if (!(reader.readValue() instanceof Map<?, ?> top)) {
            throw new MalformedHeaderException("header is not a map");
        }
        if (reader.hasRemaining()) {
            throw new MalformedHeaderException(reader.remaining() + " bytes after the header");
        }
        if (!(top.get("v") instanceof Long version)) {
            throw new MalformedHeaderException("header has no format version");
        }
        if (version != FORMAT_VERSION) {
            throw new IncompatibleVersionException("header format version " + version + ", this reader reads "
                    + FORMAT_VERSION);
        }
        if (!top.containsKey("root")) {
            throw new MalformedHeaderException("header has no root value");
        }
        if (!(top.get("frames") instanceof List<?> list)) {
            throw new MalformedHeaderException("header has no frame list");
        }
        if (list.size() > limits.maxFrames()) {
            throw new LimitExceededException(list.size() + " frames exceed the limit of " + limits.maxFrames());
        }
        List<FrameDescriptor> descriptors = new ArrayList<>(list.size());
        long total = 0;
        MemoryKind[] kinds = MemoryKind.values();
        for (int i = 0; i < list.size(); i++) {
            if (!(list.get(i) instanceof List<?> d) || d.size() != 3 || !(d.get(0) instanceof Long kind)
                    || !(d.get(1) instanceof Long device) || !(d.get(2) instanceof Long length)
                    || kind < 0 || kind >= kinds.length || device < Buffer.HOST_ORDINAL || device > 1 << 16
                    || length < 0) {
                throw new MalformedHeaderException("frame descriptor " + i + " is not [kind, device, length]");
            }
            if (length > limits.maxFrameBytes()) {
                throw new LimitExceededException("frame " + i + " of " + length + " bytes exceeds the limit of "
                        + limits.maxFrameBytes());
            }
            total += length;
            if (total > limits.maxTotalFrameBytes()) {
                throw new LimitExceededException("frames total more than the limit of "
                        + limits.maxTotalFrameBytes() + " bytes");
            }
            descriptors.add(new FrameDescriptor(kinds[kind.intValue()], device.intValue(), length));
        }
        return new Header(top.get("root"), descriptors);
    }

    /**
     * A received value: the parsed header and one buffer per descriptor, owned by the result from now on (closed by
     * {@link #close()} unless a decoder takes them).
     */
    public static Serialized received(Header header, List<? extends Buffer> buffers) {
        if (buffers.size() != header.frames().size()) {
            throw new MalformedHeaderException("header describes " + header.frames().size() + " frames, "
                    + buffers.size() + " arrived");
        }
        List<Frame> frames = new ArrayList<>(buffers.size());
        for (int i = 0; i < buffers.size(); i++) {
            Buffer b = Objects.requireNonNull(buffers.get(i), "buffer " + i);
            if (b.byteSize() != header.frames().get(i).length()) {
                throw new MalformedHeaderException("frame " + i + " is " + b.byteSize() + " bytes, header says "
                        + header.frames().get(i).length());
            }
            frames.add(new Frame(b, true));
        }
        return new Serialized(header.root(), frames);
    }

    /** The root value node. */
    public Object root() {
        return root;
    }

    /** The frames, in header order. */
    public List<Frame> frames() {
        return frames;
    }

    /** The frame descriptors, in order. */
    public List<FrameDescriptor> frameDescriptors() {
        List<FrameDescriptor> list = new ArrayList<>(frames.size());
        for (Frame f : frames) {
            list.add(FrameDescriptor.of(f));
        }
        return list;
    }

    /** Sum of all frame lengths. */
    public long totalFrameBytes() {
        long total = 0;
        for (Frame f : frames) {
            total += f.length();
        }
        return total;
    }

    /** The header as msgpack bytes. */
    public byte[] encodeHeader() {
        Map<String, Object> top = new LinkedHashMap<>();
        top.put("v", (long) FORMAT_VERSION);
        top.put("root", root);
        List<Object> descriptors = new ArrayList<>(frames.size());
        for (Frame f : frames) {
            descriptors.add(List.of((long) f.kind().ordinal(), (long) f.deviceOrdinal(), f.length()));
        }
        top.put("frames", descriptors);
        return new MsgpackWriter(256).value(top).toByteArray();
    }

    Frame take(int index) {
        if (closed) {
            throw new IllegalStateException("serialized value is closed");
        }
        if (index < 0 || index >= frames.size()) {
            throw new MalformedHeaderException("frame index " + index + " (expected: 0 <= index < " + frames.size()
                    + ")");
        }
        if (taken.get(index)) {
            throw new MalformedHeaderException("frame " + index + " is used twice");
        }
        taken.set(index);
        return frames.get(index);
    }

    /** Closes the owned frames no decoder took. Closing twice is harmless. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        List<Buffer> open = new ArrayList<>();
        for (int i = 0; i < frames.size(); i++) {
            Frame f = frames.get(i);
            if (f.owned() && !taken.get(i) && f.buffer().isOpen()) {
                open.add(f.buffer());
            }
        }
        Closeables.closeAll(open);
    }

    @Override
    public String toString() {
        return "Serialized[" + frames.size() + " frames, " + totalFrameBytes() + " bytes]";
    }
}
