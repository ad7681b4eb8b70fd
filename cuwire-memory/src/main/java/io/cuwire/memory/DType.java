package io.cuwire.memory;

import java.util.Arrays;
import java.util.stream.Collectors;

/**
 * The element type of an {@link NdArray}. Elements are stored little-endian (the byte order of every platform
 * cuwire runs on) and packed: {@link #byteSize()} bytes each, no padding. {@link #BOOL} takes one byte per element,
 * {@code 0} for false and {@code 1} for true.
 *
 * <p>{@link #wireName()} is the stable name used on the wire and in messages ({@code float32}, …); it never changes
 * once released, unlike the constant's ordinal.
 */
public enum DType {
    /** IEEE 754 binary32. */
    FLOAT32("float32", 4),
    /** IEEE 754 binary64. */
    FLOAT64("float64", 8),
    /** Signed 32-bit integer. */
    INT32("int32", 4),
    /** Signed 64-bit integer. */
    INT64("int64", 8),
    /** Unsigned 8-bit integer; a Java {@code byte} holds its bits. */
    UINT8("uint8", 1),
    /** Boolean, one byte per element: {@code 0} or {@code 1}. */
    BOOL("bool", 1);

    private final String wireName;
    private final int byteSize;

    DType(String wireName, int byteSize) {
        this.wireName = wireName;
        this.byteSize = byteSize;
    }

    /** Bytes per element. */
    public int byteSize() {
        return byteSize;
    }

    /** The stable name, e.g. {@code float32}. */
    public String wireName() {
        return wireName;
    }

    /** Whether the elements are floating point ({@link #FLOAT32}, {@link #FLOAT64}). */
    public boolean isFloatingPoint() {
        return this == FLOAT32 || this == FLOAT64;
    }

    /** Whether the elements are signed integers usable as indices ({@link #INT32}, {@link #INT64}). */
    public boolean isIndex() {
        return this == INT32 || this == INT64;
    }

    /**
     * The dtype whose {@link #wireName()} is {@code name}.
     *
     * @throws IllegalArgumentException naming the known names if there is none
     */
    public static DType byName(String name) {
        for (DType t : values()) {
            if (t.wireName.equals(name)) {
                return t;
            }
        }
        throw new IllegalArgumentException("unknown dtype: '" + name + "' (expected one of: "
                + Arrays.stream(values()).map(DType::wireName).collect(Collectors.joining(", ")) + ")");
    }
}
