package io.cuwire.ml.internal;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.DType;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.NdArray;
import io.cuwire.ml.BinaryOp;
import io.cuwire.ml.ComputeBackend;
import io.cuwire.ml.ForestLayout;
import io.cuwire.ml.Reduction;
import io.cuwire.ml.UnaryOp;
import io.cuwire.serialize.OpaqueBlob;
import java.lang.foreign.MemorySegment;
import java.util.Arrays;

/**
 * The pure-Java backend: computes on host and pinned memory, and on the <em>emulated</em> device.
 *
 * <p>Emulated-device memory is device memory like any other — the host does not read it — so this backend stages
 * it: each operation copies its device operands to the Java heap through the {@link io.cuwire.memory.CopyEngine}
 * (counted as device-to-host bytes), computes, and copies its outputs back (counted as host-to-device). The counters
 * therefore show what a CPU fallback on a real GPU would cost; nothing reads emulated memory behind the engine's
 * back. Host operands are read and written in place. Each operand holds at most {@link HostArrays#MAX_ELEMENTS}
 * elements.
 *
 * <p>All arithmetic is done in doubles, float32 operands included (their results are rounded once, on the way
 * out). Every operation works through its operands a chunk of rows at a time (at most {@value #CHUNK_ELEMENTS}
 * elements, read into the heap, where they stay in the cache while they are used; products in tiles of
 * {@value #TILE_COLS} output columns), the chunks in parallel on {@link CpuParallel}'s threads, in plain loops the JIT
 * vectorizes (the inner loop of a product is an axpy over a row of its output tile). Chunks follow from the operands'
 * shapes only and partial sums are added in chunk order, so results do not depend on the number of threads.
 * Stateless and thread-safe.
 */
public final class CpuBackend extends ComputeBackend {
    private static final CpuBackend INSTANCE = new CpuBackend();

    /** Elements one chunk of an operation reads at most (256 KiB of doubles: a chunk stays in the L2 cache). */
    private static final int CHUNK_ELEMENTS = 1 << 15;
    /** Columns of one tile of a product's output (2 KiB of doubles: a tile row stays in the L1 cache). */
    private static final int TILE_COLS = 256;
    /** Partial sums of one reduction at most (the chunks grow beyond). */
    private static final int MAX_PARTIALS = 256;

    private CpuBackend() {}

    /** The backend. */
    public static CpuBackend instance() {
        return INSTANCE;
    }

    @Override
    public String name() {
        return "cpu";
    }

    @Override
    public boolean supports(NdArray a) {
        return a.kind().isHostAccessible()
                || ((DeviceBuffer) a.buffer()).device().platform().equals("emulated");
    }

    // ---------------------------------------------------------------- chunks

    /** One chunk of rows: its index, its first row and its rows. */
    @FunctionalInterface
    private interface RowChunk {
        void run(int chunk, int first, int count);
    }

    /** Rows of {@code cols} elements one chunk takes. */
    private static int rowsPerChunk(long cols) {
        return (int) Math.max(1, CHUNK_ELEMENTS / Math.max(cols, 1));
    }

    /** Rows per chunk of a reduction over {@code rows} rows of {@code cols}: at most {@link #MAX_PARTIALS} chunks. */
    private static int reductionRows(long rows, long cols) {
        return Math.max(rowsPerChunk(cols), CpuParallel.chunks(rows, MAX_PARTIALS));
    }

    /** Runs {@code body} over {@code rows} rows in chunks of {@code per}, in parallel. */
    private static void forRows(long rows, int per, RowChunk body) {
        CpuParallel.forEach(CpuParallel.chunks(rows, per), c -> {
            int first = c * per;
            body.run(c, first, (int) Math.min(per, rows - first));
        });
    }

    /**
     * Runs {@code body} over the rows {@code [first, first + count)} of one reduction's chunk in blocks of at most
     * {@code rowsPerChunk(cols)} rows (the block's index: -1), so that a large chunk is read a cache's worth at a time.
     */
    private static void blocks(int first, int count, long cols, RowChunk body) {
        int per = rowsPerChunk(cols);
        for (int f = first; f < first + count; f += per) {
            body.run(-1, f, Math.min(per, first + count - f));
        }
    }

    /** Adds {@code partials} (each of {@code length}) in their order. */
    private static double[] sum(double[][] partials, int length) {
        double[] s = new double[length];
        for (double[] p : partials) {
            for (int j = 0; j < length; j++) {
                s[j] += p[j];
            }
        }
        return s;
    }

    /** Rows of a row-major matrix, read a chunk at a time. */
    @FunctionalInterface
    private interface Rows {
        /** Reads rows {@code [first, first + count)} into {@code into}. */
        void read(int first, int count, double[] into);

        static Rows of(NdArray a, int cols) {
            return (first, count, into) -> HostArrays.read(a, (long) first * cols, into, count * cols);
        }

        static Rows of(double[] v, int cols) {
            return (first, count, into) -> System.arraycopy(v, first * cols, into, 0, count * cols);
        }
    }

    // ---------------------------------------------------------------- products

    @Override
    protected void doGemm(boolean transA, boolean transB, double alpha, NdArray a, NdArray b, double beta, NdArray c) {
        int m = (int) c.dim(0);
        int n = (int) c.dim(1);
        int k = (int) (transA ? a.dim(0) : a.dim(1));
        if (transA) {
            Rows bRows = transB ? Rows.of(transpose(HostArrays.doubles(b), n, k), n) : Rows.of(b, n);
            gemmTn(alpha, Rows.of(a, m), a == b && !transB ? null : bRows, beta, c, m, n, k);
        } else {
            gemmTiles(alpha, a, b, transB, beta, c, m, n, k);
        }
    }

