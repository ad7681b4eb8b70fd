package io.cuwire.ml.cuda.internal;

import io.cuwire.cuda.Kernel;
import io.cuwire.cuda.KernelArgs;
import io.cuwire.cuda.KernelModule;
import io.cuwire.cuda.Kernels;
import io.cuwire.memory.DType;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.DeviceStream;
import io.cuwire.ml.BinaryOp;
import io.cuwire.ml.Reduction;
import io.cuwire.ml.UnaryOp;
import java.util.Locale;
import java.util.function.IntPredicate;

/**
 * The kernels of cuwire-ml's CUDA compute backend ({@code src/main/cuda}, compiled by nvcc into a fatbin of its own,
 * {@link MlKernelTable#MODULE}; entry points and signatures from {@code src/main/manifest/kernels.manifest}):
 * element-wise functions, row-wise softmax, selection and counting, reductions, the fused cross-entropy, the parts of
 * squared distances that are not a product, gathers, scatters and counts, per-row top-k and merges, and the forest
 * walk. The semantics of each are those of cuwire-ml's CPU backend; the kernels compute in double precision whatever
 * the element type, so a float32 result is the double result rounded once, but for the float32 distances of
 * {@link #nearestRows} (see {@link NearestKernel}).
 *
 * <p>As for the platform's {@link Kernels}: every method enqueues its kernels on a CUDA {@link DeviceStream} and
 * returns; results are there after the stream's next {@code synchronize()}, and the buffers must stay open until then.
 * Arrays are dense and row-major, each buffer starting at its first element (pass a {@link DeviceBuffer#slice} for an
 * offset); counts are elements, not bytes. Buffers are checked before anything is enqueued: on the stream's device,
 * large enough, aligned to their elements. Floating operands are {@link DType#FLOAT32} or {@link DType#FLOAT64}, labels
 * int32.
 *
 * <p>Scalar results go to a one-element float64 {@code result} buffer, computed in two passes through a
 * {@code scratch} buffer of at least {@link #SCRATCH_BYTES}. Kernels that check values (labels in range, indices
 * in bounds, a forest walk that stays in its tree) write the smallest failing position into an int64 {@code error}
 * buffer, which they first set to {@link #NO_ERROR}; the caller reads it after synchronizing and reports. Work on
 * valid positions still happens. Thread-safe.
 */
public final class MlKernels {
    /** Blocks of the first pass of a reduction: the partial results the {@code scratch} buffer holds. */
    public static final int REDUCE_BLOCKS = 1024;
    /** The least size of the {@code scratch} buffer of a reduction. */
    public static final long SCRATCH_BYTES = 8L * REDUCE_BLOCKS;
    /** What an {@code error} buffer holds when every value was valid. */
    public static final long NO_ERROR = Long.MAX_VALUE;
    /** The most centers {@link #nearestRows} takes. */
    public static final int NEAREST_MAX_CENTERS = 32;
    /** The most center elements ({@code k x cols}) {@link #nearestRows} takes: what a block holds as doubles. */
    public static final long NEAREST_MAX_ELEMENTS = 4096;
    /** Elements of a row each lane of a row group loads at a time ({@code ML_ROW_UNROLL}). */
    static final int ROW_UNROLL = 8;
    /** The most neighbors {@link #smallestK} selects from keys in each thread's registers (and cuts rows for). */
    public static final int SELECT_MAX_K = 32;
    /**
     * The most neighbors {@link #smallestK} selects with a block a row (a radix select; the keys a block sorts in
     * shared memory, {@code ML_RADIX_MAX_K}); more take a thread a row.
     */
    public static final int SELECT_RADIX_MAX_K = 1024;
    /** Up to this many neighbors, the selection kernels keep 8 keys a thread (else {@value #SELECT_MAX_K}). */
    static final int SELECT_SMALL_K = 8;
    /** Rows of {@link #smallestK} up to this many columns are selected by a warp each, longer ones by blocks. */
    static final long SELECT_WARP_MAX_COLS = 2048;
    /** The least elements of the slice of a row one block selects from, when rows are cut. */
    static final long SELECT_MIN_SLICE = 8192;
    /** Blocks per multiprocessor that cutting few long rows into slices aims at. */
    static final int SELECT_BLOCKS_PER_SM = 4;
    /** The most rows of {@code out} {@link #scatterAddRows} sums deterministically: {@code ML_SCATTER_SHARED / 32}. */
    public static final int SCATTER_MAX_K = 192;
    /** Rows a block of the deterministic {@link #scatterAddRows} sums, about. */
    static final long SCATTER_PART_ROWS = 512;
    /** The most blocks the deterministic {@link #scatterAddRows} cuts its rows into (all column tiles together). */
    static final long SCATTER_MAX_BLOCKS = 1024;
    /** The most bins {@link #bincount} counts per block in shared memory ({@code ML_BINCOUNT_SHARED}). */
    public static final int BINCOUNT_BLOCK_MAX_K = 4096;
    /** The most blocks of the per-block {@link #bincount}: each adds its {@code k} counts to the output. */
    static final int BINCOUNT_BLOCKS = 1024;

    private MlKernels() {}

    // ---------------------------------------------------------------- element-wise

    /** {@code y[i] = value} for {@code i < n}, for float32, float64, int32 (an int value) or int64. */
    public static void fill(DeviceStream stream, DType dtype, DeviceBuffer y, long n, double value) {
        switch (dtype) {
            case FLOAT32 -> Kernels.fillF32(stream, y, n, (float) value);
            case FLOAT64 -> Kernels.fillF64(stream, y, n, value);
            case INT32 ->
                MlKernelTable.FILL_I32.launch(
                        n, KernelArgs.on(stream).i64(n).i32((int) value).array("y", y, n, Integer.BYTES));
            case INT64 -> fillLong(stream, y, n, (long) value);
            default ->
                throw new IllegalArgumentException(
                        "fill: dtype " + dtype.wireName() + " (expected: float32, float64, int32 or int64)");
        }
    }

    private static void fillLong(DeviceStream stream, DeviceBuffer y, long n, long value) {
        MlKernelTable.FILL_I64.launch(n, KernelArgs.on(stream).i64(n).i64(value).array("y", y, n, Long.BYTES));
    }

    /** Sets the int64 {@code error} buffer to {@link #NO_ERROR}. */
    public static void resetError(DeviceStream stream, DeviceBuffer error) {
        fillLong(stream, error, 1, NO_ERROR);
    }

    /** {@code out[i] = f(in[i])} for {@code i < n}; {@code out} may be {@code in}. */
    public static void map(DeviceStream stream, DType dtype, UnaryOp f, DeviceBuffer in, DeviceBuffer out, long n) {
        int es = floating("map", dtype);
        MlKernelTable.map(dtype)
                .launch(
                        n,
                        KernelArgs.on(stream)
                                .i64(n)
                                .i32(f.code())
                                .array("in", in, n, es)
                                .array("out", out, n, es));
    }

    /** {@code a[i, j] = a[i, j] op v[j]} for a {@code rows x cols} matrix and a vector of {@code cols}. */
    public static void broadcastRows(
            DeviceStream stream, DType dtype, BinaryOp op, DeviceBuffer a, DeviceBuffer v, long rows, long cols) {
        int es = floating("broadcastRows", dtype);
        long n = Math.multiplyExact(rows, cols);
        MlKernelTable.broadcastRows(dtype)
                .launch(
                        n,
                        KernelArgs.on(stream)
                                .i64(n)
                                .i64(cols)
                                .i32(op.code())
                                .array("a", a, n, es)
                                .array("v", v, cols, es));
    }

    /** {@code out[i, :] = softmax(in[i, :])}, the row maximum subtracted; one thread a row; out may be in. */
    public static void softmaxRows(
            DeviceStream stream, DType dtype, DeviceBuffer in, DeviceBuffer out, long rows, long cols) {
        int es = floating("softmaxRows", dtype);
        long n = Math.multiplyExact(rows, cols);
        MlKernelTable.softmaxRows(dtype)
                .launch(
                        rows,
                        KernelArgs.on(stream)
                                .i64(rows)
                                .i64(cols)
                                .array("in", in, n, es)
                                .array("out", out, n, es));
    }

    // ---------------------------------------------------------------- reductions

