package io.cuwire.serialize;

import io.cuwire.memory.Buffer;
import io.cuwire.memory.Closeables;
import io.cuwire.memory.MemoryKind;
import io.cuwire.serialize.msgpack.MalformedMsgpackException;
import io.cuwire.serialize.msgpack.MsgpackLimitException;
import io.cuwire.serialize.msgpack.MsgpackReader;
import io.cuwire.serialize.msgpack.MsgpackWriter;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.Collections;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.zip.CRC32C;

/**
 * A serialized value: a small msgpack header plus out-of-band frames. A frame is a value's own buffer (device
 * memory stays device memory) or, for the {@code host} family, a host copy that this object owns.
 *
 * <h2>Header</h2>
 * Format version 3, written by {@link #encodeHeader()} (the full description is the project's
 * {@code docs/wire-format.md}):
 * <pre>
 *   [0xC1][version: 1 byte = 3][CRC32C of the bytes after it: 4 bytes, big-endian][msgpack map]
 *   map: {"fam": [family, ...], "root": value node, "frames": [descriptor, ...]}
 *   descriptor: [kind, device, length] or, for a frame that is a primitive array's memory,
 *               [kind, device, length, array type]   (array type: "i8[]", "i16[]", "u16[]", "i32[]", "i64[]",
 *                                                      "f32[]", "f64[]"; host frames only, a whole number of elements)
 *               or, for count >= 2 consecutive frames of bytes alike in kind, device and length,
 *               [kind, device, length, count]
 * </pre>
 * A list or object array of many {@code NdArray}s holds them as runs ({@code {"t": "ndrun", ...}}, one node for up
 * to a whole list of arrays alike in dtype, order, rank and memory kind: {@link NdArrayRuns}), so that a model of
 * 10,000 arrays has a header of a few bytes per array, not a node and a descriptor of ~95 bytes each. Version 2
 * (the same prefix, version byte 2; no descriptor runs, no array runs) is still read, for values saved by that
 * release.
 * {@code 0xC1} is the one byte msgpack never uses, so no version-1 header (a bare msgpack map) begins with it. The
 * checksum is checked before anything is parsed. {@code "fam"} lists the families of the registered-type nodes in
 * the header; the decoder refuses a node whose family the list does not name, so a receiver can refuse a message by
 * its families before allocating its frames. A value node is a
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
 * <p>A descriptor's array type ({@link FrameDescriptor#arrayType()}) lets a byte-stream receiver take the frame into
 * a fresh array of that type as its bytes arrive ({@link #receivedFrames}), which the decoder then returns as the
 * array itself instead of copying the frame into a new one; every other receiver treats the frame as bytes. It is
 * checked with the header, before anything is allocated: host memory, a whole number of elements, at most
 * {@link PrimitiveArrayType#MAX_LENGTH} of them.
 *
 * <p>Format version 1 ({@code {"v": 1, "root": node, "frames": [...]}}, no checksum, no family list) is still read,
 * for values saved by earlier releases: its values decode under version 1's field rules (a field the header lacks
 * keeps its default, a header entry the class lacks is ignored); version 2's are strict (see
 * {@link WireOptional} and {@link Evolving}). Transports carry version 2 only.
 *
 * <h2>Ownership</h2>
 * Frames marked {@linkplain Frame#owned() owned} belong to this object until a decoder takes them; {@code close()}
 * closes those not taken. Frames that are a live value's own memory are never closed here. It owns those frames, so
 * closing it twice is an error ({@link IllegalStateException}), as for a buffer. Not thread-safe.
 */
public final class Serialized implements AutoCloseable {
    /** The header format this code writes; it reads this one, version 2 and version 1. */
    public static final int FORMAT_VERSION = 3;
    /** The earliest prefixed format version (2): its headers begin with {@link #PREFIX}, as every later one's. */
    static final int FIRST_PREFIXED_VERSION = 2;
    /** What this code reads, for refusals: {@code "version 3 (and versions 2 and 1)"}. */
    static final String READS = "version " + FORMAT_VERSION + " (and versions 2 and 1)";

    /** The first byte of a version-2 (or later) header: a byte msgpack never uses. */
    static final int PREFIX = 0xC1;
    /** Prefix byte, version byte, 4 checksum bytes. */
    static final int PREFIX_BYTES = 6;

    private final Object root;
    private final List<Frame> frames;
    private final int formatVersion;
    private final Set<Family> families;
    private final BitSet taken = new BitSet();
    private boolean closed;

