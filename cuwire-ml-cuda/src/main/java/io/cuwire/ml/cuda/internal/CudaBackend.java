package io.cuwire.ml.cuda.internal;

import io.cuwire.cuda.CuBlas;
import io.cuwire.cuda.Kernels;
import io.cuwire.cuda.Transpose;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.DType;
import io.cuwire.memory.Device;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.DeviceStream;
import io.cuwire.memory.MemoryKind;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import io.cuwire.ml.BinaryOp;
import io.cuwire.ml.ComputeBackend;
import io.cuwire.ml.ForestLayout;
import io.cuwire.ml.HistogramTrees;
import io.cuwire.ml.Reduction;
import io.cuwire.ml.UnaryOp;
import io.cuwire.serialize.OpaqueBlob;
import java.lang.foreign.MemorySegment;
import java.util.Optional;
import java.util.function.Consumer;
import java.util.function.LongFunction;

/**
 * The compute backend of one CUDA device: products through cuBLAS (a row-major array is the column-major transpose,
 * so {@code C = op(A) op(B)} runs as {@code C^T = op(B)^T op(A)^T}), everything else through the kernels of
 * {@link MlKernels} and {@link Kernels}. It owns one CUDA stream and one cuBLAS handle on it, made when the backend is
 * (once per device, by {@link CudaBackendProvider}) and kept for the life of the process, like the device.
 *
 * <p>Every operation enqueues its work on the stream and synchronizes it before returning, so when a method returns
 * its outputs are written, exactly as on the CPU backend; operands written by synchronous copies are complete before
 * the call, so no other ordering is needed. Scratch memory (row norms, partial sums, error words) comes from the
 * device's pool and goes back after the synchronization. Scalars ({@link #dot}, {@link #reduce}, the loss of
 * {@link #crossEntropy}, {@link #countEqual}) and error words are the only bytes copied to the host: eight each.
 *
 * <p>Values the kernels find invalid (labels or indices out of range) are reported after the kernel ran, with the
 * CPU backend's exception and message, naming the first failing position; the outputs are then partly written (the
 * CPU backend writes none). Sums of products and reductions are accumulated in double precision by the kernels
 * (row-major matrix-vector products up to {@value #GEMV_ROWS_MAX_COLS} columns among them), but for the distances of
 * {@link #nearestRows} on float32 rows, which its default kernel sums in float32 ({@link MlKernels#nearestRows});
 * cuBLAS, which runs the other products, accumulates in the operands' precision. {@link #scatterAddRows} sums in a
 * fixed order (the same operands give the same bits, which Lloyd's loop needs to stop at an unchanged step) for up to
 * {@link MlKernels#SCATTER_MAX_K} rows of {@code out}, atomically in no fixed order above; {@link #bincount} adds
 * whole counts, exact in any order. Thread-safe: work from several threads shares the stream, and each caller waits
 * for it.
 */
public final class CudaBackend extends ComputeBackend {
    private static final long ALIGN = 256;
    /**
     * Row-major {@code a x} products with at most this many columns run as {@link MlKernels#gemvRows} (a few threads
     * per row, reading {@code a} once at full bandwidth, summing in float64); wider rows go to cuBLAS.
     */
    static final long GEMV_ROWS_MAX_COLS = 4096;

    private final Device device;
    private final DeviceStream stream;
    private final CuBlas blas;
    private final BufferAllocator<DeviceBuffer> scratch;

    /** The backend of CUDA {@code device}: a new stream, a cuBLAS handle on it, a scratch allocator. */
    public CudaBackend(Device device) {
        if (!device.platform().equals("cuda")) {
            throw new IllegalArgumentException(device + " is not a CUDA device (platform " + device.platform() + ")");
        }
        this.device = device;
        this.stream = device.newStream();
        try {
            this.blas = CuBlas.create(stream);
        } catch (RuntimeException e) {
            stream.close();
            throw e;
        }
        this.scratch = device.newAllocator("cuwire-ml cuda backend scratch on " + device, BufferAllocator.UNLIMITED);
    }