    /**
     * {@code r} over the {@code n} elements of {@code a} (float32, float64, int32 or int64), accumulated in float64,
     * into {@code result} (one float64): the identity (0, +inf, -inf) when {@code n} is 0. The sum of a 16-byte
     * aligned float32 array reads it in float4 vectors ({@code ml_reduce_sum_v4_f32}, bench roofline's ceiling).
     */
    public static void reduce(
            DeviceStream stream,
            DType dtype,
            Reduction r,
            DeviceBuffer a,
            long n,
            DeviceBuffer scratch,
            DeviceBuffer result) {
        if (dtype != DType.FLOAT32 && dtype != DType.FLOAT64 && !dtype.isIndex()) {
            throw new IllegalArgumentException(
                    "reduce: dtype " + dtype.wireName() + " (expected: float32, float64, int32 or int64)");
        }
        boolean v4 = dtype == DType.FLOAT32 && r == Reduction.SUM && KernelModule.aligned(a, 16);
        twoPass(
                v4 ? MlKernelTable.REDUCE_SUM_V4_F32 : MlKernelTable.reduce(dtype),
                r.code(),
                n,
                scratch,
                result,
                KernelArgs.on(stream).i64(n).i32(r.code()).array("a", a, n, dtype.byteSize()));
    }

    /** The sum of {@code x[i] * y[i]} for {@code i < n}, accumulated in float64, into {@code result} (float64). */
    public static void dot(
            DeviceStream stream,
            DType dtype,
            DeviceBuffer x,
            DeviceBuffer y,
            long n,
            DeviceBuffer scratch,
            DeviceBuffer result) {
        int es = floating("dot", dtype);
        twoPass(
                MlKernelTable.dot(dtype),
                Reduction.SUM.code(),
                n,
                scratch,
                result,
                KernelArgs.on(stream).i64(n).array("x", x, n, es).array("y", y, n, es));
    }

    /** How many of the {@code n} elements of int32 or int64 {@code a} and {@code b} are equal, as a float64. */
    public static void countEqual(
            DeviceStream stream,
            DType dtype,
            DeviceBuffer a,
            DeviceBuffer b,
            long n,
            DeviceBuffer scratch,
            DeviceBuffer result) {
        if (!dtype.isIndex()) {
            throw new IllegalArgumentException("countEqual: dtype " + dtype.wireName() + " (expected: int32 or int64)");
        }
        twoPass(
                MlKernelTable.countEqual(dtype),
                Reduction.SUM.code(),
                n,
                scratch,
                result,
                KernelArgs.on(stream).i64(n).array("a", a, n, dtype.byteSize()).array("b", b, n, dtype.byteSize()));
    }

    /**
     * Pass one: {@code first} with {@code operands} (its arguments but the last) and the partial results of its
     * blocks into scratch; pass two: their {@code op} in one block into result.
     */
    private static void twoPass(
            Kernel first, int op, long n, DeviceBuffer scratch, DeviceBuffer result, KernelArgs operands) {
        int blocks = Math.min(REDUCE_BLOCKS, KernelModule.grid(n));
        KernelArgs second = KernelArgs.on(operands.stream())
                .i64(blocks)
                .i32(op)
                .array("scratch", scratch, REDUCE_BLOCKS, Double.BYTES)
                .array("result", result, 1, Double.BYTES);
        first.launchBlocks(blocks, operands.array("scratch", scratch, REDUCE_BLOCKS, Double.BYTES));
        MlKernelTable.REDUCE_F64.launchBlocks(1, second);
    }

    /**
     * For each row of {@code a} ({@code rows x cols}, {@code cols >= 1}): the column of its smallest (or with
     * {@code largest}, its largest) element, the first of equals, into {@code index} (int32), and that element into
     * {@code best} unless it is {@code null}.
     */
    public static void argRows(
            DeviceStream stream,
            DType dtype,
            boolean largest,
            DeviceBuffer a,
            long rows,
            long cols,
            DeviceBuffer index,
            DeviceBuffer best) {
        int es = floating("argRows", dtype);
        if (cols < 1 && rows > 0) {
            throw new IllegalArgumentException("argRows: cols " + cols + " (expected: >= 1)");
        }
        MlKernelTable.argRows(dtype)
                .launch(
                        rows,
                        KernelArgs.on(stream)
                                .i64(rows)
                                .i64(cols)
                                .i32(largest ? 1 : 0)
                                .array("a", a, Math.multiplyExact(rows, cols), es)
                                .array("index", index, rows, Integer.BYTES)
                                .optionalArray("best", best, rows, es));
    }

    // ---------------------------------------------------------------- fused

    /**
     * Cross-entropy of {@code logits} ({@code rows x cols}) against int32 {@code labels}: each row's loss into
     * {@code rowLoss} (float64, {@code rows}), the gradient in the logits into {@code grad} (may be {@code logits}).
     * One column is the binary model (sigmoid; labels 0 or 1), several the multinomial one (softmax; labels below
     * {@code cols}). A label out of range: its row in {@code error}, its loss 0, its gradient row untouched.
     */
    public static void crossEntropy(
            DeviceStream stream,
            DType dtype,
            DeviceBuffer logits,
            DeviceBuffer labels,
            DeviceBuffer grad,
            long rows,
            long cols,
            DeviceBuffer rowLoss,
            DeviceBuffer error) {
        int es = floating("crossEntropy", dtype);
        long n = Math.multiplyExact(rows, cols);
        KernelArgs args = KernelArgs.on(stream)
                .i64(rows)
                .i64(cols)
                .array("logits", logits, n, es)
                .array("labels", labels, rows, Integer.BYTES)
                .array("grad", grad, n, es)
                .array("rowLoss", rowLoss, rows, Double.BYTES)
                .array("error", error, 1, Long.BYTES);
        resetError(stream, error);
        MlKernelTable.crossEntropy(dtype).launch(rows, args);
    }

    /** {@code norms[i]} = the squared Euclidean norm of row {@code i} of {@code x} ({@code rows x cols}). */
    public static void rowSquaredNorms(
            DeviceStream stream, DType dtype, DeviceBuffer x, long rows, long cols, DeviceBuffer norms) {
        int es = floating("rowSquaredNorms", dtype);
        MlKernelTable.rowSqNorms(dtype)
                .launch(
                        rows,
                        KernelArgs.on(stream)
                                .i64(rows)
                                .i64(cols)
                                .array("x", x, Math.multiplyExact(rows, cols), es)
                                .array("norms", norms, rows, es));
    }

    /**
     * {@code out[i, j] = max(0, out[i, j] + xNorms[i] + yNorms[j])} for an {@code n x m} {@code out}: the last step
     * of squared distances after {@code out = -2 x y^T}. NaN stays NaN.
     */
    public static void addNormsAndClamp(
            DeviceStream stream,
            DType dtype,
            DeviceBuffer out,
            long n,
            long m,
            DeviceBuffer xNorms,
            DeviceBuffer yNorms) {
        int es = floating("addNormsAndClamp", dtype);
        long work = Math.multiplyExact(n, m);
        MlKernelTable.addNormsClamp(dtype)
                .launch(
                        work,
                        KernelArgs.on(stream)
                                .i64(n)
                                .i64(m)
                                .array("out", out, work, es)
                                .array("xNorms", xNorms, n, es)
                                .array("yNorms", yNorms, m, es));
    }

    // ---------------------------------------------------------------- indexing

    /**
     * {@code out} row {@code i} = {@code src} row {@code index[i]} for {@code i < count}, rows of {@code rowBytes}
     * bytes of any type; {@code index} is int32 or int64. An index outside {@code [0, srcRows)}: its position in
     * {@code error}, its out row untouched.
     */
    public static void gatherRows(
            DeviceStream stream,
            DeviceBuffer src,
            long srcRows,
            long rowBytes,
            DeviceBuffer index,
            DType indexType,
            long count,
            DeviceBuffer out,
            DeviceBuffer error) {
        if (!indexType.isIndex()) {
            throw new IllegalArgumentException(
                    "gatherRows: index dtype " + indexType.wireName() + " (expected: int32 or int64)");
        }
        // src and out checked (on the stream's device, large enough) before their addresses pick the word size
        KernelArgs.on(stream)
                .array("src", src, Math.multiplyExact(srcRows, rowBytes), 1)
                .array("out", out, Math.multiplyExact(count, rowBytes), 1);
        int word = wordSize(rowBytes, w -> KernelModule.aligned(src, w) && KernelModule.aligned(out, w));
        long words = rowBytes / word;
        KernelArgs args = KernelArgs.on(stream)
                .i64(count)
                .i64(words)
                .i64(srcRows)
                .array("index", index, count, indexType.byteSize())
                .i32(indexType == DType.INT64 ? 1 : 0)
                .array("src", src, srcRows * rowBytes, 1)
                .array("out", out, count * rowBytes, 1)
                .array("error", error, 1, Long.BYTES);
        resetError(stream, error);
        MlKernelTable.gatherRows(word).launch(Math.multiplyExact(count, words), args);
    }

