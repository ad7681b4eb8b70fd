package io.cuwire.serialize;

import io.cuwire.memory.Buffer;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.DType;
import io.cuwire.memory.MemoryKind;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import io.cuwire.serialize.msgpack.MsgpackReader;
import io.cuwire.serialize.msgpack.MsgpackWriter;
import java.io.InvalidObjectException;
import java.io.ObjectInputStream;
import java.io.ObjectStreamException;
import java.io.Serial;
import java.io.Serializable;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A model state that is one opaque run of bytes plus a little metadata — the shape of a fitted forest (cuML's
 * RandomForest through treelite) or any native library's checkpoint. The bytes travel as one frame: as they are in
 * the {@code cuda} family (device memory stays device memory), copied to a host frame and rebuilt on the receiver's
 * device in the {@code host} family.
 *
 * <p>Ownership: {@link #adopt} takes the buffer (closing the blob closes it); {@link #view} does not. Metadata holds
 * header values only (null, booleans, longs, doubles, strings, byte arrays, lists and string-keyed maps of these) and
 * is copied. Closing twice is an error. Immutable apart from closing; thread-safe.
 *
 * <p>JDK serialization (the {@code java} family's last resort) writes a serial form — the format, the metadata as
 * msgpack and the bytes as an {@link NdArray} of {@code uint8}, copied to the heap as {@link NdArray} does — and
 * reads it back as a blob that owns new memory of the reading thread's {@link NdArray#readTarget}.
 */
public final class OpaqueBlob implements AutoCloseable, Serializable {
    @Serial
    private static final long serialVersionUID = 1L;

    private final String format;
    private final Map<String, Object> metadata;
    private final Buffer bytes;
    private final boolean owner;
    private volatile boolean closed;

    private OpaqueBlob(String format, Map<String, Object> metadata, Buffer bytes, boolean owner) {
        this.format = Objects.requireNonNull(format, "format");
        this.metadata = Map.copyOf(checkMetadata(metadata));
        this.bytes = Objects.requireNonNull(bytes, "bytes");
        this.owner = owner;
        bytes.checkOpen();
    }

    /** A blob owning {@code bytes}. */
    public static OpaqueBlob adopt(String format, Map<String, Object> metadata, Buffer bytes) {
        if (bytes.isSlice()) {
            throw new IllegalArgumentException("cannot adopt " + bytes.describe() + ": a slice owns no memory");
        }
        return new OpaqueBlob(format, metadata, bytes, true);
    }

    /** A blob over {@code bytes} that someone else owns. */
    public static OpaqueBlob view(String format, Map<String, Object> metadata, Buffer bytes) {
        return new OpaqueBlob(format, metadata, bytes, false);
    }

    private static Map<String, Object> checkMetadata(Map<String, Object> metadata) {
        Map<String, Object> copy = new LinkedHashMap<>();
        for (Map.Entry<String, Object> e : metadata.entrySet()) {
            checkValue(e.getValue(), e.getKey());
            copy.put(Objects.requireNonNull(e.getKey(), "metadata key"), e.getValue());
        }
        return copy;
    }

    private static void checkValue(Object v, String where) {
        switch (v) {
            case null -> throw new IllegalArgumentException("metadata '" + where + "' is null");
            case Boolean b -> {}
            case Long l -> {}
            case Double d -> {}
            case String s -> {}
            case byte[] b -> {}
            case List<?> list -> list.forEach(o -> checkValue(o, where + "[]"));
            case Map<?, ?> map ->
                map.forEach((k, o) -> {
                    if (!(k instanceof String)) {
                        throw new IllegalArgumentException("metadata '" + where + "' has a non-string key " + k);
                    }
                    checkValue(o, where + "." + k);
                });
            default ->
                throw new IllegalArgumentException("metadata '" + where + "' is a "
                        + v.getClass().getName() + "; only booleans, longs, doubles, strings, byte arrays, lists and "
                        + "maps travel in a header");
        }
    }

    /** What the bytes are, e.g. {@code cuwire.forest/1}. */
    public String format() {
        return format;
    }

    /** The metadata (immutable). */
    public Map<String, Object> metadata() {
        return metadata;
    }

    /** The bytes. */
    public Buffer buffer() {
        if (closed) {
            throw new IllegalStateException(this + " is closed");
        }
        return bytes;
    }

    /** Where the bytes live. */
    public MemoryKind kind() {
        return bytes.kind();
    }

    /** Length in bytes. */
    public long byteSize() {
        return bytes.byteSize();
    }

    /** Whether this blob closes its buffer. */
    public boolean isOwner() {
        return owner;
    }

    /** Closes the buffer if owned. */
    @Override
    public void close() {
        if (closed) {
            throw new IllegalStateException(this + " is already closed");
        }
        closed = true;
        if (owner) {
            bytes.close();
        }
    }

    @Override
    public String toString() {
        return "OpaqueBlob[" + format + ", " + bytes.describe() + "]";
    }

    @Serial
    private Object writeReplace() throws ObjectStreamException {
        return new SerialForm(
                format,
                new MsgpackWriter(256).value(metadata).toByteArray(),
                NdArray.view(buffer(), 0, DType.UINT8, Order.C, bytes.byteSize()));
    }

    @Serial
    private void readObject(ObjectInputStream in) throws InvalidObjectException {
        throw new InvalidObjectException("an OpaqueBlob is read through its serial form only");
    }

    /** What JDK serialization keeps of a blob; read back, the array's new memory moves into a new blob. */
    private static final class SerialForm implements Serializable {
        @Serial
        private static final long serialVersionUID = 1L;

        private final String format;
        private final byte[] metadata;
        private final NdArray bytes;

        SerialForm(String format, byte[] metadata, NdArray bytes) {
            this.format = format;
            this.metadata = metadata;
            this.bytes = bytes;
        }

        @Serial
        private Object readResolve() throws ObjectStreamException {
            try {
                Object m = Serialized.readValue(
                        new MsgpackReader(metadata, 0, metadata.length, Limits.DEFAULT.maxDepth(), 1 << 16));
                @SuppressWarnings("unchecked")
                Map<String, Object> map = (Map<String, Object>) m;
                // The array's memory came from the read target; the blob gets its own buffer of that allocator.
                Buffer own = bytes.buffer().allocator().allocate(bytes.byteSize());
                try {
                    CopyEngine.copy(bytes.buffer(), own);
                    return adopt(format, map, own);
                } catch (RuntimeException e) {
                    own.close();
                    throw e;
                }
            } catch (RuntimeException e) {
                InvalidObjectException x = new InvalidObjectException("OpaqueBlob serial form is malformed: " + e);
                x.initCause(e);
                throw x;
            } finally {
                bytes.close();
            }
        }
    }
}
