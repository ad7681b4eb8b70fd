package io.cuwire.ml.ensemble;

import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.stream.IntStream;

/**
 * The features of a partition quantized into at most {@value #MAX_BINS} bins each, for histogram split finding (the
 * same on the CPU and on the GPU). Feature {@code f} has {@code edges[f].length + 1} bins: a value {@code v} falls in
 * bin {@code b}, the first with {@code v <= edges[f][b]} (the last bin when none), so that "bin {@code <= b}" and
 * "{@code v <= edges[f][b]}" send the same rows left and a split at bin {@code b} is stored with threshold
 * {@code edges[f][b]}.
 *
 * <p>The edges come from the sorted values of at most {@value #SAMPLE_ROWS} rows (all of them when there are no
 * more; else a sample drawn with a fixed seed, as scikit-learn's histogram estimators bin on a sample). A feature with
 * at most {@code maxBins} distinct values gets an edge halfway between each pair of consecutive ones, so that its
 * bins are its values; one with more gets edges at its quantiles {@code b / maxBins}. The codes are one byte per value,
 * feature after feature ({@code codes[f * rows + i]}).
 */
final class ForestBins {
    /** The most bins a feature has: one byte per code. */
    static final int MAX_BINS = 256;
    /** The most rows whose values place the edges. */
    static final int SAMPLE_ROWS = 200_000;
    /** The seed of the sample of rows that places the edges. */
    private static final long SAMPLE_SEED = 0x5eed_b1e5L;

    final int rows;
    final int features;
    final double[][] edges;
    final byte[] codes;

    private ForestBins(int rows, int features, double[][] edges, byte[] codes) {
        this.rows = rows;
        this.features = features;
        this.edges = edges;
        this.codes = codes;
    }

    /** The bins of feature {@code f}. */
    int bins(int f) {
        return edges[f].length + 1;
    }

    /** Quantizes row-major {@code x} ({@code n} rows of {@code d} features) at {@code edges}, in parallel. */
    static ForestBins quantize(double[] x, int n, int d, double[][] edges) {
        byte[] codes = new byte[Math.multiplyExact(n, d)];
        IntStream.range(0, d).parallel().forEach(f -> {
            double[] e = edges[f];
            int base = f * n;
            for (int i = 0; i < n; i++) {
                codes[base + i] = (byte) code(e, x[i * d + f]);
            }
        });
        return new ForestBins(n, d, edges, codes);
    }

    /**
     * The edges of every feature of row-major {@code x}, from the sample of rows described above.
     *
     * @throws IllegalArgumentException if {@code maxBins} is not in {@code 2 .. 256}
     */
    static double[][] edges(double[] x, int n, int d, int maxBins) {
        if (maxBins < 2 || maxBins > MAX_BINS) {
            throw new IllegalArgumentException("maxBins " + maxBins + " (expected: 2 .. " + MAX_BINS + ")");
        }
        int[] sample = sample(n);
        double[][] edges = new double[d][];
        IntStream.range(0, d).parallel().forEach(f -> {
            double[] v = new double[sample.length];
            for (int i = 0; i < sample.length; i++) {
                v[i] = x[sample[i] * d + f];
            }
            Arrays.sort(v);
            edges[f] = edgesOfSorted(v, maxBins);
        });
        return edges;
    }

    /** The rows that place the edges: all, or {@value #SAMPLE_ROWS} drawn without replacement, ascending. */
    private static int[] sample(int n) {
        if (n <= SAMPLE_ROWS) {
            return IntStream.range(0, n).toArray();
        }
        int[] all = IntStream.range(0, n).toArray();
        SplittableRandom r = new SplittableRandom(SAMPLE_SEED);
        for (int t = 0; t < SAMPLE_ROWS; t++) {
            int pick = t + r.nextInt(n - t);
            int v = all[pick];
            all[pick] = all[t];
            all[t] = v;
        }
        int[] s = Arrays.copyOf(all, SAMPLE_ROWS);
        Arrays.sort(s);
        return s;
    }

    /** The strictly ascending edges of sorted values {@code v}: at most {@code maxBins - 1}. */
    static double[] edgesOfSorted(double[] v, int maxBins) {
        int m = v.length;
        int distinct = 0;
        for (int i = 0; i < m; i++) {
            if (i == 0 || v[i] != v[i - 1]) {
                distinct++;
            }
        }
        double[] out = new double[Math.min(distinct, maxBins) - 1];
        int k = 0;
        if (distinct <= maxBins) {
            for (int i = 1; i < m; i++) {
                if (v[i] != v[i - 1]) {
                    out[k++] = Cart.midpoint(v[i - 1], v[i]);
                }
            }
            return out;
        }
        for (int b = 1; b < maxBins; b++) {
            double lo = v[(int) ((long) b * m / maxBins) - 1];
            int hi = upper(v, lo);
            if (hi == m) {
                break;
            }
            double e = Cart.midpoint(lo, v[hi]);
            if (k == 0 || e > out[k - 1]) {
                out[k++] = e;
            }
        }
        return Arrays.copyOf(out, k);
    }

    /** The first index of sorted {@code v} holding a value above {@code x}. */
    private static int upper(double[] v, double x) {
        int lo = 0;
        int hi = v.length;
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (v[mid] <= x) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo;
    }

    /** The bin of {@code x}: the number of edges below it. */
    static int code(double[] edges, double x) {
        int lo = 0;
        int hi = edges.length;
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (edges[mid] < x) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        return lo;
    }
}