    /** The widest of 8, 4 and 1 bytes that divides the row size and for which both addresses are {@code aligned}. */
    static int wordSize(long rowBytes, IntPredicate aligned) {
        for (int w : new int[] {8, 4}) {
            if (rowBytes % w == 0 && aligned.test(w)) {
                return w;
            }
        }
        return 1;
    }

    /**
     * How {@link #scatterAddRows} runs one shape: {@code parts} runs of {@code rowsPerPart} rows, each summed by a
     * block per 32 columns into its own {@code k x cols} doubles of {@code scratch}, then added up in part order.
     *
     * @param parts the row runs (0: the atomic kernel, no scratch)
     * @param rowsPerPart rows a run
     * @param lanes warps of a block that sum rows, each into its own {@code k x 32} doubles of shared memory
     * @param blocks blocks of the first kernel ({@code parts x ceil(cols / 32)}, at most the grid's limit)
     * @param scratchBytes the scratch the partial sums need ({@code parts x k x cols} doubles)
     */
    public record ScatterPlan(long parts, long rowsPerPart, int lanes, int blocks, long scratchBytes) {}

    /**
     * The plan of {@link #scatterAddRows} for {@code n} rows of {@code cols} into {@code k}: from 1 to
     * {@value #SCATTER_MAX_K} rows of {@code out} the sums are deterministic (each block sums its rows in shared
     * memory, a second kernel adds the blocks' sums in a fixed order), runs of about {@value #SCATTER_PART_ROWS} rows,
     * at most {@value #SCATTER_MAX_BLOCKS} blocks unless the column tiles alone are more; more rows of {@code out}
     * (or none) take the atomic kernel. The plan depends on the shape only, so the same operands give the same bits.
     */
    public static ScatterPlan scatterPlan(long n, long cols, long k) {
        if (k < 1 || k > SCATTER_MAX_K || n == 0 || cols == 0) {
            return new ScatterPlan(0, 0, 0, 0, 0);
        }
        long tiles = (cols + 31) / 32;
        long runs = (n + SCATTER_PART_ROWS - 1) / SCATTER_PART_ROWS;
        long parts = Math.max(1, Math.min(runs, SCATTER_MAX_BLOCKS / tiles));
        long rowsPerPart = (n + parts - 1) / parts;
        parts = (n + rowsPerPart - 1) / rowsPerPart;
        int lanes = (int) Math.min(KernelModule.BLOCK / 32, SCATTER_MAX_K / k);
        long scratch = Math.multiplyExact(Math.multiplyExact(parts, k), Math.multiplyExact(cols, (long) Double.BYTES));
        return new ScatterPlan(parts, rowsPerPart, lanes, blocks(Math.multiplyExact(parts, tiles)), scratch);
    }

    /**
     * Adds row {@code i} of {@code src} ({@code n x cols}) into row {@code index[i]} of {@code out} ({@code k x cols}),
     * as {@link #scatterPlan} says: deterministic sums in float64 through {@code scratch} (at least the plan's
     * {@code scratchBytes}; may be {@code null} when that is 0), each output rounded once, or, above
     * {@value #SCATTER_MAX_K} rows of {@code out}, atomic adds in the element type (the order of the additions varies).
     * A label outside {@code [0, k)}: its position in {@code error}, nothing added for it.
     */
    public static void scatterAddRows(
            DeviceStream stream,
            DType dtype,
            DeviceBuffer src,
            DeviceBuffer index,
            long n,
            long cols,
            DeviceBuffer out,
            long k,
            DeviceBuffer error,
            DeviceBuffer scratch) {
        int es = floating("scatterAddRows", dtype);
        long work = Math.multiplyExact(n, cols);
        long elements = Math.multiplyExact(k, cols);
        ScatterPlan plan = scatterPlan(n, cols, k);
        if (plan.parts() == 0) {
            KernelArgs args = KernelArgs.on(stream)
                    .i64(n)
                    .i64(cols)
                    .i64(k)
                    .array("src", src, work, es)
                    .array("index", index, n, Integer.BYTES)
                    .array("out", out, elements, es)
                    .array("error", error, 1, Long.BYTES);
            resetError(stream, error);
            MlKernelTable.scatterAddRows(dtype).launch(work, args);
            return;
        }
        long partials = plan.scratchBytes() / Double.BYTES;
        KernelArgs sums = KernelArgs.on(stream)
                .i64(n)
                .i64(cols)
                .i64(k)
                .i64(plan.parts())
                .i64(plan.rowsPerPart())
                .i32(plan.lanes())
                .array("src", src, work, es)
                .array("index", index, n, Integer.BYTES)
                .array("scratch", scratch, partials, Double.BYTES)
                .array("error", error, 1, Long.BYTES);
        KernelArgs finish = KernelArgs.on(stream)
                .i64(plan.parts())
                .i64(elements)
                .array("scratch", scratch, partials, Double.BYTES)
                .array("out", out, elements, es);
        resetError(stream, error);
        MlKernelTable.scatterSums(dtype).launchBlocks(plan.blocks(), sums);
        MlKernelTable.scatterFinish(dtype).launchBlocks(blocks((elements + 31) / 32), finish);
    }

    /**
     * Adds 1 to {@code out[index[i]]} for {@code i < n}; {@code out} has {@code k} elements. Up to
     * {@value #BINCOUNT_BLOCK_MAX_K} bins each block counts its rows in shared memory and adds each count to
     * {@code out} with one atomic (whole numbers: exact in any order); more bins take an atomic a row. Errors as
     * above.
     */
    public static void bincount(
            DeviceStream stream,
            DType dtype,
            DeviceBuffer index,
            long n,
            DeviceBuffer out,
            long k,
            DeviceBuffer error) {
        int es = floating("bincount", dtype);
        KernelArgs args = KernelArgs.on(stream)
                .i64(n)
                .i64(k)
                .array("index", index, n, Integer.BYTES)
                .array("out", out, k, es)
                .array("error", error, 1, Long.BYTES);
        resetError(stream, error);
        if (k > BINCOUNT_BLOCK_MAX_K || n == 0) {
            MlKernelTable.bincount(dtype).launch(n, args);
        } else {
            MlKernelTable.bincountBlocks(dtype).launchBlocks(Math.min(BINCOUNT_BLOCKS, KernelModule.grid(n)), args);
        }
    }

    /**
     * {@code out[i, c]} ({@code rows x classes}) = how many of the {@code k} labels of row {@code i} of
     * {@code labels} equal {@code c}. A label outside {@code [0, classes)}: its flat position {@code i * k + j} in
     * {@code error}.
     */
    public static void countRows(
            DeviceStream stream,
            DType dtype,
            DeviceBuffer labels,
            long rows,
            long k,
            DeviceBuffer out,
            long classes,
            DeviceBuffer error) {
        int es = floating("countRows", dtype);
        KernelArgs args = KernelArgs.on(stream)
                .i64(rows)
                .i64(k)
                .i64(classes)
                .array("labels", labels, Math.multiplyExact(rows, k), Integer.BYTES)
                .array("out", out, Math.multiplyExact(rows, classes), es)
                .array("error", error, 1, Long.BYTES);
        resetError(stream, error);
        MlKernelTable.countRows(dtype).launch(rows, args);
    }

    // ---------------------------------------------------------------- neighbors

    /**
     * How {@link #smallestK} runs one shape.
     *
     * @param kernel the first (or only) kernel, {@code null} when there is nothing to do
     * @param merge the second kernel, which selects each row's {@code k} smallest of its parts' (or {@code null})
     * @param parts the slices each row is cut into (1: the first kernel writes the results)
     * @param group threads per row or slice: 32 (a warp) or {@code 256} (a block, also the radix select's); 1 for the
     *     one-thread-a-row kernel
     * @param blocks the first kernel's blocks
     * @param scratchBytes the scratch the parts' keys need (0 with one part)
     */
    public record SelectPlan(Kernel kernel, Kernel merge, long parts, int group, int blocks, long scratchBytes) {}

