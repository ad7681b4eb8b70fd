package io.cuwire.serialize;

import java.lang.foreign.MemorySegment;

/** The primitive array types the codec carries, their wire tags and element sizes. */
final class PrimitiveArrays {
    private PrimitiveArrays() {}

    enum Kind {
        I8(PrimitiveArrayType.I8),
        I16(PrimitiveArrayType.I16),
        U16(PrimitiveArrayType.U16),
        I32(PrimitiveArrayType.I32),
        I64(PrimitiveArrayType.I64),
        F32(PrimitiveArrayType.F32),
        F64(PrimitiveArrayType.F64),
        BOOL("bool[]", 1, boolean[].class, null);

        private final String tag;
        private final int elementSize;
        private final Class<?> type;
        private final PrimitiveArrayType frameType;

        Kind(PrimitiveArrayType frameType) {
            this(frameType.tag(), frameType.elementSize(), frameType.arrayClass(), frameType);
        }

        Kind(String tag, int elementSize, Class<?> type, PrimitiveArrayType frameType) {
            this.tag = tag;
            this.elementSize = elementSize;
            this.type = type;
            this.frameType = frameType;
        }

        String tag() {
            return tag;
        }

        int elementSize() {
            return elementSize;
        }

        Class<?> type() {
            return type;
        }

        /** The type a frame of this kind's array is described as; {@code null} for BOOL (a packed copy). */
        PrimitiveArrayType frameType() {
            return frameType;
        }
    }

    static Kind kindOf(Class<?> arrayType) {
        for (Kind k : Kind.values()) {
            if (k.type == arrayType) {
                return k;
            }
        }
        throw new IllegalArgumentException(arrayType.getName());
    }

    static Kind kindOf(String tag) {
        for (Kind k : Kind.values()) {
            if (k.tag.equals(tag)) {
                return k;
            }
        }
        return null;
    }

    static int length(Object array) {
        return java.lang.reflect.Array.getLength(array);
    }

    /** The array's own memory; for a {@code boolean[]}, which has no segment view, a packed byte copy. */
    static MemorySegment segment(Object array) {
        return switch (array) {
            case byte[] a -> MemorySegment.ofArray(a);
            case short[] a -> MemorySegment.ofArray(a);
            case char[] a -> MemorySegment.ofArray(a);
            case int[] a -> MemorySegment.ofArray(a);
            case long[] a -> MemorySegment.ofArray(a);
            case float[] a -> MemorySegment.ofArray(a);
            case double[] a -> MemorySegment.ofArray(a);
            case boolean[] a -> {
                byte[] b = new byte[a.length];
                for (int i = 0; i < a.length; i++) {
                    b[i] = (byte) (a[i] ? 1 : 0);
                }
                yield MemorySegment.ofArray(b);
            }
            default -> throw new IllegalArgumentException(array.getClass().getName());
        };
    }

    /** A new array of {@code kind} with {@code n} elements (bool arrays as raw bytes, converted by the caller). */
    static Object newArray(Kind kind, int n) {
        return switch (kind) {
            case I8, BOOL -> new byte[n];
            case I16 -> new short[n];
            case U16 -> new char[n];
            case I32 -> new int[n];
            case I64 -> new long[n];
            case F32 -> new float[n];
            case F64 -> new double[n];
        };
    }

    static Object fromBytes(Kind kind, byte[] bytes) {
        int n = bytes.length / kind.elementSize();
        Object array = newArray(kind, n);
        MemorySegment.copy(MemorySegment.ofArray(bytes), 0, segment(array), 0, bytes.length);
        return finish(kind, array);
    }

    static Object finish(Kind kind, Object array) {
        if (kind != Kind.BOOL) {
            return array;
        }
        byte[] b = (byte[]) array;
        boolean[] out = new boolean[b.length];
        for (int i = 0; i < b.length; i++) {
            out[i] = b[i] != 0;
        }
        return out;
    }
}