    /**
     * {@code c = alpha a^T b + beta c} for {@code a} (k x m) and {@code b} (k x n; {@code null}: {@code a} itself):
     * the rows of {@code a} and {@code b} in chunks, a partial {@code m x n} sum of rank-one updates per chunk, the
     * partials added in chunk order.
     */
    private static void gemmTn(double alpha, Rows a, Rows b, double beta, NdArray c, int m, int n, int k) {
        int per = reductionRows(k, Math.max(m, n));
        double[][] partials = new double[CpuParallel.chunks(k, per)][];
        forRows(k, per, (chunk, first, count) -> {
            double[] av = new double[count * m];
            a.read(first, count, av);
            double[] bv = av;
            if (b != null) {
                bv = new double[count * n];
                b.read(first, count, bv);
            }
            double[] p = new double[m * n];
            CpuKernels.multiplyAdd(av, 0, 1, m, bv, 0, n, p, 0, n, m, n, count);
            partials[chunk] = p;
        });
        double[] s = sum(partials, m * n);
        double[] cv = beta == 0 ? new double[m * n] : HostArrays.doubles(c);
        for (int i = 0; i < cv.length; i++) {
            cv[i] = alpha * s[i] + (beta == 0 ? 0 : beta * cv[i]);
        }
        HostArrays.write(c, cv);
    }

    /**
     * {@link ComputeBackend#centeredCross} in one pass over {@code x} and no copy of it: each chunk of rows is read
     * (as {@link #gemmTn} reads it), less the mean, into a buffer of the chunk's size, which gives the chunk's
     * {@code xc^T xc} and {@code xc^T y}; the chunks' partials are added in chunk order.
     */
    @Override
    protected void doCenteredCross(
            NdArray x, NdArray mean, NdArray y, NdArray gram, NdArray xty, BufferAllocator<?> scratch) {
        int k = (int) x.dim(0);
        int m = (int) x.dim(1);
        double[] mu = HostArrays.doubles(mean);
        int width = m * m + (y == null ? 0 : m);
        int per = reductionRows(k, m);
        double[][] partials = new double[CpuParallel.chunks(k, per)][];
        forRows(k, per, (chunk, first, count) -> {
            double[] av = new double[count * m];
            HostArrays.read(x, (long) first * m, av, count * m);
            for (int i = 0; i < count; i++) {
                int r = i * m;
                for (int j = 0; j < m; j++) {
                    av[r + j] -= mu[j];
                }
            }
            double[] p = new double[width];
            CpuKernels.multiplyAdd(av, 0, 1, m, av, 0, m, p, 0, m, m, m, count);
            if (y != null) {
                double[] yv = new double[count];
                HostArrays.read(y, first, yv, count);
                CpuKernels.multiplyAdd(av, 0, 1, m, yv, 0, 1, p, m * m, 1, m, 1, count);
            }
            partials[chunk] = p;
        });
        double[] s = sum(partials, width);
        HostArrays.write(gram, 0, s, m * m);
        if (y != null) {
            HostArrays.write(xty, 0, Arrays.copyOfRange(s, m * m, width), m);
        }
    }

    /** Reads columns {@code [col, col + w)} of {@code op(b)} (k x n) as a row-major {@code k x w} tile. */
    private static double[] tile(NdArray b, boolean transB, int col, int w, int n, int k) {
        double[] t = new double[k * w];
        if (transB) {
            double[] rows = new double[w * k];
            HostArrays.read(b, (long) col * k, rows, w * k);
            for (int j = 0; j < w; j++) {
                for (int p = 0; p < k; p++) {
                    t[p * w + j] = rows[j * k + p];
                }
            }
        } else {
            double[] row = new double[w];
            for (int p = 0; p < k; p++) {
                HostArrays.read(b, (long) p * n + col, row, w);
                System.arraycopy(row, 0, t, p * w, w);
            }
        }
        return t;
    }

    /** A rectangle of a product's output: rows {@code [first, first + count)}, columns {@code [col, col + w)}. */
    @FunctionalInterface
    private interface Tile {
        void run(int first, int count, int col, int w);
    }

    /** Runs {@code body} over the tiles of an {@code m x n} output whose rows take {@code k} inputs, in parallel. */
    private static void forTiles(int m, int n, int k, Tile body) {
        int per = rowsPerChunk(k);
        int rowChunks = CpuParallel.chunks(m, per);
        int colChunks = CpuParallel.chunks(n, TILE_COLS);
        CpuParallel.forEach(rowChunks * colChunks, t -> {
            int first = (t / colChunks) * per;
            int col = (t % colChunks) * TILE_COLS;
            body.run(first, Math.min(per, m - first), col, Math.min(TILE_COLS, n - col));
        });
    }

    /** {@code c = alpha a op(b) + beta c} for {@code a} (m x k) and many columns: tiles of the output. */
    private static void gemmTiles(
            double alpha, NdArray a, NdArray b, boolean transB, double beta, NdArray c, int m, int n, int k) {
        forTiles(m, n, k, (first, count, col, w) -> {
            double[] av = new double[count * k];
            HostArrays.read(a, (long) first * k, av, count * k);
            double[] t = tile(b, transB, col, w, n, k);
            double[] acc = new double[count * w];
            CpuKernels.multiplyAdd(av, 0, k, 1, t, 0, w, acc, 0, w, count, w, k);
            if (w == n) {
                // the tile is whole rows of c (few output columns: a projection, a linear model's classes): one
                // contiguous read and write, not one a row
                double[] old = beta == 0 ? null : new double[count * w];
                if (old != null) {
                    HostArrays.read(c, (long) first * n, old, count * w);
                }
                for (int i = 0; i < acc.length; i++) {
                    acc[i] = alpha * acc[i] + (old == null ? 0 : beta * old[i]);
                }
                HostArrays.write(c, (long) first * n, acc, count * w);
                return;
            }
            double[] old = new double[w];
            for (int i = 0; i < count; i++) {
                long at = (long) (first + i) * n + col;
                if (beta != 0) {
                    HostArrays.read(c, at, old, w);
                }
                for (int j = 0; j < w; j++) {
                    old[j] = alpha * acc[i * w + j] + (beta == 0 ? 0 : beta * old[j]);
                }
                HostArrays.write(c, at, old, w);
            }
        });
    }