    /**
     * The plan of {@link #smallestK} for {@code k} of {@code cols} columns in {@code rows} rows on a device of
     * {@code multiprocessors} SMs. Rows of fewer than 2^31 columns are selected in parallel. Up to
     * {@value #SELECT_MAX_K} neighbors from keys in registers ({@code ml_select_k8}, {@code ml_select_k32}): a warp a
     * row up to {@value #SELECT_WARP_MAX_COLS} columns; beyond, a block a row. Up to {@value #SELECT_RADIX_MAX_K}
     * neighbors by a radix select of the k-th key and a sort of the k in shared memory ({@code ml_select_radix}), a
     * block a row. A block a row, either way, and when there are too few rows to give every SM
     * {@value #SELECT_BLOCKS_PER_SM} blocks: each row cut into up to {@code ceil(cols / }{@value #SELECT_MIN_SLICE}
     * {@code )} slices, a block a slice, whose selections a second kernel merges. Larger {@code k}, or longer rows:
     * {@code ml_smallest_k}, one thread a row.
     */
    static SelectPlan selectPlan(DType dtype, long rows, long cols, long k, int multiprocessors) {
        if (rows == 0 || k == 0) {
            return new SelectPlan(null, null, 0, 0, 0, 0);
        }
        if (k > SELECT_RADIX_MAX_K || cols > Integer.MAX_VALUE) {
            return new SelectPlan(MlKernelTable.smallestK(dtype), null, 1, 1, KernelModule.grid(rows), 0);
        }
        boolean radix = k > SELECT_MAX_K;
        int kmax = k <= SELECT_SMALL_K ? SELECT_SMALL_K : SELECT_MAX_K;
        Kernel kernel = radix ? MlKernelTable.selectRadix(dtype) : MlKernelTable.select(kmax, dtype);
        Kernel merge = radix ? MlKernelTable.selectRadixMerge(dtype) : MlKernelTable.selectMerge(kmax, dtype);
        long warps = KernelModule.BLOCK / 32;
        if (!radix && cols <= SELECT_WARP_MAX_COLS) {
            return new SelectPlan(kernel, null, 1, 32, blocks((rows + warps - 1) / warps), 0);
        }
        long target = (long) SELECT_BLOCKS_PER_SM * Math.max(1, multiprocessors);
        long slices = (cols + SELECT_MIN_SLICE - 1) / SELECT_MIN_SLICE;
        long parts = Math.max(1, Math.min(slices, (target + rows - 1) / rows));
        if (parts == 1) {
            return new SelectPlan(kernel, null, 1, KernelModule.BLOCK, blocks(rows), 0);
        }
        long keyBytes = dtype == DType.FLOAT32 ? Long.BYTES : 2L * Long.BYTES;
        long scratch = Math.multiplyExact(Math.multiplyExact(rows, parts), k * keyBytes);
        return new SelectPlan(kernel, merge, parts, KernelModule.BLOCK, blocks(rows * parts), scratch);
    }

    private static int blocks(long n) {
        return (int) Math.max(1, Math.min(KernelModule.MAX_GRID, n));
    }

    /** How {@link #smallestK} runs this shape on {@code stream}'s device (its scratch bytes are often 0). */
    public static SelectPlan smallestKPlan(DeviceStream stream, DType dtype, long rows, long cols, long k) {
        floating("smallestK", dtype);
        return selectPlan(dtype, rows, cols, k, KernelModule.multiprocessors(stream));
    }

    /**
     * The {@code k <= cols} smallest elements of each row of {@code values} ({@code rows x cols}), ascending in
     * {@link Double#compare} order, equal values by column, into {@code outValues} ({@code rows x k}), and their
     * columns plus {@code idOffset} into int64 {@code outIds}; {@code scratch} holds at least the
     * {@link #smallestKPlan}'s {@link SelectPlan#scratchBytes} (may be {@code null} when that is 0). Up to
     * {@value #SELECT_MAX_K} neighbors, many threads select each row (a warp, a block, or for few long rows several
     * blocks and a merge; see {@link #smallestKPlan}); up to {@value #SELECT_RADIX_MAX_K}, a block a row or slice
     * (a radix select); more, one thread a row, O(cols k).
     */
    public static void smallestK(
            DeviceStream stream,
            DType dtype,
            DeviceBuffer values,
            long rows,
            long cols,
            long k,
            long idOffset,
            DeviceBuffer outValues,
            DeviceBuffer outIds,
            DeviceBuffer scratch) {
        int es = floating("smallestK", dtype);
        if (k < 0 || k > cols) {
            throw new IllegalArgumentException("smallestK: k " + k + " (expected: 0 <= k <= " + cols + ")");
        }
        long nv = Math.multiplyExact(rows, cols);
        long no = Math.multiplyExact(rows, k);
        KernelArgs.on(stream)
                .array("values", values, nv, es)
                .array("outValues", outValues, no, es)
                .array("outIds", outIds, no, Long.BYTES);
        SelectPlan plan = selectPlan(dtype, rows, cols, k, KernelModule.multiprocessors(stream));
        if (plan.kernel() == null) {
            return;
        }
        Kernel first = plan.kernel();
        if (plan.group() == 1) {
            first.launch(
                    rows,
                    KernelArgs.on(stream)
                            .i64(rows)
                            .i64(cols)
                            .i64(k)
                            .i64(idOffset)
                            .array("values", values, nv, es)
                            .array("outValues", outValues, no, es)
                            .array("outIds", outIds, no, Long.BYTES));
            return;
        }
        if (plan.scratchBytes() > 0 && scratch == null) {
            throw new IllegalArgumentException("smallestK: no scratch (expected: " + plan.scratchBytes() + " bytes for "
                    + rows + " rows of " + cols + " in " + plan.parts() + " parts, k " + k + ")");
        }
        long keys = plan.scratchBytes() / Long.BYTES;
        KernelArgs args = KernelArgs.on(stream).i64(rows).i64(cols).i64(k).i64(plan.parts());
        if (plan.kernel() != MlKernelTable.selectRadix(dtype)) {
            args.i32(plan.group());
        }
        args.i64(idOffset)
                .array("values", values, nv, es)
                .array("outValues", outValues, no, es)
                .array("outIds", outIds, no, Long.BYTES)
                .optionalArray("scratch", keys > 0 ? scratch : null, keys, Long.BYTES);
        KernelArgs merge = plan.merge() == null
                ? null
                : KernelArgs.on(stream)
                        .i64(rows)
                        .i64(cols)
                        .i64(k)
                        .i64(plan.parts())
                        .i64(idOffset)
                        .array("values", values, nv, es)
                        .array("scratch", scratch, keys, Long.BYTES)
                        .array("outValues", outValues, no, es)
                        .array("outIds", outIds, no, Long.BYTES);
        first.launchBlocks(plan.blocks(), args);
        if (merge != null) {
            plan.merge().launchBlocks(blocks(rows), merge);
        }
    }

    /**
     * The {@code k <= ka + kb} smallest of two ascending lists per row ({@code distA}, {@code idsA}: {@code rows x ka};
     * {@code distB}, {@code idsB}: {@code rows x kb}), ascending, {@code a} first on equal distances; the ids (int32
     * or int64) travel along.
     */
    public static void mergeNeighbors(
            DeviceStream stream,
            DType dtype,
            DType idType,
            DeviceBuffer distA,
            DeviceBuffer idsA,
            long ka,
            DeviceBuffer distB,
            DeviceBuffer idsB,
            long kb,
            long rows,
            DeviceBuffer outDist,
            DeviceBuffer outIds,
            long k) {
        int es = floating("mergeNeighbors", dtype);
        if (!idType.isIndex()) {
            throw new IllegalArgumentException(
                    "mergeNeighbors: id dtype " + idType.wireName() + " (expected: int32 or int64)");
        }
        if (k < 0 || ka < 0 || kb < 0 || k > ka + kb) {
            throw new IllegalArgumentException(
                    "mergeNeighbors: k " + k + " (expected: 0 <= k <= " + ka + " + " + kb + ")");
        }
        int is = idType.byteSize();
        MlKernelTable.mergeNeighbors(dtype, idType)
                .launch(
                        rows,
                        KernelArgs.on(stream)
                                .i64(rows)
                                .i64(ka)
                                .i64(kb)
                                .i64(k)
                                .array("distA", distA, Math.multiplyExact(rows, ka), es)
                                .array("idsA", idsA, Math.multiplyExact(rows, ka), is)
                                .array("distB", distB, Math.multiplyExact(rows, kb), es)
                                .array("idsB", idsB, Math.multiplyExact(rows, kb), is)
                                .array("outDist", outDist, Math.multiplyExact(rows, k), es)
                                .array("outIds", outIds, Math.multiplyExact(rows, k), is));
    }