    @Override
    public String nearestRowsPath(NdArray x, long centers) {
        long cols = x.dim(1);
        if (!MlKernels.nearestRowsFits(centers, cols)) {
            return "gemm_argmin";
        }
        return MlKernels.nearestRowsKernel(MlKernels.nearestKernelSetting(), x.dtype(), dev(x), cols, centers);
    }

    /**
     * The kernel of {@link MlKernels#gemvRows} that {@code -Dcuwire.ml.gemvKernel} picks for this shape
     * ({@code ml_gemv_rows_v4_f32}, {@code ml_gemv_rows_f32}, {@code ml_gemv_rows_f64}), or {@code cublas} for
     * transposed or wider products.
     */
    @Override
    public String gemvPath(boolean transA, NdArray a) {
        if (!gemvRows(transA, a)) {
            return "cublas";
        }
        return MlKernels.gemvRowsKernel(a.dtype(), dev(a), a.dim(1));
    }

    @Override
    public String name() {
        return "cuda";
    }

    @Override
    public boolean supports(NdArray a) {
        return a.kind() == MemoryKind.DEVICE && ((DeviceBuffer) a.buffer()).device() == device;
    }

    /** The device this backend computes on. */
    public Device device() {
        return device;
    }

    // ---------------------------------------------------------------- scratch and scalars

    /** Device memory for one operation, cut into aligned pieces; closing waits for the stream, then frees it. */
    private final class Scratch implements AutoCloseable {
        private final DeviceBuffer buffer;
        private long used;

        Scratch(long... pieces) {
            long total = 0;
            for (long p : pieces) {
                total = Math.addExact(total, aligned(p));
            }
            this.buffer = scratch.allocate(Math.max(ALIGN, total));
        }

        DeviceBuffer take(long bytes) {
            DeviceBuffer piece = buffer.slice(used, bytes);
            used += aligned(bytes);
            return piece;
        }

        @Override
        public void close() {
            try {
                stream.synchronize();
            } finally {
                buffer.close();
            }
        }
    }

    private static long aligned(long bytes) {
        return Math.addExact(Math.max(bytes, 8), ALIGN - 1) / ALIGN * ALIGN;
    }

    private void sync() {
        stream.synchronize();
    }

    /** The int64 at byte {@code offset} of {@code b}, after the stream was synchronized. */
    private static long readLong(DeviceBuffer b, long offset) {
        long[] v = new long[1];
        CopyEngine.copyToSegment(b, offset, MemorySegment.ofArray(v));
        return v[0];
    }

    private static double readDouble(DeviceBuffer b) {
        double[] v = new double[1];
        CopyEngine.copyToSegment(b, 0, MemorySegment.ofArray(v));
        return v[0];
    }

    /** Element {@code i} of int32 or int64 {@code a}, for error messages. */
    private static long element(NdArray a, long i) {
        if (a.dtype() == DType.INT64) {
            return readLong((DeviceBuffer) a.buffer(), i * Long.BYTES);
        }
        int[] v = new int[1];
        CopyEngine.copyToSegment(a.buffer(), i * Integer.BYTES, MemorySegment.ofArray(v));
        return v[0];
    }

    /** The failing position in {@code error}, or -1, after the stream was synchronized. */
    private static long failure(DeviceBuffer error) {
        long at = readLong(error, 0);
        return at == MlKernels.NO_ERROR ? -1 : at;
    }

    /**
     * Enqueues {@code launch} with an error word taken from {@code s}, waits for the stream, and throws an
     * {@link IllegalArgumentException} with {@code message} of the first failing position, if any.
     */
    private void checked(Scratch s, Consumer<DeviceBuffer> launch, LongFunction<String> message) {
        DeviceBuffer error = s.take(Long.BYTES);
        launch.accept(error);
        sync();
        long bad = failure(error);
        if (bad >= 0) {
            throw new IllegalArgumentException(message.apply(bad));
        }
    }

    private static DeviceBuffer dev(NdArray a) {
        return (DeviceBuffer) a.buffer();
    }

    private static int blasDim(long v) {
        if (v > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("cuda backend: dimension " + v + " exceeds cuBLAS's 32-bit dimensions");
        }
        return (int) v;
    }

    // ---------------------------------------------------------------- products

