package io.cuwire.memory;

import java.io.InvalidObjectException;
import java.io.NotSerializableException;
import java.io.ObjectInputStream;
import java.io.ObjectStreamException;
import java.io.Serial;
import java.io.Serializable;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.reflect.Array;
import java.util.Arrays;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.IntFunction;
import java.util.function.Supplier;

/**
 * An n-dimensional array of one {@link DType} over a {@link Buffer} of any kind — host, pinned or device memory —
 * the analogue of cuML's array and of NumPy's {@code ndarray} without strides: elements are packed, little-endian,
 * in {@link Order#C} (row-major) or {@link Order#F} (column-major) order, starting at a byte offset into the buffer.
 * The rank is 0 to {@value #MAX_RANK}; element counts and byte sizes are {@code long} (checked for overflow), so
 * arrays over 2 GiB are ordinary.
 *
 * <h2>Ownership and close policy</h2>
 * <table>
 *   <caption>Who closes what</caption>
 *   <tr><th>array</th><th>made by</th><th>{@code close()}</th></tr>
 *   <tr><td>owner</td><td>{@link #adopt}, the factories ({@link #fromArray}, {@link #zeros}, …),
 *       {@link #copyTo(BufferAllocator)}</td><td>closes the buffer, returning its bytes to its allocator</td></tr>
 *   <tr><td>view</td><td>{@link #view}</td><td>ends this array's use; the buffer stays with its owner, who must
 *       keep it open while the view is used</td></tr>
 * </table>
 * Closing an array twice is an error ({@link IllegalStateException}), as for buffers. Using a closed array, or a
 * view whose buffer was closed, throws {@link IllegalStateException}. Metadata ({@link #dtype()}, {@link #shape()},
 * {@link #kind()}, …) stays readable after close.
 *
 * <h2>Moving bytes</h2>
 * Every byte that enters or leaves an array goes through the {@link CopyEngine} and is counted there: the factories
 * copy from the Java heap ({@link CopyDirection#H2D} onto a device), the exports copy to it
 * ({@link CopyDirection#D2H} from a device), {@link #copyTo(BufferAllocator)} copies between buffers. The host never
 * reads device memory any other way. Exports return elements in logical C (row-major) order whatever the array's
 * order: an F-order array is copied out whole and transposed on the host.
 *
 * <h2>JDK serialization</h2>
 * An array is {@link Serializable} the way pickle serializes a GPU array: its serial form holds the dtype, order,
 * shape and <em>all its bytes copied to the Java heap</em> (through the {@link CopyEngine}, so a device array counts
 * {@link CopyDirection#D2H} bytes when written). Reading it back makes a new owned array, in storage order as
 * written, from the allocator that {@link #readTarget} set for the reading thread (with two targets, the one that
 * matches where the array lived at the writer: device memory, or host and pinned memory), or else from a
 * process-wide host allocator ({@link #defaultReadTarget()}); a device target counts {@link CopyDirection#H2D}
 * bytes. The byte copy
 * must fit one Java {@code byte[]}: arrays larger than {@value #MAX_ARRAY_LENGTH} bytes cannot be JDK-serialized
 * (the JVM's 2 GiB array limit). This is the baseline cuwire's {@code cuda} and {@code host} families replace;
 * it exists so that estimators holding arrays work with JDK serialization at all, and so benchmarks can compare.
 * Shared references within one stream stay shared; the reader owns (and must close) every array it reads.
 *
 * <h2>Identity and threads</h2>
 * {@code equals} and {@code hashCode} are identity: an array is a handle to memory, not a value. Compare elements
 * with {@link #contentEquals}. Arrays are immutable handles and safe to share between threads; the elements are
 * not guarded (concurrent writers to the buffer race as they would on any memory), and {@code close()} must not
 * race with copies still using the array.
 */
public final class NdArray implements AutoCloseable, Serializable {
    /** The largest rank. */
    public static final int MAX_RANK = 8;

    /** The most elements an export to a Java array returns; larger arrays are copied out in pieces. */
    public static final int MAX_ARRAY_LENGTH = Integer.MAX_VALUE - 8;

    /** Bytes staged on the heap at once when writing zeros or the rows of a matrix. */
    private static final int STAGING_BYTES = 1 << 20;

    /** Where {@link SerialForm#readResolve()} puts the arrays it rebuilds on this thread; see {@link #readTarget}. */
    private static final ThreadLocal<ReadTargets> READ_TARGET = new ThreadLocal<>();

    /** Allocators for arrays that were in device memory at the writer, and for those that were not. */
    private record ReadTargets(BufferAllocator<?> device, BufferAllocator<?> host) {}

    private final Buffer buffer;
    private final Buffer data;
    private final long byteOffset;
    private final DType dtype;
    private final Order order;
    private final long[] shape;
    private final long size;
    private final boolean owner;
    private final AtomicBoolean closed = new AtomicBoolean();

