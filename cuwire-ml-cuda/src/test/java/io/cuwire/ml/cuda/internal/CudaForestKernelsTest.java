package io.cuwire.ml.cuda.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.cuda.Cuda;
import io.cuwire.cuda.CudaTestSupport;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.DType;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.DeviceStream;
import io.cuwire.memory.NdArray;
import io.cuwire.ml.MlTesting;
import io.cuwire.test.TestRandom;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * The tree-growing kernels of {@link MlKernels} (quantize, histograms, best split, partition) on one level of a tree
 * against the same computation written out here as the CPU backend's histogram scan does it ({@code Cart}'s binned
 * scan): class counts and integer target sums are exact, so codes, histograms, splits, scores and slots must agree
 * bit for bit.
 */
@Tag("gpu")
class CudaForestKernelsTest {
    private static final int BINS = MlKernels.FOREST_BINS;

    private BufferAllocator<DeviceBuffer> gpu;
    private DeviceStream stream;
    private final List<NdArray> open = new ArrayList<>();

    @BeforeEach
    void start() {
        CudaTestSupport.assumeCuda();
        gpu = Cuda.device(0).newAllocator("cuda-forest-kernels", BufferAllocator.UNLIMITED);
        stream = Cuda.device(0).newStream();
    }

    @AfterEach
    void stop() {
        if (gpu != null) {
            open.forEach(NdArray::close);
            stream.close();
            assertEquals(0, gpu.allocatedBytes(), "allocator balance after closing everything");
            gpu.close();
        }
    }

    private DeviceBuffer ints(int[] v) {
        NdArray a = NdArray.fromArray(gpu, v, v.length);
        open.add(a);
        return (DeviceBuffer) a.buffer();
    }

    private DeviceBuffer longs(long[] v) {
        NdArray a = NdArray.fromArray(gpu, v, v.length);
        open.add(a);
        return (DeviceBuffer) a.buffer();
    }

    private DeviceBuffer doubles(double[] v) {
        NdArray a = NdArray.fromArray(gpu, v, v.length);
        open.add(a);
        return (DeviceBuffer) a.buffer();
    }

    private DeviceBuffer bytes(int n) {
        NdArray a = NdArray.fromArray(gpu, new byte[n], n);
        open.add(a);
        return (DeviceBuffer) a.buffer();
    }

    private NdArray last() {
        return open.getLast();
    }

    private double[] read(DeviceBuffer b) {
        stream.synchronize();
        for (NdArray a : open) {
            if (a.buffer() == b) {
                return MlTesting.values(a);
            }
        }
        throw new IllegalArgumentException("not a buffer of this test");
    }

    /** A split found by the scan written out as Cart's binned scan does it. */
    private record Split(int t, int bin, double score) {}

