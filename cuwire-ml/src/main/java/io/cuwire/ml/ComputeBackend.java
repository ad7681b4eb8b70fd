package io.cuwire.ml;

import io.cuwire.memory.Buffer;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.DType;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.MemoryKind;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import io.cuwire.serialize.OpaqueBlob;
import java.util.Arrays;
import java.util.Objects;
import java.util.Optional;

/**
 * The arithmetic the estimators run, on {@link NdArray}s that live where the backend computes: the pure-Java CPU
 * backend (internal to this module) for host and emulated-device memory, cuwire-ml-cuda's CUDA backend (cuBLAS plus its
 * kernels) for CUDA devices, found through {@link io.cuwire.ml.spi.BackendProvider}. {@link ComputeBackends#forArray}
 * picks the backend by where the data lives; estimators never choose.
 *
 * <h2>The operations, and what each maps to on CUDA</h2>
 * <table>
 *   <caption>Operations</caption>
 *   <tr><th>operation</th><th>used by</th><th>CUDA</th></tr>
 *   <tr><td>{@link #gemm}, {@link #gemv}, {@link #axpy}, {@link #scale}, {@link #dot}</td>
 *       <td>every estimator's products and statistics</td><td>cuBLAS {@code gemm}, {@code gemv}, {@code axpy},
 *       {@code scal}, {@code dot} (row-major operands as the transposed column-major problem)</td></tr>
 *   <tr><td>{@link #squaredDistances}</td><td>KMeans, neighbors</td><td>row norms kernel, cuBLAS {@code gemm},
 *       broadcast-add-and-clamp kernel ({@code ||x||² − 2 x·y + ||y||²}, as cuML does)</td></tr>
 *   <tr><td>{@link #nearestRows}</td><td>KMeans predict</td><td>one fused kernel reading {@code x} once (distances
 *       to a few centers held in registers or shared memory, then their argmin); many centers:
 *       {@link #squaredDistances} and {@link #argminRows}</td></tr>
 *   <tr><td>{@link #fill}, {@link #map}, {@link #broadcastRows}, {@link #softmaxRows}</td>
 *       <td>intercepts, centering, whitening, probabilities</td><td>element-wise kernels</td></tr>
 *   <tr><td>{@link #reduce}, {@link #columnSums}, {@link #countEqual}, {@link #argminRows},
 *       {@link #argmaxRows}</td><td>scores, means, labels</td><td>reduction kernels</td></tr>
 *   <tr><td>{@link #crossEntropy}</td><td>LogisticRegression</td><td>one fused kernel: loss and its gradient in
 *       the logits (sigmoid for one column, softmax for several)</td></tr>
 *   <tr><td>{@link #gatherRows}, {@link #scatterAddRows}, {@link #bincount}, {@link #countRows}</td>
 *       <td>KMeans sums, naive Bayes counts, neighbor votes</td><td>a gather kernel; sums per block in shared
 *       memory added in a fixed order; counts per block added atomically</td></tr>
 *   <tr><td>{@link #kNearestRows}</td><td>neighbors (brute force)</td><td>up to 32 neighbors one kernel: tiles
 *       of queries and rows through shared memory, each query's best keys kept there as the distances are
 *       computed (no distance matrix); more, blocks of queries through {@link #squaredDistances} and
 *       {@link #smallestK}; then, but for float64's fused sums, a kernel that recomputes the chosen distances as sums
 *       of squared differences and re-sorts each row</td></tr>
 *   <tr><td>{@link #smallestK}, {@link #mergeNeighbors}</td><td>top-k of any rows; neighbors of several
 *       partitions merged</td><td>a parallel selection per row (a warp, a block, or several blocks and a merge; one
 *       thread a row beyond 32 neighbors) and a merge of two sorted lists per row</td></tr>
 *   <tr><td>{@link #predictForest}</td><td>random forests</td><td>a kernel walking the flat forest layout of
 *       {@code cuwire.forest/1}</td></tr>
 * </table>
 *
 * <h2>Contract</h2>
 * <ul>
 *   <li>Every operand is open, lives where this backend computes ({@link #supports}), and all operands of one call
 *       live in one place (host and pinned memory are one place; a device is another).</li>
 *   <li>Matrices are rank 2 in {@link Order#C C order}; vectors are rank 1. Floating operands are
 *       {@link DType#FLOAT32} or {@link DType#FLOAT64}, all of one dtype within a call; labels are
 *       {@link DType#INT32}; neighbor ids are {@link DType#INT64}.</li>
 *   <li>The caller allocates every output; operations never allocate arrays the caller sees. Outputs are written,
 *       not accumulated, unless the method says "adds".</li>
 *   <li>Scalars returned to the caller ({@link #dot}, {@link #reduce}, …) are doubles; a device backend copies
 *       them to the host, a few bytes per call.</li>
 *   <li>Violations throw {@link IllegalArgumentException} (or {@link IllegalStateException} for closed arrays)
 *       before any work, with the operation, the operand and the expectation in the message; these checks are
 *       made here, once, so every backend reports the same words.</li>
 * </ul>
 * Float32 operands may be computed in a wider precision (the CPU backend accumulates in doubles); the conformance
 * suite states how close two backends must agree.
 *
 * <p>Backends are stateless apart from device handles and safe to use from several threads on distinct outputs.
 */