    private NdArray(Buffer buffer, long byteOffset, DType dtype, Order order, long[] shape, boolean owner) {
        Objects.requireNonNull(buffer, "buffer");
        Objects.requireNonNull(dtype, "dtype");
        Objects.requireNonNull(order, "order");
        Objects.requireNonNull(shape, "shape");
        long[] dims = shape.clone();
        long byteSize = byteSize(dtype, dims);
        if (byteOffset < 0) {
            throw new IllegalArgumentException("byteOffset: " + byteOffset + " (expected: >= 0)");
        }
        if (byteOffset % dtype.byteSize() != 0) {
            throw new IllegalArgumentException("byteOffset: " + byteOffset + " (expected: a multiple of "
                    + dtype.byteSize() + ", the size of " + dtype.wireName() + ")");
        }
        buffer.checkOpen();
        if (byteOffset > buffer.byteSize() - byteSize) {
            throw new IllegalArgumentException("buffer " + buffer.describe() + " too small for " + dtype.wireName()
                    + " " + shapeString(dims) + ": needs " + byteSize + " bytes at byteOffset " + byteOffset
                    + " (expected: byteOffset + " + byteSize + " <= " + buffer.byteSize() + ")");
        }
        this.buffer = buffer;
        this.data = buffer.slice(byteOffset, byteSize);
        this.byteOffset = byteOffset;
        this.dtype = dtype;
        this.order = order;
        this.shape = dims;
        this.size = byteSize / dtype.byteSize();
        this.owner = owner;
    }

    // ---------------------------------------------------------------- wrapping buffers

    /**
     * An array over {@code buffer} from its first byte that takes ownership of it: {@link #close()} closes the
     * buffer. The buffer may be larger than the array. If this method throws, the caller still owns the buffer.
     *
     * @throws IllegalArgumentException if the shape is invalid (rank over {@value #MAX_RANK}, a negative dimension,
     *     a size overflowing a {@code long}), the buffer is too small, or it is a slice (which cannot be closed)
     * @throws IllegalStateException if the buffer is closed
     */
    public static NdArray adopt(Buffer buffer, DType dtype, Order order, long... shape) {
        Objects.requireNonNull(buffer, "buffer");
        if (buffer.isSlice()) {
            throw new IllegalArgumentException("cannot adopt " + buffer.describe()
                    + ": it is a slice, which cannot be closed; adopt the buffer it was sliced from, or make a view");
        }
        return new NdArray(buffer, 0, dtype, order, shape, true);
    }

    /**
     * An array over {@code buffer} from {@code byteOffset} that does not own it: {@link #close()} only ends the
     * array's use, and the buffer's owner must keep it open meanwhile. {@code byteOffset} must be a multiple of the
     * element size.
     *
     * @throws IllegalArgumentException if the shape or offset is invalid or the buffer is too small
     * @throws IllegalStateException if the buffer is closed
     */
    public static NdArray view(Buffer buffer, long byteOffset, DType dtype, Order order, long... shape) {
        return new NdArray(buffer, byteOffset, dtype, order, shape, false);
    }

    // ---------------------------------------------------------------- factories

    /** A new owned array of {@code alloc}'s memory whose elements are not initialised (whatever the memory held). */
    public static NdArray empty(BufferAllocator<?> alloc, DType dtype, Order order, long... shape) {
        Objects.requireNonNull(alloc, "alloc");
        Objects.requireNonNull(shape, "shape");
        long bytes = byteSize(Objects.requireNonNull(dtype, "dtype"), shape.clone());
        Buffer buffer = alloc.allocate(bytes);
        try {
            return adopt(buffer, dtype, order, shape);
        } catch (RuntimeException | Error e) {
            buffer.close();
            throw e;
        }
    }

    /**
     * A new owned array of {@code alloc}'s memory filled with zeros (all bits zero: {@code 0}, {@code 0.0},
     * {@code false}). The zeros are written from the heap through the {@link CopyEngine} in chunks, so on a device
     * they count as {@link CopyDirection#H2D} bytes.
     */
    public static NdArray zeros(BufferAllocator<?> alloc, DType dtype, Order order, long... shape) {
        NdArray a = empty(alloc, dtype, order, shape);
        try {
            long bytes = a.byteSize();
            if (bytes > 0) {
                MemorySegment zero = MemorySegment.ofArray(new byte[(int) Math.min(bytes, STAGING_BYTES)]);
                for (long off = 0; off < bytes; off += zero.byteSize()) {
                    CopyEngine.copyFromSegment(zero.asSlice(0, Math.min(zero.byteSize(), bytes - off)), a.data, off);
                }
            }
            return a;
        } catch (RuntimeException | Error e) {
            a.close();
            throw e;
        }
    }

    /**
     * A new owned {@link DType#FLOAT32} array of {@code alloc}'s memory holding {@code data}, read in C order;
     * the product of {@code shape} must be {@code data.length} (pass {@code data.length} for a vector, nothing for
     * a scalar of one element).
     */
    public static NdArray fromArray(BufferAllocator<?> alloc, float[] data, long... shape) {
        return upload(alloc, DType.FLOAT32, MemorySegment.ofArray(data), data.length, shape);
    }