    /**
     * Recomputes the {@code k} neighbors of each of {@code rows} queries ({@code ids}: rows of {@code x} plus
     * {@code idOffset}; {@code dist}: their distances, {@code rows x k}) as sums of squared differences of {@code q}
     * ({@code rows x cols}) and {@code x} ({@code xRows x cols}), in double, and sorts each row by (distance, id):
     * what {@link #smallestK} chose on {@code ||q||² - 2 q·x + ||x||²}, without that form's rounding residue.
     */
    public static void exactNeighbors(
            DeviceStream stream,
            DType dtype,
            DeviceBuffer q,
            long rows,
            long cols,
            DeviceBuffer x,
            long xRows,
            long k,
            long idOffset,
            DeviceBuffer dist,
            DeviceBuffer ids) {
        int es = floating("exactNeighbors", dtype);
        long n = Math.multiplyExact(rows, k);
        MlKernelTable.exactNeighbors(dtype)
                .launch(
                        rows,
                        KernelArgs.on(stream)
                                .i64(rows)
                                .i64(k)
                                .i64(cols)
                                .i64(xRows)
                                .i64(idOffset)
                                .array("q", q, Math.multiplyExact(rows, cols), es)
                                .array("x", x, Math.multiplyExact(xRows, cols), es)
                                .array("dist", dist, n, es)
                                .array("ids", ids, n, Long.BYTES));
    }

    /** Queries one block of the fused k-NN kernel holds ({@code ML_KNN_QUERIES}). */
    static final int KNN_QUERIES = 32;
    /** The most neighbors {@link #kNearestFused} selects: each query's list in shared memory. */
    public static final int KNN_FUSED_MAX_K = SELECT_MAX_K;
    /** The least rows of one slice of the rows when {@link #kNearestFused} cuts them into parts. */
    static final long KNN_MIN_PART_ROWS = 4096;
    /** Blocks per multiprocessor that cutting the rows into parts aims at. */
    static final int KNN_BLOCKS_PER_SM = 8;

    /**
     * How {@link #kNearestFused} runs one shape.
     *
     * @param kernel the fused kernel ({@code ml_knn_fused_k8_*} or {@code _k32_*}: lists of 8 or 32 keys a query)
     * @param merge the kernel merging each query's parts, or {@code null} with one part
     * @param parts the slices the rows are cut into
     * @param blocks the fused kernel's blocks (one per 32 queries and part, at most the grid's limit)
     * @param scratchBytes the parts' keys ({@code m x parts x k}; 0 with one part)
     */
    public record KnnPlan(Kernel kernel, Kernel merge, long parts, int blocks, long scratchBytes) {}

    /** Whether {@link #kNearestFused} takes {@code k} neighbors among {@code rows} rows. */
    public static boolean kNearestFusedFits(long rows, long k) {
        return k >= 1 && k <= KNN_FUSED_MAX_K && rows <= Integer.MAX_VALUE;
    }

    /**
     * The plan of {@link #kNearestFused} for {@code m} queries, {@code n} rows and {@code k} neighbors on a device of
     * {@code multiprocessors} SMs: lists of 8 keys a query up to {@value #SELECT_SMALL_K} neighbors, else 32; the rows
     * cut into as many parts as give every SM {@value #KNN_BLOCKS_PER_SM} blocks (blocks of 32 queries times parts),
     * each part at least {@value #KNN_MIN_PART_ROWS} rows.
     */
    static KnnPlan knnPlan(DType dtype, long m, long n, long k, int multiprocessors) {
        if (!kNearestFusedFits(n, k)) {
            throw new IllegalArgumentException("kNearestFused: k " + k + " of " + n + " rows (expected: 1 <= k <= "
                    + KNN_FUSED_MAX_K + " and rows < 2^31)");
        }
        int kmax = k <= SELECT_SMALL_K ? SELECT_SMALL_K : SELECT_MAX_K;
        long queryBlocks = Math.max(1, (m + KNN_QUERIES - 1) / KNN_QUERIES);
        long target = (long) KNN_BLOCKS_PER_SM * Math.max(1, multiprocessors);
        long parts = Math.clamp((target + queryBlocks - 1) / queryBlocks, 1, Math.max(1, n / KNN_MIN_PART_ROWS));
        long keyBytes = dtype == DType.FLOAT32 ? Long.BYTES : 2L * Long.BYTES;
        long scratch = parts == 1 ? 0 : Math.multiplyExact(Math.multiplyExact(m, parts), k * keyBytes);
        return new KnnPlan(
                MlKernelTable.knnFused(kmax, dtype),
                parts == 1 ? null : MlKernelTable.knnMerge(kmax, dtype),
                parts,
                blocks(queryBlocks * parts),
                scratch);
    }

    /** How {@link #kNearestFused} runs this shape on {@code stream}'s device. */
    public static KnnPlan knnPlan(DeviceStream stream, DType dtype, long m, long n, long k) {
        floating("kNearestFused", dtype);
        return knnPlan(dtype, m, n, k, KernelModule.multiprocessors(stream));
    }

    /**
     * The {@code k} rows of {@code x} ({@code n x d}) nearest to each of the {@code m} queries {@code q}
     * ({@code m x d}) in squared Euclidean distance, in one pass: tiles of 32 queries and 128 rows through shared
     * memory, each query's best {@code k} kept there as the distances are computed (no distance matrix), the rows cut
     * into parts merged by a second kernel when the queries alone would leave SMs idle ({@link #knnPlan}; {@code
     * scratch} holds at least its {@link KnnPlan#scratchBytes}, may be {@code null} when that is 0). Into
     * {@code dist} ({@code m x k}) and int64 {@code ids} (rows plus {@code idOffset}), ascending by (distance, row).
     * A distance is the sum of the squared column differences, each added by a fused multiply-add in column order:
     * float64 in double (the CPU backend's bits: the same neighbors and distances), float32 in float (for
     * {@link #exactNeighbors} to recompute and re-sort).
     */
    public static void kNearestFused(
            DeviceStream stream,
            DType dtype,
            DeviceBuffer q,
            long m,
            long d,
            DeviceBuffer x,
            long n,
            long k,
            long idOffset,
            DeviceBuffer dist,
            DeviceBuffer ids,
            DeviceBuffer scratch) {
        int es = floating("kNearestFused", dtype);
        KnnPlan plan = knnPlan(dtype, m, n, k, KernelModule.multiprocessors(stream));
        if (plan.scratchBytes() > 0 && scratch == null) {
            throw new IllegalArgumentException("kNearestFused: no scratch (expected: " + plan.scratchBytes()
                    + " bytes for " + m + " queries, " + plan.parts() + " parts, k " + k + ")");
        }
        long out = Math.multiplyExact(m, k);
        long keys = plan.scratchBytes() / Long.BYTES;
        KernelArgs args = KernelArgs.on(stream)
                .i64(m)
                .i64(n)
                .i64(d)
                .i64(k)
                .i64(plan.parts())
                .i64(idOffset)
                .array("q", q, Math.multiplyExact(m, d), es)
                .array("x", x, Math.multiplyExact(n, d), es)
                .array("dist", dist, out, es)
                .array("ids", ids, out, Long.BYTES)
                .optionalArray("scratch", keys > 0 ? scratch : null, keys, Long.BYTES);
        if (m == 0) {
            return;
        }
        plan.kernel().launchBlocks(plan.blocks(), args);
        if (plan.merge() != null) {
            plan.merge()
                    .launchBlocks(
                            blocks(m),
                            KernelArgs.on(stream)
                                    .i64(m)
                                    .i64(k)
                                    .i64(plan.parts())
                                    .i64(idOffset)
                                    .array("scratch", scratch, keys, Long.BYTES)
                                    .array("dist", dist, out, es)
                                    .array("ids", ids, out, Long.BYTES));
        }
    }

    // ---------------------------------------------------------------- row groups

