package io.cuwire.ml.internal;

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
import java.util.stream.IntStream;

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
 * out). Large products run on the common fork-join pool. Stateless and thread-safe.
 */
public final class CpuBackend extends ComputeBackend {
    private static final CpuBackend INSTANCE = new CpuBackend();

    /** Products with at least this many multiply-adds run in parallel. */
    private static final long PARALLEL_WORK = 1L << 18;

    private CpuBackend() {
    }

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
        return a.kind().isHostAccessible() || ((DeviceBuffer) a.buffer()).device().platform().equals("emulated");
    }

    // ---------------------------------------------------------------- products

    @Override
    protected void doGemm(boolean transA, boolean transB, double alpha, NdArray a, NdArray b, double beta,
            NdArray c) {
        int m = (int) c.dim(0);
        int n = (int) c.dim(1);
        int k = (int) (transA ? a.dim(0) : a.dim(1));
        double[] av = HostArrays.doubles(a);
        double[] bv = HostArrays.doubles(b);
        double[] opA = transA ? transpose(av, k, m) : av;
        double[] opB = transB ? transpose(bv, n, k) : bv;
        double[] cv = beta == 0 ? new double[m * n] : HostArrays.doubles(c);
        multiply(alpha, opA, opB, beta, cv, m, n, k);
        HostArrays.write(c, cv);
    }

    /** {@code c = alpha a b + beta c} for row-major {@code a} (m x k), {@code b} (k x n), {@code c} (m x n). */
    static void multiply(double alpha, double[] a, double[] b, double beta, double[] c, int m, int n, int k) {
        IntStream rows = IntStream.range(0, m);
        if ((long) m * n * k >= PARALLEL_WORK && m > 1) {
            rows = rows.parallel();
        }
        rows.forEach(i -> {
            int cr = i * n;
            if (beta == 0) {
                Arrays.fill(c, cr, cr + n, 0.0);
            } else if (beta != 1) {
                for (int j = 0; j < n; j++) {
                    c[cr + j] *= beta;
                }
            }
            int ar = i * k;
            for (int p = 0; p < k; p++) {
                double aip = alpha * a[ar + p];
                int br = p * n;
                for (int j = 0; j < n; j++) {
                    c[cr + j] += aip * b[br + j];
                }
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
        double[] av = HostArrays.doubles(a);
        double[] xv = HostArrays.doubles(x);
        double[] yv = beta == 0 ? new double[(int) y.size()] : HostArrays.doubles(y);
        if (beta != 1) {
            for (int i = 0; i < yv.length; i++) {
                yv[i] = beta == 0 ? 0 : yv[i] * beta;
            }
        }
        if (transA) {
            for (int i = 0; i < rows; i++) {
                double s = alpha * xv[i];
                int r = i * cols;
                for (int j = 0; j < cols; j++) {
                    yv[j] += s * av[r + j];
                }
            }
        } else {
            for (int i = 0; i < rows; i++) {
                double s = 0;
                int r = i * cols;
                for (int j = 0; j < cols; j++) {
                    s += av[r + j] * xv[j];
                }
                yv[i] += alpha * s;
            }
        }
        HostArrays.write(y, yv);
    }

    @Override
    protected void doAxpy(double alpha, NdArray x, NdArray y) {
        double[] xv = HostArrays.doubles(x);
        double[] yv = HostArrays.doubles(y);
        for (int i = 0; i < yv.length; i++) {
            yv[i] += alpha * xv[i];
        }
        HostArrays.write(y, yv);
    }

    @Override
    protected void doScale(double alpha, NdArray x) {
        double[] v = HostArrays.doubles(x);
        for (int i = 0; i < v.length; i++) {
            v[i] *= alpha;
        }
        HostArrays.write(x, v);
    }

    @Override
    protected double doDot(NdArray x, NdArray y) {
        double[] xv = HostArrays.doubles(x);
        double[] yv = HostArrays.doubles(y);
        double s = 0;
        for (int i = 0; i < xv.length; i++) {
            s += xv[i] * yv[i];
        }
        return s;
    }

    // ---------------------------------------------------------------- element-wise

    @Override
    protected void doFill(NdArray a, double value) {
        int n = (int) a.size();
        if (a.dtype().isFloatingPoint()) {
            double[] v = new double[n];
            Arrays.fill(v, value);
            HostArrays.write(a, v);
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
        double[] v = HostArrays.doubles(in);
        for (int i = 0; i < v.length; i++) {
            v[i] = apply(f, v[i]);
        }
        HostArrays.write(out, v);
    }

    @Override
    protected void doBroadcastRows(BinaryOp f, NdArray a, NdArray v) {
        double[] av = HostArrays.doubles(a);
        double[] vv = HostArrays.doubles(v);
        int cols = vv.length;
        for (int i = 0; i < av.length; i++) {
            av[i] = apply(f, av[i], vv[i % cols]);
        }
        HostArrays.write(a, av);
    }

    @Override
    protected void doSoftmaxRows(NdArray in, NdArray out) {
        int rows = (int) in.dim(0);
        int cols = (int) in.dim(1);
        double[] v = HostArrays.doubles(in);
        for (int i = 0; i < rows; i++) {
            int r = i * cols;
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
        HostArrays.write(out, v);
    }

    // ---------------------------------------------------------------- reductions

    @Override
    protected double doReduce(Reduction r, NdArray a) {
        double[] v = HostArrays.numbers(a);
        double acc = switch (r) {
            case SUM -> 0;
            case MIN -> Double.POSITIVE_INFINITY;
            case MAX -> Double.NEGATIVE_INFINITY;
        };
        for (double x : v) {
            acc = switch (r) {
                case SUM -> acc + x;
                case MIN -> Math.min(acc, x);
                case MAX -> Math.max(acc, x);
            };
        }
        return acc;
    }

    @Override
    protected void doColumnSums(NdArray a, NdArray out) {
        int cols = (int) a.dim(1);
        double[] v = HostArrays.doubles(a);
        double[] s = new double[cols];
        for (int i = 0; i < v.length; i++) {
            s[i % cols] += v[i];
        }
        HostArrays.write(out, s);
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
        int rows = (int) a.dim(0);
        int cols = (int) a.dim(1);
        double[] v = HostArrays.doubles(a);
        int[] idx = new int[rows];
        double[] best = new double[rows];
        for (int i = 0; i < rows; i++) {
            int r = i * cols;
            int arg = 0;
            for (int j = 1; j < cols; j++) {
                if (v[r + j] < v[r + arg]) {
                    arg = j;
                }
            }
            idx[i] = arg;
            best[i] = v[r + arg];
        }
        HostArrays.write(index, idx);
        if (min != null) {
            HostArrays.write(min, best);
        }
    }

    @Override
    protected void doArgmaxRows(NdArray a, NdArray index) {
        int rows = (int) a.dim(0);
        int cols = (int) a.dim(1);
        double[] v = HostArrays.doubles(a);
        int[] idx = new int[rows];
        for (int i = 0; i < rows; i++) {
            int r = i * cols;
            int arg = 0;
            for (int j = 1; j < cols; j++) {
                if (v[r + j] > v[r + arg]) {
                    arg = j;
                }
            }
            idx[i] = arg;
        }
        HostArrays.write(index, idx);
    }

    // ---------------------------------------------------------------- fused

    @Override
    protected double doCrossEntropy(NdArray logits, NdArray labels, NdArray grad) {
        int rows = (int) logits.dim(0);
        int cols = (int) logits.dim(1);
        double[] z = HostArrays.doubles(logits);
        int[] y = HostArrays.ints(labels);
        int classes = Math.max(cols, 2);
        double loss = 0;
        for (int i = 0; i < rows; i++) {
            if (y[i] < 0 || y[i] >= classes) {
                throw new IllegalArgumentException("crossEntropy: labels[" + i + "] = " + y[i]
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
        HostArrays.write(grad, z);
        return loss;
    }

    @Override
    protected void doSquaredDistances(NdArray x, NdArray y, NdArray out) {
        int n = (int) x.dim(0);
        int m = (int) y.dim(0);
        int d = (int) x.dim(1);
        double[] xv = HostArrays.doubles(x);
        double[] yv = HostArrays.doubles(y);
        double[] xn = rowSquaredNorms(xv, n, d);
        double[] yn = rowSquaredNorms(yv, m, d);
        double[] g = new double[n * m];
        multiply(-2, xv, transpose(yv, m, d), 0, g, n, m, d);
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < m; j++) {
                g[i * m + j] = Math.max(0, g[i * m + j] + xn[i] + yn[j]);
            }
        }
        HostArrays.write(out, g);
    }

    @Override
    protected void doNearestRows(NdArray x, NdArray y, NdArray index, NdArray min) {
        int n = (int) x.dim(0);
        int m = (int) y.dim(0);
        int d = (int) x.dim(1);
        double[] xv = HostArrays.doubles(x);
        double[] yv = HostArrays.doubles(y);
        int[] idx = new int[n];
        double[] best = new double[n];
        IntStream rows = IntStream.range(0, n);
        if ((long) n * m * d >= PARALLEL_WORK && n > 1) {
            rows = rows.parallel();
        }
        rows.forEach(i -> {
            int arg = 0;
            double nearest = 0;
            for (int c = 0; c < m; c++) {
                double s = 0;
                for (int j = 0; j < d; j++) {
                    double diff = xv[i * d + j] - yv[c * d + j];
                    s += diff * diff;
                }
                if (c == 0 || s < nearest) {
                    nearest = s;
                    arg = c;
                }
            }
            idx[i] = arg;
            best[i] = nearest;
        });
        HostArrays.write(index, idx);
        if (min != null) {
            HostArrays.write(min, best);
        }
    }

    private static double[] rowSquaredNorms(double[] v, int rows, int cols) {
        double[] s = new double[rows];
        for (int i = 0; i < rows; i++) {
            double acc = 0;
            for (int j = 0; j < cols; j++) {
                double e = v[i * cols + j];
                acc += e * e;
            }
            s[i] = acc;
        }
        return s;
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

    @Override
    protected void doScatterAddRows(NdArray src, NdArray index, NdArray out) {
        int cols = src.rank() == 2 ? (int) src.dim(1) : 1;
        long k = out.dim(0);
        double[] s = HostArrays.doubles(src);
        int[] idx = HostArrays.ints(index);
        double[] o = HostArrays.doubles(out);
        for (int i = 0; i < idx.length; i++) {
            if (idx[i] < 0 || idx[i] >= k) {
                throw new IllegalArgumentException("scatterAddRows: index[" + i + "] = " + idx[i]
                        + " (expected: 0 <= index < " + k + ", the rows of out)");
            }
            int from = i * cols;
            int to = idx[i] * cols;
            for (int j = 0; j < cols; j++) {
                o[to + j] += s[from + j];
            }
        }
        HostArrays.write(out, o);
    }

    @Override
    protected void doBincount(NdArray index, NdArray out) {
        int[] idx = HostArrays.ints(index);
        double[] o = HostArrays.doubles(out);
        for (int i = 0; i < idx.length; i++) {
            if (idx[i] < 0 || idx[i] >= o.length) {
                throw new IllegalArgumentException("bincount: index[" + i + "] = " + idx[i]
                        + " (expected: 0 <= index < " + o.length + ", the length of out)");
            }
            o[idx[i]] += 1;
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

    @Override
    protected void doSmallestK(NdArray values, long idOffset, NdArray outValues, NdArray outIds) {
        int rows = (int) values.dim(0);
        int cols = (int) values.dim(1);
        int k = (int) outValues.dim(1);
        double[] v = HostArrays.doubles(values);
        double[] ov = new double[rows * k];
        long[] oi = new long[rows * k];
        double[] bestV = new double[k];
        int[] bestI = new int[k];
        for (int i = 0; i < rows; i++) {
            int r = i * cols;
            int count = 0;
            for (int j = 0; j < cols; j++) {
                double x = v[r + j];
                if (count == k && Double.compare(x, bestV[k - 1]) >= 0) {
                    continue;
                }
                int p = count < k ? count++ : k - 1;
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
        HostArrays.write(outValues, ov);
        HostArrays.write(outIds, oi);
    }

    @Override
    protected void doMergeNeighbors(NdArray distA, NdArray idsA, NdArray distB, NdArray idsB, NdArray outDist,
            NdArray outIds) {
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
        int rows = (int) x.dim(0);
        double[] xv = HostArrays.doubles(x);
        double[] o = new double[rows * info.outputs()];
        ForestLayout.predict(bytes, info, xv, rows, o);
        HostArrays.write(out, o);
    }
}
