package io.cuwire.ml.internal;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.DType;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Moves the elements of an {@link NdArray} into and out of Java arrays, in storage order. Host and pinned arrays are
 * read and written in place (the CPU reading its own memory is not a transfer); device arrays go through the
 * {@link CopyEngine}, which counts every byte as device-to-host or host-to-device. This is how the CPU backend works
 * on emulated-device memory, and how merges read the small statistics they combine on the host.
 */
public final class HostArrays {
    /** The most elements of one operand the CPU backend handles: what a Java array holds. */
    public static final int MAX_ELEMENTS = NdArray.MAX_ARRAY_LENGTH;

    private static final ValueLayout.OfDouble F64 = ValueLayout.JAVA_DOUBLE_UNALIGNED;
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED;
    private static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG_UNALIGNED;

    private HostArrays() {}

    private static int length(NdArray a) {
        if (a.size() > MAX_ELEMENTS) {
            throw new IllegalArgumentException(a + " has " + a.size() + " elements; the CPU backend holds at most "
                    + MAX_ELEMENTS + " per operand");
        }
        return (int) a.size();
    }

    private static MemorySegment hostSegment(NdArray a) {
        return a.kind().isHostAccessible() ? ((HostBuffer) a.buffer()).segment() : null;
    }

    /**
     * The elements of a float64 array in host or pinned memory, read in place ({@code null} for any other array:
     * those are read into the heap).
     */
    static MemorySegment float64Segment(NdArray a) {
        return a.dtype() == DType.FLOAT64 ? hostSegment(a) : null;
    }

    /** The elements of a float32 or float64 array as doubles. */
    public static double[] doubles(NdArray a) {
        int n = length(a);
        double[] out = new double[n];
        if (n == 0) {
            return out;
        }
        MemorySegment seg = hostSegment(a);
        if (a.dtype() == DType.FLOAT64) {
            if (seg != null) {
                MemorySegment.copy(seg, F64, 0, out, 0, n);
            } else {
                CopyEngine.copyToSegment(a.buffer(), 0, MemorySegment.ofArray(out));
            }
        } else if (a.dtype() == DType.FLOAT32) {
            float[] f = new float[n];
            if (seg != null) {
                MemorySegment.copy(seg, F32, 0, f, 0, n);
            } else {
                CopyEngine.copyToSegment(a.buffer(), 0, MemorySegment.ofArray(f));
            }
            for (int i = 0; i < n; i++) {
                out[i] = f[i];
            }
        } else {
            throw new IllegalArgumentException(
                    a + ": dtype " + a.dtype().wireName() + " (expected: float32 or " + "float64)");
        }
        return out;
    }

    /** The elements of an int32 array. */
    public static int[] ints(NdArray a) {
        if (a.dtype() != DType.INT32) {
            throw new IllegalArgumentException(a + ": dtype " + a.dtype().wireName() + " (expected: int32)");
        }
        int n = length(a);
        int[] out = new int[n];
        if (n > 0) {
            MemorySegment seg = hostSegment(a);
            if (seg != null) {
                MemorySegment.copy(seg, I32, 0, out, 0, n);
            } else {
                CopyEngine.copyToSegment(a.buffer(), 0, MemorySegment.ofArray(out));
            }
        }
        return out;
    }

    /** The elements of an int32 or int64 array as longs. */
    public static long[] longs(NdArray a) {
        if (a.dtype() == DType.INT32) {
            int[] i = ints(a);
            long[] out = new long[i.length];
            for (int j = 0; j < i.length; j++) {
                out[j] = i[j];
            }
            return out;
        }
        if (a.dtype() != DType.INT64) {
            throw new IllegalArgumentException(a + ": dtype " + a.dtype().wireName() + " (expected: int32 or int64)");
        }
        int n = length(a);
        long[] out = new long[n];
        if (n > 0) {
            MemorySegment seg = hostSegment(a);
            if (seg != null) {
                MemorySegment.copy(seg, I64, 0, out, 0, n);
            } else {
                CopyEngine.copyToSegment(a.buffer(), 0, MemorySegment.ofArray(out));
            }
        }
        return out;
    }

    /** The elements of any integer or floating array as doubles. */
    public static double[] numbers(NdArray a) {
        if (a.dtype().isFloatingPoint()) {
            return doubles(a);
        }
        long[] l = longs(a);
        double[] out = new double[l.length];
        for (int i = 0; i < l.length; i++) {
            out[i] = l[i];
        }
        return out;
    }

    /** The raw bytes of any array, in storage order. */
    public static byte[] bytes(NdArray a) {
        if (a.byteSize() > MAX_ELEMENTS) {
            throw new IllegalArgumentException(a + " has " + a.byteSize() + " bytes; the CPU backend holds at most "
                    + MAX_ELEMENTS + " per operand");
        }
        byte[] out = new byte[(int) a.byteSize()];
        if (out.length > 0) {
            MemorySegment seg = hostSegment(a);
            if (seg != null) {
                MemorySegment.copy(seg, 0, MemorySegment.ofArray(out), 0, out.length);
            } else {
                CopyEngine.copyToSegment(a.buffer(), 0, MemorySegment.ofArray(out));
            }
        }
        return out;
    }

