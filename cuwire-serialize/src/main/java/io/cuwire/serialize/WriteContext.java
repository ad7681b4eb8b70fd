package io.cuwire.serialize;

import io.cuwire.memory.Buffer;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.HostBuffer;
import io.cuwire.serialize.msgpack.MsgpackWriter;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What a {@link Serializer} writes one value into: its header entries and the frames it hands over. One context per
 * value being written; not thread-safe.
 */
public final class WriteContext {
    private final Encoder encoder;
    private final Family family;
    private final Map<String, Object> data = new LinkedHashMap<>();

    WriteContext(Encoder encoder, Family family) {
        this.encoder = encoder;
        this.family = family;
    }

    /** The family this value is written in. */
    public Family family() {
        return family;
    }

    /**
     * Puts a simple header value: {@code null}, {@link Boolean}, {@link Long}, {@link Double}, {@link String},
     * {@code byte[]}, or lists and string-keyed maps of those ({@link Integer}, {@link Short}, {@link Byte} and
     * {@link Float} are taken too, and decode as {@link Long} and {@link Double}).
     *
     * @throws UnserializableException if {@code value} holds anything else, naming its class, the key and the path
     *     of the value being written (a serializer's bug, found at the sender rather than when the header is encoded)
     */
    public WriteContext put(String key, Object value) {
        checkKey(key);
        checkHeaderValue(key, value);
        data.put(key, value);
        return this;
    }

    private void checkHeaderValue(String key, Object value) {
        String why = MsgpackWriter.unwritable(value, encoder.maxDepth());
        if (why != null) {
            throw new UnserializableException(
                    "not a header value under \"" + key + "\": " + why + " (expected: null, "
                            + "Boolean, Long, Double, String, byte[], or lists and string-keyed maps of those; write other "
                            + "values with writeValue)",
                    encoder.path());
        }
    }

    /** Writes a nested value of any serializable type under {@code key}, through the send's family chain. */
    public WriteContext writeValue(String key, Object value) {
        checkKey(key);
        data.put(key, encoder.node(value, key));
        return this;
    }

    /**
     * Hands {@code buffer} over as a frame as it is (a device buffer stays a device frame) and returns its index.
     * The buffer must stay open until the serialized value has been sent.
     */
    public long frame(Buffer buffer) {
        return encoder.addFrame(buffer, false);
    }

    /** Copies {@code buffer} (typically device memory) into a new host frame owned by the serialized value. */
    public long hostCopyFrame(Buffer buffer) {
        HostBuffer copy = encoder.hostAllocator().allocate(buffer.byteSize());
        try {
            CopyEngine.copy(buffer, copy);
        } catch (RuntimeException e) {
            copy.close();
            throw e;
        }
        return encoder.addFrame(copy, true);
    }

    /** Hands over a host buffer the serialized value now owns (closed with it). */
    public long ownedFrame(Buffer buffer) {
        return encoder.addFrame(buffer, true);
    }

    /** The field path of this value from the root, for messages. */
    public String path() {
        return encoder.path();
    }

    private void checkKey(String key) {
        if (data.containsKey(key)) {
            throw new IllegalArgumentException("header key '" + key + "' written twice at " + path());
        }
    }

    Map<String, Object> data() {
        return data;
    }
}
