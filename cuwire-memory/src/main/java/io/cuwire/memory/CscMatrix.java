package io.cuwire.memory;

import java.util.Arrays;
import java.util.List;
import java.util.Objects;

/**
 * A sparse matrix in compressed sparse column (CSC) format: the values of column {@code j} are
 * {@code data[indptr[j] .. indptr[j + 1])}, in rows {@code indices[indptr[j] .. indptr[j + 1])}. {@code indptr}
 * has {@code cols + 1} elements, {@code indices} and {@code data} one per stored value. Ownership, validation and
 * threads as for every {@link SparseMatrix}.
 */
public final class CscMatrix extends SparseParts implements SparseMatrix {
    /**
     * A matrix over the given vectors, taking ownership of them (if this throws, the caller still owns them).
     *
     * @throws IllegalArgumentException if a dimension is negative, a dtype, rank or length is wrong, or the parts
     *     live in different memory
     * @throws IllegalStateException if a part is closed
     */
    public CscMatrix(long rows, long cols, NdArray indptr, NdArray indices, NdArray data) {
        super(rows, cols, List.of("indptr", "indices", "data"), Arrays.asList(indptr, indices, data));
        checkLength(0, cols + 1, "cols + 1");
        checkLength(1, data.size(), "the length of data");
        checkIndexRange(data.size(), "nnz");
    }

    /** A matrix of {@code alloc}'s memory holding the given arrays, whose contents are checked first. */
    public static CscMatrix fromArrays(
            BufferAllocator<?> alloc, long rows, long cols, int[] indptr, int[] indices, float[] data) {
        return create(alloc, rows, cols, indptr, indices, data);
    }

    /** A matrix of {@code alloc}'s memory holding the given arrays, whose contents are checked first. */
    public static CscMatrix fromArrays(
            BufferAllocator<?> alloc, long rows, long cols, int[] indptr, int[] indices, double[] data) {
        return create(alloc, rows, cols, indptr, indices, data);
    }

    /** A matrix of {@code alloc}'s memory holding the given arrays, whose contents are checked first. */
    public static CscMatrix fromArrays(
            BufferAllocator<?> alloc, long rows, long cols, long[] indptr, long[] indices, float[] data) {
        return create(alloc, rows, cols, indptr, indices, data);
    }

    /** A matrix of {@code alloc}'s memory holding the given arrays, whose contents are checked first. */
    public static CscMatrix fromArrays(
            BufferAllocator<?> alloc, long rows, long cols, long[] indptr, long[] indices, double[] data) {
        return create(alloc, rows, cols, indptr, indices, data);
    }

    private static CscMatrix create(
            BufferAllocator<?> alloc, long rows, long cols, Object indptr, Object indices, Object data) {
        Objects.requireNonNull(alloc, "alloc");
        Objects.requireNonNull(indptr, "indptr");
        Objects.requireNonNull(indices, "indices");
        Objects.requireNonNull(data, "data");
        checkDims(rows, cols);
        checkSameLength("indices", indices, "data", data);
        checkCompressed("cols", cols, "rows", rows, widen(indptr), widen(indices), length(data));
        return assemble(
                upload(alloc, indptr, indices, data), p -> new CscMatrix(rows, cols, p.get(0), p.get(1), p.get(2)));
    }

    /** The nonzero values of {@code dense} as a float64 matrix of {@code alloc}'s memory, with int32 indices. */
    public static CscMatrix fromDense(BufferAllocator<?> alloc, double[][] dense) {
        return fromDenseRows(alloc, dense);
    }

    /** The nonzero values of {@code dense} as a float32 matrix of {@code alloc}'s memory, with int32 indices. */
    public static CscMatrix fromDense(BufferAllocator<?> alloc, float[][] dense) {
        return fromDenseRows(alloc, dense);
    }

    private static CscMatrix fromDenseRows(BufferAllocator<?> alloc, Object[] dense) {
        Objects.requireNonNull(alloc, "alloc");
        Compressed c = compressDense(dense, true);
        long cols = denseColumns(dense);
        return assemble(
                upload(
                        alloc,
                        asVector(DType.INT32, c.indptr()),
                        asVector(DType.INT32, c.indices()),
                        asVector(denseType(dense), c.values())),
                p -> new CscMatrix(dense.length, cols, p.get(0), p.get(1), p.get(2)));
    }

    /** The column pointers, lent. */
    public NdArray indptr() {
        return part(0);
    }

    /** The row of each stored value, lent. */
    public NdArray indices() {
        return part(1);
    }

    /** The stored values, lent. */
    public NdArray data() {
        return part(2);
    }

    @Override
    public double[][] toDense() {
        return compressedToDense(true);
    }

    /** This matrix in coordinate format in {@code alloc}'s memory, with the same dtypes, converted on the host. */
    public CooMatrix toCoo(BufferAllocator<?> alloc) {
        Compressed c = readCompressed(true);
        long[] col = expand(c.indptr(), c.indices().length);
        return assemble(
                upload(
                        alloc,
                        asVector(indexType(), c.indices()),
                        asVector(indexType(), col),
                        asVector(dataType(), c.values())),
                p -> new CooMatrix(rows(), cols(), p.get(0), p.get(1), p.get(2)));
    }

    /** This matrix in CSR format in {@code alloc}'s memory, with the same dtypes, converted on the host. */
    public CsrMatrix toCsr(BufferAllocator<?> alloc) {
        Compressed c = readCompressed(true);
        Compressed t = compress(rows(), c.indices(), expand(c.indptr(), c.indices().length), c.values());
        return assemble(
                upload(
                        alloc,
                        asVector(indexType(), t.indptr()),
                        asVector(indexType(), t.indices()),
                        asVector(dataType(), t.values())),
                p -> new CsrMatrix(rows(), cols(), p.get(0), p.get(1), p.get(2)));
    }
}