public abstract class ComputeBackend {
    /** A backend. */
    protected ComputeBackend() {}

    /** A short name for messages, e.g. {@code cpu}, {@code cuda}. */
    public abstract String name();

    /** Whether this backend computes on the memory holding {@code a}. */
    public abstract boolean supports(NdArray a);

    // ---------------------------------------------------------------- products

    /**
     * {@code c = alpha * op(a) * op(b) + beta * c}, where {@code op(m)} is {@code m} or its transpose. With
     * {@code beta == 0} the old contents of {@code c} are ignored (even NaN).
     */
    public final void gemm(boolean transA, boolean transB, double alpha, NdArray a, NdArray b, double beta, NdArray c) {
        String op = "gemm";
        operands(op, "a,b,c", a, b, c);
        floatingMatrix(op, "a", a);
        sameDtype(op, "b", b, "a", a);
        sameDtype(op, "c", c, "a", a);
        matrix(op, "b", b);
        matrix(op, "c", c);
        long m = transA ? a.dim(1) : a.dim(0);
        long k = transA ? a.dim(0) : a.dim(1);
        long kb = transB ? b.dim(1) : b.dim(0);
        long n = transB ? b.dim(0) : b.dim(1);
        if (k != kb) {
            throw new IllegalArgumentException(op + ": op(a) is " + m + " x " + k + " but op(b) is " + kb + " x " + n
                    + " (expected: the inner dimensions to agree)");
        }
        shape(op, "c", c, "op(a) rows x op(b) columns", m, n);
        doGemm(transA, transB, alpha, a, b, beta, c);
    }

    /** {@code y = alpha * op(a) * x + beta * y}; with {@code beta == 0} the old {@code y} is ignored. */
    public final void gemv(boolean transA, double alpha, NdArray a, NdArray x, double beta, NdArray y) {
        String op = "gemv";
        operands(op, "a,x,y", a, x, y);
        floatingMatrix(op, "a", a);
        sameDtype(op, "x", x, "a", a);
        sameDtype(op, "y", y, "a", a);
        shape(op, "x", x, transA ? "the rows of a" : "the columns of a", transA ? a.dim(0) : a.dim(1));
        shape(op, "y", y, transA ? "the columns of a" : "the rows of a", transA ? a.dim(1) : a.dim(0));
        doGemv(transA, alpha, a, x, beta, y);
    }

    /** {@code y += alpha * x}; any equal shapes. */
    public final void axpy(double alpha, NdArray x, NdArray y) {
        String op = "axpy";
        operands(op, "x,y", x, y);
        floating(op, "x", x);
        sameDtype(op, "y", y, "x", x);
        sameShape(op, "y", y, "x", x);
        doAxpy(alpha, x, y);
    }

    /** {@code x *= alpha}. */
    public final void scale(double alpha, NdArray x) {
        String op = "scale";
        operands(op, "x", x);
        floating(op, "x", x);
        doScale(alpha, x);
    }

    /** The sum of {@code x[i] * y[i]} over all elements of two arrays of one shape. */
    public final double dot(NdArray x, NdArray y) {
        String op = "dot";
        operands(op, "x,y", x, y);
        floating(op, "x", x);
        sameDtype(op, "y", y, "x", x);
        sameShape(op, "y", y, "x", x);
        return doDot(x, y);
    }

    // ---------------------------------------------------------------- element-wise

    /** Sets every element to {@code value}; for integer arrays {@code value} must be an integer of their range. */
    public final void fill(NdArray a, double value) {
        String op = "fill";
        operands(op, "a", a);
        if (a.dtype() == DType.BOOL || a.dtype() == DType.UINT8) {
            throw new IllegalArgumentException(op + ": a has dtype " + a.dtype().wireName()
                    + " (expected: float32, float64, int32 or int64) in " + a);
        }
        if (!a.dtype().isFloatingPoint()
                && (value != Math.rint(value)
                        || (a.dtype() == DType.INT32 && (value < Integer.MIN_VALUE || value > Integer.MAX_VALUE)))) {
            throw new IllegalArgumentException(
                    op + ": value " + value + " does not fit " + a.dtype().wireName());
        }
        doFill(a, value);
    }

    /** {@code out[i] = f(in[i])}; {@code out} may be {@code in}. */
    public final void map(UnaryOp f, NdArray in, NdArray out) {
        String op = "map";
        Objects.requireNonNull(f, "f");
        operands(op, "in,out", in, out);
        floating(op, "in", in);
        sameDtype(op, "out", out, "in", in);
        sameShape(op, "out", out, "in", in);
        doMap(f, in, out);
    }

    /** {@code a[i, j] = a[i, j] op v[j]} for every row {@code i}: a row vector broadcast over a matrix, in place. */
    public final void broadcastRows(BinaryOp f, NdArray a, NdArray v) {
        String op = "broadcastRows";
        Objects.requireNonNull(f, "f");
        operands(op, "a,v", a, v);
        floatingMatrix(op, "a", a);
        sameDtype(op, "v", v, "a", a);
        shape(op, "v", v, "the columns of a", a.dim(1));
        doBroadcastRows(f, a, v);
    }

