package io.cuwire.ml.cuda.internal;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.DType;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.DeviceStream;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import io.cuwire.ml.ForestLayout;
import io.cuwire.ml.HistogramTrees;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Supplier;

/**
 * Histogram-split trees grown on a CUDA device, level by level ({@link HistogramTrees}): the partition's features
 * quantized once into one byte per value ({@link MlKernels#forestQuantize}), its targets uploaded once; per level the
 * host uploads the features each node drew, the device builds the nodes' histograms, finds each node's best split and
 * moves the sample's entries to the children; the host reads back a few values per node (the split, the left side's
 * class counts or sum and entries) and keeps the tree.
 *
 * <p>The same trees as the CPU backend's histogram splits for a classifier: class counts are integers, exact in any
 * order, and the split scores are computed as on the host, bit for bit; its leaves hold the class frequencies summed
 * as the host sums them. A regressor's sums follow the order the atomic additions land in, so its splits can differ
 * where two scores tie within rounding, and its leaf means are the histograms' sums over entries. Pure nodes are told
 * as on the host: one class, or every target equal (each node's least and greatest target).
 */
final class CudaForestGrower implements HistogramTrees {
    private final DeviceStream stream;
    private final BufferAllocator<DeviceBuffer> mem;
    private final int n;
    private final int d;
    private final int classes;
    private final double[][] edges;
    private final double[] targets;
    private final List<NdArray> held = new ArrayList<>();
    private final DeviceBuffer codes;
    private final DeviceBuffer labels;
    private final DeviceBuffer values;
    private boolean closed;

    /** Quantizes {@code x} at {@code edges} and uploads the targets; frees all on failure. */
    CudaForestGrower(
            DeviceStream stream,
            BufferAllocator<DeviceBuffer> mem,
            NdArray x,
            double[] targets,
            int classes,
            double[][] edges) {
        this.stream = stream;
        this.mem = mem;
        this.n = Math.toIntExact(x.dim(0));
        this.d = Math.toIntExact(x.dim(1));
        this.classes = classes;
        this.edges = edges;
        this.targets = targets;
        try {
            long[] start = new long[d + 1];
            for (int f = 0; f < d; f++) {
                if (edges[f].length >= MlKernels.FOREST_BINS) {
                    throw new IllegalArgumentException("histogramTrees: feature " + f + " has " + edges[f].length
                            + " edges (expected: at most " + (MlKernels.FOREST_BINS - 1) + ")");
                }
                start[f + 1] = start[f] + edges[f].length;
            }
            double[] flat = Arrays.stream(edges).flatMapToDouble(Arrays::stream).toArray();
            codes = hold(NdArray.empty(mem, DType.UINT8, Order.C, Math.multiplyExact((long) n, d)));
            MlKernels.forestQuantize(
                    stream,
                    x.dtype(),
                    (DeviceBuffer) x.buffer(),
                    n,
                    d,
                    hold(NdArray.fromArray(mem, flat.length == 0 ? new double[1] : flat, Math.max(1, flat.length))),
                    flat.length,
                    hold(NdArray.fromArray(mem, start, d + 1L)),
                    codes);
            if (classes > 0) {
                int[] l = new int[n];
                for (int i = 0; i < n; i++) {
                    l[i] = (int) targets[i];
                }
                labels = hold(NdArray.fromArray(mem, l, n));
                values = null;
            } else {
                labels = null;
                values = hold(NdArray.fromArray(mem, targets, n));
            }
            stream.synchronize();
        } catch (RuntimeException | Error e) {
            close();
            throw e;
        }
    }

    private DeviceBuffer hold(NdArray a) {
        held.add(a);
        return (DeviceBuffer) a.buffer();
    }

    /** One node of the tree being grown: its number, depth, entries and class counts (or target sum). */
    private record Node(int id, int depth, double entries, double[] counts, double sum, boolean pure) {}

