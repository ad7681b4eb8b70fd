package io.cuwire.ml.ensemble;

import io.cuwire.ml.ForestLayout;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.IntStream;

/**
 * Grows one CART tree on the host over a random subset of the features at each node, Gini impurity for classes,
 * squared error for values; the children of a split are numbered consecutively (breadth first), as
 * {@link ForestLayout} wants. Splits are exact (thresholds halfway between consecutive distinct values of the node)
 * or, given {@link ForestBins}, found on histograms of the binned features (thresholds at the bins' edges): the same
 * nodes draw the same features from the same random sequence either way. The features of a large node are scanned
 * in parallel and the best is taken in their draw order, so the tree does not depend on the parallelism.
 */
final class Cart {
    /** How a tree is grown. */
    record Params(int maxDepth, int minSamplesSplit, int minSamplesLeaf, int maxFeatures) {}

    /** Rows x drawn features of a node above which its features are scanned in parallel. */
    private static final long PARALLEL_WORK = 1 << 16;

    private final double[] x;
    private final ForestBins bins;
    private final int d;
    private final double[] target;
    private final int classes;
    private final Params params;
    private final SplittableRandom random;

    private final List<Integer> feature = new ArrayList<>();
    private final List<Integer> child = new ArrayList<>();
    private final List<Double> threshold = new ArrayList<>();
    private final List<double[]> leafValues = new ArrayList<>();

    /**
     * @param x row-major samples, {@code d} features
     * @param bins the binned features for histogram splits, or null for exact splits on {@code x}
     * @param target class indices (as doubles) when {@code classes > 0}, else values
     */
    private Cart(
            double[] x, ForestBins bins, int d, double[] target, int classes, Params params, SplittableRandom random) {
        this.x = x;
        this.bins = bins;
        this.d = d;
        this.target = target;
        this.classes = classes;
        this.params = params;
        this.random = random;
    }

    /** A tree grown with exact splits on the samples {@code rows} (repeats allowed: a bootstrap sample). */
    static ForestLayout.Tree grow(
            double[] x, int d, double[] target, int classes, int[] rows, Params params, SplittableRandom random) {
        return new Cart(x, null, d, target, classes, params, random).build(rows.clone());
    }

    /** A tree grown with histogram splits on the binned samples {@code rows} (repeats allowed). */
    static ForestLayout.Tree grow(
            ForestBins bins, double[] target, int classes, int[] rows, Params params, SplittableRandom random) {
        return new Cart(null, bins, bins.features, target, classes, params, random).build(rows.clone());
    }

    private record Pending(int node, int from, int to, int depth) {}