    @Override
    protected void doGemm(boolean transA, boolean transB, double alpha, NdArray a, NdArray b, double beta, NdArray c) {
        long m = c.dim(0);
        long n = c.dim(1);
        long k = transA ? a.dim(0) : a.dim(1);
        if (m == 0 || n == 0) {
            return;
        }
        if (k == 0) {
            scaleOrZero(beta, c);
        } else {
            gemmRowMajor(transA, transB, alpha, a, b, beta, c, m, n, k);
        }
        sync();
    }

    /** {@code c = alpha op(a) op(b) + beta c}, row-major, as the column-major {@code c^T = op(b)^T op(a)^T}. */
    private void gemmRowMajor(
            boolean transA,
            boolean transB,
            double alpha,
            NdArray a,
            NdArray b,
            double beta,
            NdArray c,
            long m,
            long n,
            long k) {
        Transpose tb = transB ? Transpose.TRANSPOSE : Transpose.NONE;
        Transpose ta = transA ? Transpose.TRANSPOSE : Transpose.NONE;
        int mm = blasDim(n);
        int nn = blasDim(m);
        int kk = blasDim(k);
        int ldb = blasDim(b.dim(1));
        int lda = blasDim(a.dim(1));
        if (a.dtype() == DType.FLOAT32) {
            blas.sgemm(tb, ta, mm, nn, kk, (float) alpha, dev(b), 0, ldb, dev(a), 0, lda, (float) beta, dev(c), 0, mm);
        } else {
            blas.dgemm(tb, ta, mm, nn, kk, alpha, dev(b), 0, ldb, dev(a), 0, lda, beta, dev(c), 0, mm);
        }
    }

    /** {@code y = beta y}, or zeros (whatever {@code y} held) when {@code beta} is 0. */
    private void scaleOrZero(double beta, NdArray y) {
        if (beta == 0) {
            MlKernels.fill(stream, y.dtype(), dev(y), y.size(), 0);
        } else if (beta != 1) {
            scaleKernel(beta, y);
        }
    }

    /** Whether {@code op(a) x} runs as {@link MlKernels#gemvRows}: not transposed, {@link #GEMV_ROWS_MAX_COLS} wide. */
    private static boolean gemvRows(boolean transA, NdArray a) {
        return !transA && a.dim(1) <= GEMV_ROWS_MAX_COLS;
    }

    @Override
    protected void doGemv(boolean transA, double alpha, NdArray a, NdArray x, double beta, NdArray y) {
        if (y.size() == 0) {
            return;
        }
        if (x.size() == 0) {
            scaleOrZero(beta, y);
        } else if (gemvRows(transA, a)) {
            MlKernels.gemvRows(stream, a.dtype(), dev(a), a.dim(0), a.dim(1), dev(x), alpha, beta, dev(y));
        } else {
            gemvRowMajor(transA, alpha, a.dtype(), dev(a), a.dim(0), a.dim(1), dev(x), beta, dev(y));
        }
        sync();
    }

    /**
     * {@code y = alpha op(a) x + beta y} for row-major {@code a} ({@code rows x cols}, both at least 1): the
     * column-major {@code cols x rows} matrix {@code a^T}, transposed when {@code op} is the identity.
     */
    private void gemvRowMajor(
            boolean transA,
            double alpha,
            DType dtype,
            DeviceBuffer a,
            long rows,
            long cols,
            DeviceBuffer x,
            double beta,
            DeviceBuffer y) {
        Transpose t = transA ? Transpose.NONE : Transpose.TRANSPOSE;
        int m = blasDim(cols);
        int n = blasDim(rows);
        if (dtype == DType.FLOAT32) {
            blas.sgemv(t, m, n, (float) alpha, a, 0, m, x, 0, 1, (float) beta, y, 0, 1);
        } else {
            blas.dgemv(t, m, n, alpha, a, 0, m, x, 0, 1, beta, y, 0, 1);
        }
    }

    @Override
    protected void doAxpy(double alpha, NdArray x, NdArray y) {
        long n = x.size();
        if (x.dtype() == DType.FLOAT32) {
            Kernels.axpyF32(stream, (float) alpha, dev(x), dev(y), n);
        } else {
            Kernels.axpyF64(stream, alpha, dev(x), dev(y), n);
        }
        sync();
    }