    /**
     * A new owned {@link DType#FLOAT64} array holding {@code data}; the shape as for the {@code float[]} overload.
     */
    public static NdArray fromArray(BufferAllocator<?> alloc, double[] data, long... shape) {
        return upload(alloc, DType.FLOAT64, MemorySegment.ofArray(data), data.length, shape);
    }

    /**
     * A new owned {@link DType#INT32} array holding {@code data}; the shape as for the {@code float[]} overload.
     */
    public static NdArray fromArray(BufferAllocator<?> alloc, int[] data, long... shape) {
        return upload(alloc, DType.INT32, MemorySegment.ofArray(data), data.length, shape);
    }

    /**
     * A new owned {@link DType#INT64} array holding {@code data}; the shape as for the {@code float[]} overload.
     */
    public static NdArray fromArray(BufferAllocator<?> alloc, long[] data, long... shape) {
        return upload(alloc, DType.INT64, MemorySegment.ofArray(data), data.length, shape);
    }

    /**
     * A new owned {@link DType#UINT8} array holding the bits of {@code data}; the shape as for the {@code float[]}
     * overload.
     */
    public static NdArray fromArray(BufferAllocator<?> alloc, byte[] data, long... shape) {
        return upload(alloc, DType.UINT8, MemorySegment.ofArray(data), data.length, shape);
    }

    /**
     * A new owned {@link DType#BOOL} array holding {@code data}, one byte ({@code 0} or {@code 1}) per element; the
     * shape as for the {@code float[]} overload.
     */
    public static NdArray fromArray(BufferAllocator<?> alloc, boolean[] data, long... shape) {
        byte[] bytes = new byte[data.length];
        for (int i = 0; i < data.length; i++) {
            bytes[i] = data[i] ? (byte) 1 : (byte) 0;
        }
        return upload(alloc, DType.BOOL, MemorySegment.ofArray(bytes), data.length, shape);
    }

    /**
     * A new owned C-order {@link DType#FLOAT32} matrix of shape {@code (rows.length, rows[0].length)} holding
     * {@code rows}, which must all have one length; no rows make a {@code (0, 0)} matrix.
     */
    public static NdArray fromMatrix(BufferAllocator<?> alloc, float[][] rows) {
        int cols = columns(rows);
        return uploadRows(alloc, DType.FLOAT32, rows.length, cols, i -> MemorySegment.ofArray(rows[i]));
    }

    /** A new owned C-order {@link DType#FLOAT64} matrix; see {@link #fromMatrix(BufferAllocator, float[][])}. */
    public static NdArray fromMatrix(BufferAllocator<?> alloc, double[][] rows) {
        int cols = columns(rows);
        return uploadRows(alloc, DType.FLOAT64, rows.length, cols, i -> MemorySegment.ofArray(rows[i]));
    }

    private static int columns(Object[] rows) {
        Objects.requireNonNull(rows, "rows");
        int cols = -1;
        for (int i = 0; i < rows.length; i++) {
            if (rows[i] == null) {
                throw new NullPointerException("rows[" + i + "]");
            }
            int n = Array.getLength(rows[i]);
            if (cols < 0) {
                cols = n;
            } else if (n != cols) {
                throw new IllegalArgumentException(
                        "rows[" + i + "].length: " + n + " (expected: " + cols + ", the length of rows[0])");
            }
        }
        return Math.max(cols, 0);
    }

    private static NdArray upload(BufferAllocator<?> alloc, DType dtype, MemorySegment src, long count, long[] shape) {
        Objects.requireNonNull(alloc, "alloc");
        Objects.requireNonNull(shape, "shape");
        long[] dims = shape.clone();
        long bytes = byteSize(dtype, dims);
        if (bytes / dtype.byteSize() != count) {
            throw new IllegalArgumentException("data: " + count + " elements (expected: " + bytes / dtype.byteSize()
                    + ", the element count of shape " + shapeString(dims) + ")");
        }
        NdArray a = empty(alloc, dtype, Order.C, dims);
        try {
            if (bytes > 0) {
                CopyEngine.copyFromSegment(src, a.data, 0);
            }
            return a;
        } catch (RuntimeException | Error e) {
            a.close();
            throw e;
        }
    }