    /** The transpose of row-major {@code rows x cols} {@code v}. */
    private static double[] transpose(double[] v, int rows, int cols) {
        double[] t = new double[v.length];
        for (int i = 0; i < rows; i++) {
            for (int j = 0; j < cols; j++) {
                t[j * rows + i] = v[i * cols + j];
            }
        }
        return t;
    }

    @Override
    protected void doGemv(boolean transA, double alpha, NdArray a, NdArray x, double beta, NdArray y) {
        int rows = (int) a.dim(0);
        int cols = (int) a.dim(1);
        double[] xv = HostArrays.doubles(x);
        if (transA) {
            int per = reductionRows(rows, cols);
            double[][] partials = new double[CpuParallel.chunks(rows, per)][];
            forRows(rows, per, (chunk, first, count) -> {
                double[] av = new double[Math.min(count, rowsPerChunk(cols)) * cols];
                double[] p = new double[cols];
                blocks(first, count, cols, (block, f, c) -> {
                    HostArrays.read(a, (long) f * cols, av, c * cols);
                    for (int i = 0; i < c; i++) {
                        double s = xv[f + i];
                        int r = i * cols;
                        for (int j = 0; j < cols; j++) {
                            p[j] += s * av[r + j];
                        }
                    }
                });
                partials[chunk] = p;
            });
            double[] s = sum(partials, cols);
            double[] yv = beta == 0 ? new double[cols] : HostArrays.doubles(y);
            for (int j = 0; j < cols; j++) {
                yv[j] = alpha * s[j] + (beta == 0 ? 0 : beta * yv[j]);
            }
            HostArrays.write(y, yv);
        } else {
            MemorySegment direct = HostArrays.float64Segment(a);
            MemorySegment yDirect = HostArrays.float64Segment(y);
            forRows(rows, rowsPerChunk(cols), (chunk, first, count) -> {
                long bytes = (long) count * cols * Double.BYTES;
                MemorySegment av = direct != null
                        ? direct.asSlice((long) first * cols * Double.BYTES, bytes)
                        : staged(a, (long) first * cols, count * cols);
                double[] dots = new double[count];
                CpuKernels.rowDots(av, count, cols, xv, dots);
                if (yDirect != null) {
                    // float64 y in host memory: updated in place, one pass
                    for (int i = 0; i < count; i++) {
                        double d = alpha * dots[i];
                        long at = first + i;
                        double v = beta == 0 ? d : d + beta * yDirect.getAtIndex(CpuKernels.F64, at);
                        yDirect.setAtIndex(CpuKernels.F64, at, v);
                    }
                    return;
                }
                double[] yv = new double[count];
                if (beta != 0) {
                    HostArrays.read(y, first, yv, count);
                }
                for (int i = 0; i < count; i++) {
                    double d = alpha * dots[i];
                    yv[i] = beta == 0 ? d : d + beta * yv[i];
                }
                HostArrays.write(y, first, yv, count);
            });
        }
    }

    /** Elements {@code [first, first + count)} of {@code a} read into the heap as doubles, as a segment. */
    private static MemorySegment staged(NdArray a, long first, int count) {
        double[] v = new double[count];
        HostArrays.read(a, first, v, count);
        return MemorySegment.ofArray(v);
    }

    /** Work on a range of elements, read into {@code v} ({@code count} of them, the first at {@code first}). */
    @FunctionalInterface
    private interface Range {
        void run(long first, int count, double[] v);
    }

    /** Reads {@code a} a chunk at a time, runs {@code f} on each chunk in parallel and writes it to {@code out}. */
    private static void mapRanges(NdArray a, NdArray out, Range f) {
        forRows(a.size(), CHUNK_ELEMENTS, (chunk, first, count) -> {
            double[] v = new double[count];
            HostArrays.read(a, first, v, count);
            f.run(first, count, v);
            HostArrays.write(out, first, v, count);
        });
    }

    @Override
    protected void doAxpy(double alpha, NdArray x, NdArray y) {
        mapRanges(y, y, (first, count, v) -> {
            double[] xv = new double[count];
            HostArrays.read(x, first, xv, count);
            for (int i = 0; i < count; i++) {
                v[i] += alpha * xv[i];
            }
        });
    }

    @Override
    protected void doScale(double alpha, NdArray x) {
        mapRanges(x, x, (first, count, v) -> {
            for (int i = 0; i < count; i++) {
                v[i] *= alpha;
            }
        });
    }

    @Override
    protected double doDot(NdArray x, NdArray y) {
        long n = x.size();
        int per = reductionRows(n, 1);
        double[][] partials = new double[CpuParallel.chunks(n, per)][];
        forRows(n, per, (chunk, first, count) -> {
            double[] xv = new double[Math.min(count, CHUNK_ELEMENTS)];
            double[] yv = new double[xv.length];
            double[] acc = new double[1];
            blocks(first, count, 1, (block, f, c) -> {
                HostArrays.read(x, f, xv, c);
                HostArrays.read(y, f, yv, c);
                acc[0] += CpuKernels.dot(xv, 0, yv, 0, c);
            });
            partials[chunk] = acc;
        });
        return sum(partials, 1)[0];
    }

    // ---------------------------------------------------------------- element-wise

    @Override
    protected void doFill(NdArray a, double value) {
        int n = (int) a.size();
        MemorySegment direct = HostArrays.float64Segment(a);
        if (direct != null) {
            // float64 in host memory: written in place
            forRows(n, CHUNK_ELEMENTS, (chunk, first, count) -> {
                for (int i = first; i < first + count; i++) {
                    direct.setAtIndex(CpuKernels.F64, i, value);
                }
            });
        } else if (a.dtype().isFloatingPoint()) {
            forRows(n, CHUNK_ELEMENTS, (chunk, first, count) -> {
                double[] v = new double[count];
                Arrays.fill(v, value);
                HostArrays.write(a, first, v, count);
            });
        } else if (a.dtype() == DType.INT32) {
            int[] v = new int[n];
            Arrays.fill(v, (int) value);
            HostArrays.write(a, v);
        } else {
            long[] v = new long[n];
            Arrays.fill(v, (long) value);
            HostArrays.write(a, v);
        }
    }

