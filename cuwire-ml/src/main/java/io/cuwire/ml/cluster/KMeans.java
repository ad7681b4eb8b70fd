package io.cuwire.ml.cluster;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DType;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import io.cuwire.ml.ComputeBackend;
import io.cuwire.ml.Estimator;
import io.cuwire.ml.Param;
import io.cuwire.ml.Partial;
import io.cuwire.ml.Reduction;
import io.cuwire.ml.UnaryOp;
import io.cuwire.ml.internal.HostArrays;
import io.cuwire.serialize.WireType;
import java.io.Serial;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.SplittableRandom;

/**
 * K-means clustering (scikit-learn's and cuML's {@code KMeans}): Lloyd iterations from a k-means++-style start.
 *
 * <h2>Distribution</h2>
 * <ol>
 *   <li>Start: each partition proposes {@code 2 k} candidates by greedy k-means++ over its rows, weighted by the
 *       rows nearest each ({@link #partialInit}); the client picks {@code k} of all candidates by weighted k-means++
 *       and refines them with weighted Lloyd steps ({@link #initialCenters}) — the reduction step of k-means||
 *       (cuML's {@code scalable-k-means++}) with one round of oversampling. A single-device fit does the same over
 *       one partition.</li>
 *   <li>Iterate: every partition sums its rows per nearest center ({@link #partialStep}); the client combines the
 *       sums into new centers ({@link Lloyd#update}) and sends them back, until {@link Lloyd#done()}.</li>
 * </ol>
 * Each iteration moves {@code k x d} sums and {@code k} counts per partition; the combine is done on the host in
 * doubles. An empty cluster keeps its center. Iteration stops when the summed squared movement of the centers is at
 * most {@link #tol} times the mean squared distance of a sample to its center, or after {@link #maxIter} steps; the
 * fitted centers are the last ones evaluated, so {@link #inertia()} is exact for them.
 */
@WireType("cuwire.ml.KMeans")
public final class KMeans extends Estimator {
    @Serial
    private static final long serialVersionUID = 1L;

    /** How to choose the first centers. */
    public enum Init {
        /** Greedy k-means++ candidates per partition, reduced by weighted k-means++ (k-means|| with one round). */
        SCALABLE_K_MEANS_PLUS_PLUS,
        /** {@code k} distinct rows chosen uniformly, per partition, then reduced like the default. */
        RANDOM
    }

    /** The number of clusters. */
    @Param
    int nClusters = 8;

    /** How to choose the first centers. */
    @Param
    Init init = Init.SCALABLE_K_MEANS_PLUS_PLUS;

    /** The most Lloyd steps. */
    @Param
    int maxIter = 300;

    /** Relative tolerance on the centers' movement; see the class comment. */
    @Param
    double tol = 1e-4;

    /** The seed of the initialisation. */
    @Param
    long seed;

    /** The fitted centers (k x d). */
    NdArray clusterCenters;

    /** The sum of squared distances of the training samples to their centers. */
    double inertia;

    /** Lloyd steps run. */
    int nIter;

    /** K-means with 8 clusters. */
    public KMeans() {}

    /** Sets the number of clusters; returns this. */
    public KMeans nClusters(int value) {
        if (value < 1) {
            throw new IllegalArgumentException("nClusters: " + value + " (expected: >= 1)");
        }
        nClusters = value;
        return this;
    }

    /** Sets the initialisation; returns this. */
    public KMeans init(Init value) {
        init = Objects.requireNonNull(value, "init");
        return this;
    }

    /** Sets the most Lloyd steps; returns this. */
    public KMeans maxIter(int value) {
        maxIter = value;
        return this;
    }

    /** Sets the tolerance; returns this. */
    public KMeans tol(double value) {
        tol = value;
        return this;
    }

    /** Sets the seed; returns this. */
    public KMeans seed(long value) {
        seed = value;
        return this;
    }

    @Override
    public boolean isFitted() {
        return clusterCenters != null;
    }

    /** The fitted centers (k x d); owned by the estimator. */
    public NdArray clusterCenters() {
        checkFitted();
        return clusterCenters;
    }