    /** {@code out[i, :] = softmax(in[i, :])}, computed stably (the row maximum subtracted); {@code out} may be in. */
    public final void softmaxRows(NdArray in, NdArray out) {
        String op = "softmaxRows";
        operands(op, "in,out", in, out);
        floatingMatrix(op, "in", in);
        sameDtype(op, "out", out, "in", in);
        shape(op, "out", out, "the shape of in", in.dim(0), in.dim(1));
        doSoftmaxRows(in, out);
    }

    // ---------------------------------------------------------------- reductions

    /**
     * {@link Reduction#SUM}, {@link Reduction#MIN} or {@link Reduction#MAX} of all elements of a floating or
     * integer array (a sum of no elements is 0; the minimum or maximum of none is an error).
     */
    public final double reduce(Reduction r, NdArray a) {
        String op = "reduce";
        Objects.requireNonNull(r, "r");
        operands(op, "a", a);
        if (!a.dtype().isFloatingPoint() && !a.dtype().isIndex()) {
            throw new IllegalArgumentException(op + ": a has dtype " + a.dtype().wireName()
                    + " (expected: float32, float64, int32 or int64) in " + a);
        }
        if (a.size() == 0 && r != Reduction.SUM) {
            throw new IllegalArgumentException(op + ": " + r + " of an empty array " + a);
        }
        return doReduce(r, a);
    }

    /**
     * Copies {@code src} into {@code dst} (a floating array of the same dtype, shape and order, where this backend
     * computes) and returns the sum of its elements, as {@link #reduce}({@link Reduction#SUM}, {@code src}) does: a
     * fit that keeps a copy of its rows checks them finite in the pass that copies them (a sum that is not finite
     * says that an element may not be).
     */
    public final double copySum(NdArray src, NdArray dst) {
        String op = "copySum";
        operands(op, "src,dst", src, dst);
        floating(op, "src", src);
        sameDtype(op, "dst", dst, "src", src);
        sameShape(op, "dst", dst, "src", src);
        if (src.order() != dst.order() && src.rank() > 1) {
            throw new IllegalArgumentException(op + ": dst is in " + dst.order() + " order, src in " + src.order()
                    + " (expected: the same order)");
        }
        return doCopySum(src, dst);
    }

    /**
     * The centered cross products of a least-squares fit, {@code x} itself unchanged: {@code gram = xc^T xc} and
     * {@code xty = xc^T y} for {@code xc = x - 1 mean^T} (each row less {@code mean}). {@code y} and {@code xty} are
     * both given or both {@code null} (then only the Gram matrix). Centering first loses nothing to cancellation when
     * the columns' means are large against their spread. By default {@code x} is centered in a copy allocated from
     * {@code scratch}; a backend that centers each block of rows as it reads it (the CPU backend) allocates none.
     */
    public final void centeredCross(
            NdArray x, NdArray mean, NdArray y, NdArray gram, NdArray xty, BufferAllocator<?> scratch) {
        String op = "centeredCross";
        if ((y == null) != (xty == null)) {
            throw new IllegalArgumentException(op + ": y is " + (y == null ? "null" : "given") + " but xty is "
                    + (xty == null ? "null" : "given") + " (expected: both or neither)");
        }
        Objects.requireNonNull(scratch, "scratch");
        if (y == null) {
            operands(op, "x,mean,gram", x, mean, gram);
        } else {
            operands(op, "x,mean,gram,y,xty", x, mean, gram, y, xty);
            sameDtype(op, "y", y, "x", x);
            sameDtype(op, "xty", xty, "x", x);
            shape(op, "y", y, "the rows of x", x.dim(0));
            shape(op, "xty", xty, "the columns of x", x.dim(1));
        }
        floatingMatrix(op, "x", x);
        sameDtype(op, "mean", mean, "x", x);
        sameDtype(op, "gram", gram, "x", x);
        shape(op, "mean", mean, "the columns of x", x.dim(1));
        shape(op, "gram", gram, "columns x columns of x", x.dim(1), x.dim(1));
        doCenteredCross(x, mean, y, gram, xty, scratch);
    }

    /** {@code out[j] = sum over i of a[i, j]}. */
    public final void columnSums(NdArray a, NdArray out) {
        String op = "columnSums";
        operands(op, "a,out", a, out);
        floatingMatrix(op, "a", a);
        sameDtype(op, "out", out, "a", a);
        shape(op, "out", out, "the columns of a", a.dim(1));
        doColumnSums(a, out);
    }

    /** How many elements of two integer arrays of one shape and dtype are equal. */
    public final long countEqual(NdArray a, NdArray b) {
        String op = "countEqual";
        operands(op, "a,b", a, b);
        index(op, "a", a);
        sameDtype(op, "b", b, "a", a);
        sameShape(op, "b", b, "a", a);
        return doCountEqual(a, b);
    }