    @Test
    void shouldSplitAndPartitionOneLevelAsTheCpuScanDoes(TestInfo info) {
        SplittableRandom r = TestRandom.create(info);
        int n = 4000;
        int d = 5;
        int classes = 3;
        double[] x = new double[n * d];
        int[] labels = new int[n];
        double[] values = new double[n];
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < d; j++) {
                x[i * d + j] = j == 3 ? r.nextGaussian() : r.nextInt(30 + 20 * j) - 10;
            }
            double s = x[i * d] - 0.5 * x[i * d + 1] + 4 * x[i * d + 3] + r.nextInt(8);
            labels[i] = s > 8 ? 2 : s > -4 ? 1 : 0;
            values[i] = Math.round(s);
        }
        // edges: between consecutive distinct values, or every 16th sorted value for the gaussian feature
        List<double[]> edgeList = new ArrayList<>();
        for (int j = 0; j < d; j++) {
            double[] col = new double[n];
            for (int i = 0; i < n; i++) {
                col[i] = x[i * d + j];
            }
            double[] u = Arrays.stream(col).sorted().distinct().toArray();
            int step = Math.max(1, u.length / 200);
            List<Double> e = new ArrayList<>();
            for (int a = step; a < u.length; a += step) {
                e.add(u[a - 1] + (u[a] - u[a - 1]) / 2);
            }
            edgeList.add(e.stream().mapToDouble(Double::doubleValue).toArray());
        }
        long[] edgeStart = new long[d + 1];
        for (int j = 0; j < d; j++) {
            edgeStart[j + 1] = edgeStart[j] + edgeList.get(j).length;
        }
        double[] edges = edgeList.stream().flatMapToDouble(Arrays::stream).toArray();
        int[] want = new int[n * d];
        for (int j = 0; j < d; j++) {
            double[] e = edgeList.get(j);
            for (int i = 0; i < n; i++) {
                int c = 0;
                while (c < e.length && e[c] < x[i * d + j]) {
                    c++;
                }
                want[j * n + i] = c;
            }
        }
        NdArray xa = MlTesting.array(gpu, DType.FLOAT64, x, n, d);
        open.add(xa);
        DeviceBuffer codes = bytes(n * d);
        NdArray codesArray = last();
        MlKernels.forestQuantize(
                stream,
                DType.FLOAT64,
                (DeviceBuffer) xa.buffer(),
                n,
                d,
                doubles(edges),
                edges.length,
                longs(edgeStart),
                codes);
        stream.synchronize();
        byte[] got = new byte[n * d];
        CopyEngine.copyToSegment(codesArray.buffer(), 0, MemorySegment.ofArray(got));
        for (int i = 0; i < want.length; i++) {
            assertEquals(want[i], got[i] & 0xff, "code " + i);
        }

        // one level: slot 0 (the root's bootstrap sample), slot 1 skipped, slot 2 a sub-sample of rows below n / 2
        int count = n + n / 2;
        int[] row = new int[count];
        int[] slot = new int[count];
        for (int i = 0; i < count; i++) {
            row[i] = i < n ? r.nextInt(n) : r.nextInt(n / 2);
            slot[i] = i < n ? 0 : i % 3 == 0 ? 1 : 2;
        }
        int k = 3;
        int slots = 3;
        int[] drawn = {2, 0, 3, -1, -1, -1, 4, 1, 3};
        int minLeaf = 5;
        DeviceBuffer rowB = ints(row);
        DeviceBuffer slotB = ints(slot);
        DeviceBuffer drawnB = ints(drawn);
        DeviceBuffer labelB = ints(labels);
        DeviceBuffer hist = ints(new int[(int) MlKernels.histogramCells(slots, k, classes)]);
        MlKernels.forestClassHistogram(
                stream, count, n, d, k, classes, slots, rowB, slotB, drawnB, codes, labelB, hist);
        long[] wantHist = new long[(int) MlKernels.histogramCells(slots, k, classes)];
        for (int e = 0; e < count; e++) {
            int s = slot[e];
            for (int t = 0; s >= 0 && drawn[s * k] >= 0 && t < k; t++) {
                int f = drawn[s * k + t];
                wantHist[((s * k + t) * BINS + want[f * n + row[e]]) * classes + labels[row[e]]]++;
            }
        }
        assertArrayEquals(Arrays.stream(wantHist).asDoubleStream().toArray(), read(hist), "class histograms");

        DeviceBuffer bestT = ints(new int[slots]);
        DeviceBuffer bestBin = ints(new int[slots]);
        DeviceBuffer bestScore = doubles(new double[slots]);
        DeviceBuffer left = doubles(new double[slots * classes]);
        MlKernels.forestBestClassSplit(
                stream,
                slots,
                k,
                classes,
                minLeaf,
                drawnB,
                hist,
                doubles(new double[2 * slots * classes]),
                bestT,
                bestBin,
                bestScore,
                left);
        double[] gotT = read(bestT);
        double[] gotBin = read(bestBin);
        double[] gotScore = read(bestScore);
        for (int s = 0; s < slots; s++) {
            Split w = drawn[s * k] < 0 ? null : bestClassSplit(wantHist, s, k, classes, minLeaf);
            assertEquals(w == null ? -1 : w.t(), (int) gotT[s], "slot " + s + " feature");
            if (w != null) {
                assertEquals(w.bin(), (int) gotBin[s], "slot " + s + " bin");
                assertEquals(w.score(), gotScore[s], 0.0, "slot " + s + " score, bit for bit");
            }
        }
        assertTrue(gotT[0] >= 0 && gotT[2] >= 0, "both slots split: " + Arrays.toString(gotT));

        // integer targets: exact sums whatever the order of the atomics
        DeviceBuffer valueB = doubles(values);
        long cells = MlKernels.histogramCells(slots, k, 1);
        DeviceBuffer sum = doubles(new double[(int) cells]);
        DeviceBuffer rowsIn = ints(new int[(int) cells]);
        MlKernels.forestValueHistogram(stream, count, n, d, k, slots, rowB, slotB, drawnB, codes, valueB, sum, rowsIn);
        DeviceBuffer vT = ints(new int[slots]);
        DeviceBuffer vBin = ints(new int[slots]);
        DeviceBuffer vScore = doubles(new double[slots]);
        DeviceBuffer vLeft = doubles(new double[2 * slots]);
        MlKernels.forestBestValueSplit(stream, slots, k, minLeaf, drawnB, sum, rowsIn, vT, vBin, vScore, vLeft);
        double[] sums = read(sum);
        double[] ins = read(rowsIn);
        double[] gotVT = read(vT);
        double[] gotVBin = read(vBin);
        double[] gotVScore = read(vScore);
        for (int s = 0; s < slots; s++) {
            Split w = drawn[s * k] < 0 ? null : bestValueSplit(sums, ins, s, k, minLeaf);
            assertEquals(w == null ? -1 : w.t(), (int) gotVT[s], "slot " + s + " value split feature");
            if (w != null) {
                assertEquals(w.bin(), (int) gotVBin[s], "slot " + s + " value split bin");
                assertEquals(w.score(), gotVScore[s], 0.0, "slot " + s + " value split score");
            }
        }

        // partition by the class splits: slot 0's children are next-level slots 0 and 1, slot 2's are 2 and 3
        int[] feature = new int[slots];
        int[] bin = new int[slots];
        for (int s = 0; s < slots; s++) {
            feature[s] = gotT[s] < 0 ? -1 : drawn[s * k + (int) gotT[s]];
            bin[s] = (int) gotBin[s];
        }
        int[] child = {0, -1, 2};
        MlKernels.forestPartition(
                stream, count, n, d, slots, rowB, slotB, ints(feature), ints(bin), ints(child), codes);
        double[] moved = read(slotB);
        for (int e = 0; e < count; e++) {
            int s = slot[e];
            int expect = s < 0 || feature[s] < 0 ? -1 : child[s] + (want[feature[s] * n + row[e]] <= bin[s] ? 0 : 1);
            assertEquals(expect, (int) moved[e], "entry " + e + "'s next slot");
        }
        double[] gotLeft = read(left);
        for (int c = 0; c < classes; c++) {
            long inLeft = 0;
            for (int e = 0; e < n; e++) {
                inLeft += moved[e] == 0 && labels[row[e]] == c ? 1 : 0;
            }
            assertEquals(inLeft, (long) gotLeft[c], "root's left count of class " + c);
        }
    }

    /** Cart.bestSplit over Cart.scanBins for class counts. */
    private static Split bestClassSplit(long[] hist, int s, int k, int classes, int minLeaf) {
        long[] total = new long[classes];
        for (int b = 0; b < BINS; b++) {
            for (int c = 0; c < classes; c++) {
                total[c] += hist[((s * k) * BINS + b) * classes + c];
            }
        }
        double n = 0;
        double sq = 0;
        for (long t : total) {
            n += t;
            sq += (double) t * t;
        }
        double parent = sq / n;
        Split best = null;
        for (int t = 0; t < k; t++) {
            long[] l = new long[classes];
            long[] rr = total.clone();
            Split f = null;
            long nl = 0;
            for (int b = 0; b < BINS - 1; b++) {
                long in = 0;
                double sqL = 0;
                double sqR = 0;
                for (int c = 0; c < classes; c++) {
                    long h = hist[((s * k + t) * BINS + b) * classes + c];
                    in += h;
                    l[c] += h;
                    rr[c] -= h;
                    sqL += (double) l[c] * l[c];
                    sqR += (double) rr[c] * rr[c];
                }
                if (in == 0) {
                    continue;
                }
                nl += in;
                if (nl == n) {
                    break;
                }
                if (nl < minLeaf || n - nl < minLeaf) {
                    continue;
                }
                double score = sqL / nl + sqR / (n - nl);
                if (f == null || score > f.score()) {
                    f = new Split(t, b, score);
                }
            }
            if (f != null
                    && f.score() > parent + 1e-12 * Math.abs(parent)
                    && (best == null || f.score() > best.score())) {
                best = f;
            }
        }
        return best;
    }

    /** The same for target sums (exact here: integer targets). */
    private static Split bestValueSplit(double[] sums, double[] ins, int s, int k, int minLeaf) {
        double total = 0;
        double n = 0;
        for (int b = 0; b < BINS; b++) {
            total += sums[(s * k) * BINS + b];
            n += ins[(s * k) * BINS + b];
        }
        double parent = total * total / n;
        Split best = null;
        for (int t = 0; t < k; t++) {
            Split f = null;
            double sl = 0;
            double nl = 0;
            for (int b = 0; b < BINS - 1; b++) {
                int at = (s * k + t) * BINS + b;
                if (ins[at] == 0) {
                    continue;
                }
                sl += sums[at];
                nl += ins[at];
                if (nl == n) {
                    break;
                }
                if (nl < minLeaf || n - nl < minLeaf) {
                    continue;
                }
                double sr = total - sl;
                double score = sl * sl / nl + sr * sr / (n - nl);
                if (f == null || score > f.score()) {
                    f = new Split(t, b, score);
                }
            }
            if (f != null
                    && f.score() > parent + 1e-12 * Math.abs(parent)
                    && (best == null || f.score() > best.score())) {
                best = f;
            }
        }
        return best;
    }
}