    /**
     * {@code f} on one value, in double precision: the reference every backend is held to (the operation codes come
     * from {@code operations.manifest}; a new one needs its case here).
     */
    public static double apply(UnaryOp f, double x) {
        return switch (f) {
            case EXP -> Math.exp(x);
            case LOG -> Math.log(x);
            case SQRT -> Math.sqrt(x);
            case SIGMOID -> x >= 0 ? 1 / (1 + Math.exp(-x)) : Math.exp(x) / (1 + Math.exp(x));
            case TANH -> Math.tanh(x);
        };
    }

    /** {@code f} on one pair, in double precision. */
    public static double apply(BinaryOp f, double a, double b) {
        return switch (f) {
            case ADD -> a + b;
            case SUB -> a - b;
            case MUL -> a * b;
            case DIV -> a / b;
        };
    }

    @Override
    protected void doMap(UnaryOp f, NdArray in, NdArray out) {
        mapRanges(in, out, (first, count, v) -> {
            for (int i = 0; i < count; i++) {
                v[i] = apply(f, v[i]);
            }
        });
    }

    @Override
    protected void doBroadcastRows(BinaryOp f, NdArray a, NdArray v) {
        int rows = (int) a.dim(0);
        int cols = (int) a.dim(1);
        double[] vv = HostArrays.doubles(v);
        forRows(rows, rowsPerChunk(cols), (chunk, first, count) -> {
            double[] av = new double[count * cols];
            HostArrays.read(a, (long) first * cols, av, count * cols);
            for (int r = 0; r < count * cols; r += cols) {
                if (f == BinaryOp.ADD) {
                    for (int j = 0; j < cols; j++) {
                        av[r + j] += vv[j];
                    }
                } else if (f == BinaryOp.SUB) {
                    for (int j = 0; j < cols; j++) {
                        av[r + j] -= vv[j];
                    }
                } else if (f == BinaryOp.MUL) {
                    for (int j = 0; j < cols; j++) {
                        av[r + j] *= vv[j];
                    }
                } else {
                    for (int j = 0; j < cols; j++) {
                        av[r + j] = apply(f, av[r + j], vv[j]);
                    }
                }
            }
            HostArrays.write(a, (long) first * cols, av, count * cols);
        });
    }

    @Override
    protected void doSoftmaxRows(NdArray in, NdArray out) {
        int rows = (int) in.dim(0);
        int cols = (int) in.dim(1);
        forRows(rows, rowsPerChunk(cols), (chunk, first, count) -> {
            double[] v = new double[count * cols];
            HostArrays.read(in, (long) first * cols, v, count * cols);
            for (int r = 0; r < count * cols; r += cols) {
                double max = Double.NEGATIVE_INFINITY;
                for (int j = 0; j < cols; j++) {
                    max = Math.max(max, v[r + j]);
                }
                double sum = 0;
                for (int j = 0; j < cols; j++) {
                    v[r + j] = Math.exp(v[r + j] - max);
                    sum += v[r + j];
                }
                for (int j = 0; j < cols; j++) {
                    v[r + j] /= sum;
                }
            }
            HostArrays.write(out, (long) first * cols, v, count * cols);
        });
    }

    // ---------------------------------------------------------------- reductions

    @Override
    protected double doReduce(Reduction r, NdArray a) {
        double init = switch (r) {
            case SUM -> 0;
            case MIN -> Double.POSITIVE_INFINITY;
            case MAX -> Double.NEGATIVE_INFINITY;
        };
        if (!a.dtype().isFloatingPoint()) {
            double acc = init;
            for (double x : HostArrays.numbers(a)) {
                acc = CpuKernels.reduce(r, acc, x);
            }
            return acc;
        }
        long n = a.size();
        int per = reductionRows(n, 1);
        MemorySegment direct = HostArrays.float64Segment(a);
        double[][] partials = new double[CpuParallel.chunks(n, per)][];
        forRows(n, per, (chunk, first, count) -> {
            double[] v = direct != null ? null : new double[Math.min(count, CHUNK_ELEMENTS)];
            double[] acc = {init};
            blocks(first, count, 1, (block, f, c) -> {
                MemorySegment s;
                if (direct != null) {
                    s = direct.asSlice((long) f * Double.BYTES, (long) c * Double.BYTES);
                } else {
                    HostArrays.read(a, f, v, c);
                    s = MemorySegment.ofArray(v);
                }
                acc[0] = CpuKernels.reduce(r, acc[0], CpuKernels.reduce(r, s, c, init));
            });
            partials[chunk] = acc;
        });
        double acc = init;
        for (double[] p : partials) {
            acc = CpuKernels.reduce(r, acc, p[0]);
        }
        return acc;
    }

    /**
     * Float64 host arrays: the chunks of {@link #doReduce} in parallel, each block summed and then copied while it is
     * in the cache (one read of {@code src} from memory, the same sum as {@code reduce}); others: the default.
     */
    @Override
    protected double doCopySum(NdArray src, NdArray dst) {
        MemorySegment in = HostArrays.float64Segment(src);
        MemorySegment to = HostArrays.float64Segment(dst);
        if (in == null || to == null) {
            return super.doCopySum(src, dst);
        }
        long n = src.size();
        int per = reductionRows(n, 1);
        double[] partials = new double[CpuParallel.chunks(n, per)];
        forRows(n, per, (chunk, first, count) -> {
            double[] acc = {0};
            blocks(first, count, 1, (block, f, c) -> {
                long at = (long) f * Double.BYTES;
                long bytes = (long) c * Double.BYTES;
                MemorySegment s = in.asSlice(at, bytes);
                acc[0] += CpuKernels.reduce(Reduction.SUM, s, c, 0);
                MemorySegment.copy(s, 0, to, at, bytes);
            });
            partials[chunk] = acc[0];
        });
        double acc = 0;
        for (double p : partials) {
            acc += p;
        }
        return acc;
    }

