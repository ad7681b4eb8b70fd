package io.cuwire.memory;

import java.util.List;

/**
 * A two-dimensional sparse matrix whose parts are {@link NdArray} vectors in one memory kind on one device: CSR
 * ({@link CsrMatrix}), CSC ({@link CscMatrix}) or coordinate ({@link CooMatrix}) format, as in SciPy and cuML.
 * Indices are {@link DType#INT32} or {@link DType#INT64} (all index vectors of one matrix share a dtype); values are
 * {@link DType#FLOAT32} or {@link DType#FLOAT64}.
 *
 * <h2>Ownership and close policy</h2>
 * A matrix owns its components: a successful constructor takes them over, and {@link #close()} closes each
 * (freeing those that own their buffers, ending the use of views), keeping the first failure and adding the others
 * as suppressed. If a constructor throws, the caller still owns the components. {@link #components()} lends them to
 * serializers and kernels: do not close them. Closing twice is an error ({@link IllegalStateException}).
 *
 * <h2>Validation</h2>
 * Constructors check what they can without reading the memory: dimensions, dtypes, ranks and lengths, and that all
 * parts live together. The factories from Java arrays also check the contents (index ranges, a non-decreasing
 * {@code indptr}); {@link #toDense()} checks them as it reads. Duplicate entries are allowed and summed by
 * {@link #toDense()}, as in SciPy.
 *
 * <h2>Threads</h2>
 * Matrices are immutable handles, safe to share between threads; {@code close()} must not race with their use.
 */
public sealed interface SparseMatrix extends AutoCloseable permits CsrMatrix, CscMatrix, CooMatrix {
    /** The number of rows. */
    long rows();

    /** The number of columns. */
    long cols();

    /** {@code {rows, cols}}. */
    default long[] shape() {
        return new long[] {rows(), cols()};
    }

    /** The number of stored values (explicit zeros and duplicates included). */
    long nnz();

    /** The dtype of the index vectors: {@link DType#INT32} or {@link DType#INT64}. */
    DType indexType();

    /** The dtype of the values: {@link DType#FLOAT32} or {@link DType#FLOAT64}. */
    DType dataType();

    /** Where the components live. */
    MemoryKind kind();

    /** The device holding the components, or {@link Buffer#HOST_ORDINAL}. */
    int deviceOrdinal();

    /** The components in the format's order (e.g. {@code indptr, indices, data}), lent, for serializers. */
    List<NdArray> components();

    /**
     * The matrix as dense rows, duplicates summed, copied to the heap through the {@link CopyEngine}.
     *
     * @throws IllegalStateException if the contents are invalid or the matrix does not fit Java arrays
     */
    double[][] toDense();

    /** Whether the matrix and all its components are open. */
    boolean isOpen();

    /**
     * Closes every component.
     *
     * @throws IllegalStateException if already closed, or a component was closed by someone else
     */
    @Override
    void close();
}