    /**
     * {@code index[i]} = the column of the smallest element of row {@code i} (the first of equals), and
     * {@code min[i]} that element when {@code min} is not {@code null}. Rows must not be empty.
     */
    public final void argminRows(NdArray a, NdArray index, NdArray min) {
        String op = "argminRows";
        operands(
                op,
                min == null ? "a,index" : "a,index,min",
                min == null ? new NdArray[] {a, index} : new NdArray[] {a, index, min});
        argRows(op, a, index);
        if (min != null) {
            sameDtype(op, "min", min, "a", a);
            shape(op, "min", min, "the rows of a", a.dim(0));
        }
        doArgminRows(a, index, min);
    }

    /** {@code index[i]} = the column of the largest element of row {@code i} (the first of equals). */
    public final void argmaxRows(NdArray a, NdArray index) {
        String op = "argmaxRows";
        operands(op, "a,index", a, index);
        argRows(op, a, index);
        doArgmaxRows(a, index);
    }

    private void argRows(String op, NdArray a, NdArray index) {
        floatingMatrix(op, "a", a);
        if (a.dim(1) == 0 && a.dim(0) > 0) {
            throw new IllegalArgumentException(op + ": a has no columns: " + a);
        }
        labels(op, "index", index);
        shape(op, "index", index, "the rows of a", a.dim(0));
    }

    // ---------------------------------------------------------------- fused

    /**
     * The summed cross-entropy loss of {@code logits} (n x k) against class {@code labels} (int32, n), and its
     * gradient in the logits written to {@code grad} (n x k, may be {@code logits}). With one column the model is
     * binary (sigmoid, labels 0 or 1: {@code loss = log(1 + e^z) - y z}, {@code grad = sigmoid(z) - y}); with
     * {@code k >= 2} it is multinomial (softmax, labels {@code 0 <= y < k}: {@code loss = logsumexp(z) - z[y]},
     * {@code grad = softmax(z) - onehot(y)}).
     *
     * @throws IllegalArgumentException also for a label out of range, naming its position (a device backend may
     *     report it after the kernel ran)
     */
    public final double crossEntropy(NdArray logits, NdArray labels, NdArray grad) {
        String op = "crossEntropy";
        operands(op, "logits,labels,grad", logits, labels, grad);
        floatingMatrix(op, "logits", logits);
        if (logits.dim(1) == 0) {
            throw new IllegalArgumentException(op + ": logits has no columns: " + logits);
        }
        labels(op, "labels", labels);
        shape(op, "labels", labels, "the rows of logits", logits.dim(0));
        sameDtype(op, "grad", grad, "logits", logits);
        shape(op, "grad", grad, "the shape of logits", logits.dim(0), logits.dim(1));
        return doCrossEntropy(logits, labels, grad);
    }

    /**
     * {@code out = squared Euclidean distances} between the rows of {@code x} (n x d) and of {@code y} (m x d), an
     * n x m matrix, computed as {@code ||x||² - 2 x·y + ||y||²} and clamped at 0.
     */
    public final void squaredDistances(NdArray x, NdArray y, NdArray out) {
        String op = "squaredDistances";
        operands(op, "x,y,out", x, y, out);
        floatingMatrix(op, "x", x);
        sameDtype(op, "y", y, "x", x);
        matrix(op, "y", y);
        sameColumns(op, y, x);
        sameDtype(op, "out", out, "x", x);
        shape(op, "out", out, "rows of x x rows of y", x.dim(0), y.dim(0));
        doSquaredDistances(x, y, out);
    }

    /**
     * {@code index[i]} = the row of {@code y} (m x d, {@code m >= 1}) nearest to row {@code i} of {@code x} (n x d)
     * by squared Euclidean distance {@code sum_j (x[i, j] - y[c, j])²} (the first of equals), and {@code min[i]} that
     * squared distance when {@code min} is not {@code null}: {@link #squaredDistances} then {@link #argminRows}
     * without the n x m matrix.
     */
    public final void nearestRows(NdArray x, NdArray y, NdArray index, NdArray min) {
        String op = "nearestRows";
        operands(
                op,
                min == null ? "x,y,index" : "x,y,index,min",
                min == null ? new NdArray[] {x, y, index} : new NdArray[] {x, y, index, min});
        floatingMatrix(op, "x", x);
        sameDtype(op, "y", y, "x", x);
        matrix(op, "y", y);
        sameColumns(op, y, x);
        if (y.dim(0) == 0 && x.dim(0) > 0) {
            throw new IllegalArgumentException(op + ": y has no rows: " + y);
        }
        labels(op, "index", index);
        shape(op, "index", index, "the rows of x", x.dim(0));
        if (min != null) {
            sameDtype(op, "min", min, "x", x);
            shape(op, "min", min, "the rows of x", x.dim(0));
        }
        doNearestRows(x, y, index, min);
    }

    /**
     * What {@link #gemv} runs for a matrix like {@code a} ({@code transA}: its transpose), for benchmark reports: a
     * backend with several kernels names the one it picks; this default is the backend's {@link #name}.
     */
    public String gemvPath(boolean transA, NdArray a) {
        return name();
    }