    /**
     * The threads that share one row of {@code cols} elements in the row-group kernels ({@link #gemvRows},
     * {@link #nearestRows}): the least power of two that gives each at most {@value #ROW_UNROLL} elements, at most a
     * warp (32).
     */
    static int rowLanes(long cols) {
        long want = (cols + ROW_UNROLL - 1) / ROW_UNROLL;
        int lanes = 1;
        while (lanes < 32 && lanes < want) {
            lanes <<= 1;
        }
        return lanes;
    }

    /** The system property that picks {@link #gemvRows}'s kernel: {@code auto} or {@code scalar}. */
    public static final String GEMV_KERNEL_PROPERTY = "cuwire.ml.gemvKernel";

    private static final String GEMV_SETTING = System.getProperty(GEMV_KERNEL_PROPERTY, "auto");

    /** Rows a thread of {@code ml_gemv_rows_v4_f32} loads at once ({@code ML_GEMV_V4_ROWS} of its source). */
    static final int GEMV_V4_ROWS = 4;

    /**
     * Whether {@link #gemvRows} takes the float4 kernel for this run ({@value #GEMV_KERNEL_PROPERTY} {@code auto}, the
     * default) where it applies, or always the scalar one ({@code scalar}); read once, when this class is loaded, so
     * that one measurement can time each: {@code -Dcuwire.ml.gemvKernel=scalar cuwire bench roofline}.
     */
    public static boolean gemvV4Setting() {
        return switch (GEMV_SETTING) {
            case "auto" -> true;
            case "scalar" -> false;
            default ->
                throw new IllegalArgumentException(
                        "-D" + GEMV_KERNEL_PROPERTY + "=" + GEMV_SETTING + " (expected: auto or scalar)");
        };
    }

    /**
     * The kernel {@link #gemvRows} launches for {@code cols} columns of {@code dtype}, rows starting 16-byte
     * {@code aligned} or not: with {@code v4}, {@code ml_gemv_rows_v4_f32} for float32 rows of a multiple of 4
     * elements from an aligned start; otherwise the scalar kernel of the type.
     */
    static Kernel gemvKernel(boolean v4, DType dtype, long cols, boolean aligned) {
        if (v4 && dtype == DType.FLOAT32 && cols % 4 == 0 && aligned) {
            return MlKernelTable.GEMV_ROWS_V4_F32;
        }
        return MlKernelTable.gemvRows(dtype);
    }

    /** The name of the kernel {@link #gemvRows} launches in this run for {@code cols} columns of {@code dtype} in a. */
    public static String gemvRowsKernel(DType dtype, DeviceBuffer a, long cols) {
        floating("gemvRows", dtype);
        return gemvKernel(gemvV4Setting(), dtype, cols, KernelModule.aligned(a, 16))
                .name();
    }

    /**
     * The threads that share one row of {@code cols} float32 elements in {@code ml_gemv_rows_v4_f32}: the least power
     * of two that gives each at most one float4 of the row, at most a warp (32).
     */
    static int rowLanesV4(long cols) {
        long want = (cols + 3) / 4;
        int lanes = 1;
        while (lanes < 32 && lanes < want) {
            lanes <<= 1;
        }
        return lanes;
    }

    /**
     * {@code y[r] = alpha * a[r, :] . x + beta * y[r]} for a row-major {@code rows x cols} {@code a} (the old
     * {@code y} ignored when {@code beta} is 0): a matrix-vector product that reads {@code a} once, a few threads per
     * row, by the kernel {@link #gemvKernel} picks: the scalar kernel ({@link #rowLanes} lanes a row, products summed
     * in float64), or for float32 rows of a multiple of 4 elements from a 16-byte aligned start the float4 one
     * ({@link #rowLanesV4} lanes, {@value #GEMV_V4_ROWS} rows a thread at once, each float4's four products summed in
     * float32, those sums in float64).
     */
    public static void gemvRows(
            DeviceStream stream,
            DType dtype,
            DeviceBuffer a,
            long rows,
            long cols,
            DeviceBuffer x,
            double alpha,
            double beta,
            DeviceBuffer y) {
        gemvRows(stream, dtype, a, rows, cols, x, alpha, beta, y, gemvV4Setting());
    }

    /** {@link #gemvRows} with the float4 kernel allowed ({@code v4}) or not, for tests that compare them. */
    public static void gemvRows(
            DeviceStream stream,
            DType dtype,
            DeviceBuffer a,
            long rows,
            long cols,
            DeviceBuffer x,
            double alpha,
            double beta,
            DeviceBuffer y,
            boolean v4) {
        int es = floating("gemvRows", dtype);
        Kernel kernel = gemvKernel(v4, dtype, cols, KernelModule.aligned(a, 16));
        boolean vec = kernel == MlKernelTable.GEMV_ROWS_V4_F32;
        int lanes = vec ? rowLanesV4(cols) : rowLanes(cols);
        long work = vec
                ? Math.multiplyExact((rows + GEMV_V4_ROWS - 1) / GEMV_V4_ROWS, (long) lanes)
                : Math.multiplyExact(rows, (long) lanes);
        kernel.launch(
                work,
                KernelArgs.on(stream)
                        .i64(rows)
                        .i64(cols)
                        .i32(lanes)
                        .f64(alpha)
                        .array("a", a, Math.multiplyExact(rows, cols), es)
                        .array("x", x, cols, es)
                        .f64(beta)
                        .array("y", y, rows, es));
    }

    /**
     * The kernel {@link #nearestRows} runs for float32 rows, chosen for a whole run by the system property
     * {@value #NEAREST_KERNEL_PROPERTY} ({@code auto}, {@code v4} or {@code scalar}; read once, when this class is
     * loaded), so that one measurement can time each: {@code -Dcuwire.ml.nearestKernel=v4 cuwire bench roofline}.
     * Float64 rows always take the scalar kernel.
     */
    public enum NearestKernel {
        /**
         * The default: where it applies (at most 8 centers for rows of at most 8 elements a lane, i.e. up to 256
         * columns; at most 4 centers up to 512 columns), each lane's columns of every center held in its registers,
         * loaded once, distances summed in float32, through float4 loads as for {@link #V4} where those apply, else
         * scalar ones; elsewhere {@link #V4}.
         */
        AUTO,
        /**
         * Centers in shared memory; float32 rows of a multiple of 4 elements from a 16-byte aligned start read as
         * runs of 8 through float4 loads, each run's distance summed in float32 and added in float64; other rows as
         * {@link #SCALAR}.
         */
        V4,
        /** Centers in shared memory as float64, every distance summed in float64. */
        SCALAR;

        /** The setting's name, as {@value #NEAREST_KERNEL_PROPERTY} takes it. */
        public String settingName() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /** The system property that picks {@link #nearestRows}'s kernel: {@code auto}, {@code v4} or {@code scalar}. */
    public static final String NEAREST_KERNEL_PROPERTY = "cuwire.ml.nearestKernel";

    private static final String NEAREST_SETTING = System.getProperty(NEAREST_KERNEL_PROPERTY, "auto");
    /** Blocks per multiprocessor of the registers kernels ({@code auto}): whole waves at 2, 3 or 4 resident. */
    static final int NEAREST_REGS_BLOCKS_PER_SM = 24;

    /** The kernel choice of this run, from {@value #NEAREST_KERNEL_PROPERTY}. */
    public static NearestKernel nearestKernelSetting() {
        for (NearestKernel n : NearestKernel.values()) {
            if (n.settingName().equals(NEAREST_SETTING)) {
                return n;
            }
        }
        throw new IllegalArgumentException(
                "-D" + NEAREST_KERNEL_PROPERTY + "=" + NEAREST_SETTING + " (expected: auto, v4 or scalar)");
    }

    /**
     * The kernel {@link #nearestRows} launches with {@code choice} for {@code k} centers of {@code cols} columns of
     * {@code dtype}, rows starting 16-byte {@code aligned} or not.
     */
    static Kernel nearestKernel(NearestKernel choice, DType dtype, long cols, long k, boolean aligned) {
        int kmax = k <= 8 ? 8 : NEAREST_MAX_CENTERS;
        if (dtype != DType.FLOAT32 || choice == NearestKernel.SCALAR) {
            return MlKernelTable.nearestRows(kmax, dtype);
        }
        boolean v4 = cols % 4 == 0 && aligned;
        if (choice == NearestKernel.AUTO) {
            long runs = (cols + 8L * rowLanes(cols) - 1) / (8L * rowLanes(cols));
            if (runs <= 1 && k <= 8) {
                return v4 ? MlKernelTable.NEAREST_ROWS_REGS_V4_K8X1_F32 : MlKernelTable.NEAREST_ROWS_REGS_K8X1_F32;
            }
            if (runs <= 2 && k <= 4) {
                return v4 ? MlKernelTable.NEAREST_ROWS_REGS_V4_K4X2_F32 : MlKernelTable.NEAREST_ROWS_REGS_K4X2_F32;
            }
        }
        return v4 ? MlKernelTable.nearestRowsV4F32(kmax) : MlKernelTable.nearestRows(kmax, dtype);
    }