    @Override
    protected void doColumnSums(NdArray a, NdArray out) {
        int rows = (int) a.dim(0);
        int cols = (int) a.dim(1);
        int per = reductionRows(rows, cols);
        double[][] partials = new double[CpuParallel.chunks(rows, per)][];
        forRows(rows, per, (chunk, first, count) -> {
            double[] v = new double[Math.min(count, rowsPerChunk(cols)) * cols];
            double[] s = new double[cols];
            blocks(first, count, cols, (block, f, c) -> {
                HostArrays.read(a, (long) f * cols, v, c * cols);
                for (int r = 0; r < c * cols; r += cols) {
                    for (int j = 0; j < cols; j++) {
                        s[j] += v[r + j];
                    }
                }
            });
            partials[chunk] = s;
        });
        HostArrays.write(out, sum(partials, cols));
    }

    @Override
    protected long doCountEqual(NdArray a, NdArray b) {
        long[] av = HostArrays.longs(a);
        long[] bv = HostArrays.longs(b);
        long n = 0;
        for (int i = 0; i < av.length; i++) {
            if (av[i] == bv[i]) {
                n++;
            }
        }
        return n;
    }

    @Override
    protected void doArgminRows(NdArray a, NdArray index, NdArray min) {
        argRows(a, index, min, true);
    }

    @Override
    protected void doArgmaxRows(NdArray a, NdArray index) {
        argRows(a, index, null, false);
    }

    /** The first smallest ({@code smallest}) or largest element of each row, its value into {@code best}. */
    private static void argRows(NdArray a, NdArray index, NdArray best, boolean smallest) {
        int rows = (int) a.dim(0);
        int cols = (int) a.dim(1);
        forRows(rows, rowsPerChunk(cols), (chunk, first, count) -> {
            double[] v = new double[count * cols];
            HostArrays.read(a, (long) first * cols, v, count * cols);
            int[] idx = new int[count];
            double[] b = new double[count];
            for (int i = 0; i < count; i++) {
                int r = i * cols;
                int arg = 0;
                for (int j = 1; j < cols; j++) {
                    if (smallest ? v[r + j] < v[r + arg] : v[r + j] > v[r + arg]) {
                        arg = j;
                    }
                }
                idx[i] = arg;
                b[i] = v[r + arg];
            }
            HostArrays.write(index, first, idx, count);
            if (best != null) {
                HostArrays.write(best, first, b, count);
            }
        });
    }

    // ---------------------------------------------------------------- fused

    @Override
    protected double doCrossEntropy(NdArray logits, NdArray labels, NdArray grad) {
        int rows = (int) logits.dim(0);
        int cols = (int) logits.dim(1);
        int classes = Math.max(cols, 2);
        int per = reductionRows(rows, cols);
        double[][] partials = new double[CpuParallel.chunks(rows, per)][];
        forRows(rows, per, (chunk, first, count) -> {
            double[] z = new double[count * cols];
            HostArrays.read(logits, (long) first * cols, z, count * cols);
            int[] y = new int[count];
            HostArrays.read(labels, first, y, count);
            double loss = 0;
            for (int i = 0; i < count; i++) {
                if (y[i] < 0 || y[i] >= classes) {
                    throw new IllegalArgumentException("crossEntropy: labels[" + (first + i) + "] = " + y[i]
                            + " (expected: 0 <= label < " + classes + ")");
                }
                if (cols == 1) {
                    double zi = z[i];
                    loss += Math.max(zi, 0) - y[i] * zi + Math.log1p(Math.exp(-Math.abs(zi)));
                    z[i] = apply(UnaryOp.SIGMOID, zi) - y[i];
                } else {
                    int r = i * cols;
                    double max = Double.NEGATIVE_INFINITY;
                    for (int j = 0; j < cols; j++) {
                        max = Math.max(max, z[r + j]);
                    }
                    double sum = 0;
                    for (int j = 0; j < cols; j++) {
                        sum += Math.exp(z[r + j] - max);
                    }
                    double lse = max + Math.log(sum);
                    loss += lse - z[r + y[i]];
                    for (int j = 0; j < cols; j++) {
                        z[r + j] = Math.exp(z[r + j] - lse);
                    }
                    z[r + y[i]] -= 1;
                }
            }
            partials[chunk] = new double[] {loss};
            HostArrays.write(grad, (long) first * cols, z, count * cols);
        });
        return sum(partials, 1)[0];
    }

    @Override
    protected void doSquaredDistances(NdArray x, NdArray y, NdArray out) {
        int n = (int) x.dim(0);
        int m = (int) y.dim(0);
        int d = (int) x.dim(1);
        forTiles(n, m, d, (first, count, col, w) -> {
            double[] xv = new double[count * d];
            HostArrays.read(x, (long) first * d, xv, count * d);
            double[] t = tile(y, true, col, w, m, d);
            double[] yn = new double[w];
            for (int p = 0; p < d; p++) {
                for (int j = 0; j < w; j++) {
                    yn[j] += t[p * w + j] * t[p * w + j];
                }
            }
            double[] acc = new double[count * w];
            CpuKernels.multiplyAdd(xv, 0, d, 1, t, 0, w, acc, 0, w, count, w, d);
            double[] row = new double[w];
            for (int i = 0; i < count; i++) {
                double xn = CpuKernels.dot(xv, i * d, xv, i * d, d);
                for (int j = 0; j < w; j++) {
                    row[j] = Math.max(0, -2 * acc[i * w + j] + xn + yn[j]);
                }
                HostArrays.write(out, (long) (first + i) * m + col, row, w);
            }
        });
    }

    /** Rows of one block of {@link #doNearestRows}: their distances to every center are held at once. */
    private static final int NEAREST_ROWS = 64;