    Serialized(Object root, List<Frame> frames, int formatVersion, Set<Family> families) {
        this.root = root;
        this.frames = List.copyOf(frames);
        this.formatVersion = formatVersion;
        this.families = Header.familySet(families);
    }

    /** A received value of {@code header} over {@code frames}. */
    Serialized(Header header, List<Frame> frames) {
        this(header.root(), frames, header.version(), header.families());
    }

    /**
     * A parsed header.
     *
     * @param version the format version it was written in: {@link #FORMAT_VERSION}, 2 or 1
     * @param families the families its registered-type nodes use, as its {@code "fam"} list says; a version-1 header
     *     lists none and could use any, so for it this is every family (a check against the families a receiver
     *     accepts refuses it unless it accepts all)
     * @param root the root value node
     * @param frames the frame descriptors, in order
     */
    public record Header(int version, Set<Family> families, Object root, List<FrameDescriptor> frames) {
        /**
         * Checks and copies the components.
         *
         * @throws IllegalArgumentException if {@code version} is not 1, 2 or {@link #FORMAT_VERSION}
         */
        public Header {
            if (version < 1 || version > FORMAT_VERSION) {
                throw new IllegalArgumentException(
                        "format version " + version + " (expected: 1, 2 or " + FORMAT_VERSION + ")");
            }
            families = familySet(families);
            frames = List.copyOf(frames);
        }

        static Set<Family> familySet(Set<Family> families) {
            EnumSet<Family> set = EnumSet.noneOf(Family.class);
            set.addAll(families);
            return Collections.unmodifiableSet(set);
        }

        /** Sum of all frame lengths. */
        public long totalFrameBytes() {
            long total = 0;
            for (FrameDescriptor d : frames) {
                total += d.length();
            }
            return total;
        }

        /**
         * This header's bytes in format version {@link #FORMAT_VERSION}: prefix, version, checksum and the msgpack
         * map of {@link #families()}, {@link #root()} (header model values only) and {@link #frames()}.
         *
         * @throws IllegalStateException if this header is of another version: this code writes no other
         * @throws IllegalArgumentException if the root holds what a header cannot (not a header model value)
         */
        public byte[] encode() {
            if (version != FORMAT_VERSION) {
                throw new IllegalStateException("a version-" + version + " header cannot be written: this code "
                        + "writes format version " + FORMAT_VERSION);
            }
            Map<String, Object> top = new LinkedHashMap<>();
            top.put("fam", familyNames(families));
            top.put("root", root);
            top.put("frames", descriptorNodes(frames));
            MsgpackWriter writer = new MsgpackWriter(256);
            writer.raw(new byte[PREFIX_BYTES]);
            return seal(writer.value(top).toByteArray());
        }
    }

    /**
     * The {@code "frames"} entry of {@code frames}: one descriptor node per frame, except that consecutive frames of
     * bytes alike in kind, device and length are one {@code [kind, device, length, count]}.
     */
    private static List<Object> descriptorNodes(List<FrameDescriptor> frames) {
        List<Object> nodes = new ArrayList<>();
        for (int i = 0; i < frames.size(); ) {
            FrameDescriptor d = frames.get(i);
            long kind = d.kind().ordinal();
            long device = d.deviceOrdinal();
            if (d.arrayType() != null) {
                nodes.add(List.of(kind, device, d.length(), d.arrayType().tag()));
                i++;
                continue;
            }
            int n = 1;
            while (i + n < frames.size() && sameBytes(frames.get(i + n), d)) {
                n++;
            }
            nodes.add(n == 1 ? List.of(kind, device, d.length()) : List.of(kind, device, d.length(), (long) n));
            i += n;
        }
        return nodes;
    }

    private static boolean sameBytes(FrameDescriptor a, FrameDescriptor b) {
        return a.arrayType() == null
                && a.kind() == b.kind()
                && a.deviceOrdinal() == b.deviceOrdinal()
                && a.length() == b.length();
    }

    /** The wire names of {@code families}, in {@link Family} order. */
    static List<Object> familyNames(Set<Family> families) {
        List<Object> names = new ArrayList<>(families.size());
        for (Family f : Family.values()) {
            if (families.contains(f)) {
                names.add(f.wireName());
            }
        }
        return names;
    }