    @Override
    public ForestLayout.Tree grow(int[] rows, Supplier<int[]> draw, Params params) {
        if (closed) {
            throw new IllegalStateException("histogramTrees: this builder was closed");
        }
        List<Integer> feature = new ArrayList<>();
        List<Integer> child = new ArrayList<>();
        List<Double> threshold = new ArrayList<>();
        List<double[]> leaves = new ArrayList<>();
        int outputs = Math.max(classes, 1);
        List<NdArray> tree = new ArrayList<>();
        try {
            int count = rows.length;
            DeviceBuffer row = keep(tree, NdArray.fromArray(mem, rows, count));
            DeviceBuffer slot = keep(tree, NdArray.fromArray(mem, new int[count], count));
            double[] rootCounts = new double[outputs];
            double rootSum = 0;
            double lo = Double.POSITIVE_INFINITY;
            double hi = Double.NEGATIVE_INFINITY;
            for (int r : rows) {
                if (classes > 0) {
                    rootCounts[(int) targets[r]]++;
                } else {
                    rootSum += targets[r];
                    lo = Math.min(lo, targets[r]);
                    hi = Math.max(hi, targets[r]);
                }
            }
            add(feature, child, threshold);
            List<Node> level = List.of(
                    new Node(0, 0, count, rootCounts, rootSum, classes > 0 ? pure(rootCounts, count) : lo == hi));
            while (!level.isEmpty()) {
                int slots = level.size();
                int k = 0;
                int[][] drawn = new int[slots][];
                for (int s = 0; s < slots; s++) {
                    Node node = level.get(s);
                    if (node.depth() < params.maxDepth()
                            && node.entries() >= params.minSamplesSplit()
                            && node.entries() >= 2.0 * params.minSamplesLeaf()
                            && !node.pure()) {
                        drawn[s] = draw.get();
                        k = drawn[s].length;
                    }
                }
                int[] split = new int[slots];
                int[] bin = new int[slots];
                double[] left = new double[slots * (classes > 0 ? classes : 2)];
                Arrays.fill(split, -1);
                if (k > 0) {
                    findSplits(tree, count, row, slot, slots, k, drawn, params.minSamplesLeaf(), split, bin, left);
                }
                List<Node> next = new ArrayList<>();
                int[] feat = new int[slots];
                int[] childSlot = new int[slots];
                for (int s = 0; s < slots; s++) {
                    Node node = level.get(s);
                    if (split[s] < 0) {
                        feature.set(node.id(), -1);
                        child.set(node.id(), leaves.size());
                        leaves.add(leafValue(node));
                        feat[s] = -1;
                        childSlot[s] = -1;
                        continue;
                    }
                    int f = drawn[s][split[s]];
                    int l = feature.size();
                    add(feature, child, threshold);
                    add(feature, child, threshold);
                    feature.set(node.id(), f);
                    child.set(node.id(), l);
                    threshold.set(node.id(), edges[f][bin[s]]);
                    feat[s] = f;
                    childSlot[s] = next.size();
                    if (classes > 0) {
                        double[] lc = Arrays.copyOfRange(left, s * classes, (s + 1) * classes);
                        double[] rc = new double[classes];
                        double ln = 0;
                        for (int c = 0; c < classes; c++) {
                            rc[c] = node.counts()[c] - lc[c];
                            ln += lc[c];
                        }
                        next.add(new Node(l, node.depth() + 1, ln, lc, 0, pure(lc, ln)));
                        next.add(new Node(
                                l + 1, node.depth() + 1, node.entries() - ln, rc, 0, pure(rc, node.entries() - ln)));
                    } else {
                        double ls = left[2 * s];
                        double ln = left[2 * s + 1];
                        next.add(new Node(l, node.depth() + 1, ln, null, ls, false));
                        next.add(new Node(l + 1, node.depth() + 1, node.entries() - ln, null, node.sum() - ls, false));
                    }
                }
                if (!next.isEmpty()) {
                    MlKernels.forestPartition(
                            stream,
                            count,
                            n,
                            d,
                            slots,
                            row,
                            slot,
                            keep(tree, NdArray.fromArray(mem, feat, slots)),
                            keep(tree, NdArray.fromArray(mem, bin, slots)),
                            keep(tree, NdArray.fromArray(mem, childSlot, slots)),
                            codes);
                    if (classes == 0) {
                        next = withPurity(tree, count, row, slot, next);
                    }
                }
                level = next;
            }
            stream.synchronize();
        } finally {
            tree.forEach(NdArray::close);
        }
        int nodes = feature.size();
        int[] f = new int[nodes];
        int[] c = new int[nodes];
        double[] t = new double[nodes];
        for (int i = 0; i < nodes; i++) {
            f[i] = feature.get(i);
            c[i] = child.get(i);
            t[i] = threshold.get(i);
        }
        double[] v = new double[leaves.size() * outputs];
        for (int i = 0; i < leaves.size(); i++) {
            System.arraycopy(leaves.get(i), 0, v, i * outputs, outputs);
        }
        return new ForestLayout.Tree(f, c, t, v);
    }