    /** The sum of squared distances of the training samples to their nearest center. */
    public double inertia() {
        checkFitted();
        return inertia;
    }

    /** The Lloyd steps run. */
    public int nIter() {
        checkFitted();
        return nIter;
    }

    // ---------------------------------------------------------------- single device

    /**
     * Makes {@code centers} (k x d, floating) the fitted state with {@code inertia} and {@code nIter}, as a fit would
     * have left it ({@link #nClusters} becomes k): how a model fitted elsewhere is rebuilt
     * ({@link io.cuwire.ml.modelfile.ModelFile}). Takes ownership of {@code centers}, also when it throws; returns
     * this.
     *
     * @throws IllegalArgumentException if {@code centers} is not a floating matrix
     */
    public KMeans adoptFitted(NdArray centers, double inertia, int nIter) {
        if (centers.rank() != 2 || centers.dim(0) < 1 || !centers.dtype().isFloatingPoint()) {
            centers.close();
            throw new IllegalArgumentException(
                    "KMeans.adoptFitted: centers " + centers + " (expected: a float32 or float64 k x d matrix)");
        }
        close();
        this.clusterCenters = centers;
        this.nClusters = Math.toIntExact(centers.dim(0));
        this.inertia = inertia;
        this.nIter = nIter;
        return this;
    }

    /** Fits on {@code x} from centers chosen by {@link #init}; returns this. */
    public KMeans fit(NdArray x) {
        checkTraining("KMeans.fit", x);
        checkClusters(x);
        try (Candidates c = partialInit(x, seed);
                NdArray start = initialCenters(List.of(c))) {
            return fit(x, start);
        }
    }

    /** Fits on {@code x} from the given first centers (k x d, not taken over); returns this. */
    public KMeans fit(NdArray x, NdArray initialCenters) {
        checkTraining("KMeans.fit", x);
        checkClusters(x);
        try (Lloyd lloyd = lloyd(initialCenters)) {
            while (!lloyd.done()) {
                try (Step s = partialStep(x, lloyd.centers())) {
                    lloyd.update(List.of(s));
                }
            }
            return lloyd.finish();
        }
    }

    private void checkClusters(NdArray x) {
        if (nClusters > x.dim(0)) {
            throw new IllegalArgumentException("KMeans.fit: nClusters = " + nClusters + " is more than the " + x.dim(0)
                    + " rows of X (expected: nClusters <= rows)");
        }
    }

    /** The index of the nearest center of each row (int32, n). */
    public NdArray predict(NdArray x) {
        checkFitted();
        checkInput("KMeans.predict", x, clusterCenters.dim(1), clusterCenters.dtype(), clusterCenters);
        ComputeBackend b = backend(x);
        BufferAllocator<?> mem = memoryFor(x);
        NdArray labels = NdArray.empty(mem, DType.INT32, Order.C, x.dim(0));
        try {
            b.nearestRows(x, clusterCenters, labels, null);
            return labels;
        } catch (RuntimeException | Error e) {
            labels.close();
            throw e;
        }
    }

    /** Fits on {@code x} and returns its labels. */
    public NdArray fitPredict(NdArray x) {
        return fit(x).predict(x);
    }

    /** The Euclidean distance of each row to each center (n x k). */
    public NdArray transform(NdArray x) {
        checkFitted();
        checkInput("KMeans.transform", x, clusterCenters.dim(1), clusterCenters.dtype(), clusterCenters);
        ComputeBackend b = backend(x);
        NdArray d = NdArray.empty(memoryFor(x), x.dtype(), Order.C, x.dim(0), nClusters());
        try {
            b.squaredDistances(x, clusterCenters, d);
            b.map(UnaryOp.SQRT, d, d);
            return d;
        } catch (RuntimeException | Error e) {
            d.close();
            throw e;
        }
    }

    /** Minus the sum of squared distances of the rows of {@code x} to their nearest center (higher is better). */
    public double score(NdArray x) {
        checkFitted();
        checkInput("KMeans.score", x, clusterCenters.dim(1), clusterCenters.dtype(), clusterCenters);
        try (Step s = partialStep(x, clusterCenters)) {
            return -s.inertia();
        }
    }