    @Override
    protected void doScale(double alpha, NdArray x) {
        scaleKernel(alpha, x);
        sync();
    }

    private void scaleKernel(double alpha, NdArray x) {
        if (x.dtype() == DType.FLOAT32) {
            Kernels.scaleF32(stream, (float) alpha, dev(x), x.size());
        } else {
            Kernels.scaleF64(stream, alpha, dev(x), x.size());
        }
    }

    @Override
    protected double doDot(NdArray x, NdArray y) {
        if (x.size() == 0) {
            return 0;
        }
        try (Scratch s = new Scratch(MlKernels.SCRATCH_BYTES, Double.BYTES)) {
            DeviceBuffer partial = s.take(MlKernels.SCRATCH_BYTES);
            DeviceBuffer result = s.take(Double.BYTES);
            MlKernels.dot(stream, x.dtype(), dev(x), dev(y), x.size(), partial, result);
            sync();
            return readDouble(result);
        }
    }

    // ---------------------------------------------------------------- element-wise

    @Override
    protected void doFill(NdArray a, double value) {
        MlKernels.fill(stream, a.dtype(), dev(a), a.size(), value);
        sync();
    }

    @Override
    protected void doMap(UnaryOp f, NdArray in, NdArray out) {
        MlKernels.map(stream, in.dtype(), f, dev(in), dev(out), in.size());
        sync();
    }

    @Override
    protected void doBroadcastRows(BinaryOp f, NdArray a, NdArray v) {
        MlKernels.broadcastRows(stream, a.dtype(), f, dev(a), dev(v), a.dim(0), a.dim(1));
        sync();
    }

    @Override
    protected void doSoftmaxRows(NdArray in, NdArray out) {
        MlKernels.softmaxRows(stream, in.dtype(), dev(in), dev(out), in.dim(0), in.dim(1));
        sync();
    }

    // ---------------------------------------------------------------- reductions

    @Override
    protected double doReduce(Reduction r, NdArray a) {
        if (a.size() == 0) {
            return 0;
        }
        try (Scratch s = new Scratch(MlKernels.SCRATCH_BYTES, Double.BYTES)) {
            DeviceBuffer partial = s.take(MlKernels.SCRATCH_BYTES);
            DeviceBuffer result = s.take(Double.BYTES);
            MlKernels.reduce(stream, a.dtype(), r, dev(a), a.size(), partial, result);
            sync();
            return readDouble(result);
        }
    }

    @Override
    protected void doColumnSums(NdArray a, NdArray out) {
        long rows = a.dim(0);
        long cols = a.dim(1);
        if (cols == 0) {
            return;
        }
        if (rows == 0) {
            MlKernels.fill(stream, out.dtype(), dev(out), cols, 0);
            sync();
            return;
        }
        long es = a.dtype().byteSize();
        try (Scratch s = new Scratch(Math.multiplyExact(rows, es))) {
            DeviceBuffer ones = s.take(rows * es);
            MlKernels.fill(stream, a.dtype(), ones, rows, 1);
            gemvRowMajor(true, 1, a.dtype(), dev(a), rows, cols, ones, 0, dev(out));
        }
    }

    @Override
    protected long doCountEqual(NdArray a, NdArray b) {
        if (a.size() == 0) {
            return 0;
        }
        try (Scratch s = new Scratch(MlKernels.SCRATCH_BYTES, Double.BYTES)) {
            DeviceBuffer partial = s.take(MlKernels.SCRATCH_BYTES);
            DeviceBuffer result = s.take(Double.BYTES);
            MlKernels.countEqual(stream, a.dtype(), dev(a), dev(b), a.size(), partial, result);
            sync();
            return Math.round(readDouble(result));
        }
    }

    @Override
    protected void doArgminRows(NdArray a, NdArray index, NdArray min) {
        MlKernels.argRows(
                stream, a.dtype(), false, dev(a), a.dim(0), a.dim(1), dev(index), min == null ? null : dev(min));
        sync();
    }

    @Override
    protected void doArgmaxRows(NdArray a, NdArray index) {
        MlKernels.argRows(stream, a.dtype(), true, dev(a), a.dim(0), a.dim(1), dev(index), null);
        sync();
    }