    /** Writes raw bytes over all of {@code a}. */
    public static void writeBytes(NdArray a, byte[] v) {
        a.checkOpen();
        if (a.byteSize() != v.length) {
            throw new IllegalArgumentException(a + " has " + a.byteSize() + " bytes (expected: " + v.length + ")");
        }
        if (v.length == 0) {
            return;
        }
        MemorySegment seg = hostSegment(a);
        if (seg != null) {
            MemorySegment.copy(MemorySegment.ofArray(v), 0, seg, 0, v.length);
        } else {
            CopyEngine.copyFromSegment(MemorySegment.ofArray(v), a.buffer(), 0);
        }
    }

    /** Writes {@code v} (rounded to float32 for a float32 array) over all elements of {@code a}. */
    public static void write(NdArray a, double[] v) {
        checkLength(a, v.length);
        if (v.length == 0) {
            return;
        }
        MemorySegment seg = hostSegment(a);
        if (a.dtype() == DType.FLOAT64) {
            if (seg != null) {
                MemorySegment.copy(v, 0, seg, F64, 0, v.length);
            } else {
                CopyEngine.copyFromSegment(MemorySegment.ofArray(v), a.buffer(), 0);
            }
        } else if (a.dtype() == DType.FLOAT32) {
            float[] f = new float[v.length];
            for (int i = 0; i < v.length; i++) {
                f[i] = (float) v[i];
            }
            if (seg != null) {
                MemorySegment.copy(f, 0, seg, F32, 0, f.length);
            } else {
                CopyEngine.copyFromSegment(MemorySegment.ofArray(f), a.buffer(), 0);
            }
        } else {
            throw new IllegalArgumentException(
                    a + ": dtype " + a.dtype().wireName() + " (expected: float32 or " + "float64)");
        }
    }

    /** Writes {@code v} over all elements of an int32 array. */
    public static void write(NdArray a, int[] v) {
        checkLength(a, v.length);
        if (a.dtype() != DType.INT32) {
            throw new IllegalArgumentException(a + ": dtype " + a.dtype().wireName() + " (expected: int32)");
        }
        if (v.length == 0) {
            return;
        }
        MemorySegment seg = hostSegment(a);
        if (seg != null) {
            MemorySegment.copy(v, 0, seg, I32, 0, v.length);
        } else {
            CopyEngine.copyFromSegment(MemorySegment.ofArray(v), a.buffer(), 0);
        }
    }

    /** Writes {@code v} over all elements of an int64 array, or an int32 one (each value must fit). */
    public static void write(NdArray a, long[] v) {
        checkLength(a, v.length);
        if (a.dtype() == DType.INT32) {
            int[] i = new int[v.length];
            for (int j = 0; j < v.length; j++) {
                i[j] = Math.toIntExact(v[j]);
            }
            write(a, i);
            return;
        }
        if (a.dtype() != DType.INT64) {
            throw new IllegalArgumentException(a + ": dtype " + a.dtype().wireName() + " (expected: int32 or int64)");
        }
        if (v.length == 0) {
            return;
        }
        MemorySegment seg = hostSegment(a);
        if (seg != null) {
            MemorySegment.copy(v, 0, seg, I64, 0, v.length);
        } else {
            CopyEngine.copyFromSegment(MemorySegment.ofArray(v), a.buffer(), 0);
        }
    }

    private static void checkRange(NdArray a, long first, int count) {
        a.checkOpen();
        if (first < 0 || count < 0 || first + count > a.size()) {
            throw new IllegalArgumentException(a + ": elements " + first + " .. " + (first + count) + " (expected: "
                    + "within 0 .. " + a.size() + ")");
        }
    }

    /**
     * Reads elements {@code [first, first + count)} of a float32 or float64 array, in storage order, into
     * {@code into[0 .. count)} as doubles: in place from host memory, through the copy engine from a device.
     */
    public static void read(NdArray a, long first, double[] into, int count) {
        checkRange(a, first, count);
        if (count == 0) {
            return;
        }
        MemorySegment seg = hostSegment(a);
        if (a.dtype() == DType.FLOAT64) {
            if (seg != null) {
                MemorySegment.copy(seg, F64, first * Double.BYTES, into, 0, count);
            } else {
                CopyEngine.copyToSegment(
                        a.buffer(),
                        first * Double.BYTES,
                        MemorySegment.ofArray(into).asSlice(0, (long) count * Double.BYTES));
            }
        } else if (a.dtype() == DType.FLOAT32) {
            float[] f = new float[count];
            if (seg != null) {
                MemorySegment.copy(seg, F32, first * Float.BYTES, f, 0, count);
            } else {
                CopyEngine.copyToSegment(a.buffer(), first * Float.BYTES, MemorySegment.ofArray(f));
            }
            for (int i = 0; i < count; i++) {
                into[i] = f[i];
            }
        } else {
            throw new IllegalArgumentException(
                    a + ": dtype " + a.dtype().wireName() + " (expected: float32 or " + "float64)");
        }
    }