    private static NdArray uploadRows(
            BufferAllocator<?> alloc, DType dtype, int rowCount, int cols, IntFunction<MemorySegment> row) {
        NdArray a = empty(alloc, dtype, Order.C, rowCount, cols);
        try {
            long rowBytes = (long) cols * dtype.byteSize();
            if (rowBytes == 0 || rowCount == 0) {
                return a;
            }
            int rowsPerChunk = (int) Math.min(rowCount, Math.max(1, STAGING_BYTES / rowBytes));
            if (rowsPerChunk == 1) {
                for (int i = 0; i < rowCount; i++) {
                    CopyEngine.copyFromSegment(row.apply(i), a.data, i * rowBytes);
                }
                return a;
            }
            MemorySegment staging = MemorySegment.ofArray(new byte[(int) (rowsPerChunk * rowBytes)]);
            for (int first = 0; first < rowCount; first += rowsPerChunk) {
                int n = Math.min(rowsPerChunk, rowCount - first);
                for (int i = 0; i < n; i++) {
                    MemorySegment.copy(row.apply(first + i), 0, staging, i * rowBytes, rowBytes);
                }
                CopyEngine.copyFromSegment(staging.asSlice(0, n * rowBytes), a.data, first * rowBytes);
            }
            return a;
        } catch (RuntimeException | Error e) {
            a.close();
            throw e;
        }
    }

    // ---------------------------------------------------------------- copies

    /**
     * A new owned array of {@code target}'s memory with this array's dtype, shape, order and elements, copied by
     * the {@link CopyEngine} (device to device on one device counts as {@link CopyDirection#D2D}).
     */
    public NdArray copyTo(BufferAllocator<?> target) {
        checkOpen();
        NdArray copy = empty(target, dtype, order, shape);
        try {
            if (byteSize() > 0) {
                CopyEngine.copy(data, 0, copy.data, 0, byteSize());
            }
            return copy;
        } catch (RuntimeException | Error e) {
            copy.close();
            throw e;
        }
    }

    /** The elements of a {@link DType#FLOAT32} array in C (row-major) order. */
    public float[] toFloatArray() {
        checkDtype(DType.FLOAT32, "toFloatArray");
        float[] out = new float[arrayLength()];
        exportC(MemorySegment.ofArray(out), () -> MemorySegment.ofArray(new float[out.length]));
        return out;
    }

    /** The elements of a {@link DType#FLOAT64} array in C (row-major) order. */
    public double[] toDoubleArray() {
        checkDtype(DType.FLOAT64, "toDoubleArray");
        double[] out = new double[arrayLength()];
        exportC(MemorySegment.ofArray(out), () -> MemorySegment.ofArray(new double[out.length]));
        return out;
    }

    /** The elements of an {@link DType#INT32} array in C (row-major) order. */
    public int[] toIntArray() {
        checkDtype(DType.INT32, "toIntArray");
        int[] out = new int[arrayLength()];
        exportC(MemorySegment.ofArray(out), () -> MemorySegment.ofArray(new int[out.length]));
        return out;
    }

    /** The elements of an {@link DType#INT64} array in C (row-major) order. */
    public long[] toLongArray() {
        checkDtype(DType.INT64, "toLongArray");
        long[] out = new long[arrayLength()];
        exportC(MemorySegment.ofArray(out), () -> MemorySegment.ofArray(new long[out.length]));
        return out;
    }

    /** The elements (bits) of a {@link DType#UINT8} array in C (row-major) order. */
    public byte[] toByteArray() {
        checkDtype(DType.UINT8, "toByteArray");
        return exportBytes();
    }

    /** The elements of a {@link DType#BOOL} array in C (row-major) order; any nonzero byte is {@code true}. */
    public boolean[] toBooleanArray() {
        checkDtype(DType.BOOL, "toBooleanArray");
        byte[] bytes = exportBytes();
        boolean[] out = new boolean[bytes.length];
        for (int i = 0; i < bytes.length; i++) {
            out[i] = bytes[i] != 0;
        }
        return out;
    }

    private byte[] exportBytes() {
        byte[] out = new byte[arrayLength()];
        exportC(MemorySegment.ofArray(out), () -> MemorySegment.ofArray(new byte[out.length]));
        return out;
    }

    /** The rows of a two-dimensional {@link DType#FLOAT32} array. */
    public float[][] toFloatMatrix() {
        checkDtype(DType.FLOAT32, "toFloatMatrix");
        checkMatrix("toFloatMatrix");
        float[] flat = toFloatArray();
        int cols = (int) shape[1];
        float[][] rows = new float[(int) shape[0]][];
        for (int i = 0; i < rows.length; i++) {
            rows[i] = Arrays.copyOfRange(flat, i * cols, (i + 1) * cols);
        }
        return rows;
    }

    /** The rows of a two-dimensional {@link DType#FLOAT64} array. */
    public double[][] toDoubleMatrix() {
        checkDtype(DType.FLOAT64, "toDoubleMatrix");
        checkMatrix("toDoubleMatrix");
        double[] flat = toDoubleArray();
        int cols = (int) shape[1];
        double[][] rows = new double[(int) shape[0]][];
        for (int i = 0; i < rows.length; i++) {
            rows[i] = Arrays.copyOfRange(flat, i * cols, (i + 1) * cols);
        }
        return rows;
    }