    /**
     * What {@link #nearestRows} runs for rows like {@code x} and {@code centers} centers, for benchmark reports: a
     * backend with several kernels names the one it picks; this default is the backend's {@link #name}.
     */
    public String nearestRowsPath(NdArray x, long centers) {
        return name();
    }

    /**
     * What {@link #kNearestRows} runs for queries like {@code q}, rows like {@code x} and {@code k} neighbors, for
     * benchmark reports: a backend with several kernels names the one it picks; this default is the backend's
     * {@link #name}.
     */
    public String kNearestRowsPath(NdArray q, NdArray x, long k) {
        return name();
    }

    // ---------------------------------------------------------------- indexing

    /**
     * {@code out[i] = src[index[i]]}: rows of a matrix (out m x d) or elements of a vector (out m). {@code index} is
     * int32 or int64; {@code src} and {@code out} have one dtype, any.
     */
    public final void gatherRows(NdArray src, NdArray index, NdArray out) {
        String op = "gatherRows";
        operands(op, "src,index,out", src, index, out);
        vectorOrMatrix(op, "src", src);
        index(op, "index", index);
        vector(op, "index", index);
        sameDtype(op, "out", out, "src", src);
        if (src.rank() == 2) {
            shape(op, "out", out, "index length x the columns of src", index.dim(0), src.dim(1));
        } else {
            shape(op, "out", out, "the length of index", index.dim(0));
        }
        doGatherRows(src, index, out);
    }

    /**
     * Adds {@code src[i]} into {@code out[index[i]]} for every {@code i}: rows of a matrix (src n x d, out k x d) or
     * elements of a vector (src n, out k). {@code index} is int32 labels in {@code [0, k)}.
     */
    public final void scatterAddRows(NdArray src, NdArray index, NdArray out) {
        String op = "scatterAddRows";
        operands(op, "src,index,out", src, index, out);
        floating(op, "src", src);
        vectorOrMatrix(op, "src", src);
        labels(op, "index", index);
        shape(op, "index", index, "the rows of src", src.dim(0));
        sameDtype(op, "out", out, "src", src);
        if (src.rank() == 2) {
            matrix(op, "out", out);
            if (out.dim(1) != src.dim(1)) {
                throw new IllegalArgumentException(op + ": out has " + out.dim(1) + " columns (expected: " + src.dim(1)
                        + ", the columns of src) in " + out);
            }
        } else {
            vector(op, "out", out);
        }
        doScatterAddRows(src, index, out);
    }

    /** Adds 1 to {@code out[index[i]]} for every {@code i}: int32 labels in {@code [0, k)} counted into a float k. */
    public final void bincount(NdArray index, NdArray out) {
        String op = "bincount";
        operands(op, "index,out", index, out);
        labels(op, "index", index);
        floating(op, "out", out);
        vector(op, "out", out);
        doBincount(index, out);
    }

    /**
     * {@code out[i, c]} = how many elements of row {@code i} of {@code labels} (int32, n x k) equal {@code c}, for
     * {@code 0 <= c < C} where {@code out} is a floating n x C matrix; labels outside {@code [0, C)} are an error.
     */
    public final void countRows(NdArray labels, NdArray out) {
        String op = "countRows";
        operands(op, "labels,out", labels, out);
        if (labels.dtype() != DType.INT32) {
            throw new IllegalArgumentException(
                    op + ": labels has dtype " + labels.dtype().wireName() + " (expected: int32) in " + labels);
        }
        matrix(op, "labels", labels);
        floatingMatrix(op, "out", out);
        if (out.dim(0) != labels.dim(0)) {
            throw new IllegalArgumentException(op + ": out has " + out.dim(0) + " rows (expected: " + labels.dim(0)
                    + ", the rows of labels) in " + out);
        }
        doCountRows(labels, out);
    }

    // ---------------------------------------------------------------- neighbors

    /**
     * The {@code k = outDist.dim(1)} rows of {@code x} (n x d, {@code 1 <= k <= n}) nearest to each row of {@code q}
     * (m x d), nearest first (equal distances by row): their squared Euclidean distances
     * {@code sum_j (q[i, j] - x[r, j])²} into {@code outDist} (m x k) and their rows plus {@code idOffset} into
     * {@code outIds} (int64, m x k) — a partition's brute-force k nearest neighbors with global row ids. The distances
     * are sums of squared differences (in double, rounded once), however a backend ranks the rows: a query that equals
     * a training row is 0 from it, where {@code ||q||² - 2 q·x + ||x||²} leaves a rounding residue of
     * {@code ~eps ||x||²}.
     */
    public final void kNearestRows(NdArray q, NdArray x, long idOffset, NdArray outDist, NdArray outIds) {
        String op = "kNearestRows";
        operands(op, "q,x,outDist,outIds", q, x, outDist, outIds);
        floatingMatrix(op, "q", q);
        sameDtype(op, "x", x, "q", q);
        matrix(op, "x", x);
        if (x.dim(1) != q.dim(1)) {
            throw new IllegalArgumentException(
                    op + ": x has " + x.dim(1) + " columns (expected: " + q.dim(1) + ", the columns of q) in " + x);
        }
        sameDtype(op, "outDist", outDist, "q", q);
        matrix(op, "outDist", outDist);
        long k = outDist.dim(1);
        if (outDist.dim(0) != q.dim(0) || k < 1 || k > x.dim(0)) {
            throw new IllegalArgumentException(op + ": outDist has shape " + shapeOf(outDist) + " (expected: ("
                    + q.dim(0) + ", k) with 1 <= k <= " + x.dim(0) + ", the rows of x)");
        }
        ids(op, "outIds", outIds);
        shape(op, "outIds", outIds, "the shape of outDist", q.dim(0), k);
        if (idOffset < 0) {
            throw new IllegalArgumentException(op + ": idOffset " + idOffset + " (expected: >= 0)");
        }
        doKNearestRows(q, x, idOffset, outDist, outIds);
    }