    /** Whether {@code kernel} is one of the registers kernels of {@link NearestKernel#AUTO} (a grid of their own). */
    private static boolean registersKernel(Kernel kernel) {
        return kernel == MlKernelTable.NEAREST_ROWS_REGS_V4_K8X1_F32
                || kernel == MlKernelTable.NEAREST_ROWS_REGS_K8X1_F32
                || kernel == MlKernelTable.NEAREST_ROWS_REGS_V4_K4X2_F32
                || kernel == MlKernelTable.NEAREST_ROWS_REGS_K4X2_F32;
    }

    /**
     * The name of the kernel {@link #nearestRows} launches with {@code choice} for {@code k} centers of {@code cols}
     * columns of {@code dtype} in {@code x}.
     */
    public static String nearestRowsKernel(NearestKernel choice, DType dtype, DeviceBuffer x, long cols, long k) {
        floating("nearestRows", dtype);
        return nearestKernel(choice, dtype, cols, k, KernelModule.aligned(x, 16))
                .name();
    }

    /**
     * For each row of {@code x} ({@code rows x cols}): the nearest of the {@code k} rows of {@code centers}
     * ({@code k x cols}) by squared Euclidean distance, the first of equals, into {@code index} (int32), and that
     * squared distance into {@code best} unless it is {@code null}. Reads {@code x} once, a few threads a row
     * ({@link #rowLanes}), by the kernel of {@link #nearestKernelSetting} ({@link NearestKernel}): float64 rows and
     * {@code scalar} sum in float64; {@code v4} sums float32 runs of 8 elements in float32, then in float64; the
     * registers kernel of {@code auto} sums float32 distances in float32 (each lane its up to 16 squares, then the
     * row group's partial sums), so two centers within float32 rounding of each other may be ordered otherwise than in
     * float64, and values beyond about 1.8e19 overflow float32 where float64 would not. Takes {@code 1 <= k <=}
     * {@value #NEAREST_MAX_CENTERS} and {@code k x cols <=} {@value #NEAREST_MAX_ELEMENTS} ({@link #nearestRowsFits}).
     */
    public static void nearestRows(
            DeviceStream stream,
            DType dtype,
            DeviceBuffer x,
            long rows,
            long cols,
            DeviceBuffer centers,
            long k,
            DeviceBuffer index,
            DeviceBuffer best) {
        nearestRows(stream, dtype, x, rows, cols, centers, k, index, best, nearestKernelSetting());
    }

    /** {@link #nearestRows} by the kernel of {@code choice} (for tests and measurements that compare them). */
    public static void nearestRows(
            DeviceStream stream,
            DType dtype,
            DeviceBuffer x,
            long rows,
            long cols,
            DeviceBuffer centers,
            long k,
            DeviceBuffer index,
            DeviceBuffer best,
            NearestKernel choice) {
        int es = floating("nearestRows", dtype);
        if (!nearestRowsFits(k, cols)) {
            throw new IllegalArgumentException("nearestRows: " + k + " centers of " + cols + " columns (expected: 1 <="
                    + " k <= " + NEAREST_MAX_CENTERS + " and k x cols <= " + NEAREST_MAX_ELEMENTS + ")");
        }
        int lanes = rowLanes(cols);
        KernelArgs args = KernelArgs.on(stream)
                .i64(rows)
                .i64(cols)
                .i64(k)
                .i32(lanes)
                .array("x", x, Math.multiplyExact(rows, cols), es)
                .array("centers", centers, k * cols, es)
                .array("index", index, rows, Integer.BYTES)
                .optionalArray("best", best, rows, es);
        Kernel kernel = nearestKernel(choice, dtype, cols, k, KernelModule.aligned(x, 16));
        long work = Math.multiplyExact(rows, (long) lanes);
        if (registersKernel(kernel)) {
            int blocks = (int) Math.min(
                    KernelModule.grid(work), (long) NEAREST_REGS_BLOCKS_PER_SM * KernelModule.multiprocessors(stream));
            if (work > 0) {
                kernel.launchBlocks(Math.max(1, blocks), args);
            }
        } else {
            kernel.launch(work, args);
        }
    }

    /** Whether {@link #nearestRows} takes {@code k} centers of {@code cols} columns. */
    public static boolean nearestRowsFits(long k, long cols) {
        return k >= 1 && k <= NEAREST_MAX_CENTERS && cols >= 0 && k * cols <= NEAREST_MAX_ELEMENTS;
    }

    // ---------------------------------------------------------------- forests

    /** The bytes of a {@code cuwire.forest/1} blob with these counts. */
    public static long forestBytes(int trees, int outputs, long nodes, long leaves) {
        return Math.addExact(
                Math.addExact(48 + 16L * (trees + 1L), Math.multiplyExact(16L, nodes)),
                Math.multiplyExact(8L * outputs, leaves));
    }

    /**
     * Walks the {@code cuwire.forest/1} blob in {@code forest} (its counts as given; see
     * {@code io.cuwire.ml.ForestLayout}) for each of the {@code rows} rows of {@code x} ({@code rows x features}),
     * writing the mean over trees of the leaf values into {@code out} ({@code rows x outputs}). A row whose walk
     * leaves its tree (a malformed blob): its number in {@code error}.
     */
    public static void predictForest(
            DeviceStream stream,
            DType dtype,
            DeviceBuffer forest,
            int trees,
            int features,
            int outputs,
            long nodes,
            long leaves,
            DeviceBuffer x,
            long rows,
            DeviceBuffer out,
            DeviceBuffer error) {
        int es = floating("predictForest", dtype);
        if (trees < 0 || features < 0 || outputs < 1 || nodes < 0 || leaves < 0) {
            throw new IllegalArgumentException("predictForest: trees " + trees + ", features " + features
                    + ", outputs " + outputs + ", nodes " + nodes + ", leaves " + leaves
                    + " (expected: counts >= 0, outputs >= 1)");
        }
        KernelArgs args = KernelArgs.on(stream)
                .i64(rows)
                .i32(trees)
                .i32(features)
                .i32(outputs)
                .i64(nodes)
                .i64(leaves)
                .array("forest", forest, forestBytes(trees, outputs, nodes, leaves), 1);
        if (!KernelModule.aligned(forest, Long.BYTES)) {
            throw new IllegalArgumentException("forest: " + forest.describe() + " is not aligned to 8 bytes");
        }
        args.array("x", x, Math.multiplyExact(rows, features), es)
                .array("out", out, Math.multiplyExact(rows, outputs), es)
                .array("error", error, 1, Long.BYTES);
        resetError(stream, error);
        MlKernelTable.predictForest(dtype).launch(rows, args);
    }

    // ---------------------------------------------------------------- growing trees on histograms

    /** Bins per (node slot, drawn feature) of the tree-growing histograms ({@code ML_FOREST_BINS}). */
    public static final int FOREST_BINS = 256;

    /**
     * Quantizes {@code x} ({@code rows x cols}) into one byte per value, feature after feature: {@code codes[f * rows
     * + r]} is the number of feature {@code f}'s edges below {@code x[r, f]} (its edges are
     * {@code edges[edgeStart[f] .. edgeStart[f + 1])}, ascending, at most 255), compared in float64.
     */
    public static void forestQuantize(
            DeviceStream stream,
            DType dtype,
            DeviceBuffer x,
            long rows,
            int cols,
            DeviceBuffer edges,
            long edgeCount,
            DeviceBuffer edgeStart,
            DeviceBuffer codes) {
        int es = floating("forestQuantize", dtype);
        KernelArgs args = KernelArgs.on(stream)
                .i64(rows)
                .i32(cols)
                .array("x", x, Math.multiplyExact(rows, cols), es)
                .array("edges", edges, edgeCount, Double.BYTES)
                .array("edgeStart", edgeStart, cols + 1L, Long.BYTES)
                .array("codes", codes, Math.multiplyExact(rows, cols), 1);
        MlKernelTable.forestQuantize(dtype).launch(Math.multiplyExact(rows, cols), args);
    }