    /**
     * Copies {@code count} elements of a {@link DType#FLOAT32} array, from element {@code firstElement} in
     * <em>storage</em> order (row-major for C, column-major for F), into {@code dst} from {@code dstOffset}: the
     * way to copy out arrays of more than {@value #MAX_ARRAY_LENGTH} elements in pieces. For a C-order array
     * (and any vector) storage order is the logical order of {@link #toFloatArray()}.
     */
    public void copyStorageTo(long firstElement, float[] dst, int dstOffset, int count) {
        checkDtype(DType.FLOAT32, "copyStorageTo");
        copyRange(firstElement, MemorySegment.ofArray(dst), dst.length, dstOffset, count);
    }

    /**
     * Copies a range of a {@link DType#FLOAT64} array in storage order; see the {@code float[]} overload.
     */
    public void copyStorageTo(long firstElement, double[] dst, int dstOffset, int count) {
        checkDtype(DType.FLOAT64, "copyStorageTo");
        copyRange(firstElement, MemorySegment.ofArray(dst), dst.length, dstOffset, count);
    }

    /**
     * Copies a range of an {@link DType#INT32} array in storage order; see the {@code float[]} overload.
     */
    public void copyStorageTo(long firstElement, int[] dst, int dstOffset, int count) {
        checkDtype(DType.INT32, "copyStorageTo");
        copyRange(firstElement, MemorySegment.ofArray(dst), dst.length, dstOffset, count);
    }

    /**
     * Copies a range of an {@link DType#INT64} array in storage order; see the {@code float[]} overload.
     */
    public void copyStorageTo(long firstElement, long[] dst, int dstOffset, int count) {
        checkDtype(DType.INT64, "copyStorageTo");
        copyRange(firstElement, MemorySegment.ofArray(dst), dst.length, dstOffset, count);
    }

    /**
     * Copies a range of a {@link DType#UINT8} or {@link DType#BOOL} array in storage order; see the {@code float[]}
     * overload.
     */
    public void copyStorageTo(long firstElement, byte[] dst, int dstOffset, int count) {
        if (dtype != DType.BOOL) {
            checkDtype(DType.UINT8, "copyStorageTo");
        }
        copyRange(firstElement, MemorySegment.ofArray(dst), dst.length, dstOffset, count);
    }

    private void copyRange(long firstElement, MemorySegment dst, int dstLength, int dstOffset, int count) {
        checkOpen();
        Objects.checkFromIndexSize(dstOffset, count, dstLength);
        if (firstElement < 0 || firstElement > size - count) {
            throw new IndexOutOfBoundsException("firstElement: " + firstElement + ", count: " + count
                    + " (expected: 0 <= firstElement <= firstElement + count <= " + size + ", the size of " + this
                    + ")");
        }
        if (count == 0) {
            return;
        }
        int es = dtype.byteSize();
        CopyEngine.copyToSegment(data, firstElement * es, dst.asSlice((long) dstOffset * es, (long) count * es));
    }

    /**
     * Whether {@code other} has this array's dtype and shape and the same elements bit for bit, in logical order
     * (a C-order and an F-order array holding one matrix are equal; {@code NaN} equals a {@code NaN} of the same
     * bits; {@code 0.0} does not equal {@code -0.0}). The elements are copied to the heap through the
     * {@link CopyEngine}. Arrays of one order are compared in chunks of any size; arrays of different orders need
     * at most {@value #MAX_ARRAY_LENGTH} elements.
     */
    public boolean contentEquals(NdArray other) {
        checkOpen();
        other.checkOpen();
        if (dtype != other.dtype || !Arrays.equals(shape, other.shape)) {
            return false;
        }
        if (size == 0 || this == other) {
            return true;
        }
        if (order == other.order || (!needsTranspose() && !other.needsTranspose())) {
            long bytes = byteSize();
            int chunk = (int) Math.min(bytes, STAGING_BYTES);
            MemorySegment a = MemorySegment.ofArray(new byte[chunk]);
            MemorySegment b = MemorySegment.ofArray(new byte[chunk]);
            for (long off = 0; off < bytes; off += chunk) {
                long n = Math.min(chunk, bytes - off);
                CopyEngine.copyToSegment(data, off, a.asSlice(0, n));
                CopyEngine.copyToSegment(other.data, off, b.asSlice(0, n));
                if (MemorySegment.mismatch(a, 0, n, b, 0, n) != -1) {
                    return false;
                }
            }
            return true;
        }
        int n = arrayLength();
        MemorySegment a = heapSegment(dtype, n);
        MemorySegment b = heapSegment(dtype, n);
        exportC(a, () -> heapSegment(dtype, n));
        other.exportC(b, () -> heapSegment(dtype, n));
        return a.mismatch(b) == -1;
    }

    private static MemorySegment heapSegment(DType dtype, int n) {
        return switch (dtype.byteSize()) {
            case 1 -> MemorySegment.ofArray(new byte[n]);
            case 4 -> MemorySegment.ofArray(new int[n]);
            case 8 -> MemorySegment.ofArray(new long[n]);
            default -> throw new AssertionError(dtype);
        };
    }

