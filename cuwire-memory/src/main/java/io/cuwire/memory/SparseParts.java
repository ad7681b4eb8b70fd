package io.cuwire.memory;

import java.lang.reflect.Array;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;

/**
 * What the sparse formats share: dimensions, the owned component vectors with their names, closing, checks, and
 * host-side helpers for the factories and conversions.
 */
abstract class SparseParts {
    private final long rows;
    private final long cols;
    private final List<NdArray> parts;
    private final List<String> names;
    private final NdArray data;
    private final AtomicBoolean closed = new AtomicBoolean();

    /**
     * Checks and records the parts; {@code names} and {@code parts} are in the format's order, index vectors first,
     * values last.
     */
    SparseParts(long rows, long cols, List<String> names, List<NdArray> parts) {
        checkDims(rows, cols);
        for (int i = 0; i < parts.size(); i++) {
            Objects.requireNonNull(parts.get(i), names.get(i));
        }
        int last = parts.size() - 1;
        NdArray firstIndex = parts.getFirst();
        for (int i = 0; i <= last; i++) {
            NdArray a = parts.get(i);
            String name = names.get(i);
            if (!a.isOpen()) {
                throw new IllegalStateException(name + ": " + a + " is closed");
            }
            if (a.rank() != 1) {
                throw new IllegalArgumentException(name + ": rank " + a.rank() + " (expected: 1) of " + a);
            }
            for (int j = 0; j < i; j++) {
                if (parts.get(j) == a) {
                    throw new IllegalArgumentException(names.get(j) + " and " + name + " are the same NdArray " + a);
                }
            }
            if (i < last) {
                if (!a.dtype().isIndex()) {
                    throw new IllegalArgumentException(
                            name + ": dtype " + a.dtype().wireName() + " (expected: int32 or int64)");
                }
                if (a.dtype() != firstIndex.dtype()) {
                    throw new IllegalArgumentException(
                            name + ": dtype " + a.dtype().wireName() + " (expected: "
                                    + firstIndex.dtype().wireName() + ", the dtype of " + names.getFirst() + ")");
                }
            } else if (!a.dtype().isFloatingPoint()) {
                throw new IllegalArgumentException(
                        name + ": dtype " + a.dtype().wireName() + " (expected: float32 or float64)");
            }
            if (a.kind() != firstIndex.kind() || a.deviceOrdinal() != firstIndex.deviceOrdinal()) {
                throw new IllegalArgumentException("components live in different memory: " + names.getFirst() + " in "
                        + firstIndex.location() + ", " + name + " in " + a.location()
                        + " (expected: one memory kind on one device)");
            }
        }
        this.rows = rows;
        this.cols = cols;
        this.parts = List.copyOf(parts);
        this.names = List.copyOf(names);
        this.data = parts.get(last);
    }

    /** Checks that component {@code i} has {@code expected} elements; {@code meaning} explains the number. */
    final void checkLength(int i, long expected, String meaning) {
        NdArray a = parts.get(i);
        if (a.size() != expected) {
            throw new IllegalArgumentException(
                    names.get(i) + ": " + a.size() + " elements (expected: " + expected + ", " + meaning + ")");
        }
    }

    /** Checks that int32 indices can hold {@code value} (an nnz or a dimension). */
    final void checkIndexRange(long value, String what) {
        if (indexType() == DType.INT32 && value > Integer.MAX_VALUE) {
            throw new IllegalArgumentException(what + ": " + value + " does not fit int32 indices (expected: <= "
                    + Integer.MAX_VALUE + "; use int64)");
        }
    }

    final NdArray part(int i) {
        return parts.get(i);
    }

    /** See {@link SparseMatrix#rows()}. */
    public final long rows() {
        return rows;
    }

    /** See {@link SparseMatrix#cols()}. */
    public final long cols() {
        return cols;
    }

    /** See {@link SparseMatrix#shape()}. */
    public final long[] shape() {
        return new long[] {rows, cols};
    }

    /** See {@link SparseMatrix#nnz()}. */
    public final long nnz() {
        return data.size();
    }

    /** See {@link SparseMatrix#indexType()}. */
    public final DType indexType() {
        return parts.getFirst().dtype();
    }