    /**
     * Fills in the prefix, the version and the checksum of {@code bytes}, whose first {@value #PREFIX_BYTES} bytes
     * were left for them; returns {@code bytes}.
     */
    static byte[] seal(byte[] bytes) {
        bytes[0] = (byte) PREFIX;
        bytes[1] = (byte) FORMAT_VERSION;
        int crc = checksum(bytes);
        bytes[2] = (byte) (crc >>> 24);
        bytes[3] = (byte) (crc >>> 16);
        bytes[4] = (byte) (crc >>> 8);
        bytes[5] = (byte) crc;
        return bytes;
    }

    /** The CRC32C of the bytes after the prefix of a version-2 header. */
    private static int checksum(byte[] bytes) {
        CRC32C crc = new CRC32C();
        crc.update(bytes, PREFIX_BYTES, bytes.length - PREFIX_BYTES);
        return (int) crc.getValue();
    }

    /**
     * {@code reader}'s next value, its failures as this layer's: a {@link MalformedHeaderException} or a
     * {@link LimitExceededException} with the reader's message (and the reader's exception as the cause).
     */
    static Object readValue(MsgpackReader reader) {
        try {
            return reader.readValue();
        } catch (MalformedMsgpackException e) {
            throw new MalformedHeaderException(e.getMessage(), e);
        } catch (MsgpackLimitException e) {
            throw new LimitExceededException(e.getMessage(), e);
        }
    }

    /**
     * Parses and checks header bytes from a peer or a file, all before anything is allocated for the frames: the
     * size limit; for a version-2 header the checksum, before any msgpack is parsed; then the format version, depth,
     * entry counts, the family list, the frame count and each frame's size and array type (a version-2 header
     * only).
     *
     * @throws LimitExceededException if the header is beyond {@code limits}
     * @throws HeaderChecksumException if a version-2 header's bytes do not match its checksum
     * @throws IncompatibleVersionException if the header is of a format version this code does not read
     * @throws MalformedHeaderException if the bytes are not a header of a version it reads
     */
    public static Header parseHeader(byte[] bytes, Limits limits) {
        if (bytes.length > limits.maxHeaderBytes()) {
            throw new LimitExceededException(
                    "header of " + bytes.length + " bytes exceeds the limit of " + limits.maxHeaderBytes());
        }
        boolean prefixed = bytes.length > 0 && (bytes[0] & 0xff) == PREFIX;
        int start = 0;
        if (prefixed) {
            if (bytes.length < PREFIX_BYTES) {
                throw new MalformedHeaderException(
                        "header of " + bytes.length + " bytes is shorter than its " + PREFIX_BYTES + "-byte prefix");
            }
            int version = bytes[1] & 0xff;
            if (version < FIRST_PREFIXED_VERSION || version > FORMAT_VERSION) {
                throw new IncompatibleVersionException(
                        "header format version " + version + ", this reader reads " + READS);
            }
            int expected = ((bytes[2] & 0xff) << 24)
                    | ((bytes[3] & 0xff) << 16)
                    | ((bytes[4] & 0xff) << 8)
                    | (bytes[5] & 0xff);
            int actual = checksum(bytes);
            if (expected != actual) {
                throw new HeaderChecksumException(
                        Integer.toUnsignedLong(expected), Integer.toUnsignedLong(actual), bytes.length);
            }
            start = PREFIX_BYTES;
        }
        MsgpackReader reader =
                new MsgpackReader(bytes, start, bytes.length - start, limits.maxDepth(), limits.maxCollectionSize());
        if (!(readValue(reader) instanceof Map<?, ?> top)) {
            throw new MalformedHeaderException("header is not a map");
        }
        if (reader.hasRemaining()) {
            throw new MalformedHeaderException(reader.remaining() + " bytes after the header");
        }
        int version;
        Set<Family> families;
        if (prefixed) {
            version = bytes[1] & 0xff;
            for (Object key : top.keySet()) {
                if (!key.equals("fam") && !key.equals("root") && !key.equals("frames")) {
                    throw new MalformedHeaderException(
                            "version-" + version + " header has an unknown entry '" + key + "'");
                }
            }
            families = families(top.get("fam"));
        } else {
            if (!(top.get("v") instanceof Long v)) {
                throw new MalformedHeaderException("header has no format version");
            }
            if (v >= FIRST_PREFIXED_VERSION && v <= FORMAT_VERSION) {
                throw new MalformedHeaderException("an unprefixed header says format version " + v + ", whose "
                        + "headers begin with 0x" + Integer.toHexString(PREFIX));
            }
            if (v != 1) {
                throw new IncompatibleVersionException("header format version " + v + ", this reader reads " + READS);
            }
            version = 1;
            families = EnumSet.allOf(Family.class);
        }
        if (!top.containsKey("root")) {
            throw new MalformedHeaderException("header has no root value");
        }
        if (!(top.get("frames") instanceof List<?> list)) {
            throw new MalformedHeaderException("header has no frame list");
        }
        return new Header(version, families, top.get("root"), descriptors(list, version, limits));
    }