    /**
     * The {@code k} smallest elements of each row of {@code values} (n x m, {@code k = outValues.dim(1) <= m}) in
     * ascending order (equal values by column), into {@code outValues} (n x k) and their columns plus
     * {@code idOffset} into {@code outIds} (int64, n x k): a partition's top-k with global row ids.
     */
    public final void smallestK(NdArray values, long idOffset, NdArray outValues, NdArray outIds) {
        String op = "smallestK";
        operands(op, "values,outValues,outIds", values, outValues, outIds);
        floatingMatrix(op, "values", values);
        sameDtype(op, "outValues", outValues, "values", values);
        matrix(op, "outValues", outValues);
        long k = outValues.dim(1);
        if (outValues.dim(0) != values.dim(0) || k > values.dim(1)) {
            throw new IllegalArgumentException(op + ": outValues has shape " + shapeOf(outValues)
                    + " (expected: (" + values.dim(0) + ", k) with k <= " + values.dim(1)
                    + ", the columns of values)");
        }
        ids(op, "outIds", outIds);
        shape(op, "outIds", outIds, "the shape of outValues", values.dim(0), k);
        if (idOffset < 0) {
            throw new IllegalArgumentException(op + ": idOffset " + idOffset + " (expected: >= 0)");
        }
        doSmallestK(values, idOffset, outValues, outIds);
    }

    /**
     * Merges two per-row ascending lists (distances with ids, n x ka and n x kb) into the
     * {@code k = outDist.dim(1) <= ka + kb} smallest, ascending, preferring {@code a} on equal distances. The ids
     * travel along unchanged: int64 row ids, or int32 class labels (one dtype for all three).
     */
    public final void mergeNeighbors(
            NdArray distA, NdArray idsA, NdArray distB, NdArray idsB, NdArray outDist, NdArray outIds) {
        String op = "mergeNeighbors";
        operands(op, "distA,idsA,distB,idsB,outDist,outIds", distA, idsA, distB, idsB, outDist, outIds);
        floatingMatrix(op, "distA", distA);
        sameDtype(op, "distB", distB, "distA", distA);
        sameDtype(op, "outDist", outDist, "distA", distA);
        matrix(op, "distB", distB);
        matrix(op, "outDist", outDist);
        long n = distA.dim(0);
        if (distB.dim(0) != n) {
            throw new IllegalArgumentException(
                    op + ": distB has " + distB.dim(0) + " rows (expected: " + n + ", the rows of distA)");
        }
        index(op, "idsA", idsA);
        matrix(op, "idsA", idsA);
        sameDtype(op, "idsB", idsB, "idsA", idsA);
        sameDtype(op, "outIds", outIds, "idsA", idsA);
        shape(op, "idsA", idsA, "the shape of distA", n, distA.dim(1));
        shape(op, "idsB", idsB, "the shape of distB", n, distB.dim(1));
        long k = outDist.dim(1);
        if (outDist.dim(0) != n || k > distA.dim(1) + distB.dim(1)) {
            throw new IllegalArgumentException(op + ": outDist has shape " + shapeOf(outDist) + " (expected: (" + n
                    + ", k) with k <= " + (distA.dim(1) + distB.dim(1)) + ")");
        }
        shape(op, "outIds", outIds, "the shape of outDist", n, k);
        doMergeNeighbors(distA, idsA, distB, idsB, outDist, outIds);
    }

    // ---------------------------------------------------------------- forests

    /**
     * Predicts with a forest in the {@code cuwire.forest/1} layout ({@link ForestLayout}):
     * for a classifier {@code out} (n x classes) receives the mean of the trees' class probabilities, for a
     * regressor {@code out} (n) the mean of the trees' values. {@code x} is n x features; the blob lives where
     * {@code x} does.
     */
    public final void predictForest(OpaqueBlob forest, NdArray x, NdArray out) {
        String op = "predictForest";
        Objects.requireNonNull(forest, "forest");
        operands(op, "x,out", x, out);
        floatingMatrix(op, "x", x);
        sameDtype(op, "out", out, "x", x);
        if (!place(forest.buffer().kind(), forest.buffer()).equals(placeOf(x))) {
            throw new IllegalArgumentException(
                    op + ": forest is on " + place(forest.buffer().kind(), forest.buffer()) + " but x is on "
                            + placeOf(x) + " (expected: every operand in one place)");
        }
        ForestLayout.Info info = ForestLayout.info(forest);
        if (x.dim(1) != info.features()) {
            throw new IllegalArgumentException(op + ": x has " + x.dim(1) + " columns (expected: " + info.features()
                    + ", the features of the forest)");
        }
        if (info.classes() > 0) {
            shape(op, "out", out, "rows of x x classes of the forest", x.dim(0), info.classes());
        } else {
            shape(op, "out", out, "the rows of x", x.dim(0));
        }
        doPredictForest(forest, info, x, out);
    }