    /** See {@link SparseMatrix#dataType()}. */
    public final DType dataType() {
        return data.dtype();
    }

    /** See {@link SparseMatrix#kind()}. */
    public final MemoryKind kind() {
        return data.kind();
    }

    /** See {@link SparseMatrix#deviceOrdinal()}. */
    public final int deviceOrdinal() {
        return data.deviceOrdinal();
    }

    /** See {@link SparseMatrix#components()}. */
    public final List<NdArray> components() {
        return parts;
    }

    /** See {@link SparseMatrix#isOpen()}. */
    public final boolean isOpen() {
        if (closed.get()) {
            return false;
        }
        for (NdArray a : parts) {
            if (!a.isOpen()) {
                return false;
            }
        }
        return true;
    }

    final void checkOpen() {
        if (closed.get()) {
            throw new IllegalStateException(describe() + " is closed");
        }
    }

    /** See {@link SparseMatrix#close()}. */
    public final void close() {
        if (!closed.compareAndSet(false, true)) {
            throw new IllegalStateException(describe() + " is already closed");
        }
        closeAll(parts);
    }

    @Override
    public final String toString() {
        return describe() + (closed.get() ? " (closed)" : "");
    }

    private String describe() {
        return getClass().getSimpleName() + "[" + NdArray.shapeString(shape()) + ", nnz " + nnz() + ", "
                + indexType().wireName() + " indices, " + dataType().wireName() + " values, "
                + data.location() + "]";
    }

    // ---------------------------------------------------------------- helpers

    static void checkDims(long rows, long cols) {
        if (rows < 0 || cols < 0) {
            throw new IllegalArgumentException("rows: " + rows + ", cols: " + cols + " (expected: >= 0)");
        }
    }

    /** Dense rows ({@code double[][]} or {@code float[][]}) compressed by row, or by column if {@code byColumn}. */
    static Compressed compressDense(Object[] dense, boolean byColumn) {
        int cols = denseColumns(dense);
        int rows = dense.length;
        int major = byColumn ? cols : rows;
        int minor = byColumn ? rows : cols;
        long nnz = 0;
        for (int r = 0; r < rows; r++) {
            for (int c = 0; c < cols; c++) {
                if (denseValue(dense, r, c) != 0) {
                    nnz++;
                }
            }
        }
        if (nnz > NdArray.MAX_ARRAY_LENGTH) {
            throw new IllegalArgumentException("dense: " + nnz + " nonzero values, more than Java arrays hold");
        }
        long[] indptr = new long[major + 1];
        long[] indices = new long[(int) nnz];
        double[] values = new double[(int) nnz];
        int k = 0;
        for (int i = 0; i < major; i++) {
            for (int j = 0; j < minor; j++) {
                double v = byColumn ? denseValue(dense, j, i) : denseValue(dense, i, j);
                if (v != 0) {
                    indices[k] = j;
                    values[k++] = v;
                }
            }
            indptr[i + 1] = k;
        }
        return new Compressed(indptr, indices, values);
    }

    /** The parts of a compressed matrix ({@code byColumn} for CSC) copied to the heap, their contents checked. */
    final Compressed readCompressed(boolean byColumn) {
        checkOpen();
        long[] indptr = indexValues(part(0));
        long[] indices = indexValues(part(1));
        double[] values = dataValues(part(2));
        try {
            checkCompressed(
                    byColumn ? "cols" : "rows",
                    byColumn ? cols : rows,
                    byColumn ? "rows" : "columns",
                    byColumn ? rows : cols,
                    indptr,
                    indices,
                    values.length);
        } catch (IllegalArgumentException e) {
            throw new IllegalStateException("invalid contents of " + this + ": " + e.getMessage(), e);
        }
        return new Compressed(indptr, indices, values);
    }

    /** The dense form of a compressed matrix ({@code byColumn} for CSC), checking the contents. */
    final double[][] compressedToDense(boolean byColumn) {
        Compressed c = readCompressed(byColumn);
        long[] indptr = c.indptr();
        long[] indices = c.indices();
        double[] values = c.values();
        double[][] dense = newDense(rows, cols);
        for (int i = 0; i + 1 < indptr.length; i++) {
            for (int k = (int) indptr[i]; k < indptr[i + 1]; k++) {
                if (byColumn) {
                    dense[(int) indices[k]][i] += values[k];
                } else {
                    dense[i][(int) indices[k]] += values[k];
                }
            }
        }
        return dense;
    }

