package io.cuwire.serialize.msgpack;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * Writes msgpack (https://github.com/msgpack/msgpack/blob/master/spec.md) into a growing byte array: the encoding of
 * every cuwire header. Not thread-safe; one writer per header.
 */
public final class MsgpackWriter {
    private byte[] buf;
    private int pos;

    public MsgpackWriter() {
        this(256);
    }

    public MsgpackWriter(int initialCapacity) {
        buf = new byte[Math.max(16, initialCapacity)];
    }

    private void ensure(int n) {
        if (pos + n > buf.length) {
            long want = Math.max((long) buf.length * 2, (long) pos + n);
            if (want > Integer.MAX_VALUE - 16) {
                throw new IllegalStateException("msgpack header over 2 GiB");
            }
            buf = Arrays.copyOf(buf, (int) want);
        }
    }

    private void put(int b) {
        ensure(1);
        buf[pos++] = (byte) b;
    }

    private void putShort(int v) {
        ensure(2);
        buf[pos++] = (byte) (v >>> 8);
        buf[pos++] = (byte) v;
    }

    private void putInt(int v) {
        ensure(4);
        buf[pos++] = (byte) (v >>> 24);
        buf[pos++] = (byte) (v >>> 16);
        buf[pos++] = (byte) (v >>> 8);
        buf[pos++] = (byte) v;
    }

    private void putLong(long v) {
        putInt((int) (v >>> 32));
        putInt((int) v);
    }

    /** Writes {@code bytes} as they are: bytes that are not msgpack, such as a header's prefix before its map. */
    public MsgpackWriter raw(byte[] bytes) {
        ensure(bytes.length);
        System.arraycopy(bytes, 0, buf, pos, bytes.length);
        pos += bytes.length;
        return this;
    }

    public MsgpackWriter nil() {
        put(0xc0);
        return this;
    }

    public MsgpackWriter bool(boolean v) {
        put(v ? 0xc3 : 0xc2);
        return this;
    }

    /** The shortest encoding of {@code v}. */
    public MsgpackWriter integer(long v) {
        if (v >= 0) {
            if (v < 128) {
                put((int) v);
            } else if (v < 256) {
                put(0xcc);
                put((int) v);
            } else if (v < 65536) {
                put(0xcd);
                putShort((int) v);
            } else if (v < (1L << 32)) {
                put(0xce);
                putInt((int) v);
            } else {
                put(0xcf);
                putLong(v);
            }
        } else if (v >= -32) {
            put((int) v & 0xff);
        } else if (v >= Byte.MIN_VALUE) {
            put(0xd0);
            put((int) v);
        } else if (v >= Short.MIN_VALUE) {
            put(0xd1);
            putShort((int) v);
        } else if (v >= Integer.MIN_VALUE) {
            put(0xd2);
            putInt((int) v);
        } else {
            put(0xd3);
            putLong(v);
        }
        return this;
    }

    public MsgpackWriter float64(double v) {
        put(0xcb);
        putLong(Double.doubleToRawLongBits(v));
        return this;
    }

    public MsgpackWriter string(String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        int n = b.length;
        if (n < 32) {
            put(0xa0 | n);
        } else if (n < 256) {
            put(0xd9);
            put(n);
        } else if (n < 65536) {
            put(0xda);
            putShort(n);
        } else {
            put(0xdb);
            putInt(n);
        }
        raw(b, 0, n);
        return this;
    }

    public MsgpackWriter binary(byte[] b, int offset, int length) {
        if (length < 256) {
            put(0xc4);
            put(length);
        } else if (length < 65536) {
            put(0xc5);
            putShort(length);
        } else {
            put(0xc6);
            putInt(length);
        }
        raw(b, offset, length);
        return this;
    }

    public MsgpackWriter binary(byte[] b) {
        return binary(b, 0, b.length);
    }

    public MsgpackWriter arrayHeader(int n) {
        if (n < 16) {
            put(0x90 | n);
        } else if (n < 65536) {
            put(0xdc);
            putShort(n);
        } else {
            put(0xdd);
            putInt(n);
        }
        return this;
    }

    public MsgpackWriter mapHeader(int n) {
        if (n < 16) {
            put(0x80 | n);
        } else if (n < 65536) {
            put(0xde);
            putShort(n);
        } else {
            put(0xdf);
            putInt(n);
        }
        return this;
    }

    private void raw(byte[] b, int offset, int length) {
        ensure(length);
        System.arraycopy(b, offset, buf, pos, length);
        pos += length;
    }

    /**
     * Writes a value of the header model: {@code null}, {@link Boolean}, {@link Long} (or another integral
     * {@link Number}), {@link Double} or {@link Float}, {@link String}, {@code byte[]}, {@link List} and {@link Map}
     * with {@link String} keys, recursively.
     */
    public MsgpackWriter value(Object v) {
        switch (v) {
            case null -> nil();
            case Boolean b -> bool(b);
            case Double d -> float64(d);
            case Float f -> float64(f);
            case Long l -> integer(l);
            case Integer i -> integer(i);
            case Short s -> integer(s);
            case Byte b -> integer(b);
            case String s -> string(s);
            case byte[] b -> binary(b);
            case List<?> list -> {
                arrayHeader(list.size());
                for (Object o : list) {
                    value(o);
                }
            }
            case Map<?, ?> map -> {
                mapHeader(map.size());
                for (Map.Entry<?, ?> e : map.entrySet()) {
                    string((String) e.getKey());
                    value(e.getValue());
                }
            }
            default ->
                throw new IllegalArgumentException(
                        "not a header value: " + v.getClass().getName());
        }
        return this;
    }

    /**
     * Why {@link #value} cannot write {@code v} ("a java.time.Instant", "a map key of java.lang.Integer", "nesting
     * deeper than N"), or {@code null} when it can; nothing is written.
     */
    public static String unwritable(Object v, int maxDepth) {
        if (maxDepth < 0) {
            return "nesting deeper than the limit";
        }
        return switch (v) {
            case null -> null;
            case Boolean b -> null;
            case Double d -> null;
            case Float f -> null;
            case Long l -> null;
            case Integer i -> null;
            case Short sh -> null;
            case Byte b -> null;
            case String str -> null;
            case byte[] b -> null;
            case List<?> list -> {
                for (Object o : list) {
                    String why = unwritable(o, maxDepth - 1);
                    if (why != null) {
                        yield why;
                    }
                }
                yield null;
            }
            case Map<?, ?> map -> {
                for (Map.Entry<?, ?> e : map.entrySet()) {
                    if (!(e.getKey() instanceof String)) {
                        yield "a map key of "
                                + (e.getKey() == null
                                        ? "null"
                                        : e.getKey().getClass().getName());
                    }
                    String why = unwritable(e.getValue(), maxDepth - 1);
                    if (why != null) {
                        yield why;
                    }
                }
                yield null;
            }
            default -> "a " + v.getClass().getName();
        };
    }

    /** Bytes written so far. */
    public int size() {
        return pos;
    }

    /** A copy of the bytes written. */
    public byte[] toByteArray() {
        return Arrays.copyOf(buf, pos);
    }
}