    /**
     * The frame descriptors of a {@code "frames"} entry of a header of {@code version}, each checked, and held to the
     * limits before any is made: their count (a run of {@code count} frames counts {@code count}), each frame's
     * length and their total.
     */
    private static List<FrameDescriptor> descriptors(List<?> list, int version, Limits limits) {
        if (list.size() > limits.maxFrames()) {
            throw new LimitExceededException(list.size() + " frames exceed the limit of " + limits.maxFrames());
        }
        List<FrameDescriptor> descriptors = new ArrayList<>(list.size());
        long total = 0;
        MemoryKind[] kinds = MemoryKind.values();
        int entries = version == 1 ? 3 : 4;
        String expected = version == 1
                ? "[kind, device, length]"
                : version == 2
                        ? "[kind, device, length] or [kind, device, length, array type]"
                        : "[kind, device, length], [kind, device, length, array type] or [kind, device, length, count]";
        for (int i = 0; i < list.size(); i++) {
            int index = descriptors.size();
            if (!(list.get(i) instanceof List<?> d)
                    || d.size() < 3
                    || d.size() > entries
                    || !(d.get(0) instanceof Long kind)
                    || !(d.get(1) instanceof Long device)
                    || !(d.get(2) instanceof Long length)
                    || kind < 0
                    || kind >= kinds.length
                    || device < Buffer.HOST_ORDINAL
                    || device > 1 << 16
                    || length < 0) {
                throw new MalformedHeaderException("frame descriptor " + index + " is not " + expected);
            }
            PrimitiveArrayType arrayType = null;
            long count = 1;
            if (d.size() == 4 && version >= 3 && d.get(3) instanceof Long n) {
                // a run of frames alike (format version 3): bounded by the frame limit before one is made
                if (n < 2 || n > limits.maxFrames() - index) {
                    throw new LimitExceededException("frame descriptor " + index + " describes a run of " + n
                            + " frames (expected: 2 to " + (limits.maxFrames() - index) + ", the frame limit "
                            + limits.maxFrames() + " less the frames before it)");
                }
                count = n;
            } else if (d.size() == 4) {
                if (!(d.get(3) instanceof String tag) || (arrayType = PrimitiveArrayType.ofTag(tag)) == null) {
                    throw new MalformedHeaderException("frame descriptor " + index + " names array type "
                            + shortText(d.get(3)) + " (expected: one of " + arrayTags()
                            + (version >= 3 && !(d.get(3) instanceof String) ? ", or a count of frames" : "") + ")");
                }
                String wrong =
                        FrameDescriptor.arrayFrameProblem(kinds[kind.intValue()], device.intValue(), length, arrayType);
                if (wrong != null) {
                    throw new MalformedHeaderException("frame descriptor " + index + " describes " + wrong);
                }
            }
            if (index + count > limits.maxFrames()) {
                throw new LimitExceededException((index + count) + " frames exceed the limit of " + limits.maxFrames());
            }
            if (length > limits.maxFrameBytes()) {
                throw new LimitExceededException(
                        "frame " + index + " of " + length + " bytes exceeds the limit of " + limits.maxFrameBytes());
            }
            // count <= maxFrames (an int) and length <= maxFrameBytes: the product may still pass a long's range
            if (Math.multiplyHigh(length, count) != 0 || length * count > limits.maxTotalFrameBytes() - total) {
                throw new LimitExceededException(
                        "frames total more than the limit of " + limits.maxTotalFrameBytes() + " bytes");
            }
            total += length * count;
            FrameDescriptor descriptor =
                    new FrameDescriptor(kinds[kind.intValue()], device.intValue(), length, arrayType);
            for (long k = 0; k < count; k++) {
                descriptors.add(descriptor);
            }
        }
        return descriptors;
    }

    /** A header value for a message: strings cut at 40 characters, anything else by its msgpack type. */
    private static String shortText(Object value) {
        if (value instanceof String s) {
            return "'" + (s.length() > 40 ? s.substring(0, 40) + "…" : s) + "'";
        }
        return value == null ? "nil" : value.getClass().getSimpleName();
    }