    /**
     * This backend's builder of histogram-split trees for partition {@code x} ({@code n x d}, on this backend) with
     * {@code targets} (class indices in {@code 0 .. classes - 1} when {@code classes > 0}, else values), its
     * features binned at {@code edges[f]} (ascending, at most 255 each: value {@code v} falls in the first bin
     * {@code b} with {@code v <= edges[f][b]}); empty when the estimator is to grow the trees on the host, as it does
     * for the CPU backend.
     */
    public Optional<HistogramTrees> histogramTrees(NdArray x, double[] targets, int classes, double[][] edges) {
        return Optional.empty();
    }

    // ---------------------------------------------------------------- kernels, called after the checks

    /**
     * {@link #copySum} after its checks: by default a copy of the storage ({@link CopyEngine}) and a {@link #doReduce}
     * of the copy; a backend that can do both in one pass overrides it.
     */
    protected double doCopySum(NdArray src, NdArray dst) {
        if (src.byteSize() > 0) {
            CopyEngine.copy(src.buffer(), dst.buffer());
        }
        return doReduce(Reduction.SUM, dst);
    }

    /**
     * {@link #centeredCross} after its checks: by default {@code x} copied from {@code scratch}, centered
     * ({@link #doBroadcastRows}), and multiplied ({@link #doGemm}, {@link #doGemv}); a backend that centers blocks of
     * rows as it reads them overrides it.
     */
    protected void doCenteredCross(
            NdArray x, NdArray mean, NdArray y, NdArray gram, NdArray xty, BufferAllocator<?> scratch) {
        try (NdArray xc = x.copyTo(scratch)) {
            doBroadcastRows(BinaryOp.SUB, xc, mean);
            doGemm(true, false, 1, xc, xc, 0, gram);
            if (y != null) {
                doGemv(true, 1, xc, y, 0, xty);
            }
        }
    }

    protected abstract void doGemm(
            boolean transA, boolean transB, double alpha, NdArray a, NdArray b, double beta, NdArray c);

    protected abstract void doGemv(boolean transA, double alpha, NdArray a, NdArray x, double beta, NdArray y);

    protected abstract void doAxpy(double alpha, NdArray x, NdArray y);

    protected abstract void doScale(double alpha, NdArray x);

    protected abstract double doDot(NdArray x, NdArray y);

    protected abstract void doFill(NdArray a, double value);

    protected abstract void doMap(UnaryOp f, NdArray in, NdArray out);

    protected abstract void doBroadcastRows(BinaryOp f, NdArray a, NdArray v);

    protected abstract void doSoftmaxRows(NdArray in, NdArray out);

    protected abstract double doReduce(Reduction r, NdArray a);

    protected abstract void doColumnSums(NdArray a, NdArray out);

    protected abstract long doCountEqual(NdArray a, NdArray b);

    protected abstract void doArgminRows(NdArray a, NdArray index, NdArray min);

    protected abstract void doArgmaxRows(NdArray a, NdArray index);

    protected abstract double doCrossEntropy(NdArray logits, NdArray labels, NdArray grad);

    protected abstract void doSquaredDistances(NdArray x, NdArray y, NdArray out);

    protected abstract void doNearestRows(NdArray x, NdArray y, NdArray index, NdArray min);

    protected abstract void doGatherRows(NdArray src, NdArray index, NdArray out);

    protected abstract void doScatterAddRows(NdArray src, NdArray index, NdArray out);

    protected abstract void doBincount(NdArray index, NdArray out);

    protected abstract void doCountRows(NdArray labels, NdArray out);

    protected abstract void doKNearestRows(NdArray q, NdArray x, long idOffset, NdArray outDist, NdArray outIds);

    protected abstract void doSmallestK(NdArray values, long idOffset, NdArray outValues, NdArray outIds);

    protected abstract void doMergeNeighbors(
            NdArray distA, NdArray idsA, NdArray distB, NdArray idsB, NdArray outDist, NdArray outIds);

    protected abstract void doPredictForest(OpaqueBlob forest, ForestLayout.Info info, NdArray x, NdArray out);

    // ---------------------------------------------------------------- checks

    /** Where {@code a}'s elements live, for messages and the one-place rule: {@code HOST} or {@code DEVICE:cuda0}. */
    public static String placeOf(NdArray a) {
        return place(a.kind(), a.buffer());
    }

    private static String place(MemoryKind kind, Buffer b) {
        if (kind == MemoryKind.DEVICE) {
            DeviceBuffer d = (DeviceBuffer) b;
            return "DEVICE:" + d.device().platform() + d.device().ordinal();
        }
        return "HOST";
    }