    /**
     * Chunks of rows in parallel; in each, blocks of {@value #NEAREST_ROWS} rows get their squared distances to all
     * centers from the product kernels' register blocks ({@link CpuKernels#squaredDifferences}, the centers held
     * transposed), then each row takes the first smallest.
     */
    @Override
    protected void doNearestRows(NdArray x, NdArray y, NdArray index, NdArray min) {
        int n = (int) x.dim(0);
        int m = (int) y.dim(0);
        int d = (int) x.dim(1);
        double[] yt = transpose(HostArrays.doubles(y), m, d);
        forRows(n, rowsPerChunk(d), (chunk, first, count) -> {
            double[] xv = new double[count * d];
            HostArrays.read(x, (long) first * d, xv, count * d);
            int[] idx = new int[count];
            double[] best = new double[count];
            double[] dist = new double[Math.min(count, NEAREST_ROWS) * m];
            for (int b = 0; b < count; b += NEAREST_ROWS) {
                int rows = Math.min(NEAREST_ROWS, count - b);
                CpuKernels.squaredDifferences(xv, b * d, rows, d, yt, m, m, dist, m);
                for (int i = 0; i < rows; i++) {
                    int at = i * m;
                    int arg = 0;
                    double nearest = dist[at];
                    for (int c = 1; c < m; c++) {
                        if (dist[at + c] < nearest) {
                            nearest = dist[at + c];
                            arg = c;
                        }
                    }
                    idx[b + i] = arg;
                    best[b + i] = nearest;
                }
            }
            HostArrays.write(index, first, idx, count);
            if (min != null) {
                HostArrays.write(min, first, best, count);
            }
        });
    }

    // ---------------------------------------------------------------- indexing

    @Override
    protected void doGatherRows(NdArray src, NdArray index, NdArray out) {
        long rows = src.dim(0);
        int rowBytes = (int) (src.rank() == 2 ? src.dim(1) : 1) * src.dtype().byteSize();
        byte[] s = HostArrays.bytes(src);
        long[] idx = HostArrays.longs(index);
        byte[] o = new byte[(int) out.byteSize()];
        for (int i = 0; i < idx.length; i++) {
            if (idx[i] < 0 || idx[i] >= rows) {
                throw new IllegalArgumentException("gatherRows: index[" + i + "] = " + idx[i]
                        + " (expected: 0 <= index < " + rows + ", the rows of src)");
            }
            System.arraycopy(s, (int) idx[i] * rowBytes, o, i * rowBytes, rowBytes);
        }
        HostArrays.writeBytes(out, o);
    }

    /** Elements of one {@link #scatterAdd}'s partial sums at most, all its chunks' together (2 MiB of doubles). */
    private static final int SCATTER_PARTIAL_ELEMENTS = 1 << 18;

    @Override
    protected void doScatterAddRows(NdArray src, NdArray index, NdArray out) {
        scatterAdd("scatterAddRows", src, index, out, "the rows of out");
    }

    @Override
    protected void doBincount(NdArray index, NdArray out) {
        scatterAdd("bincount", null, index, out, "the length of out");
    }

    /**
     * Adds row {@code i} of {@code src} (1 where {@code src} is {@code null}: a count) into row {@code index[i]} of
     * {@code out}: chunks of rows in parallel, each into its own partial sums (k x d; so few chunks that all the
     * partials hold at most {@value #SCATTER_PARTIAL_ELEMENTS} elements), read a block at a time, the partials then
     * added in chunk order and into {@code out}. A label outside {@code [0, k)} fails the call naming the first such
     * one, {@code out} unchanged.
     */
    private static void scatterAdd(String op, NdArray src, NdArray index, NdArray out, String what) {
        int rows = (int) index.dim(0);
        int cols = src != null && src.rank() == 2 ? (int) src.dim(1) : 1;
        int k = (int) out.dim(0);
        int width = k * cols;
        int parts = Math.clamp(SCATTER_PARTIAL_ELEMENTS / Math.max(width, 1), 1, MAX_PARTIALS);
        int per = Math.max(rowsPerChunk(cols), CpuParallel.chunks(rows, parts));
        int chunks = CpuParallel.chunks(rows, per);
        double[][] partials = new double[chunks][];
        int[] bad = new int[chunks];
        Arrays.fill(bad, -1);
        forRows(rows, per, (chunk, first, count) -> {
            int block = Math.min(count, rowsPerChunk(cols));
            double[] v = src == null ? null : new double[block * cols];
            int[] idx = new int[block];
            double[] p = new double[width];
            for (int f = first; f < first + count && bad[chunk] < 0; f += block) {
                int c = Math.min(block, first + count - f);
                HostArrays.read(index, f, idx, c);
                if (v != null) {
                    HostArrays.read(src, (long) f * cols, v, c * cols);
                }
                for (int i = 0; i < c; i++) {
                    int label = idx[i];
                    if (label < 0 || label >= k) {
                        bad[chunk] = f + i;
                        break;
                    }
                    if (v == null) {
                        p[label] += 1;
                        continue;
                    }
                    int from = i * cols;
                    int to = label * cols;
                    for (int j = 0; j < cols; j++) {
                        p[to + j] += v[from + j];
                    }
                }
            }
            partials[chunk] = p;
        });
        for (int at : bad) {
            if (at >= 0) {
                int[] label = new int[1];
                HostArrays.read(index, at, label, 1);
                throw new IllegalArgumentException(
                        op + ": index[" + at + "] = " + label[0] + " (expected: 0 <= index < " + k + ", " + what + ")");
            }
        }
        double[] s = sum(partials, width);
        double[] o = HostArrays.doubles(out);
        for (int j = 0; j < width; j++) {
            o[j] += s[j];
        }
        HostArrays.write(out, o);
    }

    @Override
    protected void doCountRows(NdArray labels, NdArray out) {
        int rows = (int) labels.dim(0);
        int k = (int) labels.dim(1);
        int classes = (int) out.dim(1);
        int[] l = HostArrays.ints(labels);
        double[] o = new double[rows * classes];
        for (int i = 0; i < rows; i++) {
            for (int j = 0; j < k; j++) {
                int c = l[i * k + j];
                if (c < 0 || c >= classes) {
                    throw new IllegalArgumentException("countRows: labels[" + i + ", " + j + "] = " + c
                            + " (expected: 0 <= label < " + classes + ", the columns of out)");
                }
                o[i * classes + c] += 1;
            }
        }
        HostArrays.write(out, o);
    }

    // ---------------------------------------------------------------- neighbors