    private int nClusters() {
        return (int) clusterCenters.dim(0);
    }

    // ---------------------------------------------------------------- distribution

    /**
     * One partition's Lloyd step against {@code centers}: per center the sum of the rows nearest it and their count.
     *
     * @param n rows of the partition
     * @param inertia their summed squared distance to the nearest center
     * @param sums per center, the sum of its rows (k x d, the data's dtype)
     * @param counts per center, how many rows (k, float64)
     */
    @WireType("cuwire.ml.KMeans.Step")
    public record Step(long n, double inertia, NdArray sums, NdArray counts) implements Partial {
        @Override
        public void close() {
            sums.close();
            counts.close();
        }
    }

    /**
     * One partition's candidate centers and how many rows are nearest each.
     *
     * @param centers candidates (m x d)
     * @param weights rows nearest each candidate (m, float64)
     */
    @WireType("cuwire.ml.KMeans.Candidates")
    public record Candidates(NdArray centers, NdArray weights) implements Partial {
        @Override
        public void close() {
            centers.close();
            weights.close();
        }
    }

    /** The Lloyd step of partition {@code x} against {@code centers} (k x d, where {@code x} lives). */
    public Step partialStep(NdArray x, NdArray centers) {
        String op = "KMeans.partialStep";
        checkMatrix(op, "X", x);
        checkInput(op, x, centers.dim(1), centers.dtype(), centers);
        ComputeBackend b = backend(x);
        BufferAllocator<?> mem = memoryFor(x);
        long n = x.dim(0);
        long k = centers.dim(0);
        NdArray sums = NdArray.zeros(mem, x.dtype(), Order.C, k, x.dim(1));
        NdArray counts = null;
        try (NdArray labels = NdArray.empty(mem, DType.INT32, Order.C, n);
                NdArray mins = NdArray.empty(mem, x.dtype(), Order.C, n)) {
            counts = NdArray.zeros(mem, DType.FLOAT64, Order.C, k);
            b.nearestRows(x, centers, labels, mins);
            double inertia = b.reduce(Reduction.SUM, mins);
            b.scatterAddRows(x, labels, sums);
            b.bincount(labels, counts);
            return new Step(n, inertia, sums, counts);
        } catch (RuntimeException | Error e) {
            sums.close();
            if (counts != null) {
                counts.close();
            }
            throw e;
        }
    }

    /**
     * Candidate centers for partition {@code x}: {@code min(rows, 2 k)} rows chosen by greedy k-means++ (or uniformly
     * for {@link Init#RANDOM}) with {@code seed}, weighted by the rows nearest each.
     */
    public Candidates partialInit(NdArray x, long seed) {
        String op = "KMeans.partialInit";
        checkTraining(op, x);
        ComputeBackend b = backend(x);
        BufferAllocator<?> mem = memoryFor(x);
        int n = Math.toIntExact(x.dim(0));
        int m = (int) Math.min(n, 2L * nClusters);
        SplittableRandom random = new SplittableRandom(seed);
        long[] chosen = init == Init.RANDOM ? randomRows(random, n, m) : greedyPlusPlus(b, mem, x, m, random);
        NdArray centers = NdArray.empty(mem, x.dtype(), Order.C, m, x.dim(1));
        try (NdArray idx = NdArray.fromArray(mem, chosen, m)) {
            b.gatherRows(x, idx, centers);
        } catch (RuntimeException | Error e) {
            centers.close();
            throw e;
        }
        try (Step s = partialStep(x, centers)) {
            return new Candidates(centers, s.counts().copyTo(mem));
        } catch (RuntimeException | Error e) {
            centers.close();
            throw e;
        }
    }

    private static long[] randomRows(SplittableRandom random, int n, int m) {
        int[] perm = new int[n];
        for (int i = 0; i < n; i++) {
            perm[i] = i;
        }
        long[] out = new long[m];
        for (int i = 0; i < m; i++) {
            int j = i + random.nextInt(n - i);
            int t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
            out[i] = perm[i];
        }
        return out;
    }

