package io.cuwire.serialize.msgpack;

import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Reads msgpack from bytes that may be hostile: every length is checked against the bytes that remain and against
 * the caller's limits before anything is allocated, and every failure is a {@link MalformedMsgpackException} or
 * {@link MsgpackLimitException} — never another exception, never an allocation larger than the input.
 *
 * <p>{@link #readValue()} returns the header model: {@code null}, {@link Boolean}, {@link Long}, {@link Double},
 * {@link String}, {@code byte[]}, {@link List} and {@link Map} with {@link String} keys (insertion-ordered).
 * Not thread-safe.
 */
public final class MsgpackReader {
    private final byte[] buf;
    private final int end;
    private final int maxDepth;
    private final int maxCollection;
    private int pos;
    // made on the first string that is not ASCII; reset for each (not thread-safe, as this reader is not)
    private CharsetDecoder utf8;

    public MsgpackReader(byte[] buf, int offset, int length, int maxDepth, int maxCollection) {
        if (offset < 0 || length < 0 || offset > buf.length - length) {
            throw new IndexOutOfBoundsException(
                    "offset: " + offset + ", length: " + length + ", buffer: " + buf.length);
        }
        this.buf = buf;
        this.pos = offset;
        this.end = offset + length;
        this.maxDepth = maxDepth;
        this.maxCollection = maxCollection;
    }

    /** Whether bytes remain. */
    public boolean hasRemaining() {
        return pos < end;
    }

    /** Bytes not yet read. */
    public int remaining() {
        return end - pos;
    }

    private MalformedMsgpackException malformed(String what) {
        return new MalformedMsgpackException(what + " at byte " + pos);
    }

    private void need(long n) {
        if (n < 0 || n > end - pos) {
            throw malformed("truncated: need " + n + " bytes, " + (end - pos) + " left");
        }
    }

    private int u8() {
        need(1);
        return buf[pos++] & 0xff;
    }

    private int u16() {
        need(2);
        int v = ((buf[pos] & 0xff) << 8) | (buf[pos + 1] & 0xff);
        pos += 2;
        return v;
    }

    private long u32() {
        need(4);
        long v = ((long) (buf[pos] & 0xff) << 24)
                | ((buf[pos + 1] & 0xff) << 16)
                | ((buf[pos + 2] & 0xff) << 8)
                | (buf[pos + 3] & 0xff);
        pos += 4;
        return v;
    }

    private long s64() {
        long hi = u32();
        long lo = u32();
        return (hi << 32) | lo;
    }

    /**
     * Reads one value (recursively).
     *
     * @throws MalformedMsgpackException if the bytes are not a value of the header model
     * @throws MsgpackLimitException if the value nests deeper, or holds a larger collection, than the limits
     */
    public Object readValue() {
        return readValue(0);
    }

    private Object readValue(int depth) {
        int b = u8();
        if (b <= 0x7f) {
            return (long) b;
        }
        if (b >= 0xe0) {
            return (long) (byte) b;
        }
        if ((b & 0xf0) == 0x80) {
            return readMap(b & 0x0f, depth);
        }
        if ((b & 0xf0) == 0x90) {
            return readArray(b & 0x0f, depth);
        }
        if ((b & 0xe0) == 0xa0) {
            return readString(b & 0x1f);
        }
        return switch (b) {
            case 0xc0 -> null;
            case 0xc2 -> Boolean.FALSE;
            case 0xc3 -> Boolean.TRUE;
            case 0xc4 -> readBinary(u8());
            case 0xc5 -> readBinary(u16());
            case 0xc6 -> readBinary(u32());
            case 0xca -> (double) Float.intBitsToFloat((int) u32());
            case 0xcb -> Double.longBitsToDouble(s64());
            case 0xcc -> (long) u8();
            case 0xcd -> (long) u16();
            case 0xce -> u32();
            case 0xcf -> {
                long v = s64();
                if (v < 0) {
                    throw malformed("uint64 " + Long.toUnsignedString(v) + " does not fit a signed long");
                }
                yield v;
            }
            case 0xd0 -> (long) (byte) u8();
            case 0xd1 -> (long) (short) u16();
            case 0xd2 -> (long) (int) u32();
            case 0xd3 -> s64();
            case 0xd9 -> readString(u8());
            case 0xda -> readString(u16());
            case 0xdb -> readString(u32());
            case 0xdc -> readArray(u16(), depth);
            case 0xdd -> readArray(u32(), depth);
            case 0xde -> readMap(u16(), depth);
            case 0xdf -> readMap(u32(), depth);
            default -> throw malformed("unsupported msgpack type 0x" + Integer.toHexString(b));
        };
    }

    private String readString(long n) {
        need(n);
        int len = (int) n;
        boolean ascii = true;
        for (int i = pos, e = pos + len; i < e; i++) {
            if (buf[i] < 0) {
                ascii = false;
                break;
            }
        }
        if (ascii) {
            // the common case (keys, type names, dtypes): ASCII is UTF-8 as it is, and Latin-1 decodes it without a
            // decoder (a header of 10,000 arrays holds tens of thousands of such strings)
            String s = new String(buf, pos, len, StandardCharsets.ISO_8859_1);
            pos += len;
            return s;
        }
        try {
            if (utf8 == null) {
                utf8 = StandardCharsets.UTF_8
                        .newDecoder()
                        .onMalformedInput(CodingErrorAction.REPORT)
                        .onUnmappableCharacter(CodingErrorAction.REPORT);
            }
            String s =
                    utf8.reset().decode(java.nio.ByteBuffer.wrap(buf, pos, len)).toString();
            pos += len;
            return s;
        } catch (CharacterCodingException e) {
            throw malformed("string is not UTF-8");
        }
    }

    private byte[] readBinary(long n) {
        need(n);
        byte[] b = Arrays.copyOfRange(buf, pos, pos + (int) n);
        pos += (int) n;
        return b;
    }

    private void checkCollection(long n, int depth, String what) {
        if (depth + 1 > maxDepth) {
            throw new MsgpackLimitException("header nests deeper than " + maxDepth + " at byte " + pos);
        }
        if (n > maxCollection) {
            throw new MsgpackLimitException(
                    what + " of " + n + " entries exceeds the limit of " + maxCollection + " at byte " + pos);
        }
        if (n > end - pos) {
            throw malformed("truncated: " + what + " of " + n + " entries, " + (end - pos) + " bytes left");
        }
    }

    private List<Object> readArray(long n, int depth) {
        checkCollection(n, depth, "array");
        List<Object> list = new ArrayList<>((int) n);
        for (long i = 0; i < n; i++) {
            list.add(readValue(depth + 1));
        }
        return list;
    }

    private Map<String, Object> readMap(long n, int depth) {
        checkCollection(n, depth, "map");
        Map<String, Object> map = new LinkedHashMap<>((int) Math.min(n * 2, 1 << 16));
        for (long i = 0; i < n; i++) {
            Object key = readValue(depth + 1);
            if (!(key instanceof String k)) {
                throw malformed(
                        "map key is " + (key == null ? "nil" : key.getClass().getSimpleName()) + ", expected a string");
            }
            if (map.containsKey(k)) {
                throw malformed("duplicate map key '" + k + "'");
            }
            map.put(k, readValue(depth + 1));
        }
        return map;
    }
}