    // ---------------------------------------------------------------- fused

    @Override
    protected double doCrossEntropy(NdArray logits, NdArray labels, NdArray grad) {
        long rows = logits.dim(0);
        long cols = logits.dim(1);
        if (rows == 0) {
            return 0;
        }
        long lossBytes = Math.multiplyExact(rows, (long) Double.BYTES);
        try (Scratch s = new Scratch(lossBytes, MlKernels.SCRATCH_BYTES, Double.BYTES, Long.BYTES)) {
            DeviceBuffer rowLoss = s.take(lossBytes);
            DeviceBuffer partial = s.take(MlKernels.SCRATCH_BYTES);
            DeviceBuffer result = s.take(Double.BYTES);
            checked(
                    s,
                    error -> {
                        MlKernels.crossEntropy(
                                stream,
                                logits.dtype(),
                                dev(logits),
                                dev(labels),
                                dev(grad),
                                rows,
                                cols,
                                rowLoss,
                                error);
                        MlKernels.reduce(stream, DType.FLOAT64, Reduction.SUM, rowLoss, rows, partial, result);
                    },
                    bad -> "crossEntropy: labels[" + bad + "] = " + element(labels, bad) + " (expected: 0 <= label < "
                            + Math.max(cols, 2) + ")");
            return readDouble(result);
        }
    }

    @Override
    protected void doSquaredDistances(NdArray x, NdArray y, NdArray out) {
        long n = x.dim(0);
        long m = y.dim(0);
        long d = x.dim(1);
        if (n == 0 || m == 0) {
            return;
        }
        if (d == 0) {
            MlKernels.fill(stream, out.dtype(), dev(out), out.size(), 0);
            sync();
            return;
        }
        DType dt = x.dtype();
        long xBytes = Math.multiplyExact(n, (long) dt.byteSize());
        long yBytes = Math.multiplyExact(m, (long) dt.byteSize());
        try (Scratch s = new Scratch(xBytes, yBytes)) {
            DeviceBuffer xn = s.take(xBytes);
            DeviceBuffer yn = s.take(yBytes);
            MlKernels.rowSquaredNorms(stream, dt, dev(x), n, d, xn);
            MlKernels.rowSquaredNorms(stream, dt, dev(y), m, d, yn);
            gemmRowMajor(false, true, -2, x, y, 0, out, n, m, d);
            MlKernels.addNormsAndClamp(stream, dt, dev(out), n, m, xn, yn);
        }
    }

    @Override
    protected void doNearestRows(NdArray x, NdArray y, NdArray index, NdArray min) {
        long n = x.dim(0);
        long m = y.dim(0);
        long d = x.dim(1);
        if (n == 0) {
            return;
        }
        if (MlKernels.nearestRowsFits(m, d)) {
            MlKernels.nearestRows(
                    stream, x.dtype(), dev(x), n, d, dev(y), m, dev(index), min == null ? null : dev(min));
            sync();
            return;
        }
        long bytes =
                Math.multiplyExact(Math.multiplyExact(n, m), (long) x.dtype().byteSize());
        try (Scratch s = new Scratch(bytes)) {
            try (NdArray distances = NdArray.view(s.take(bytes), 0, x.dtype(), Order.C, n, m)) {
                doSquaredDistances(x, y, distances);
                doArgminRows(distances, index, min);
            }
        }
    }

    // ---------------------------------------------------------------- indexing

    @Override
    protected void doGatherRows(NdArray src, NdArray index, NdArray out) {
        long count = index.dim(0);
        long rows = src.dim(0);
        long rowBytes = (src.rank() == 2 ? src.dim(1) : 1) * src.dtype().byteSize();
        if (count == 0 || rowBytes == 0) {
            return;
        }
        try (Scratch s = new Scratch(Long.BYTES)) {
            checked(
                    s,
                    error -> MlKernels.gatherRows(
                            stream, dev(src), rows, rowBytes, dev(index), index.dtype(), count, dev(out), error),
                    bad -> "gatherRows: index[" + bad + "] = " + element(index, bad) + " (expected: 0 <= index < "
                            + rows + ", the rows of src)");
        }
    }