    /** Builds the level's histograms and finds each drawing slot's split: the drawn position, bin and left side. */
    private void findSplits(
            List<NdArray> tree,
            int count,
            DeviceBuffer row,
            DeviceBuffer slot,
            int slots,
            int k,
            int[][] drawn,
            int minLeaf,
            int[] split,
            int[] bin,
            double[] left) {
        int[] flat = new int[slots * k];
        Arrays.fill(flat, -1);
        for (int s = 0; s < slots; s++) {
            if (drawn[s] != null) {
                System.arraycopy(drawn[s], 0, flat, s * k, k);
            }
        }
        DeviceBuffer drawnB = keep(tree, NdArray.fromArray(mem, flat, flat.length));
        DeviceBuffer bestT = keep(tree, NdArray.fromArray(mem, new int[slots], slots));
        DeviceBuffer bestBin = keep(tree, NdArray.fromArray(mem, new int[slots], slots));
        DeviceBuffer bestScore = keep(tree, NdArray.fromArray(mem, new double[slots], slots));
        DeviceBuffer leftB = keep(tree, NdArray.fromArray(mem, new double[left.length], left.length));
        if (classes > 0) {
            long cells = MlKernels.histogramCells(slots, k, classes);
            DeviceBuffer hist = zeros(tree, DType.INT32, cells);
            MlKernels.forestClassHistogram(
                    stream, count, n, d, k, classes, slots, row, slot, drawnB, codes, labels, hist);
            MlKernels.forestBestClassSplit(
                    stream,
                    slots,
                    k,
                    classes,
                    minLeaf,
                    drawnB,
                    hist,
                    zeros(tree, DType.FLOAT64, 2L * slots * classes),
                    bestT,
                    bestBin,
                    bestScore,
                    leftB);
        } else {
            long cells = MlKernels.histogramCells(slots, k, 1);
            DeviceBuffer sum = zeros(tree, DType.FLOAT64, cells);
            DeviceBuffer rowsIn = zeros(tree, DType.INT32, cells);
            MlKernels.forestValueHistogram(
                    stream, count, n, d, k, slots, row, slot, drawnB, codes, values, sum, rowsIn);
            MlKernels.forestBestValueSplit(
                    stream, slots, k, minLeaf, drawnB, sum, rowsIn, bestT, bestBin, bestScore, leftB);
        }
        stream.synchronize();
        CopyEngine.copyToSegment(bestT, 0, MemorySegment.ofArray(split));
        CopyEngine.copyToSegment(bestBin, 0, MemorySegment.ofArray(bin));
        CopyEngine.copyToSegment(leftB, 0, MemorySegment.ofArray(left));
        for (int s = 0; s < slots; s++) {
            if (drawn[s] == null) {
                split[s] = -1;
            }
        }
    }

    /** The next level's regression nodes with their purity: every target of the node equal. */
    private List<Node> withPurity(List<NdArray> tree, int count, DeviceBuffer row, DeviceBuffer slot, List<Node> next) {
        int slots = next.size();
        long[] lo = new long[slots];
        Arrays.fill(lo, -1L);
        DeviceBuffer loB = keep(tree, NdArray.fromArray(mem, lo, slots));
        DeviceBuffer hiB = keep(tree, NdArray.fromArray(mem, new long[slots], slots));
        MlKernels.forestValueRange(stream, count, n, slots, row, slot, values, loB, hiB);
        stream.synchronize();
        long[] hi = new long[slots];
        CopyEngine.copyToSegment(loB, 0, MemorySegment.ofArray(lo));
        CopyEngine.copyToSegment(hiB, 0, MemorySegment.ofArray(hi));
        List<Node> out = new ArrayList<>(slots);
        for (int s = 0; s < slots; s++) {
            Node node = next.get(s);
            out.add(new Node(node.id(), node.depth(), node.entries(), null, node.sum(), lo[s] == hi[s]));
        }
        return out;
    }

    /** {@code cells} zeros of int32 or float64, filled on the device. */
    private DeviceBuffer zeros(List<NdArray> tree, DType dtype, long cells) {
        DeviceBuffer b = keep(tree, NdArray.empty(mem, dtype, Order.C, cells));
        MlKernels.fill(stream, dtype, b, cells, 0);
        return b;
    }

    private static DeviceBuffer keep(List<NdArray> tree, NdArray a) {
        tree.add(a);
        return (DeviceBuffer) a.buffer();
    }

    private static void add(List<Integer> feature, List<Integer> child, List<Double> threshold) {
        feature.add(-1);
        child.add(0);
        threshold.add(0.0);
    }

    private static boolean pure(double[] counts, double entries) {
        for (double c : counts) {
            if (c == entries) {
                return true;
            }
        }
        return false;
    }

    /** Class frequencies summed as the host sums them ({@code 1 / n} once per entry), or the mean. */
    private double[] leafValue(Node node) {
        double n1 = node.entries();
        if (classes > 0) {
            double[] p = new double[classes];
            double step = 1.0 / n1;
            for (int c = 0; c < classes; c++) {
                for (long i = 0; i < (long) node.counts()[c]; i++) {
                    p[c] += step;
                }
            }
            return p;
        }
        return new double[] {node.sum() / n1};
    }

    @Override
    public void close() {
        if (closed) {
            throw new IllegalStateException("histogramTrees: this builder is already closed");
        }
        closed = true;
        RuntimeException first = null;
        for (NdArray a : held) {
            try {
                a.close();
            } catch (RuntimeException e) {
                if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
            }
        }
        held.clear();
        if (first != null) {
            throw first;
        }
    }
}