    private ForestLayout.Tree build(int[] rows) {
        Deque<Pending> queue = new ArrayDeque<>();
        newNode();
        queue.add(new Pending(0, 0, rows.length, 0));
        while (!queue.isEmpty()) {
            Pending p = queue.poll();
            int n = p.to() - p.from();
            Split s = null;
            if (p.depth() < params.maxDepth()
                    && n >= params.minSamplesSplit()
                    && n >= 2 * params.minSamplesLeaf()
                    && !pure(rows, p.from(), p.to())) {
                s = bestSplit(rows, p.from(), p.to());
            }
            if (s == null) {
                feature.set(p.node(), -1);
                child.set(p.node(), leafValues.size());
                leafValues.add(value(rows, p.from(), p.to()));
                continue;
            }
            int mid = bins == null
                    ? partition(rows, p.from(), p.to(), s.feature(), s.threshold())
                    : partitionBins(rows, p.from(), p.to(), s.feature(), s.bin());
            int left = newNode();
            newNode();
            feature.set(p.node(), s.feature());
            child.set(p.node(), left);
            threshold.set(p.node(), s.threshold());
            queue.add(new Pending(left, p.from(), mid, p.depth() + 1));
            queue.add(new Pending(left + 1, mid, p.to(), p.depth() + 1));
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
        int outputs = Math.max(classes, 1);
        double[] values = new double[leafValues.size() * outputs];
        for (int i = 0; i < leafValues.size(); i++) {
            System.arraycopy(leafValues.get(i), 0, values, i * outputs, outputs);
        }
        return new ForestLayout.Tree(f, c, t, values);
    }

    private int newNode() {
        feature.add(-1);
        child.add(0);
        threshold.add(0.0);
        return feature.size() - 1;
    }

    private boolean pure(int[] rows, int from, int to) {
        double first = target[rows[from]];
        for (int i = from + 1; i < to; i++) {
            if (target[rows[i]] != first) {
                return false;
            }
        }
        return true;
    }

    /** Class frequencies, or the mean. */
    private double[] value(int[] rows, int from, int to) {
        int n = to - from;
        if (classes > 0) {
            double[] p = new double[classes];
            for (int i = from; i < to; i++) {
                p[(int) target[rows[i]]] += 1.0 / n;
            }
            return p;
        }
        double s = 0;
        for (int i = from; i < to; i++) {
            s += target[rows[i]];
        }
        return new double[] {s / n};
    }

    /** A split: {@code x[feature] <= threshold} goes left; {@code bin} is its last bin on the left, or -1. */
    private record Split(int feature, double threshold, double score, int bin) {}

    private int[] draw() {
        return draw(random, d, Math.min(params.maxFeatures(), d));
    }

    /** {@code k} of {@code d} features drawn without replacement (a partial Fisher-Yates shuffle), in draw order. */
    static int[] draw(SplittableRandom random, int d, int k) {
        int[] features = new int[d];
        for (int j = 0; j < d; j++) {
            features[j] = j;
        }
        for (int t = 0; t < k; t++) {
            int pick = t + random.nextInt(d - t);
            int f = features[pick];
            features[pick] = features[t];
            features[t] = f;
        }
        return Arrays.copyOf(features, k);
    }

    /**
     * The best split among the drawn features, or null if none improves on the parent; ties go to the feature drawn
     * first and, within a feature, to the lowest threshold.
     */
    private Split bestSplit(int[] rows, int from, int to) {
        int[] drawn = draw();
        double parent = parentScore(rows, from, to);
        Split[] found = new Split[drawn.length];
        IntStream features = IntStream.range(0, drawn.length);
        if ((long) (to - from) * drawn.length >= PARALLEL_WORK) {
            features = features.parallel();
        }
        features.forEach(t ->
                found[t] = bins == null ? scanExact(rows, from, to, drawn[t]) : scanBins(rows, from, to, drawn[t]));
        Split best = null;
        for (Split s : found) {
            if (s != null
                    && s.score() > parent + 1e-12 * Math.abs(parent)
                    && (best == null || s.score() > best.score())) {
                best = s;
            }
        }
        return best;
    }

    /** The best exact split of feature {@code f}: the node's values sorted. */
    private Split scanExact(int[] rows, int from, int to, int f) {
        int n = to - from;
        double[] values = new double[n];
        int[] order = new int[n];
        for (int i = 0; i < n; i++) {
            order[i] = rows[from + i];
            values[i] = x[order[i] * d + f];
        }
        sortPaired(values, order, 0, n - 1);
        return scan(values, order, n, f);
    }

    /**
     * The best split of binned feature {@code f} from the node's histogram (class counts, or target sums and counts,
     * per bin), on the same scores as {@link #scan}: a split after bin {@code b} sends bins {@code 0..b} left and is
     * a candidate when bin {@code b} holds rows of the node and both sides keep {@code minSamplesLeaf}.
     */
    private Split scanBins(int[] rows, int from, int to, int f) {
        int n = to - from;
        int nb = bins.bins(f);
        int base = f * bins.rows;
        byte[] codes = bins.codes;
        int minLeaf = params.minSamplesLeaf();
        double[] edges = bins.edges[f];
        Split best = null;
        if (classes > 0) {
            int[] hist = new int[nb * classes];
            int[] binRows = new int[nb];
            for (int i = from; i < to; i++) {
                int r = rows[i];
                int b = codes[base + r] & 0xff;
                hist[b * classes + (int) target[r]]++;
                binRows[b]++;
            }
            long[] left = new long[classes];
            long[] right = new long[classes];
            for (int b = 0; b < nb; b++) {
                for (int c = 0; c < classes; c++) {
                    right[c] += hist[b * classes + c];
                }
            }
            int nl = 0;
            for (int b = 0; b < nb - 1; b++) {
                if (binRows[b] == 0) {
                    continue;
                }
                double sqL = 0;
                double sqR = 0;
                for (int c = 0; c < classes; c++) {
                    int h = hist[b * classes + c];
                    left[c] += h;
                    right[c] -= h;
                    sqL += (double) left[c] * left[c];
                    sqR += (double) right[c] * right[c];
                }
                nl += binRows[b];
                if (nl == n) {
                    break;
                }
                if (nl < minLeaf || n - nl < minLeaf) {
                    continue;
                }
                double score = sqL / nl + sqR / (n - nl);
                if (best == null || score > best.score()) {
                    best = new Split(f, edges[b], score, b);
                }
            }
            return best;
        }
        double[] sum = new double[nb];
        int[] binRows = new int[nb];
        for (int i = from; i < to; i++) {
            int r = rows[i];
            int b = codes[base + r] & 0xff;
            sum[b] += target[r];
            binRows[b]++;
        }
        double total = 0;
        for (int b = 0; b < nb; b++) {
            total += sum[b];
        }
        double left = 0;
        int nl = 0;
        for (int b = 0; b < nb - 1; b++) {
            if (binRows[b] == 0) {
                continue;
            }
            left += sum[b];
            nl += binRows[b];
            if (nl == n) {
                break;
            }
            if (nl < minLeaf || n - nl < minLeaf) {
                continue;
            }
            double right = total - left;
            double score = left * left / nl + right * right / (n - nl);
            if (best == null || score > best.score()) {
                best = new Split(f, edges[b], score, b);
            }
        }
        return best;
    }

    /** The score of not splitting, on the scale of {@link #scan}'s scores (higher is better). */
    private double parentScore(int[] rows, int from, int to) {
        int n = to - from;
        if (classes > 0) {
            double[] counts = new double[classes];
            for (int i = from; i < to; i++) {
                counts[(int) target[rows[i]]]++;
            }
            double sq = 0;
            for (double c : counts) {
                sq += c * c;
            }
            return sq / n;
        }
        double s = 0;
        for (int i = from; i < to; i++) {
            s += target[rows[i]];
        }
        return s * s / n;
    }

    /**
     * The best threshold of one feature over sorted {@code values}: maximizes {@code sum_c L_c²/nL + sum_c R_c²/nR}
     * for classes (the Gini decrease) or {@code L²/nL + R²/nR} of the target sums (the squared-error decrease).
     */
    private Split scan(double[] values, int[] order, int n, int f) {
        int minLeaf = params.minSamplesLeaf();
        Split best = null;
        if (classes > 0) {
            double[] left = new double[classes];
            double[] right = new double[classes];
            for (int i = 0; i < n; i++) {
                right[(int) target[order[i]]]++;
            }
            double sqL = 0;
            double sqR = 0;
            for (double c : right) {
                sqR += c * c;
            }
            for (int i = 0; i < n - 1; i++) {
                int c = (int) target[order[i]];
                sqL += 2 * left[c] + 1;
                left[c]++;
                sqR -= 2 * right[c] - 1;
                right[c]--;
                int nl = i + 1;
                if (nl < minLeaf || n - nl < minLeaf || values[i] == values[i + 1]) {
                    continue;
                }
                double score = sqL / nl + sqR / (n - nl);
                if (best == null || score > best.score()) {
                    best = new Split(f, midpoint(values[i], values[i + 1]), score, -1);
                }
            }
            return best;
        }
        double total = 0;
        for (int i = 0; i < n; i++) {
            total += target[order[i]];
        }
        double left = 0;
        for (int i = 0; i < n - 1; i++) {
            left += target[order[i]];
            int nl = i + 1;
            if (nl < minLeaf || n - nl < minLeaf || values[i] == values[i + 1]) {
                continue;
            }
            double right = total - left;
            double score = left * left / nl + right * right / (n - nl);
            if (best == null || score > best.score()) {
                best = new Split(f, midpoint(values[i], values[i + 1]), score, -1);
            }
        }
        return best;
    }

    /** Halfway, but never equal to the upper value (so that it goes right). */
    static double midpoint(double lo, double hi) {
        double m = lo + (hi - lo) / 2;
        return m >= hi ? lo : m;
    }

    /** Moves the rows going left ({@code x <= threshold}) before the others; returns where the right ones start. */
    private int partition(int[] rows, int from, int to, int f, double thr) {
        int i = from;
        int j = to - 1;
        while (i <= j) {
            if (x[rows[i] * d + f] <= thr) {
                i++;
            } else {
                int t = rows[i];
                rows[i] = rows[j];
                rows[j] = t;
                j--;
            }
        }
        return i;
    }

    /** Moves the rows whose code of feature {@code f} is at most {@code bin} first; returns where the others start. */
    private int partitionBins(int[] rows, int from, int to, int f, int bin) {
        byte[] codes = bins.codes;
        int base = f * bins.rows;
        int i = from;
        int j = to - 1;
        while (i <= j) {
            if ((codes[base + rows[i]] & 0xff) <= bin) {
                i++;
            } else {
                int t = rows[i];
                rows[i] = rows[j];
                rows[j] = t;
                j--;
            }
        }
        return i;
    }

    /** Sorts {@code values[lo..hi]} ascending, moving {@code order} along. */
    private static void sortPaired(double[] values, int[] order, int lo, int hi) {
        while (hi - lo > 16) {
            double pivot = values[(lo + hi) >>> 1];
            int i = lo;
            int j = hi;
            while (i <= j) {
                while (values[i] < pivot) {
                    i++;
                }
                while (values[j] > pivot) {
                    j--;
                }
                if (i <= j) {
                    swap(values, order, i++, j--);
                }
            }
            if (j - lo < hi - i) {
                sortPaired(values, order, lo, j);
                lo = i;
            } else {
                sortPaired(values, order, i, hi);
                hi = j;
            }
        }
        for (int i = lo + 1; i <= hi; i++) {
            for (int j = i; j > lo && values[j - 1] > values[j]; j--) {
                swap(values, order, j, j - 1);
            }
        }
    }

    private static void swap(double[] values, int[] order, int i, int j) {
        double v = values[i];
        values[i] = values[j];
        values[j] = v;
        int o = order[i];
        order[i] = order[j];
        order[j] = o;
    }
}