    /** Queries one task of {@link #doKNearestRows} takes (held transposed, d x 64 doubles, in the L1 cache). */
    private static final int KNN_QUERIES = 64;
    /** Tasks {@link #doKNearestRows} aims at: chunks of queries times parts of the rows, from the shapes only. */
    private static final int KNN_TASKS = 64;
    /** Rows of one part at least (more parts: more partial lists to merge). */
    private static final int KNN_PART_ROWS = 4096;
    /** The most neighbors per query for which the rows are cut into parts (each part keeps k per query). */
    private static final int KNN_PART_MAX_K = 64;

    /**
     * Chunks of {@value #KNN_QUERIES} queries against parts of the rows of {@code x}, in parallel: each task reads
     * its rows a block at a time (a cache's worth), computes the block's squared differences to its queries on the
     * product kernels' register blocks ({@link CpuKernels#squaredDifferences}) and offers each distance below a
     * query's current k-th to that query's bounded heap. The parts' sorted lists are merged per query in part order.
     * Every candidate is ranked by (distance, row), a total order, so the result is the same however the work is
     * cut, and the distances are the sums of squared differences themselves: no cancellation, no second pass. Float32
     * distances are ranked as they are written, rounded to float32 (equal ones by row, as on CUDA).
     */
    @Override
    protected void doKNearestRows(NdArray q, NdArray x, long idOffset, NdArray outDist, NdArray outIds) {
        int m = (int) q.dim(0);
        int n = (int) x.dim(0);
        int d = (int) x.dim(1);
        int k = (int) outDist.dim(1);
        if (m == 0) {
            return;
        }
        int chunks = CpuParallel.chunks(m, KNN_QUERIES);
        int wanted = k > KNN_PART_MAX_K ? 1 : CpuParallel.chunks(KNN_TASKS, chunks);
        int perPart = CpuParallel.chunks(n, Math.clamp(wanted, 1, Math.max(1, n / KNN_PART_ROWS)));
        int parts = CpuParallel.chunks(n, perPart);
        Candidates[] found = new Candidates[chunks * parts];
        CpuParallel.forEach(chunks * parts, t -> {
            int first = t / parts * KNN_QUERIES;
            int from = t % parts * perPart;
            found[t] = nearest(q, first, Math.min(KNN_QUERIES, m - first), x, from, Math.min(n, from + perPart), d, k);
        });
        CpuParallel.forEach(chunks, c -> {
            Candidates all = found[c * parts];
            for (int p = 1; p < parts; p++) {
                all = all.merge(found[c * parts + p], k);
            }
            int first = c * KNN_QUERIES;
            int count = all.size.length;
            long[] ids = new long[count * k];
            for (int i = 0; i < ids.length; i++) {
                ids[i] = all.ids[i] + idOffset;
            }
            HostArrays.write(outDist, (long) first * k, all.dist, count * k);
            HostArrays.write(outIds, (long) first * k, ids, count * k);
        });
    }

    /** The {@code k} nearest of rows {@code [from, to)} of {@code x} to queries {@code [first, first + count)}. */
    private static Candidates nearest(NdArray q, int first, int count, NdArray x, int from, int to, int d, int k) {
        double[] qv = new double[count * d];
        HostArrays.read(q, (long) first * d, qv, count * d);
        double[] qt = transpose(qv, count, d);
        int block = Math.max(4, CHUNK_ELEMENTS / 4 / Math.max(d, 1));
        double[] xb = new double[Math.min(block, to - from) * d];
        double[] dist = new double[Math.min(block, to - from) * count];
        Candidates heaps = new Candidates(count, k);
        boolean float32 = q.dtype() == DType.FLOAT32;
        for (int r = from; r < to; r += block) {
            int rows = Math.min(block, to - r);
            HostArrays.read(x, (long) r * d, xb, rows * d);
            CpuKernels.squaredDifferences(xb, 0, rows, d, qt, count, count, dist, count);
            for (int i = 0; i < rows; i++) {
                int at = i * count;
                for (int j = 0; j < count; j++) {
                    double v = float32 ? (float) dist[at + j] : dist[at + j];
                    if (!(v >= heaps.bound[j])) {
                        heaps.offer(j, v, r + i);
                    }
                }
            }
        }
        heaps.sort();
        return heaps;
    }

    /**
     * The best {@code k} (distance, row) pairs of each of some queries, by (distance, row): while offered, a bounded
     * max-heap per query whose root is the worst kept; after {@link #sort}, ascending lists.
     */
    private static final class Candidates {
        final int k;
        final double[] dist;
        final int[] ids;
        final int[] size;
        /** Per query: the root's distance once the heap is full, NaN before (every offer is then looked at). */
        final double[] bound;

        Candidates(int queries, int k) {
            this.k = k;
            this.dist = new double[queries * k];
            this.ids = new int[queries * k];
            this.size = new int[queries];
            this.bound = new double[queries];
            Arrays.fill(bound, Double.NaN);
        }

        /** Whether (a, ai) ranks after (b, bi): distances as {@link Double#compare} orders them, then rows. */
        private static boolean after(double a, int ai, double b, int bi) {
            int c = Double.compare(a, b);
            return c > 0 || (c == 0 && ai > bi);
        }

        void offer(int query, double v, int id) {
            int base = query * k;
            int s = size[query];
            if (s < k) {
                int c = s;
                while (c > 0) {
                    int parent = (c - 1) / 2;
                    if (!after(v, id, dist[base + parent], ids[base + parent])) {
                        break;
                    }
                    dist[base + c] = dist[base + parent];
                    ids[base + c] = ids[base + parent];
                    c = parent;
                }
                dist[base + c] = v;
                ids[base + c] = id;
                size[query] = s + 1;
            } else if (after(dist[base], ids[base], v, id)) {
                siftDown(base, k, v, id);
            } else {
                return;
            }
            if (size[query] == k) {
                bound[query] = dist[base];
            }
        }

