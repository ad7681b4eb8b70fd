package io.cuwire.memory;

import java.lang.foreign.MemorySegment;
import java.util.Random;

/** Test data for arrays: random Java vectors of each dtype, uploads and exports by dtype, F-order storage. */
final class NdArrays {
    private NdArrays() {}

    /** A random Java vector ({@code float[]}, …, {@code boolean[]}) of {@code n} elements of {@code dtype}. */
    static Object random(Random r, DType dtype, int n) {
        switch (dtype) {
            case FLOAT32 -> {
                float[] a = new float[n];
                for (int i = 0; i < n; i++) {
                    a[i] = (float) r.nextGaussian();
                }
                return a;
            }
            case FLOAT64 -> {
                double[] a = new double[n];
                for (int i = 0; i < n; i++) {
                    a[i] = r.nextGaussian();
                }
                return a;
            }
            case INT32 -> {
                return r.ints(n).toArray();
            }
            case INT64 -> {
                return r.longs(n).toArray();
            }
            case UINT8 -> {
                byte[] a = new byte[n];
                r.nextBytes(a);
                return a;
            }
            case BOOL -> {
                boolean[] a = new boolean[n];
                for (int i = 0; i < n; i++) {
                    a[i] = r.nextBoolean();
                }
                return a;
            }
            default -> throw new AssertionError(dtype);
        }
    }

    /** {@link NdArray#fromArray} for whichever Java vector {@code data} is. */
    static NdArray fromArray(BufferAllocator<?> alloc, Object data, long... shape) {
        return switch (data) {
            case float[] a -> NdArray.fromArray(alloc, a, shape);
            case double[] a -> NdArray.fromArray(alloc, a, shape);
            case int[] a -> NdArray.fromArray(alloc, a, shape);
            case long[] a -> NdArray.fromArray(alloc, a, shape);
            case byte[] a -> NdArray.fromArray(alloc, a, shape);
            case boolean[] a -> NdArray.fromArray(alloc, a, shape);
            default -> throw new AssertionError(data.getClass());
        };
    }

    /** The export of {@code a} matching its dtype ({@code toFloatArray}, …). */
    static Object export(NdArray a) {
        return switch (a.dtype()) {
            case FLOAT32 -> a.toFloatArray();
            case FLOAT64 -> a.toDoubleArray();
            case INT32 -> a.toIntArray();
            case INT64 -> a.toLongArray();
            case UINT8 -> a.toByteArray();
            case BOOL -> a.toBooleanArray();
        };
    }

    /** The bytes of a Java vector as the array stores them (booleans as 0 and 1). */
    static MemorySegment bytes(Object data) {
        return switch (data) {
            case float[] a -> MemorySegment.ofArray(a);
            case double[] a -> MemorySegment.ofArray(a);
            case int[] a -> MemorySegment.ofArray(a);
            case long[] a -> MemorySegment.ofArray(a);
            case byte[] a -> MemorySegment.ofArray(a);
            case boolean[] a -> {
                byte[] b = new byte[a.length];
                for (int i = 0; i < a.length; i++) {
                    b[i] = (byte) (a[i] ? 1 : 0);
                }
                yield MemorySegment.ofArray(b);
            }
            default -> throw new AssertionError(data.getClass());
        };
    }

    /** The position in column-major storage of the element at row-major position {@code c}. */
    static long fIndex(long[] shape, long c) {
        long f = 0;
        long stride = 1;
        long[] index = new long[shape.length];
        for (int d = shape.length - 1; d >= 0; d--) {
            index[d] = c % shape[d];
            c /= shape[d];
        }
        for (int d = 0; d < shape.length; d++) {
            f += index[d] * stride;
            stride *= shape[d];
        }
        return f;
    }

    /** The elements of {@code cOrder} (a Java vector in row-major order) laid out column-major, as bytes. */
    static MemorySegment fStorage(Object cOrder, DType dtype, long[] shape) {
        MemorySegment c = bytes(cOrder);
        int es = dtype.byteSize();
        long n = c.byteSize() / es;
        MemorySegment f = MemorySegment.ofArray(new byte[(int) c.byteSize()]);
        for (long i = 0; i < n; i++) {
            MemorySegment.copy(c, i * es, f, fIndex(shape, i) * es, es);
        }
        return f;
    }

    /** An owned F-order array of {@code alloc}'s memory holding the row-major elements {@code cOrder}. */
    static NdArray fOrder(BufferAllocator<?> alloc, Object cOrder, DType dtype, long... shape) {
        MemorySegment storage = fStorage(cOrder, dtype, shape);
        Buffer buffer = alloc.allocate(storage.byteSize());
        if (storage.byteSize() > 0) {
            CopyEngine.copyFromSegment(storage, buffer, 0);
        }
        return NdArray.adopt(buffer, dtype, Order.F, shape);
    }

    /** A random shape of rank 0 to 4 with dimensions 0 to 6 (mostly 1 or more). */
    static long[] randomShape(Random r) {
        long[] shape = new long[r.nextInt(5)];
        for (int i = 0; i < shape.length; i++) {
            shape[i] = r.nextInt(10) == 0 ? 0 : 1 + r.nextInt(6);
        }
        return shape;
    }

    static int size(long[] shape) {
        long n = 1;
        for (long d : shape) {
            n *= d;
        }
        return (int) n;
    }
}
