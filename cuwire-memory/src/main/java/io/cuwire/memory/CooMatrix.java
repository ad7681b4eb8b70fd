package io.cuwire.memory;

import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * A sparse matrix in coordinate (COO) format: stored value {@code k} is {@code data[k]} at
 * {@code (row[k], col[k])}; the three vectors have one element per stored value, in any order, duplicates allowed
 * (summed by {@link #toDense()}). Ownership, validation and threads as for every {@link SparseMatrix}.
 */
public final class CooMatrix extends SparseParts implements SparseMatrix {
    /**
     * A matrix over the given vectors, taking ownership of them (if this throws, the caller still owns them).
     *
     * @throws IllegalArgumentException if a dimension is negative, a dtype, rank or length is wrong, or the parts
     *     live in different memory
     * @throws IllegalStateException if a part is closed
     */
    public CooMatrix(long rows, long cols, NdArray row, NdArray col, NdArray data) {
        super(rows, cols, List.of("row", "col", "data"), Arrays.asList(row, col, data));
        checkLength(0, data.size(), "the length of data");
        checkLength(1, data.size(), "the length of data");
    }

    /** A matrix of {@code alloc}'s memory holding the given arrays, whose contents are checked first. */
    public static CooMatrix fromArrays(
            BufferAllocator<?> alloc, long rows, long cols, int[] row, int[] col, float[] data) {
        return create(alloc, rows, cols, row, col, data);
    }

    /** A matrix of {@code alloc}'s memory holding the given arrays, whose contents are checked first. */
    public static CooMatrix fromArrays(
            BufferAllocator<?> alloc, long rows, long cols, int[] row, int[] col, double[] data) {
        return create(alloc, rows, cols, row, col, data);
    }

    /** A matrix of {@code alloc}'s memory holding the given arrays, whose contents are checked first. */
    public static CooMatrix fromArrays(
            BufferAllocator<?> alloc, long rows, long cols, long[] row, long[] col, float[] data) {
        return create(alloc, rows, cols, row, col, data);
    }

    /** A matrix of {@code alloc}'s memory holding the given arrays, whose contents are checked first. */
    public static CooMatrix fromArrays(
            BufferAllocator<?> alloc, long rows, long cols, long[] row, long[] col, double[] data) {
        return create(alloc, rows, cols, row, col, data);
    }

    private static CooMatrix create(
            BufferAllocator<?> alloc, long rows, long cols, Object row, Object col, Object data) {
        Objects.requireNonNull(alloc, "alloc");
        Objects.requireNonNull(row, "row");
        Objects.requireNonNull(col, "col");
        Objects.requireNonNull(data, "data");
        checkDims(rows, cols);
        checkSameLength("row", row, "data", data);
        checkSameLength("col", col, "data", data);
        checkIndices("row", widen(row), "rows", rows);
        checkIndices("col", widen(col), "columns", cols);
        return assemble(upload(alloc, row, col, data), p -> new CooMatrix(rows, cols, p.get(0), p.get(1), p.get(2)));
    }

    /** The nonzero values of {@code dense}, row by row, as a float64 matrix of {@code alloc}'s memory. */
    public static CooMatrix fromDense(BufferAllocator<?> alloc, double[][] dense) {
        return fromDenseRows(alloc, dense);
    }

    /** The nonzero values of {@code dense}, row by row, as a float32 matrix of {@code alloc}'s memory. */
    public static CooMatrix fromDense(BufferAllocator<?> alloc, float[][] dense) {
        return fromDenseRows(alloc, dense);
    }

    private static CooMatrix fromDenseRows(BufferAllocator<?> alloc, Object[] dense) {
        Objects.requireNonNull(alloc, "alloc");
        Compressed c = compressDense(dense, false);
        long cols = denseColumns(dense);
        long[] row = expand(c.indptr(), c.indices().length);
        return assemble(
                upload(
                        alloc,
                        asVector(DType.INT32, row),
                        asVector(DType.INT32, c.indices()),
                        asVector(denseType(dense), c.values())),
                p -> new CooMatrix(dense.length, cols, p.get(0), p.get(1), p.get(2)));
    }

    /** The row of each stored value, lent. */
    public NdArray row() {
        return part(0);
    }

    /** The column of each stored value, lent. */
    public NdArray col() {
        return part(1);
    }

    /** The stored values, lent. */
    public NdArray data() {
        return part(2);
    }

    @Override
    public double[][] toDense() {
        Coordinates c = readCoordinates();
        double[][] dense = newDense(rows(), cols());
        for (int k = 0; k < c.values().length; k++) {
            dense[(int) c.row()[k]][(int) c.col()[k]] += c.values()[k];
        }
        return dense;
    }

    /**
     * This matrix in CSR format in {@code alloc}'s memory, with the same dtypes, converted on the host; within a
     * row, values keep their order here, and duplicates stay.
     */
    public CsrMatrix toCsr(BufferAllocator<?> alloc) {
        Coordinates c = readCoordinates();
        Compressed t = compress(rows(), c.row(), c.col(), c.values());
        return assemble(
                upload(
                        alloc,
                        asVector(indexType(), t.indptr()),
                        asVector(indexType(), t.indices()),
                        asVector(dataType(), t.values())),
                p -> new CsrMatrix(rows(), cols(), p.get(0), p.get(1), p.get(2)));
    }

    /** This matrix in CSC format in {@code alloc}'s memory; see {@link #toCsr}. */
    public CscMatrix toCsc(BufferAllocator<?> alloc) {
        Coordinates c = readCoordinates();
        Compressed t = compress(cols(), c.col(), c.row(), c.values());
        return assemble(
                upload(
                        alloc,
                        asVector(indexType(), t.indptr()),
                        asVector(indexType(), t.indices()),
                        asVector(dataType(), t.values())),
                p -> new CscMatrix(rows(), cols(), p.get(0), p.get(1), p.get(2)));
    }

    private record Coordinates(long[] row, long[] col, double[] values) {}

    private Coordinates readCoordinates() {
        checkOpen();
        Coordinates c = new Coordinates(indexValues(row()), indexValues(col()), dataValues(data()));
        try {
            checkIndices("row", c.row(), "rows", rows());
            checkIndices("col", c.col(), "columns", cols());
        } catch (IllegalArgumentException e) {
            throw new IllegalStateException("invalid contents of " + this + ": " + e.getMessage(), e);
        }
        return c;
    }
}
