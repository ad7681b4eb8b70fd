package io.cuwire.serialize;

import java.lang.foreign.MemorySegment;

/**
 * The Java primitive array types whose frame is the array's memory as it is: the element type a
 * {@link FrameDescriptor} may name, so that a receiver can take such a frame into a fresh array of that type and the
 * decoder can return that array itself ({@link FrameDescriptor#arrayType()}). {@code boolean[]} is not one: its frame
 * is a packed byte copy, never an array's own memory.
 */
public enum PrimitiveArrayType {
    /** {@code byte[]}. */
    I8("i8[]", 1, byte[].class),
    /** {@code short[]}. */
    I16("i16[]", 2, short[].class),
    /** {@code char[]}. */
    U16("u16[]", 2, char[].class),
    /** {@code int[]}. */
    I32("i32[]", 4, int[].class),
    /** {@code long[]}. */
    I64("i64[]", 8, long[].class),
    /** {@code float[]}. */
    F32("f32[]", 4, float[].class),
    /** {@code double[]}. */
    F64("f64[]", 8, double[].class);

    /** The most elements of an array the decoder accepts (the JVM's own bound is a little below 2^31). */
    public static final int MAX_LENGTH = Integer.MAX_VALUE - 8;

    private final String tag;
    private final int elementSize;
    private final Class<?> arrayClass;

    PrimitiveArrayType(String tag, int elementSize, Class<?> arrayClass) {
        this.tag = tag;
        this.elementSize = elementSize;
        this.arrayClass = arrayClass;
    }

    /** The wire name: the primitive-array node's tag, such as {@code f32[]}. */
    public String tag() {
        return tag;
    }

    /** Bytes per element. */
    public int elementSize() {
        return elementSize;
    }

    /** The array class, such as {@code float[].class}. */
    public Class<?> arrayClass() {
        return arrayClass;
    }

    /** The type whose {@link #tag()} is {@code tag}, or {@code null}. */
    public static PrimitiveArrayType ofTag(String tag) {
        for (PrimitiveArrayType t : values()) {
            if (t.tag.equals(tag)) {
                return t;
            }
        }
        return null;
    }

    /** The type of arrays of class {@code arrayClass}, or {@code null} if it is none of these. */
    public static PrimitiveArrayType of(Class<?> arrayClass) {
        for (PrimitiveArrayType t : values()) {
            if (t.arrayClass == arrayClass) {
                return t;
            }
        }
        return null;
    }

    /**
     * A fresh array of this type, {@code length} elements (zeroed, as the JVM makes every array), as its memory
     * segment; {@link MemorySegment#heapBase()} is the array.
     *
     * @throws IllegalArgumentException if {@code length} is negative or beyond {@link #MAX_LENGTH}
     * @throws OutOfMemoryError if the heap has no room for it
     */
    public MemorySegment newArraySegment(int length) {
        if (length < 0 || length > MAX_LENGTH) {
            throw new IllegalArgumentException(tag + " of " + length + " elements (expected: 0.." + MAX_LENGTH + ")");
        }
        return switch (this) {
            case I8 -> MemorySegment.ofArray(new byte[length]);
            case I16 -> MemorySegment.ofArray(new short[length]);
            case U16 -> MemorySegment.ofArray(new char[length]);
            case I32 -> MemorySegment.ofArray(new int[length]);
            case I64 -> MemorySegment.ofArray(new long[length]);
            case F32 -> MemorySegment.ofArray(new float[length]);
            case F64 -> MemorySegment.ofArray(new double[length]);
        };
    }

    /** Whether {@code segment} is the whole memory of an array of this type (of any length), nothing less. */
    public boolean isWholeArray(MemorySegment segment) {
        Object base = segment.heapBase().orElse(null);
        return arrayClass.isInstance(base)
                && segment.address() == 0
                && segment.byteSize() == (long) java.lang.reflect.Array.getLength(base) * elementSize;
    }
}