    private static List<String> arrayTags() {
        List<String> tags = new ArrayList<>();
        for (PrimitiveArrayType t : PrimitiveArrayType.values()) {
            tags.add(t.tag());
        }
        return tags;
    }

    /** The {@code "fam"} entry of a version-2 header: distinct known family names. */
    private static Set<Family> families(Object entry) {
        if (!(entry instanceof List<?> names)) {
            throw new MalformedHeaderException("header has no family list");
        }
        EnumSet<Family> families = EnumSet.noneOf(Family.class);
        for (Object name : names) {
            if (!(name instanceof String s)) {
                throw new MalformedHeaderException("family list holds "
                        + (name == null ? "nil" : name.getClass().getSimpleName()) + ", expected family names");
            }
            if (!families.add(Family.fromWireName(s))) {
                throw new MalformedHeaderException("family list names '" + s + "' twice");
            }
        }
        return families;
    }

    /**
     * A received value: the parsed header and one buffer per descriptor, owned by the result from now on (closed by
     * {@link #close()} unless a decoder takes them).
     */
    public static Serialized received(Header header, List<? extends Buffer> buffers) {
        if (buffers.size() != header.frames().size()) {
            throw new MalformedHeaderException(
                    "header describes " + header.frames().size() + " frames, " + buffers.size() + " arrived");
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
        return new Serialized(header, frames);
    }

    /**
     * A received value over {@code frames} as the transport made them, each owned by the result from now on (closed
     * by {@link #close()} unless a decoder takes it). As {@link #received(Header, List)}, except that a frame may
     * carry an {@linkplain Frame#arrayType() array type}: a fresh array the transport allocated for a descriptor of
     * that type and filled with the frame's bytes, which the decoder returns as the array's value, without a copy.
     *
     * @throws IllegalArgumentException if a frame is not {@linkplain Frame#owned() owned}
     * @throws MalformedHeaderException if the frames do not match the header's descriptors in number, length or
     *     array type (a frame without an array type matches any descriptor of its length)
     */
    public static Serialized receivedFrames(Header header, List<Frame> frames) {
        if (frames.size() != header.frames().size()) {
            throw new MalformedHeaderException(
                    "header describes " + header.frames().size() + " frames, " + frames.size() + " arrived");
        }
        for (int i = 0; i < frames.size(); i++) {
            Frame f = Objects.requireNonNull(frames.get(i), "frame " + i);
            FrameDescriptor d = header.frames().get(i);
            if (!f.owned()) {
                throw new IllegalArgumentException("frame " + i + " ("
                        + f.buffer().describe() + ") is not owned: a " + "received value owns its frames");
            }
            if (f.length() != d.length()) {
                throw new MalformedHeaderException(
                        "frame " + i + " is " + f.length() + " bytes, header says " + d.length());
            }
            if (f.arrayType() != null && f.arrayType() != d.arrayType()) {
                throw new MalformedHeaderException("frame " + i + " is a "
                        + f.arrayType().tag() + " array, header " + "says "
                        + (d.arrayType() == null ? "bytes" : d.arrayType().tag()));
            }
        }
        return new Serialized(header, frames);
    }

    /** The format version of the header this value was read from; {@link #FORMAT_VERSION} for one made here. */
    public int formatVersion() {
        return formatVersion;
    }

    /**
     * The families the value's registered types were written in: for a value serialized here, those its encoder
     * used; for a received one, what its header listed (every family for a version-1 header).
     */
    public Set<Family> families() {
        return families;
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

    /**
     * The header in format version {@link #FORMAT_VERSION} (whatever version a received value was read in): prefix,
     * checksum, the family list, the root node and the frame descriptors.
     */
    public byte[] encodeHeader() {
        return new Header(FORMAT_VERSION, families, root, frameDescriptors()).encode();
    }

    Frame take(int index) {
        if (closed) {
            throw new IllegalStateException("serialized value is closed");
        }
        if (index < 0 || index >= frames.size()) {
            throw new MalformedHeaderException(
                    "frame index " + index + " (expected: 0 <= index < " + frames.size() + ")");
        }
        if (taken.get(index)) {
            throw new MalformedHeaderException("frame " + index + " is used twice");
        }
        taken.set(index);
        return frames.get(index);
    }

    /**
     * Closes the owned frames no decoder took.
     *
     * @throws IllegalStateException if already closed: a second close means two holders each believed they owned the
     *     frames (docs/architecture.md, "Close policy")
     */
    @Override
    public void close() {
        if (closed) {
            throw new IllegalStateException(this + " is already closed");
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