    @Override
    protected void doScatterAddRows(NdArray src, NdArray index, NdArray out) {
        long n = src.dim(0);
        long cols = src.rank() == 2 ? src.dim(1) : 1;
        long k = out.dim(0);
        if (n == 0 || cols == 0) {
            return;
        }
        long partial = MlKernels.scatterPlan(n, cols, k).scratchBytes();
        try (Scratch s = new Scratch(partial, Long.BYTES)) {
            DeviceBuffer sums = partial == 0 ? null : s.take(partial);
            checked(
                    s,
                    error -> MlKernels.scatterAddRows(
                            stream, src.dtype(), dev(src), dev(index), n, cols, dev(out), k, error, sums),
                    bad -> "scatterAddRows: index[" + bad + "] = " + element(index, bad) + " (expected: 0 <= index < "
                            + k + ", the rows of out)");
        }
    }

    @Override
    protected void doBincount(NdArray index, NdArray out) {
        long n = index.dim(0);
        long k = out.dim(0);
        if (n == 0) {
            return;
        }
        try (Scratch s = new Scratch(Long.BYTES)) {
            checked(
                    s,
                    error -> MlKernels.bincount(stream, out.dtype(), dev(index), n, dev(out), k, error),
                    bad -> "bincount: index[" + bad + "] = " + element(index, bad) + " (expected: 0 <= index < " + k
                            + ", the length of out)");
        }
    }

    @Override
    protected void doCountRows(NdArray labels, NdArray out) {
        long rows = labels.dim(0);
        long k = labels.dim(1);
        long classes = out.dim(1);
        if (rows == 0) {
            return;
        }
        try (Scratch s = new Scratch(Long.BYTES)) {
            checked(
                    s,
                    error -> MlKernels.countRows(stream, out.dtype(), dev(labels), rows, k, dev(out), classes, error),
                    bad -> "countRows: labels[" + bad / k + ", " + bad % k + "] = " + element(labels, bad)
                            + " (expected: 0 <= label < " + classes + ", the columns of out)");
        }
    }

    // ---------------------------------------------------------------- neighbors

    /** Distance matrix elements {@link #doKNearestRows} computes at once: a block of queries against every row. */
    private static final long KNN_BLOCK_ELEMENTS = 1L << 22;

    /**
     * Up to {@value MlKernels#KNN_FUSED_MAX_K} neighbors, one pass: distances and selection fused through shared
     * memory ({@link MlKernels#kNearestFused}, no distance matrix), then for float32, whose fused distances are summed
     * in float, {@link MlKernels#exactNeighbors} recomputes them in double and re-sorts each row (float64's are already
     * the sums the CPU backend computes, bit for bit). More neighbors: blocks of queries (at most
     * {@value #KNN_BLOCK_ELEMENTS} distances each, in scratch memory) through {@link #doSquaredDistances} (cuBLAS) and
     * {@link #doSmallestK} into the outputs, then {@link MlKernels#exactNeighbors}.
     */
    @Override
    protected void doKNearestRows(NdArray q, NdArray x, long idOffset, NdArray outDist, NdArray outIds) {
        long m = q.dim(0);
        long n = x.dim(0);
        long d = q.dim(1);
        long k = outDist.dim(1);
        if (m == 0) {
            return;
        }
        DType dt = q.dtype();
        if (MlKernels.kNearestFusedFits(n, k)) {
            long keys = MlKernels.knnPlan(stream, dt, m, n, k).scratchBytes();
            try (Scratch s = new Scratch(keys)) {
                MlKernels.kNearestFused(
                        stream,
                        dt,
                        dev(q),
                        m,
                        d,
                        dev(x),
                        n,
                        k,
                        idOffset,
                        dev(outDist),
                        dev(outIds),
                        keys > 0 ? s.take(keys) : null);
                if (dt == DType.FLOAT32) {
                    MlKernels.exactNeighbors(
                            stream, dt, dev(q), m, d, dev(x), n, k, idOffset, dev(outDist), dev(outIds));
                }
            }
            return;
        }
        long es = dt.byteSize();
        long block = Math.max(1, Math.min(m, KNN_BLOCK_ELEMENTS / n));
        long bytes = Math.multiplyExact(Math.multiplyExact(block, n), es);
        try (Scratch s = new Scratch(bytes)) {
            DeviceBuffer distances = s.take(bytes);
            for (long first = 0; first < m; first += block) {
                long rows = Math.min(block, m - first);
                try (NdArray qv = NdArray.view(q.buffer(), first * d * es, dt, Order.C, rows, d);
                        NdArray all = NdArray.view(distances, 0, dt, Order.C, rows, n);
                        NdArray dv = NdArray.view(outDist.buffer(), first * k * es, dt, Order.C, rows, k);
                        NdArray iv =
                                NdArray.view(outIds.buffer(), first * k * Long.BYTES, DType.INT64, Order.C, rows, k)) {
                    doSquaredDistances(qv, x, all);
                    doSmallestK(all, idOffset, dv, iv);
                }
            }
            MlKernels.exactNeighbors(stream, dt, dev(q), m, d, dev(x), n, k, idOffset, dev(outDist), dev(outIds));
        }
    }