    /**
     * Greedy k-means++ (as scikit-learn runs it): each next row is the best, by the potential it leaves, of
     * {@code 2 + ln m} rows sampled with probability proportional to their squared distance to the rows chosen.
     * The distances are computed where {@code x} lives; the sampling reads them to the host ({@code n} values per
     * candidate tried).
     */
    private static long[] greedyPlusPlus(
            ComputeBackend b, BufferAllocator<?> mem, NdArray x, int m, SplittableRandom random) {
        int n = Math.toIntExact(x.dim(0));
        int trials = 2 + (int) Math.log(m);
        long[] chosen = new long[m];
        chosen[0] = random.nextInt(n);
        double[] closest = distancesTo(b, mem, x, new long[] {chosen[0]});
        for (int c = 1; c < m; c++) {
            long[] tries = new long[trials];
            for (int t = 0; t < trials; t++) {
                tries[t] = sample(random, closest);
            }
            double[] d = distancesTo(b, mem, x, tries);
            int best = -1;
            double bestPotential = Double.POSITIVE_INFINITY;
            for (int t = 0; t < trials; t++) {
                double potential = 0;
                for (int i = 0; i < n; i++) {
                    potential += Math.min(closest[i], d[i * trials + t]);
                }
                if (potential < bestPotential) {
                    bestPotential = potential;
                    best = t;
                }
            }
            chosen[c] = tries[best];
            for (int i = 0; i < n; i++) {
                closest[i] = Math.min(closest[i], d[i * trials + best]);
            }
        }
        return chosen;
    }

    /** Squared distances of every row of {@code x} to the rows {@code rows} of it, read to the host (n x rows). */
    private static double[] distancesTo(ComputeBackend b, BufferAllocator<?> mem, NdArray x, long[] rows) {
        try (NdArray idx = NdArray.fromArray(mem, rows, rows.length);
                NdArray picked = NdArray.empty(mem, x.dtype(), Order.C, rows.length, x.dim(1));
                NdArray d = NdArray.empty(mem, x.dtype(), Order.C, x.dim(0), rows.length)) {
            b.gatherRows(x, idx, picked);
            b.squaredDistances(x, picked, d);
            return HostArrays.doubles(d);
        }
    }

    /** An index drawn with probability proportional to {@code weights} (uniformly when they are all 0). */
    static int sample(SplittableRandom random, double[] weights) {
        double total = 0;
        for (double w : weights) {
            total += w;
        }
        if (!(total > 0)) {
            return random.nextInt(weights.length);
        }
        double u = random.nextDouble() * total;
        for (int i = 0; i < weights.length; i++) {
            u -= weights[i];
            if (u < 0) {
                return i;
            }
        }
        for (int i = weights.length - 1; i >= 0; i--) {
            if (weights[i] > 0) {
                return i;
            }
        }
        return weights.length - 1;
    }

    /**
     * The first {@link #nClusters} centers from the candidates of every partition: weighted greedy k-means++ over
     * all of them, then weighted Lloyd steps on the candidates, on the host. The centers go where the candidates
     * live.
     */
    public NdArray initialCenters(List<Candidates> parts) {
        if (parts.isEmpty()) {
            throw new IllegalArgumentException("KMeans.initialCenters: no candidates");
        }
        int d = (int) parts.getFirst().centers().dim(1);
        DType dtype = parts.getFirst().centers().dtype();
        List<double[]> points = new ArrayList<>();
        List<Double> weights = new ArrayList<>();
        for (Candidates c : parts) {
            if (c.centers().dim(1) != d || c.centers().dtype() != dtype) {
                throw new IllegalArgumentException(
                        "KMeans.initialCenters: candidates of " + c.centers().dim(1) + " "
                                + c.centers().dtype().wireName() + " features (expected: " + d + " " + dtype.wireName()
                                + ", as the first)");
            }
            double[] v = HostArrays.doubles(c.centers());
            double[] w = HostArrays.doubles(c.weights());
            for (int i = 0; i < w.length; i++) {
                points.add(Arrays.copyOfRange(v, i * d, (i + 1) * d));
                weights.add(w[i]);
            }
        }
        if (points.size() < nClusters) {
            throw new IllegalArgumentException(
                    "KMeans: " + points.size() + " samples cannot make " + nClusters + " clusters");
        }
        double[] w = new double[points.size()];
        for (int i = 0; i < w.length; i++) {
            w[i] = weights.get(i);
        }
        double[] centers = WeightedKMeans.fit(
                points.toArray(new double[0][]), w, nClusters, new SplittableRandom(seed ^ 0x9E3779B97F4A7C15L));
        return HostArrays.upload(memoryFor(parts.getFirst().centers()), dtype, centers, nClusters, d);
    }