    /** Copies the elements into {@code out} (a heap segment of exactly {@link #byteSize()}) in C order. */
    private void exportC(MemorySegment out, Supplier<MemorySegment> scratch) {
        checkOpen();
        if (size == 0) {
            return;
        }
        if (!needsTranspose()) {
            CopyEngine.copyToSegment(data, 0, out);
            return;
        }
        MemorySegment storage = scratch.get();
        CopyEngine.copyToSegment(data, 0, storage);
        transposeFToC(storage, out, shape, dtype.byteSize());
    }

    /** Whether storage order differs from C order: an F-order array with two or more dimensions longer than 1. */
    private boolean needsTranspose() {
        if (order == Order.C) {
            return false;
        }
        int longDims = 0;
        for (long d : shape) {
            if (d > 1) {
                longDims++;
            }
        }
        return longDims > 1;
    }

    /** Rewrites column-major {@code src} as row-major {@code dst}, one row of the last dimension at a time. */
    private static void transposeFToC(MemorySegment src, MemorySegment dst, long[] shape, int elementSize) {
        int rank = shape.length;
        long[] fStride = new long[rank];
        long stride = 1;
        for (int d = 0; d < rank; d++) {
            fStride[d] = stride;
            stride *= shape[d];
        }
        long total = stride;
        long rowLength = shape[rank - 1];
        long rowStride = fStride[rank - 1];
        long[] index = new long[rank - 1];
        long srcBase = 0;
        for (long dstPos = 0; dstPos < total; dstPos += rowLength) {
            copyStrided(src, srcBase, rowStride, dst, dstPos, rowLength, elementSize);
            for (int d = rank - 2; d >= 0; d--) {
                index[d]++;
                srcBase += fStride[d];
                if (index[d] < shape[d]) {
                    break;
                }
                srcBase -= index[d] * fStride[d];
                index[d] = 0;
            }
        }
    }