        /** Puts (v, id) at the root of the heap of {@code length} at {@code base} and sifts it down. */
        private void siftDown(int base, int length, double v, int id) {
            int c = 0;
            while (true) {
                int child = 2 * c + 1;
                if (child >= length) {
                    break;
                }
                if (child + 1 < length
                        && after(
                                dist[base + child + 1], ids[base + child + 1], dist[base + child], ids[base + child])) {
                    child++;
                }
                if (!after(dist[base + child], ids[base + child], v, id)) {
                    break;
                }
                dist[base + c] = dist[base + child];
                ids[base + c] = ids[base + child];
                c = child;
            }
            dist[base + c] = v;
            ids[base + c] = id;
        }

        /** Turns every heap into its ascending list (heap sort). */
        void sort() {
            for (int query = 0; query < size.length; query++) {
                int base = query * k;
                for (int end = size[query] - 1; end > 0; end--) {
                    double v = dist[base + end];
                    int id = ids[base + end];
                    dist[base + end] = dist[base];
                    ids[base + end] = ids[base];
                    siftDown(base, end, v, id);
                }
            }
        }

        /** The {@code k} best of this and {@code other} (both sorted, for the same queries), sorted. */
        Candidates merge(Candidates other, int k) {
            Candidates out = new Candidates(size.length, k);
            for (int query = 0; query < size.length; query++) {
                int a = 0;
                int b = 0;
                int ab = query * this.k;
                int bb = query * other.k;
                int total = Math.min(k, size[query] + other.size[query]);
                for (int o = 0; o < total; o++) {
                    boolean takeA = b >= other.size[query]
                            || (a < size[query]
                                    && !after(dist[ab + a], ids[ab + a], other.dist[bb + b], other.ids[bb + b]));
                    int at = query * k + o;
                    if (takeA) {
                        out.dist[at] = dist[ab + a];
                        out.ids[at] = ids[ab + a++];
                    } else {
                        out.dist[at] = other.dist[bb + b];
                        out.ids[at] = other.ids[bb + b++];
                    }
                }
                out.size[query] = total;
            }
            return out;
        }
    }

    @Override
    protected void doSmallestK(NdArray values, long idOffset, NdArray outValues, NdArray outIds) {
        int rows = (int) values.dim(0);
        int cols = (int) values.dim(1);
        int k = (int) outValues.dim(1);
        forRows(rows, rowsPerChunk(cols), (chunk, first, count) -> {
            double[] v = new double[count * cols];
            HostArrays.read(values, (long) first * cols, v, count * cols);
            double[] ov = new double[count * k];
            long[] oi = new long[count * k];
            double[] bestV = new double[k];
            int[] bestI = new int[k];
            for (int i = 0; i < count; i++) {
                int r = i * cols;
                int found = 0;
                for (int j = 0; j < cols; j++) {
                    double x = v[r + j];
                    if (found == k && Double.compare(x, bestV[k - 1]) >= 0) {
                        continue;
                    }
                    int p = found < k ? found++ : k - 1;
                    while (p > 0 && Double.compare(bestV[p - 1], x) > 0) {
                        bestV[p] = bestV[p - 1];
                        bestI[p] = bestI[p - 1];
                        p--;
                    }
                    bestV[p] = x;
                    bestI[p] = j;
                }
                for (int q = 0; q < k; q++) {
                    ov[i * k + q] = bestV[q];
                    oi[i * k + q] = bestI[q] + idOffset;
                }
            }
            HostArrays.write(outValues, (long) first * k, ov, count * k);
            HostArrays.write(outIds, (long) first * k, oi, count * k);
        });
    }

    @Override
    protected void doMergeNeighbors(
            NdArray distA, NdArray idsA, NdArray distB, NdArray idsB, NdArray outDist, NdArray outIds) {
        int rows = (int) distA.dim(0);
        int ka = (int) distA.dim(1);
        int kb = (int) distB.dim(1);
        int k = (int) outDist.dim(1);
        double[] da = HostArrays.doubles(distA);
        double[] db = HostArrays.doubles(distB);
        long[] ia = HostArrays.longs(idsA);
        long[] ib = HostArrays.longs(idsB);
        double[] od = new double[rows * k];
        long[] oi = new long[rows * k];
        for (int i = 0; i < rows; i++) {
            int a = 0;
            int b = 0;
            for (int q = 0; q < k; q++) {
                boolean takeA = b >= kb || (a < ka && Double.compare(da[i * ka + a], db[i * kb + b]) <= 0);
                if (takeA) {
                    od[i * k + q] = da[i * ka + a];
                    oi[i * k + q] = ia[i * ka + a];
                    a++;
                } else {
                    od[i * k + q] = db[i * kb + b];
                    oi[i * k + q] = ib[i * kb + b];
                    b++;
                }
            }
        }
        HostArrays.write(outDist, od);
        HostArrays.write(outIds, oi);
    }

    // ---------------------------------------------------------------- forests

    /** Rows one task of {@link #doPredictForest} walks through each tree (their inputs and outputs in the L1 cache). */
    private static final int FOREST_ROWS = 256;

    /**
     * Blocks of {@value #FOREST_ROWS} rows in parallel, each walked through one tree after another
     * ({@link ForestLayout.Walker}): a tree's nodes stay in the cache while the block passes, and each row's sum runs
     * over the trees in their order, so the result is the same for every thread count.
     */
    @Override
    protected void doPredictForest(OpaqueBlob forest, ForestLayout.Info info, NdArray x, NdArray out) {
        MemorySegment bytes;
        if (forest.buffer() instanceof HostBuffer h) {
            bytes = h.segment();
        } else {
            byte[] copy = new byte[Math.toIntExact(forest.byteSize())];
            CopyEngine.copyToSegment(forest.buffer(), 0, MemorySegment.ofArray(copy));
            bytes = MemorySegment.ofArray(copy);
        }
        ForestLayout.Walker walker = new ForestLayout.Walker(bytes, info);
        int d = info.features();
        int outputs = info.outputs();
        forRows(x.dim(0), FOREST_ROWS, (chunk, first, count) -> {
            double[] xv = new double[count * d];
            HostArrays.read(x, (long) first * d, xv, count * d);
            double[] o = new double[count * outputs];
            walker.predict(xv, count, o);
            HostArrays.write(out, (long) first * outputs, o, count * outputs);
        });
    }
}
