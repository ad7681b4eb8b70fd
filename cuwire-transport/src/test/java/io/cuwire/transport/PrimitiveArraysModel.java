package io.cuwire.transport;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * A model of the transport tests holding a heap array of every primitive element type: the generic serializer hands
 * each array of at least its frame threshold over as a host frame of the array's own memory (a {@code boolean[]} as
 * a packed byte copy), smaller ones go inline in the header.
 */
final class PrimitiveArraysModel {
    String label;
    byte[] i8;
    short[] i16;
    char[] u16;
    int[] i32;
    long[] i64;
    float[] f32;
    double[] f64;
    boolean[] bool;

    /**
     * A model whose arrays each hold {@code bytes / elementSize + extraElements} elements of random values.
     *
     * @param extraElements elements added to (or, negative, taken from) the array of {@code bytes}
     */
    static PrimitiveArraysModel random(String label, int bytes, int extraElements, SplittableRandom random) {
        PrimitiveArraysModel m = new PrimitiveArraysModel();
        m.label = label;
        m.i8 = new byte[bytes + extraElements];
        m.i16 = new short[bytes / Short.BYTES + extraElements];
        m.u16 = new char[bytes / Character.BYTES + extraElements];
        m.i32 = new int[bytes / Integer.BYTES + extraElements];
        m.i64 = new long[bytes / Long.BYTES + extraElements];
        m.f32 = new float[bytes / Float.BYTES + extraElements];
        m.f64 = new double[bytes / Double.BYTES + extraElements];
        m.bool = new boolean[bytes + extraElements];
        random.nextBytes(m.i8);
        for (int i = 0; i < m.i16.length; i++) {
            m.i16[i] = (short) random.nextInt();
            m.u16[i] = (char) random.nextInt();
        }
        for (int i = 0; i < m.i32.length; i++) {
            m.i32[i] = random.nextInt();
            m.f32[i] = Float.intBitsToFloat(random.nextInt());
        }
        for (int i = 0; i < m.i64.length; i++) {
            m.i64[i] = random.nextLong();
            m.f64[i] = Double.longBitsToDouble(random.nextLong());
        }
        for (int i = 0; i < m.bool.length; i++) {
            m.bool[i] = random.nextBoolean();
        }
        return m;
    }

    /** Bytes of the arrays that travel as frames: those of at least {@code frameThreshold} bytes. */
    long frameBytes(long frameThreshold) {
        long total = 0;
        for (long n : new long[] {
            i8.length,
            i16.length * 2L,
            u16.length * 2L,
            i32.length * 4L,
            i64.length * 8L,
            f32.length * 4L,
            f64.length * 8L,
            bool.length
        }) {
            total += n >= frameThreshold ? n : 0;
        }
        return total;
    }

    /** Chunks of {@code chunk} bytes the frames of {@link #frameBytes} make, frame by frame. */
    long frameChunks(long frameThreshold, long chunk) {
        long total = 0;
        for (long n : new long[] {
            i8.length,
            i16.length * 2L,
            u16.length * 2L,
            i32.length * 4L,
            i64.length * 8L,
            f32.length * 4L,
            f64.length * 8L,
            bool.length
        }) {
            total += n >= frameThreshold ? (n + chunk - 1) / chunk : 0;
        }
        return total;
    }

    /**
     * The arrays that travel as frames of their own memory (at least {@code frameThreshold} bytes, every type but
     * {@code boolean[]}, whose frame is a packed copy): the ones a byte-stream receiver takes as fresh arrays.
     */
    List<Object> arrayFrames(long frameThreshold) {
        List<Object> arrays = new ArrayList<>();
        for (Object a : new Object[] {i8, i16, u16, i32, i64, f32, f64}) {
            if (segment(a).byteSize() >= frameThreshold) {
                arrays.add(a);
            }
        }
        return arrays;
    }

    private static MemorySegment segment(Object array) {
        return switch (array) {
            case byte[] a -> MemorySegment.ofArray(a);
            case short[] a -> MemorySegment.ofArray(a);
            case char[] a -> MemorySegment.ofArray(a);
            case int[] a -> MemorySegment.ofArray(a);
            case long[] a -> MemorySegment.ofArray(a);
            case float[] a -> MemorySegment.ofArray(a);
            case double[] a -> MemorySegment.ofArray(a);
            default -> throw new IllegalArgumentException(array.getClass().getName());
        };
    }

    /** Asserts that {@code other} equals this model field for field (floats bit for bit, NaN payloads too). */
    void assertEqualTo(PrimitiveArraysModel other) {
        assertEquals(label, other.label);
        assertArrayEquals(i8, other.i8, label + ".i8");
        assertArrayEquals(i16, other.i16, label + ".i16");
        assertArrayEquals(u16, other.u16, label + ".u16");
        assertArrayEquals(i32, other.i32, label + ".i32");
        assertArrayEquals(i64, other.i64, label + ".i64");
        assertEquals(f32.length, other.f32.length, label + ".f32.length");
        assertEquals(-1, MemorySegment.ofArray(f32).mismatch(MemorySegment.ofArray(other.f32)), label + ".f32");
        assertEquals(f64.length, other.f64.length, label + ".f64.length");
        assertEquals(-1, MemorySegment.ofArray(f64).mismatch(MemorySegment.ofArray(other.f64)), label + ".f64");
        assertArrayEquals(bool, other.bool, label + ".bool");
    }
}