    private static void copyStrided(
            MemorySegment src,
            long srcStart,
            long srcStride,
            MemorySegment dst,
            long dstStart,
            long count,
            int elementSize) {
        switch (elementSize) {
            case 1 -> {
                for (long j = 0; j < count; j++) {
                    dst.set(
                            ValueLayout.JAVA_BYTE,
                            dstStart + j,
                            src.get(ValueLayout.JAVA_BYTE, srcStart + j * srcStride));
                }
            }
            case 4 -> {
                for (long j = 0; j < count; j++) {
                    dst.setAtIndex(
                            ValueLayout.JAVA_INT_UNALIGNED,
                            dstStart + j,
                            src.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, srcStart + j * srcStride));
                }
            }
            case 8 -> {
                for (long j = 0; j < count; j++) {
                    dst.setAtIndex(
                            ValueLayout.JAVA_LONG_UNALIGNED,
                            dstStart + j,
                            src.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, srcStart + j * srcStride));
                }
            }
            default -> throw new AssertionError(elementSize);
        }
    }

    // ---------------------------------------------------------------- JDK serialization

    /**
     * The thread-scoped hook that says where arrays read by JDK deserialization ({@link ObjectInputStream}) on the
     * calling thread are rebuilt: in {@code target}'s memory until the returned scope is closed, after which the
     * previous target (or the default) applies again. Scopes nest; close them in reverse order, on the thread that
     * opened them.
     *
     * <pre>{@code
     * NdArray.ReadScope scope = NdArray.readTarget(deviceAllocator);
     * try (ObjectInputStream in = new ObjectInputStream(bytes)) {
     *     model = (Model) in.readObject();   // its arrays are rebuilt on the device
     * } finally {
     *     scope.close();
     * }
     * }</pre>
     * (A plain {@code finally} rather than try-with-resources, whose unreferenced resource {@code -Xlint:try} flags.)
     */
    public static ReadScope readTarget(BufferAllocator<?> target) {
        Objects.requireNonNull(target, "target");
        return readTarget(target, target);
    }

    /**
     * Like {@link #readTarget(BufferAllocator)}, keeping each array's side, as pickle keeps a GPU array on the GPU
     * and a host array on the host: arrays that were in device memory at the writer are rebuilt in {@code device},
     * those that were in host or pinned memory in {@code host}. (Streams written before arrays recorded their
     * memory go to {@code device}.)
     */
    public static ReadScope readTarget(BufferAllocator<?> device, BufferAllocator<?> host) {
        ReadTargets targets =
                new ReadTargets(Objects.requireNonNull(device, "device"), Objects.requireNonNull(host, "host"));
        ReadScope scope = new ReadScope(READ_TARGET.get(), targets);
        READ_TARGET.set(targets);
        return scope;
    }

    /**
     * The allocator JDK deserialization rebuilds arrays in when no {@link #readTarget} is open on the reading thread:
     * one process-wide host allocator, {@code cuwire-ndarray-deserialized}, without limit.
     */
    public static BufferAllocator<HostBuffer> defaultReadTarget() {
        return DefaultReadTarget.ALLOCATOR;
    }

    /** An open {@link #readTarget}; closing it restores the target that was set before it. */
    public static final class ReadScope implements AutoCloseable {
        private final ReadTargets previous;
        private final ReadTargets target;
        private final Thread thread = Thread.currentThread();
        private boolean closed;

        private ReadScope(ReadTargets previous, ReadTargets target) {
            this.previous = previous;
            this.target = target;
        }

        /**
         * Restores the previous target. Closing twice is harmless.
         *
         * @throws IllegalStateException if called on another thread or out of nesting order
         */
        @Override
        public void close() {
            if (closed) {
                return;
            }
            if (Thread.currentThread() != thread || READ_TARGET.get() != target) {
                throw new IllegalStateException("NdArray read scope for allocator '"
                        + target.device().name() + "' closed on another thread or out of nesting order");
            }
            closed = true;
            if (previous == null) {
                READ_TARGET.remove();
            } else {
                READ_TARGET.set(previous);
            }
        }
    }

    private static final class DefaultReadTarget {
        static final BufferAllocator<HostBuffer> ALLOCATOR =
                BufferAllocator.host("cuwire-ndarray-deserialized", BufferAllocator.UNLIMITED);
    }

    /** JDK serialization writes the {@link SerialForm} instead: dtype, order, shape and the bytes on the heap. */
    @Serial
    private Object writeReplace() throws ObjectStreamException {
        checkOpen();
        if (byteSize() > MAX_ARRAY_LENGTH) {
            throw new NotSerializableException(describe() + " has " + byteSize() + " bytes, more than one Java byte[] "
                    + "holds (" + MAX_ARRAY_LENGTH + "): JDK serialization copies an array's bytes onto the heap, and "
                    + "the JVM's arrays stop at 2 GiB. Send it with cuwire's cuda or host family instead");
        }
        byte[] bytes = new byte[(int) byteSize()];
        if (bytes.length > 0) {
            CopyEngine.copyToSegment(data, 0, MemorySegment.ofArray(bytes));
        }
        return new SerialForm(dtype.wireName(), order.name(), shape.clone(), bytes, kind().name());
    }

    @Serial
    private void readObject(ObjectInputStream in) throws InvalidObjectException {
        throw new InvalidObjectException("an NdArray is read through its serial form only");
    }

    /**
     * The serial form of an {@link NdArray}: what pickle keeps of a GPU array — a description and a host copy of the
     * bytes in storage order. Read back, it becomes a new owned array from the reading thread's
     * {@link NdArray#readTarget}.
     */
    private static final class SerialForm implements Serializable {
        @Serial
        private static final long serialVersionUID = 1L;

        private final String dtype;
        private final String order;
        private final long[] shape;
        private final byte[] bytes;
        /** The writer's {@link MemoryKind} name; absent (null) in streams from before it was recorded. */
        private final String mem;

        SerialForm(String dtype, String order, long[] shape, byte[] bytes, String mem) {
            this.dtype = dtype;
            this.order = order;
            this.shape = shape;
            this.bytes = bytes;
            this.mem = mem;
        }

        @Serial
        private Object readResolve() throws ObjectStreamException {
            DType t;
            Order o;
            long byteSize;
            try {
                t = DType.byName(Objects.requireNonNull(dtype, "dtype"));
                o = Order.valueOf(Objects.requireNonNull(order, "order"));
                byteSize = byteSize(t, Objects.requireNonNull(shape, "shape"));
                Objects.requireNonNull(bytes, "bytes");
            } catch (IllegalArgumentException | NullPointerException e) {
                throw invalid("NdArray serial form is malformed: " + e.getMessage(), e);
            }
            if (byteSize != bytes.length) {
                throw new InvalidObjectException("NdArray serial form of " + t.wireName() + " " + shapeString(shape)
                        + " holds " + bytes.length + " bytes (expected: " + byteSize + ")");
            }
            ReadTargets targets = READ_TARGET.get();
            BufferAllocator<?> target = targets == null
                    ? defaultReadTarget()
                    : mem == null || mem.equals(MemoryKind.DEVICE.name()) ? targets.device() : targets.host();
            NdArray a = empty(target, t, o, shape);
            try {
                if (bytes.length > 0) {
                    CopyEngine.copyFromSegment(MemorySegment.ofArray(bytes), a.data, 0);
                }
                return a;
            } catch (RuntimeException | Error e) {
                a.close();
                throw e;
            }
        }

        private static InvalidObjectException invalid(String message, Exception cause) {
            InvalidObjectException e = new InvalidObjectException(message);
            e.initCause(cause);
            return e;
        }
    }

    // ---------------------------------------------------------------- accessors

    /** The element type. */
    public DType dtype() {
        return dtype;
    }

    /** The layout of the elements in the buffer. */
    public Order order() {
        return order;
    }

    /** Where the elements live. */
    public MemoryKind kind() {
        return data.kind();
    }

    /** The device holding the elements, or {@link Buffer#HOST_ORDINAL} for host and pinned memory. */
    public int deviceOrdinal() {
        return data.deviceOrdinal();
    }

    /**
     * Exactly the array's bytes: a slice of the buffer it was made over, living as long as that buffer. For
     * serializers and kernels; copy through the {@link CopyEngine}.
     *
     * @throws IllegalStateException if the array or its buffer is closed
     */
    public Buffer buffer() {
        checkOpen();
        return data;
    }

    /** The offset of the first element in the buffer the array was made over. */
    public long byteOffset() {
        return byteOffset;
    }

    /** The elements' size in bytes: {@link #size()} times the element size. */
    public long byteSize() {
        return data.byteSize();
    }

    /** The number of elements: the product of the shape (1 for rank 0). */
    public long size() {
        return size;
    }

    /** The number of dimensions, 0 to {@value #MAX_RANK}. */
    public int rank() {
        return shape.length;
    }

    /** A copy of the shape. */
    public long[] shape() {
        return shape.clone();
    }

    /** The length of dimension {@code i}. */
    public long dim(int i) {
        if (i < 0 || i >= shape.length) {
            throw new IndexOutOfBoundsException(
                    "dim: " + i + " (expected: 0 <= dim < " + shape.length + ", the rank of " + this + ")");
        }
        return shape[i];
    }

    /** Whether {@link #close()} closes the buffer (made by {@link #adopt} or a factory) rather than only ending use. */
    public boolean isOwner() {
        return owner;
    }

    /** Whether the array is open and its buffer too. */
    public boolean isOpen() {
        return !closed.get() && data.isOpen();
    }

    /** Throws {@link IllegalStateException} if the array or its buffer is closed. */
    public void checkOpen() {
        if (closed.get()) {
            throw new IllegalStateException(describe() + " is closed");
        }
        if (!data.isOpen()) {
            throw new IllegalStateException(describe() + ": its buffer " + buffer.describe() + " is closed");
        }
    }

    /**
     * Closes the buffer if this array owns it, else ends the array's use.
     *
     * @throws IllegalStateException if already closed
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            throw new IllegalStateException(describe() + " is already closed");
        }
        if (owner) {
            buffer.close();
        }
    }

    /** E.g. {@code NdArray[float32, (3, 4), C, DEVICE:emulated0]}; {@code (closed)} is added once closed. */
    @Override
    public String toString() {
        return describe() + (closed.get() ? " (closed)" : "");
    }

    private String describe() {
        return "NdArray[" + dtype.wireName() + ", " + shapeString(shape) + ", " + order + ", " + location(data) + "]";
    }

    // ---------------------------------------------------------------- checks and helpers

    private void checkDtype(DType expected, String operation) {
        if (dtype != expected) {
            throw new IllegalArgumentException(
                    operation + ": dtype " + dtype.wireName() + " (expected: " + expected.wireName() + ") of " + this);
        }
    }

    private void checkMatrix(String operation) {
        if (shape.length != 2) {
            throw new IllegalArgumentException(operation + ": rank " + shape.length + " (expected: 2) of " + this);
        }
    }

    private int arrayLength() {
        if (size > MAX_ARRAY_LENGTH) {
            throw new IllegalStateException(this + " has " + size + " elements, more than a Java array holds ("
                    + MAX_ARRAY_LENGTH + "); copy it out in pieces with copyStorageTo");
        }
        return (int) size;
    }

    /** Validates {@code shape} for {@code dtype} and returns the byte size. */
    static long byteSize(DType dtype, long[] shape) {
        if (shape.length > MAX_RANK) {
            throw new IllegalArgumentException("rank: " + shape.length + " (expected: 0 <= rank <= " + MAX_RANK + ")");
        }
        for (int i = 0; i < shape.length; i++) {
            if (shape[i] < 0) {
                throw new IllegalArgumentException(
                        "shape[" + i + "]: " + shape[i] + " (expected: >= 0) in shape " + shapeString(shape));
            }
        }
        try {
            long n = 1;
            for (long d : shape) {
                n = Math.multiplyExact(n, d);
            }
            return Math.multiplyExact(n, (long) dtype.byteSize());
        } catch (ArithmeticException e) {
            throw new IllegalArgumentException(
                    "shape " + shapeString(shape) + " of " + dtype.wireName() + ": the size in bytes overflows a long",
                    e);
        }
    }

    /** NumPy style: {@code ()}, {@code (5,)}, {@code (3, 4)}. */
    static String shapeString(long[] shape) {
        StringBuilder sb = new StringBuilder("(");
        for (int i = 0; i < shape.length; i++) {
            if (i > 0) {
                sb.append(", ");
            }
            sb.append(shape[i]);
        }
        return sb.append(shape.length == 1 ? ",)" : ")").toString();
    }

    /** Where the elements live, for messages: {@code HOST}, {@code PINNED} or {@code DEVICE:emulated0}. */
    String location() {
        return location(data);
    }

    /** {@code HOST}, {@code PINNED} or {@code DEVICE:<platform><ordinal>}. */
    static String location(Buffer b) {
        return b instanceof DeviceBuffer d
                ? "DEVICE:" + d.device().platform() + d.device().ordinal()
                : b.kind().name();
    }
}