    /** Closes every array, throwing the first failure with the others suppressed. */
    static void closeAll(List<NdArray> arrays) {
        Closeables.closeAll(arrays);
    }

    /** Uploads Java vectors ({@code int[]}, {@code long[]}, {@code float[]}, {@code double[]}) as owned arrays. */
    static List<NdArray> upload(BufferAllocator<?> alloc, Object... vectors) {
        List<NdArray> out = new ArrayList<>(vectors.length);
        try {
            for (Object v : vectors) {
                out.add(
                        switch (v) {
                            case int[] a -> NdArray.fromArray(alloc, a, a.length);
                            case long[] a -> NdArray.fromArray(alloc, a, a.length);
                            case float[] a -> NdArray.fromArray(alloc, a, a.length);
                            case double[] a -> NdArray.fromArray(alloc, a, a.length);
                            default -> throw new AssertionError(v.getClass());
                        });
            }
            return out;
        } catch (RuntimeException | Error e) {
            try {
                closeAll(out);
            } catch (RuntimeException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
    }

    /** Makes a matrix of freshly uploaded parts, closing them if the constructor refuses them. */
    static <M> M assemble(List<NdArray> parts, Function<List<NdArray>, M> constructor) {
        try {
            return constructor.apply(parts);
        } catch (RuntimeException | Error e) {
            try {
                closeAll(parts);
            } catch (RuntimeException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
    }

    /** An {@code int[]} or {@code long[]} as {@code long[]}. */
    static long[] widen(Object indexVector) {
        return switch (indexVector) {
            case int[] a -> Arrays.stream(a).asLongStream().toArray();
            case long[] a -> a;
            default -> throw new AssertionError(indexVector.getClass());
        };
    }

    /** The length of a Java vector. */
    static int length(Object vector) {
        return Array.getLength(Objects.requireNonNull(vector));
    }

    /** {@code values} as a Java vector of {@code dtype} (narrowing to int or float). */
    static Object asVector(DType dtype, long[] values) {
        if (dtype == DType.INT64) {
            return values;
        }
        int[] out = new int[values.length];
        for (int i = 0; i < out.length; i++) {
            out[i] = Math.toIntExact(values[i]);
        }
        return out;
    }

    /** {@code values} as a Java vector of {@code dtype}: {@code float[]} (exact for values read from float32). */
    static Object asVector(DType dtype, double[] values) {
        if (dtype == DType.FLOAT64) {
            return values;
        }
        float[] out = new float[values.length];
        for (int i = 0; i < out.length; i++) {
            out[i] = (float) values[i];
        }
        return out;
    }

    /** The elements of an index vector, copied to the heap. */
    static long[] indexValues(NdArray a) {
        return a.dtype() == DType.INT64 ? a.toLongArray() : widen(a.toIntArray());
    }

    /** The elements of a value vector, copied to the heap, as doubles (exact for float32). */
    static double[] dataValues(NdArray a) {
        if (a.dtype() == DType.FLOAT64) {
            return a.toDoubleArray();
        }
        float[] f = a.toFloatArray();
        double[] out = new double[f.length];
        for (int i = 0; i < f.length; i++) {
            out[i] = f[i];
        }
        return out;
    }

    /** Checks the contents of a compressed format: {@code indptr} of {@code major + 1} and indices in range. */
    static void checkCompressed(
            String majorName, long major, String minorName, long minor, long[] indptr, long[] indices, long nnz) {
        if (indptr.length != major + 1) {
            throw new IllegalArgumentException(
                    "indptr: " + indptr.length + " elements (expected: " + (major + 1) + ", " + majorName + " + 1)");
        }
        if (indptr[0] != 0) {
            throw new IllegalArgumentException("indptr[0]: " + indptr[0] + " (expected: 0)");
        }
        for (int i = 1; i < indptr.length; i++) {
            if (indptr[i] < indptr[i - 1]) {
                throw new IllegalArgumentException("indptr[" + i + "]: " + indptr[i] + " (expected: >= indptr["
                        + (i - 1) + "] = " + indptr[i - 1] + ")");
            }
        }
        if (indptr[indptr.length - 1] != nnz) {
            throw new IllegalArgumentException("indptr[" + (indptr.length - 1) + "]: " + indptr[indptr.length - 1]
                    + " (expected: " + nnz + ", the number of stored values)");
        }
        checkIndices("indices", indices, minorName, minor);
    }

    /** Checks that every index is in {@code [0, bound)}. */
    static void checkIndices(String name, long[] indices, String boundName, long bound) {
        for (int i = 0; i < indices.length; i++) {
            if (indices[i] < 0 || indices[i] >= bound) {
                throw new IllegalArgumentException(name + "[" + i + "]: " + indices[i] + " (expected: 0 <= index < "
                        + bound + ", the number of " + boundName + ")");
            }
        }
    }

    /** Checks that two Java vectors have one length (one index per stored value). */
    static void checkSameLength(String name, Object vector, String otherName, Object other) {
        if (length(vector) != length(other)) {
            throw new IllegalArgumentException(name + ": " + length(vector) + " elements, " + otherName + ": "
                    + length(other) + " elements (expected: equal, one per stored value)");
        }
    }

    /** An empty dense matrix, checking that it fits Java arrays. */
    static double[][] newDense(long rows, long cols) {
        if (rows > NdArray.MAX_ARRAY_LENGTH || cols > NdArray.MAX_ARRAY_LENGTH) {
            throw new IllegalStateException("shape (" + rows + ", " + cols + ") does not fit Java arrays");
        }
        return new double[(int) rows][(int) cols];
    }

    /** The column count of rectangular dense rows. */
    static int denseColumns(Object[] rows) {
        Objects.requireNonNull(rows, "dense");
        int cols = -1;
        for (int i = 0; i < rows.length; i++) {
            if (rows[i] == null) {
                throw new NullPointerException("dense[" + i + "]");
            }
            int n = length(rows[i]);
            if (cols < 0) {
                cols = n;
            } else if (n != cols) {
                throw new IllegalArgumentException(
                        "dense[" + i + "].length: " + n + " (expected: " + cols + ", the length of dense[0])");
            }
        }
        return Math.max(cols, 0);
    }

    /** Value {@code (r, c)} of {@code double[][]} or {@code float[][]} rows. */
    static double denseValue(Object[] rows, int r, int c) {
        return rows instanceof double[][] d ? d[r][c] : ((float[][]) rows)[r][c];
    }

    /** {@link DType#FLOAT64} for {@code double[][]}, {@link DType#FLOAT32} for {@code float[][]}. */
    static DType denseType(Object[] rows) {
        return rows instanceof double[][] ? DType.FLOAT64 : DType.FLOAT32;
    }

    /** Coordinates and values in compressed form, grouped by {@code major} index, stable within a group. */
    record Compressed(long[] indptr, long[] indices, double[] values) {}

    /** Sorts coordinate entries by their major index (stably) into compressed form. */
    static Compressed compress(long majorCount, long[] major, long[] minor, double[] values) {
        if (majorCount + 1 > NdArray.MAX_ARRAY_LENGTH) {
            throw new IllegalStateException("cannot compress " + majorCount + " rows or columns in Java arrays");
        }
        long[] indptr = new long[(int) majorCount + 1];
        for (long m : major) {
            indptr[(int) m + 1]++;
        }
        for (int i = 1; i < indptr.length; i++) {
            indptr[i] += indptr[i - 1];
        }
        long[] next = Arrays.copyOf(indptr, indptr.length - 1);
        long[] indices = new long[minor.length];
        double[] out = new double[values.length];
        for (int k = 0; k < major.length; k++) {
            int slot = (int) next[(int) major[k]]++;
            indices[slot] = minor[k];
            out[slot] = values[k];
        }
        return new Compressed(indptr, indices, out);
    }

    /** Expands a compressed {@code indptr} to one major index per stored value. */
    static long[] expand(long[] indptr, int nnz) {
        long[] major = new long[nnz];
        for (int i = 0; i + 1 < indptr.length; i++) {
            for (long k = indptr[i]; k < indptr[i + 1]; k++) {
                major[(int) k] = i;
            }
        }
        return major;
    }
}
