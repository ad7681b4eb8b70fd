package io.cuwire.serialize;

import java.util.List;
import java.util.Map;

/**
 * What a {@link Serializer} reads one value from: its header entries and its frames. Every getter checks the type of
 * what it finds and fails with a {@link MalformedHeaderException} naming the key and path. Not thread-safe.
 */
public final class ReadContext {
    private final Decoder decoder;
    private final Class<?> type;
    private final Family family;
    private final int typeVersion;
    private final Map<String, Object> data;

    ReadContext(Decoder decoder, Class<?> type, Family family, int typeVersion, Map<String, Object> data) {
        this.decoder = decoder;
        this.type = type;
        this.family = family;
        this.typeVersion = typeVersion;
        this.data = data;
    }

    /** The registered class the header names (a subclass, for a serializer registered on a base type). */
    public Class<?> type() {
        return type;
    }

    /** The family the value was written in. */
    public Family family() {
        return family;
    }

    /** The type version the writer recorded (0 if none). */
    public int typeVersion() {
        return typeVersion;
    }

    /**
     * The format version of the header being read: {@link Serialized#FORMAT_VERSION}, or 1 for a value saved by an
     * earlier release (whose field rules were lenient: see {@link WireOptional}).
     */
    public int formatVersion() {
        return decoder.formatVersion();
    }

    /** Where rebuilt memory comes from. */
    public DecodeTarget target() {
        return decoder.target();
    }

    /** Whether the header has {@code key}. */
    public boolean has(String key) {
        return data.containsKey(key);
    }

    /** The keys present, in written order. */
    public Iterable<String> keys() {
        return data.keySet();
    }

    /** The raw header value of {@code key} (the header model), or {@code null}. */
    public Object raw(String key) {
        return data.get(key);
    }

    private MalformedHeaderException bad(String key, String expected) {
        Object v = data.get(key);
        return new MalformedHeaderException("'" + key + "' at " + decoder.path() + " is "
                + (v == null
                        ? (data.containsKey(key) ? "nil" : "missing")
                        : v.getClass().getSimpleName())
                + ", expected " + expected);
    }

    public long getLong(String key) {
        if (data.get(key) instanceof Long l) {
            return l;
        }
        throw bad(key, "an integer");
    }

    /** An integer that fits an {@code int}. */
    public int getInt(String key) {
        long v = getLong(key);
        if (v != (int) v) {
            throw bad(key, "a 32-bit integer");
        }
        return (int) v;
    }

    public double getDouble(String key) {
        if (data.get(key) instanceof Double d) {
            return d;
        }
        throw bad(key, "a float");
    }

    public boolean getBoolean(String key) {
        if (data.get(key) instanceof Boolean b) {
            return b;
        }
        throw bad(key, "a boolean");
    }

    public String getString(String key) {
        if (data.get(key) instanceof String s) {
            return s;
        }
        throw bad(key, "a string");
    }

    public byte[] getBytes(String key) {
        if (data.get(key) instanceof byte[] b) {
            return b;
        }
        throw bad(key, "binary");
    }

    public List<?> getList(String key) {
        if (data.get(key) instanceof List<?> l) {
            return l;
        }
        throw bad(key, "an array");
    }

    /** A list of integers, e.g. a shape. */
    public long[] getLongs(String key) {
        List<?> list = getList(key);
        long[] out = new long[list.size()];
        for (int i = 0; i < out.length; i++) {
            if (!(list.get(i) instanceof Long l)) {
                throw bad(key, "an array of integers");
            }
            out[i] = l;
        }
        return out;
    }

    /** Reads the nested value written with {@link WriteContext#writeValue}; {@code null} if it was null. */
    public Object readValue(String key) {
        if (!data.containsKey(key)) {
            throw bad(key, "a value");
        }
        return decoder.node(data.get(key), key);
    }

    /** Like {@link #readValue(String)}, checked against {@code type}. */
    public <V> V readValue(String key, Class<V> type) {
        Object v = readValue(key);
        if (v != null && !type.isInstance(v)) {
            throw new MalformedHeaderException("'" + key + "' at " + decoder.path() + " decoded to "
                    + v.getClass().getName() + ", expected " + type.getName());
        }
        return type.cast(v);
    }

    /**
     * Takes the frame whose index is stored under {@code key}. If it is {@linkplain Frame#owned() owned}, its buffer
     * now belongs to the caller; otherwise it is another value's memory and must not be closed by the caller.
     *
     * @throws MalformedHeaderException if the index is not a frame of the value, or names a frame that is a
     *     primitive array's ({@link Frame#arrayType()}), which only a primitive-array node reads
     */
    public Frame takeFrame(String key) {
        long index = getLong(key);
        if (index < 0 || index > Integer.MAX_VALUE) {
            throw bad(key, "a frame index");
        }
        Frame frame = decoder.takeFrame((int) index);
        if (frame.arrayType() != null) {
            // Only a primitive-array node's frame is an array; a serializer reads frames of bytes.
            throw new MalformedHeaderException("'" + key + "' at " + decoder.path() + " names frame " + index + ", a "
                    + frame.arrayType().tag() + " array's frame, not a frame of bytes");
        }
        return frame;
    }

    /** The path of this value from the root, for messages. */
    public String path() {
        return decoder.path();
    }

    /** Charges decode work to the message's budget ({@link Decoder#charge}). */
    void charge(long units, String what) {
        decoder.charge(units, what);
    }

    /** Hands memory made for the value to the decode, which releases it if the decode fails later. */
    void own(AutoCloseable resource) {
        decoder.own(resource);
    }

    /** The decode this context belongs to. */
    Decoder decoder() {
        return decoder;
    }
}