    /** Reads elements {@code [first, first + count)} of an int32 array into {@code into[0 .. count)}. */
    public static void read(NdArray a, long first, int[] into, int count) {
        if (a.dtype() != DType.INT32) {
            throw new IllegalArgumentException(a + ": dtype " + a.dtype().wireName() + " (expected: int32)");
        }
        checkRange(a, first, count);
        if (count == 0) {
            return;
        }
        MemorySegment seg = hostSegment(a);
        if (seg != null) {
            MemorySegment.copy(seg, I32, first * Integer.BYTES, into, 0, count);
        } else {
            CopyEngine.copyToSegment(
                    a.buffer(),
                    first * Integer.BYTES,
                    MemorySegment.ofArray(into).asSlice(0, (long) count * Integer.BYTES));
        }
    }

    /**
     * Writes {@code from[0 .. count)} (rounded to float32 for a float32 array) over elements
     * {@code [first, first + count)} of {@code a}.
     */
    public static void write(NdArray a, long first, double[] from, int count) {
        checkRange(a, first, count);
        if (count == 0) {
            return;
        }
        MemorySegment seg = hostSegment(a);
        if (a.dtype() == DType.FLOAT64) {
            if (seg != null) {
                MemorySegment.copy(from, 0, seg, F64, first * Double.BYTES, count);
            } else {
                CopyEngine.copyFromSegment(
                        MemorySegment.ofArray(from).asSlice(0, (long) count * Double.BYTES),
                        a.buffer(),
                        first * Double.BYTES);
            }
        } else if (a.dtype() == DType.FLOAT32) {
            float[] f = new float[count];
            for (int i = 0; i < count; i++) {
                f[i] = (float) from[i];
            }
            if (seg != null) {
                MemorySegment.copy(f, 0, seg, F32, first * Float.BYTES, count);
            } else {
                CopyEngine.copyFromSegment(MemorySegment.ofArray(f), a.buffer(), first * Float.BYTES);
            }
        } else {
            throw new IllegalArgumentException(
                    a + ": dtype " + a.dtype().wireName() + " (expected: float32 or " + "float64)");
        }
    }

    /** Writes {@code from[0 .. count)} over elements {@code [first, first + count)} of an int32 array. */
    public static void write(NdArray a, long first, int[] from, int count) {
        if (a.dtype() != DType.INT32) {
            throw new IllegalArgumentException(a + ": dtype " + a.dtype().wireName() + " (expected: int32)");
        }
        checkRange(a, first, count);
        if (count == 0) {
            return;
        }
        MemorySegment seg = hostSegment(a);
        if (seg != null) {
            MemorySegment.copy(from, 0, seg, I32, first * Integer.BYTES, count);
        } else {
            CopyEngine.copyFromSegment(
                    MemorySegment.ofArray(from).asSlice(0, (long) count * Integer.BYTES),
                    a.buffer(),
                    first * Integer.BYTES);
        }
    }

    /** Writes {@code from[0 .. count)} over elements {@code [first, first + count)} of an int64 array. */
    public static void write(NdArray a, long first, long[] from, int count) {
        if (a.dtype() != DType.INT64) {
            throw new IllegalArgumentException(a + ": dtype " + a.dtype().wireName() + " (expected: int64)");
        }
        checkRange(a, first, count);
        if (count == 0) {
            return;
        }
        MemorySegment seg = hostSegment(a);
        if (seg != null) {
            MemorySegment.copy(from, 0, seg, I64, first * Long.BYTES, count);
        } else {
            CopyEngine.copyFromSegment(
                    MemorySegment.ofArray(from).asSlice(0, (long) count * Long.BYTES), a.buffer(), first * Long.BYTES);
        }
    }

    private static void checkLength(NdArray a, int n) {
        a.checkOpen();
        if (a.size() != n) {
            throw new IllegalArgumentException(a + " has " + a.size() + " elements (expected: " + n + ")");
        }
    }

    /** A new C-order array of {@code alloc}'s memory holding {@code v} in {@code dtype} (a float dtype). */
    public static NdArray upload(BufferAllocator<?> alloc, DType dtype, double[] v, long... shape) {
        NdArray a = NdArray.empty(alloc, dtype, Order.C, shape);
        try {
            write(a, v);
            return a;
        } catch (RuntimeException | Error e) {
            a.close();
            throw e;
        }
    }
}