    /** A Lloyd loop from {@code initialCenters} (k x d; copied), for a driver to run over partitions. */
    public Lloyd lloyd(NdArray initialCenters) {
        return new Lloyd(initialCenters);
    }

    /**
     * The client's side of the Lloyd iterations: holds the current centers, combines the partitions' steps and
     * decides when to stop; {@link #finish()} makes the centers the estimator's fitted state. Not thread-safe.
     */
    public final class Lloyd implements AutoCloseable {
        private final BufferAllocator<?> mem;
        private final int k;
        private final int d;
        private NdArray centers;
        private double[] current;
        private double lastInertia = Double.NaN;
        private int steps;
        private boolean done;

        private Lloyd(NdArray initialCenters) {
            checkMatrix("KMeans.lloyd", "initialCenters", initialCenters);
            if (initialCenters.dim(0) != nClusters) {
                throw new IllegalArgumentException("KMeans.lloyd: initialCenters has " + initialCenters.dim(0)
                        + " rows (expected: " + nClusters + ", nClusters)");
            }
            this.mem = memoryFor(initialCenters);
            this.k = nClusters;
            this.d = (int) initialCenters.dim(1);
            this.centers = initialCenters.copyTo(mem);
            this.current = HostArrays.doubles(centers);
        }

        /** The centers to run the next step against (k x d); owned by this loop. */
        public NdArray centers() {
            return centers;
        }

        /** Whether the loop has stopped. */
        public boolean done() {
            return done;
        }

        /** Steps combined so far. */
        public int steps() {
            return steps;
        }

        /** Combines the steps of every partition, all made against {@link #centers()}. */
        public void update(List<Step> parts) {
            if (done) {
                throw new IllegalStateException("KMeans.Lloyd has stopped after " + steps + " steps");
            }
            double[] sums = new double[k * d];
            double[] counts = new double[k];
            double inertia = 0;
            long n = 0;
            for (Step s : parts) {
                if (s.sums().dim(0) != k || s.sums().dim(1) != d) {
                    throw new IllegalArgumentException("KMeans.Lloyd.update: a step of shape " + shape(s.sums())
                            + " (expected: (" + k + ", " + d + "))");
                }
                double[] sv = HostArrays.doubles(s.sums());
                double[] cv = HostArrays.doubles(s.counts());
                for (int i = 0; i < sv.length; i++) {
                    sums[i] += sv[i];
                }
                for (int i = 0; i < k; i++) {
                    counts[i] += cv[i];
                }
                inertia += s.inertia();
                n += s.n();
            }
            steps++;
            lastInertia = inertia;
            double[] next = current.clone();
            double shift = 0;
            for (int c = 0; c < k; c++) {
                if (counts[c] == 0) {
                    continue;
                }
                for (int j = 0; j < d; j++) {
                    next[c * d + j] = sums[c * d + j] / counts[c];
                    double delta = next[c * d + j] - current[c * d + j];
                    shift += delta * delta;
                }
            }
            if (shift <= tol * inertia / Math.max(n, 1) || steps >= maxIter) {
                done = true;
                return;
            }
            current = next;
            HostArrays.write(centers, next);
        }

        /** Makes the last centers evaluated the estimator's fitted state; returns the estimator. */
        public KMeans finish() {
            if (steps == 0) {
                throw new IllegalStateException("KMeans.Lloyd.finish before any step");
            }
            KMeans.this.close();
            clusterCenters = centers;
            centers = null;
            inertia = lastInertia;
            nIter = steps;
            return KMeans.this;
        }

        /** Releases the centers unless {@link #finish()} took them. */
        @Override
        public void close() {
            if (centers != null) {
                centers.close();
                centers = null;
            }
        }
    }
}