    private void operands(String op, String names, NdArray... arrays) {
        String[] n = names.split(",");
        String first = null;
        for (int i = 0; i < arrays.length; i++) {
            Objects.requireNonNull(arrays[i], n[i]);
            arrays[i].checkOpen();
            if (!supports(arrays[i])) {
                throw new IllegalArgumentException(op + ": " + n[i] + " is on " + placeOf(arrays[i]) + ", where the "
                        + name() + " backend does not compute: " + arrays[i]);
            }
            String where = placeOf(arrays[i]);
            if (first == null) {
                first = where;
            } else if (!first.equals(where)) {
                throw new IllegalArgumentException(op + ": " + n[i] + " is on " + where + " but " + n[0] + " is on "
                        + first + " (expected: every operand in one place)");
            }
        }
    }

    private static String shapeOf(NdArray a) {
        long[] s = a.shape();
        if (s.length == 1) {
            return "(" + s[0] + ",)";
        }
        return Arrays.toString(s).replace('[', '(').replace(']', ')');
    }

    private static void floating(String op, String name, NdArray a) {
        if (!a.dtype().isFloatingPoint()) {
            throw new IllegalArgumentException(op + ": " + name + " has dtype "
                    + a.dtype().wireName() + " (expected: float32 or float64) in " + a);
        }
    }

    private static void matrix(String op, String name, NdArray a) {
        if (a.rank() != 2) {
            throw new IllegalArgumentException(op + ": " + name + " has rank " + a.rank() + " (expected: 2) in " + a);
        }
        if (a.order() != Order.C && a.dim(0) > 1 && a.dim(1) > 1) {
            throw new IllegalArgumentException(op + ": " + name + " is in F order (expected: C order) in " + a);
        }
    }

    private static void vector(String op, String name, NdArray a) {
        if (a.rank() != 1) {
            throw new IllegalArgumentException(op + ": " + name + " has rank " + a.rank() + " (expected: 1) in " + a);
        }
    }

    private static void vectorOrMatrix(String op, String name, NdArray a) {
        if (a.rank() == 2) {
            matrix(op, name, a);
        } else if (a.rank() != 1) {
            throw new IllegalArgumentException(
                    op + ": " + name + " has rank " + a.rank() + " (expected: 1 or 2) in " + a);
        }
    }

    private static void sameColumns(String op, NdArray y, NdArray x) {
        if (y.dim(1) != x.dim(1)) {
            throw new IllegalArgumentException(
                    op + ": y has " + y.dim(1) + " columns (expected: " + x.dim(1) + ", the columns of x) in " + y);
        }
    }

    private static void floatingMatrix(String op, String name, NdArray a) {
        floating(op, name, a);
        matrix(op, name, a);
    }

    private static void labels(String op, String name, NdArray a) {
        if (a.dtype() != DType.INT32) {
            throw new IllegalArgumentException(
                    op + ": " + name + " has dtype " + a.dtype().wireName() + " (expected: int32) in " + a);
        }
        vector(op, name, a);
    }

    private static void ids(String op, String name, NdArray a) {
        if (a.dtype() != DType.INT64) {
            throw new IllegalArgumentException(
                    op + ": " + name + " has dtype " + a.dtype().wireName() + " (expected: int64) in " + a);
        }
        matrix(op, name, a);
    }

    private static void index(String op, String name, NdArray a) {
        if (!a.dtype().isIndex()) {
            throw new IllegalArgumentException(
                    op + ": " + name + " has dtype " + a.dtype().wireName() + " (expected: int32 or int64) in " + a);
        }
    }

    private static void sameDtype(String op, String name, NdArray a, String refName, NdArray reference) {
        if (a.dtype() != reference.dtype()) {
            throw new IllegalArgumentException(
                    op + ": " + name + " has dtype " + a.dtype().wireName() + " (expected: "
                            + reference.dtype().wireName() + ", the dtype of " + refName + ") in " + a);
        }
    }

    private static void sameShape(String op, String name, NdArray a, String refName, NdArray reference) {
        if (!Arrays.equals(a.shape(), reference.shape())) {
            throw new IllegalArgumentException(op + ": " + name + " has shape " + shapeOf(a) + " (expected: "
                    + shapeOf(reference) + ", the shape of " + refName + ")");
        }
        if (a.rank() >= 2 && a.order() != reference.order()) {
            throw new IllegalArgumentException(op + ": " + name + " is in " + a.order() + " order (expected: "
                    + reference.order() + ", the order of " + refName + ")");
        }
    }

    private static void shape(String op, String name, NdArray a, String what, long... expected) {
        if (!Arrays.equals(a.shape(), expected)) {
            String want = expected.length == 1
                    ? "(" + expected[0] + ",)"
                    : Arrays.toString(expected).replace('[', '(').replace(']', ')');
            throw new IllegalArgumentException(
                    op + ": " + name + " has shape " + shapeOf(a) + " (expected: " + want + ", " + what + ")");
        }
        if (a.rank() == 2) {
            matrix(op, name, a);
        }
    }
}