    /**
     * {@code fused_k8} or {@code fused_k32} (the fused kernel's list of keys a query, {@link #doKNearestRows}), else
     * {@code gemm_select}.
     */
    @Override
    public String kNearestRowsPath(NdArray q, NdArray x, long k) {
        if (!MlKernels.kNearestFusedFits(x.dim(0), k)) {
            return "gemm_select";
        }
        return k <= MlKernels.SELECT_SMALL_K ? "fused_k8" : "fused_k32";
    }

    @Override
    protected void doSmallestK(NdArray values, long idOffset, NdArray outValues, NdArray outIds) {
        long rows = values.dim(0);
        long cols = values.dim(1);
        long k = outValues.dim(1);
        long bytes =
                MlKernels.smallestKPlan(stream, values.dtype(), rows, cols, k).scratchBytes();
        if (bytes == 0) {
            MlKernels.smallestK(
                    stream, values.dtype(), dev(values), rows, cols, k, idOffset, dev(outValues), dev(outIds), null);
            sync();
            return;
        }
        try (Scratch s = new Scratch(bytes)) {
            MlKernels.smallestK(
                    stream,
                    values.dtype(),
                    dev(values),
                    rows,
                    cols,
                    k,
                    idOffset,
                    dev(outValues),
                    dev(outIds),
                    s.take(bytes));
        }
    }

    @Override
    protected void doMergeNeighbors(
            NdArray distA, NdArray idsA, NdArray distB, NdArray idsB, NdArray outDist, NdArray outIds) {
        MlKernels.mergeNeighbors(
                stream,
                distA.dtype(),
                idsA.dtype(),
                dev(distA),
                dev(idsA),
                distA.dim(1),
                dev(distB),
                dev(idsB),
                distB.dim(1),
                distA.dim(0),
                dev(outDist),
                dev(outIds),
                outDist.dim(1));
        sync();
    }

    // ---------------------------------------------------------------- forests

    /** Trees grown on this device ({@link CudaForestGrower}), its memory from the backend's scratch allocator. */
    @Override
    public Optional<HistogramTrees> histogramTrees(NdArray x, double[] targets, int classes, double[][] edges) {
        if (!supports(x)) {
            throw new IllegalArgumentException(
                    "histogramTrees: x is on " + x.buffer().describe() + " (expected: " + device + ")");
        }
        return Optional.of(new CudaForestGrower(stream, scratch, x, targets, classes, edges));
    }

    @Override
    protected void doPredictForest(OpaqueBlob forest, ForestLayout.Info info, NdArray x, NdArray out) {
        long rows = x.dim(0);
        if (rows == 0) {
            return;
        }
        try (Scratch s = new Scratch(Long.BYTES)) {
            checked(
                    s,
                    error -> MlKernels.predictForest(
                            stream,
                            x.dtype(),
                            (DeviceBuffer) forest.buffer(),
                            info.trees(),
                            info.features(),
                            info.outputs(),
                            info.nodes(),
                            info.leaves(),
                            dev(x),
                            rows,
                            dev(out),
                            error),
                    bad -> "predictForest: the walk of row " + bad + " left its tree: the " + ForestLayout.FORMAT
                            + " blob is malformed (" + info + ")");
        }
    }
}