    /**
     * Adds one to the uint32 class-count histogram {@code hist} ({@code slots x k x} {@value #FOREST_BINS}
     * {@code x classes}, zeroed by the caller) for each of the {@code count} sample entries {@code row[i]} in slot
     * {@code slot[i] >= 0} and each of its slot's {@code k} features {@code drawn[slot * k + t]} (a slot whose first
     * is -1 is skipped), at the entry's code and int32 label.
     */
    public static void forestClassHistogram(
            DeviceStream stream,
            long count,
            long rows,
            int cols,
            int k,
            int classes,
            int slots,
            DeviceBuffer row,
            DeviceBuffer slot,
            DeviceBuffer drawn,
            DeviceBuffer codes,
            DeviceBuffer labels,
            DeviceBuffer hist) {
        KernelArgs args = KernelArgs.on(stream)
                .i64(count)
                .i64(rows)
                .i32(k)
                .i32(classes)
                .array("row", row, count, Integer.BYTES)
                .array("slot", slot, count, Integer.BYTES)
                .array("drawn", drawn, (long) slots * k, Integer.BYTES)
                .array("codes", codes, Math.multiplyExact(rows, cols), 1)
                .array("labels", labels, rows, Integer.BYTES)
                .array("hist", hist, histogramCells(slots, k, classes), Integer.BYTES);
        MlKernelTable.FOREST_CLASS_HISTOGRAM.launch(Math.multiplyExact(count, (long) k), args);
    }

    /**
     * The same for float64 targets {@code values}: their sums into {@code sum} and the entries into uint32
     * {@code rowsIn} ({@code slots x k x} {@value #FOREST_BINS} each, zeroed by the caller); the sums follow the
     * order the atomic additions land in.
     */
    public static void forestValueHistogram(
            DeviceStream stream,
            long count,
            long rows,
            int cols,
            int k,
            int slots,
            DeviceBuffer row,
            DeviceBuffer slot,
            DeviceBuffer drawn,
            DeviceBuffer codes,
            DeviceBuffer values,
            DeviceBuffer sum,
            DeviceBuffer rowsIn) {
        long cells = histogramCells(slots, k, 1);
        KernelArgs args = KernelArgs.on(stream)
                .i64(count)
                .i64(rows)
                .i32(k)
                .array("row", row, count, Integer.BYTES)
                .array("slot", slot, count, Integer.BYTES)
                .array("drawn", drawn, (long) slots * k, Integer.BYTES)
                .array("codes", codes, Math.multiplyExact(rows, cols), 1)
                .array("values", values, rows, Double.BYTES)
                .array("sum", sum, cells, Double.BYTES)
                .array("rowsIn", rowsIn, cells, Integer.BYTES);
        MlKernelTable.FOREST_VALUE_HISTOGRAM.launch(Math.multiplyExact(count, (long) k), args);
    }

    /**
     * Per slot of a class-count histogram: the best split over its drawn features (as the CPU's histogram scan
     * does, scores bit for bit), into int32 {@code bestT} (the drawn feature's position, -1 for none),
     * {@code bestBin}, float64 {@code bestScore}, and the left side's class counts {@code left}
     * ({@code slots x classes} float64); {@code work} holds {@code 2 x slots x classes} float64.
     */
    public static void forestBestClassSplit(
            DeviceStream stream,
            int slots,
            int k,
            int classes,
            int minLeaf,
            DeviceBuffer drawn,
            DeviceBuffer hist,
            DeviceBuffer work,
            DeviceBuffer bestT,
            DeviceBuffer bestBin,
            DeviceBuffer bestScore,
            DeviceBuffer left) {
        KernelArgs args = KernelArgs.on(stream)
                .i32(slots)
                .i32(k)
                .i32(classes)
                .i32(minLeaf)
                .array("drawn", drawn, (long) slots * k, Integer.BYTES)
                .array("hist", hist, histogramCells(slots, k, classes), Integer.BYTES)
                .array("work", work, 2L * slots * classes, Double.BYTES)
                .array("bestT", bestT, slots, Integer.BYTES)
                .array("bestBin", bestBin, slots, Integer.BYTES)
                .array("bestScore", bestScore, slots, Double.BYTES)
                .array("left", left, (long) slots * classes, Double.BYTES);
        MlKernelTable.FOREST_BEST_CLASS_SPLIT.launch(slots, args);
    }

    /**
     * The same for target sums: the left side's sum and entries into {@code left} ({@code slots x 2} float64).
     */
    public static void forestBestValueSplit(
            DeviceStream stream,
            int slots,
            int k,
            int minLeaf,
            DeviceBuffer drawn,
            DeviceBuffer sum,
            DeviceBuffer rowsIn,
            DeviceBuffer bestT,
            DeviceBuffer bestBin,
            DeviceBuffer bestScore,
            DeviceBuffer left) {
        long cells = histogramCells(slots, k, 1);
        KernelArgs args = KernelArgs.on(stream)
                .i32(slots)
                .i32(k)
                .i32(minLeaf)
                .array("drawn", drawn, (long) slots * k, Integer.BYTES)
                .array("sum", sum, cells, Double.BYTES)
                .array("rowsIn", rowsIn, cells, Integer.BYTES)
                .array("bestT", bestT, slots, Integer.BYTES)
                .array("bestBin", bestBin, slots, Integer.BYTES)
                .array("bestScore", bestScore, slots, Double.BYTES)
                .array("left", left, 2L * slots, Double.BYTES);
        MlKernelTable.FOREST_BEST_VALUE_SPLIT.launch(slots, args);
    }

    /**
     * Moves each sample entry of a slot split on ({@code feature[slot]}, {@code bin[slot]}) to the next level's
     * slot {@code child[slot]} (code at most the bin) or {@code child[slot] + 1}; entries of slots with feature -1
     * get slot -1.
     */
    public static void forestPartition(
            DeviceStream stream,
            long count,
            long rows,
            int cols,
            int slots,
            DeviceBuffer row,
            DeviceBuffer slot,
            DeviceBuffer feature,
            DeviceBuffer bin,
            DeviceBuffer child,
            DeviceBuffer codes) {
        KernelArgs args = KernelArgs.on(stream)
                .i64(count)
                .i64(rows)
                .array("row", row, count, Integer.BYTES)
                .array("slot", slot, count, Integer.BYTES)
                .array("feature", feature, slots, Integer.BYTES)
                .array("bin", bin, slots, Integer.BYTES)
                .array("child", child, slots, Integer.BYTES)
                .array("codes", codes, Math.multiplyExact(rows, cols), 1);
        MlKernelTable.FOREST_PARTITION.launch(count, args);
    }

    /**
     * The least and greatest float64 target of each slot's entries, as order-preserving uint64 ({@code lo}
     * starts at all ones, {@code hi} at zero; the caller fills them).
     */
    public static void forestValueRange(
            DeviceStream stream,
            long count,
            long rows,
            int slots,
            DeviceBuffer row,
            DeviceBuffer slot,
            DeviceBuffer values,
            DeviceBuffer lo,
            DeviceBuffer hi) {
        KernelArgs args = KernelArgs.on(stream)
                .i64(count)
                .array("row", row, count, Integer.BYTES)
                .array("slot", slot, count, Integer.BYTES)
                .array("values", values, rows, Double.BYTES)
                .array("lo", lo, slots, Long.BYTES)
                .array("hi", hi, slots, Long.BYTES);
        MlKernelTable.FOREST_VALUE_RANGE.launch(count, args);
    }

    /** The cells of a histogram of {@code slots x k} features of {@value #FOREST_BINS} bins, {@code stats} each. */
    public static long histogramCells(int slots, int k, int stats) {
        return Math.multiplyExact(Math.multiplyExact((long) slots * k, (long) FOREST_BINS), (long) stats);
    }

    // ---------------------------------------------------------------- helpers

    private static int floating(String op, DType dtype) {
        if (dtype != DType.FLOAT32 && dtype != DType.FLOAT64) {
            throw new IllegalArgumentException(op + ": dtype " + dtype.wireName() + " (expected: float32 or float64)");
        }
        return dtype.byteSize();
    }
}
