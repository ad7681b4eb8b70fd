package io.cuwire.ml.bench;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DType;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.NdArray;
import io.cuwire.ml.ComputeBackends;
import io.cuwire.ml.Estimator;
import io.cuwire.ml.Metrics;
import io.cuwire.ml.Reduction;
import io.cuwire.ml.cluster.KMeans;
import io.cuwire.ml.decomposition.PCA;
import io.cuwire.ml.ensemble.RandomForestClassifier;
import io.cuwire.ml.ensemble.RandomForestRegressor;
import io.cuwire.ml.internal.HostArrays;
import io.cuwire.ml.linear.LinearRegression;
import io.cuwire.ml.linear.LogisticRegression;
import io.cuwire.ml.linear.Ridge;
import io.cuwire.ml.naivebayes.MultinomialNB;
import io.cuwire.ml.neighbors.KNeighborsClassifier;
import io.cuwire.ml.neighbors.NearestNeighbors;
import io.cuwire.ml.neighbors.Neighbors;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * {@code cuwire bench estimators [--rows N] [--cols D] [--repeat R]}: per estimator, the median fit and predict
 * time on device 0 ({@link Devices#get}: a GPU where one is present, else the emulated device) and whether the
 * fitted model matches the reference, one line each:
 * <pre>RESULT estimator=KMeans backend=cuda fit_ms=… predict_ms=… rows=… matches_reference=true</pre>
 *
 * <h2>What "matches the reference" means</h2>
 * scikit-learn is not at hand at arbitrary sizes, so the reference is the same estimator fitted on the same
 * synthetic float64 data by the CPU backend on host memory; the model fitted on the device must agree with it within
 * the tolerances of {@code SklearnReferenceTest} (which ties the CPU backend to scikit-learn on fixed data sets):
 * linear models relative 1e-9 (coefficients, intercept, predictions); logistic regression probabilities absolute
 * 1e-4; KMeans (from the same start) labels exact, centers relative 1e-9; PCA explained variance and components
 * (up to sign) relative 1e-8; naive Bayes counts exact, probabilities relative 1e-9; neighbors indices exact,
 * distances relative 1e-9; forests (the same seeds, so the same trees) accuracy or R² within 0.05. "Relative"
 * is {@code max |a - ref| / max |ref|}.
 *
 * <h2>Timing</h2>
 * Data is generated on the host and uploaded once, outside the timings. A fit ends when the estimator returns; a
 * predict ends after a {@link Reduction#SUM} of its result, a scalar read back to the host, so that asynchronous
 * device work is inside the time. Each is the median of {@code repeat} runs. Neighbor queries and predictions are
 * on the first {@value #QUERIES} rows at most (brute force is quadratic); forests grow {@value #TREES} trees of
 * depth at most {@value #DEPTH}, trying {@code sqrt(features)} features per split.
 */
public final class EstimatorBench {
    static final int QUERIES = 1000;
    static final int TREES = 8;
    static final int DEPTH = 10;
    private static final int CLASSES = 3;
    private static final int CLUSTERS = 8;

    private EstimatorBench() {
    }

    /**
     * The benchmark's options.
     *
     * @param rows samples of each synthetic data set
     * @param cols features
     * @param repeat runs per measured time (the median is reported)
     */
    public record Options(long rows, int cols, int repeat) {
        /** Checks the ranges. */
        public Options {
            if (rows < CLUSTERS || rows > Integer.MAX_VALUE) {
                throw new IllegalArgumentException("--rows " + rows + " (expected: " + CLUSTERS + " .. "
                        + Integer.MAX_VALUE + ")");
            }
            if (cols < 2 || rows * cols > HostArrays.MAX_ELEMENTS) {
                throw new IllegalArgumentException("--cols " + cols + " (expected: >= 2 and rows x cols <= "
                        + HostArrays.MAX_ELEMENTS + ")");
            }
            if (repeat < 1) {
                throw new IllegalArgumentException("--repeat " + repeat + " (expected: >= 1)");
            }
        }

        /** Parses {@code --rows N --cols D --repeat R}; defaults 100000 x 32, 3 runs. */
        public static Options parse(String... args) {
            long rows = 100_000;
            int cols = 32;
            int repeat = 3;
            for (int i = 0; i < args.length; i++) {
                String a = args[i];
                if (i + 1 >= args.length) {
                    throw new IllegalArgumentException("unknown or incomplete option '" + a + "' (expected: --rows N, "
                            + "--cols D, --repeat R)");
                }
                String v = args[++i];
                try {
                    switch (a) {
                        case "--rows" -> rows = Long.parseLong(v);
                        case "--cols" -> cols = Integer.parseInt(v);
                        case "--repeat" -> repeat = Integer.parseInt(v);
                        default -> throw new IllegalArgumentException("unknown option '" + a + "' (expected: --rows "
                                + "N, --cols D, --repeat R)");
                    }
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException(a + " " + v + " is not a number", e);
                }
            }
            return new Options(rows, cols, repeat);
        }
    }

    /** One estimator's measurement. */
    public record Result(String estimator, String backend, double fitMs, double predictMs, long rows,
            boolean matchesReference) {
        /** The RESULT line. */
        public String line() {
            return String.format(Locale.ROOT, "RESULT estimator=%s backend=%s fit_ms=%.3f predict_ms=%.3f rows=%d "
                    + "matches_reference=%s", estimator, backend, fitMs, predictMs, rows, matchesReference);
        }
    }

    public static void main(String[] args) {
        Options options;
        try {
            options = Options.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("EstimatorBench: " + e.getMessage());
            System.exit(2);
            return;
        }
        System.exit(run(options, System.out).stream().allMatch(Result::matchesReference) ? 0 : 1);
    }

    /** Runs every estimator, printing a RESULT line as each finishes; returns the results. */
    public static List<Result> run(Options o, PrintStream out) {
        Data data = Data.make(o, new SplittableRandom(20240611L));
        List<Result> results = new ArrayList<>();
        try (BufferAllocator<DeviceBuffer> device = Devices.get(0).newAllocator("bench-estimators",
                BufferAllocator.UNLIMITED);
                BufferAllocator<HostBuffer> host = BufferAllocator.host("bench-estimators-host",
                        BufferAllocator.UNLIMITED)) {
            for (Bench b : benches()) {
                try (Uploaded d = data.upload(device); Uploaded h = data.upload(host)) {
                    Result r = b.run(o, d, h);
                    results.add(r);
                    out.println(r.line());
                    out.flush();
                }
            }
        }
        return results;
    }

    // ---------------------------------------------------------------- data

    /** The synthetic data sets, on the host. */
    private record Data(int n, int d, int q, double[] x, double[] y, int[] labels, double[] blobs, double[] init,
            double[] counts, double[] scaled) {
        static Data make(Options o, SplittableRandom r) {
            int n = (int) o.rows();
            int d = o.cols();
            double[] x = new double[n * d];
            for (int i = 0; i < x.length; i++) {
                x[i] = gaussian(r);
            }
            double[] w = new double[d];
            double[][] cw = new double[CLASSES][d];
            for (int j = 0; j < d; j++) {
                w[j] = r.nextDouble(-2, 2);
                for (int c = 0; c < CLASSES; c++) {
                    cw[c][j] = r.nextDouble(-1, 1);
                }
            }
            double[] y = new double[n];
            int[] labels = new int[n];
            for (int i = 0; i < n; i++) {
                double s = 3;
                double best = Double.NEGATIVE_INFINITY;
                for (int c = 0; c < CLASSES; c++) {
                    double z = gaussian(r);
                    for (int j = 0; j < d; j++) {
                        z += cw[c][j] * x[i * d + j];
                    }
                    if (z > best) {
                        best = z;
                        labels[i] = c;
                    }
                }
                for (int j = 0; j < d; j++) {
                    s += w[j] * x[i * d + j];
                }
                y[i] = s + 0.1 * gaussian(r) + Math.sin(x[i * d]);
            }
            double[] centers = new double[CLUSTERS * d];
            for (int i = 0; i < centers.length; i++) {
                centers[i] = r.nextDouble(-10, 10);
            }
            double[] blobs = new double[n * d];
            double[] counts = new double[n * d];
            double[] scaled = new double[n * d];
            for (int i = 0; i < n; i++) {
                int c = i % CLUSTERS;
                for (int j = 0; j < d; j++) {
                    blobs[i * d + j] = centers[c * d + j] + gaussian(r);
                    counts[i * d + j] = Math.floor(Math.abs(x[i * d + j]) * (1 + (labels[i] + j) % 3));
                    scaled[i * d + j] = x[i * d + j] * (1 + j);
                }
            }
            double[] init = Arrays.copyOf(blobs, CLUSTERS * d);
            return new Data(n, d, Math.min(n, QUERIES), x, y, labels, blobs, init, counts, scaled);
        }

        Uploaded upload(BufferAllocator<?> mem) {
            List<NdArray> made = new ArrayList<>();
            try {
                NdArray ax = add(made, HostArrays.upload(mem, DType.FLOAT64, x, n, d));
                NdArray ay = add(made, HostArrays.upload(mem, DType.FLOAT64, y, n));
                NdArray al = add(made, NdArray.fromArray(mem, labels, n));
                NdArray ab = add(made, HostArrays.upload(mem, DType.FLOAT64, blobs, n, d));
                NdArray ai = add(made, HostArrays.upload(mem, DType.FLOAT64, init, CLUSTERS, d));
                NdArray ac = add(made, HostArrays.upload(mem, DType.FLOAT64, counts, n, d));
                NdArray as = add(made, HostArrays.upload(mem, DType.FLOAT64, scaled, n, d));
                NdArray aq = add(made, HostArrays.upload(mem, DType.FLOAT64, Arrays.copyOf(x, q * d), q, d));
                return new Uploaded(ax, ay, al, ab, ai, ac, as, aq);
            } catch (RuntimeException | Error e) {
                made.forEach(NdArray::close);
                throw e;
            }
        }

        private static NdArray add(List<NdArray> made, NdArray a) {
            made.add(a);
            return a;
        }

        private static double gaussian(SplittableRandom r) {
            return Math.sqrt(-2 * Math.log1p(-r.nextDouble())) * Math.cos(2 * Math.PI * r.nextDouble());
        }
    }

    /** The data sets in one place: gaussian x with targets y and labels; blobs with a start; counts; scaled. */
    private record Uploaded(NdArray x, NdArray y, NdArray labels, NdArray blobs, NdArray init, NdArray counts,
            NdArray scaled, NdArray queries) implements AutoCloseable {
        @Override
        public void close() {
            for (NdArray a : List.of(x, y, labels, blobs, init, counts, scaled, queries)) {
                a.close();
            }
        }
    }

    // ---------------------------------------------------------------- estimators

    /** Fits an estimator on one place's data. */
    private interface Fit {
        Estimator fit(Uploaded u);
    }

    /** What a fitted estimator predicts, on one place's data. */
    private interface Predict {
        NdArray predict(Estimator e, Uploaded u);
    }

    /** Whether the device's model and predictions agree with the host's. */
    private interface Agree {
        boolean agree(Estimator device, NdArray devicePredicted, Estimator host, NdArray hostPredicted, Uploaded d,
                Uploaded h);
    }

    private record Bench(String name, Fit fit, Predict predict, Agree agree) {
        Result run(Options o, Uploaded d, Uploaded h) {
            double[] fits = new double[o.repeat()];
            double[] predicts = new double[o.repeat()];
            Estimator model = null;
            NdArray predicted = null;
            try {
                for (int i = 0; i < o.repeat(); i++) {
                    if (model != null) {
                        model.close();
                    }
                    long t0 = System.nanoTime();
                    model = fit.fit(d);
                    long t1 = System.nanoTime();
                    fits[i] = (t1 - t0) / 1e6;
                }
                for (int i = 0; i < o.repeat(); i++) {
                    if (predicted != null) {
                        predicted.close();
                    }
                    long t0 = System.nanoTime();
                    predicted = predict.predict(model, d);
                    ComputeBackends.forArray(predicted).reduce(Reduction.SUM, predicted);
                    long t1 = System.nanoTime();
                    predicts[i] = (t1 - t0) / 1e6;
                }
                boolean matches;
                try (Estimator ref = fit.fit(h); NdArray refPredicted = predict.predict(ref, h)) {
                    matches = agree.agree(model, predicted, ref, refPredicted, d, h);
                }
                return new Result(name, ComputeBackends.forArray(d.x()).name(), median(fits), median(predicts),
                        o.rows(), matches);
            } finally {
                if (predicted != null) {
                    predicted.close();
                }
                if (model != null) {
                    model.close();
                }
            }
        }
    }

    private static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }

    private static List<Bench> benches() {
        List<Bench> all = new ArrayList<>();
        Agree linear = (dm, dp, hm, hp, d, h) -> rel(dp, hp) <= 1e-9
                && rel(((io.cuwire.ml.linear.LinearModel) dm).coef(), ((io.cuwire.ml.linear.LinearModel) hm).coef())
                <= 1e-9;
        all.add(new Bench("LinearRegression", u -> new LinearRegression().fit(u.x(), u.y()),
                (e, u) -> ((LinearRegression) e).predict(u.x()), linear));
        all.add(new Bench("Ridge", u -> new Ridge().alpha(1.0).fit(u.x(), u.y()),
                (e, u) -> ((Ridge) e).predict(u.x()), linear));
        all.add(new Bench("LogisticRegression",
                u -> new LogisticRegression().tol(1e-8).maxIter(200).fit(u.x(), u.labels()),
                (e, u) -> ((LogisticRegression) e).predictProba(u.x()),
                (dm, dp, hm, hp, d, h) -> absDiff(dp, hp) <= 1e-4));
        all.add(new Bench("KMeans", u -> new KMeans().nClusters(CLUSTERS).tol(0).maxIter(100).fit(u.blobs(), u.init()),
                (e, u) -> ((KMeans) e).predict(u.blobs()),
                (dm, dp, hm, hp, d, h) -> Arrays.equals(HostArrays.ints(dp), HostArrays.ints(hp))
                        && rel(((KMeans) dm).clusterCenters(), ((KMeans) hm).clusterCenters()) <= 1e-9));
        all.add(new Bench("PCA", u -> new PCA().nComponents(Math.min(8, (int) u.scaled().dim(1))).fit(u.scaled()),
                (e, u) -> ((PCA) e).transform(u.scaled()), (dm, dp, hm, hp, d, h) -> pcaAgrees((PCA) dm, (PCA) hm)));
        all.add(new Bench("MultinomialNB", u -> new MultinomialNB().fit(u.counts(), u.labels()),
                (e, u) -> ((MultinomialNB) e).predictProba(u.counts()),
                (dm, dp, hm, hp, d, h) -> Arrays.equals(HostArrays.doubles(((MultinomialNB) dm).featureCount()),
                        HostArrays.doubles(((MultinomialNB) hm).featureCount())) && rel(dp, hp) <= 1e-9));
        all.add(new Bench("NearestNeighbors", u -> new NearestNeighbors().nNeighbors(5).fit(u.x()),
                (e, u) -> ids((NearestNeighbors) e, u), (dm, dp, hm, hp, d, h) -> {
                    try (Neighbors a = ((NearestNeighbors) dm).kneighbors(d.queries());
                            Neighbors b = ((NearestNeighbors) hm).kneighbors(h.queries())) {
                        return Arrays.equals(HostArrays.longs(dp), HostArrays.longs(hp))
                                && rel(a.distances(), b.distances()) <= 1e-9;
                    }
                }));
        all.add(new Bench("KNeighborsClassifier", u -> new KNeighborsClassifier().nNeighbors(5).fit(u.x(), u.labels()),
                (e, u) -> ((KNeighborsClassifier) e).predict(u.queries()),
                (dm, dp, hm, hp, d, h) -> Arrays.equals(HostArrays.ints(dp), HostArrays.ints(hp))));
        all.add(new Bench("RandomForestClassifier",
                u -> new RandomForestClassifier().nEstimators(TREES).maxDepth(DEPTH).seed(7).fit(u.x(), u.labels()),
                (e, u) -> ((RandomForestClassifier) e).predict(u.x()),
                (dm, dp, hm, hp, d, h) -> Math.abs(Metrics.accuracy(d.labels(), dp)
                        - Metrics.accuracy(h.labels(), hp)) <= 0.05));
        all.add(new Bench("RandomForestRegressor",
                u -> new RandomForestRegressor().nEstimators(TREES).maxDepth(DEPTH).seed(7)
                        .fit(u.x(), u.y()),
                (e, u) -> ((RandomForestRegressor) e).predict(u.x()),
                (dm, dp, hm, hp, d, h) -> Math.abs(Metrics.r2(d.y(), dp) - Metrics.r2(h.y(), hp)) <= 0.05));
        return all;
    }

    /** The ids of the neighbors of the queries (the benchmark's prediction for NearestNeighbors). */
    private static NdArray ids(NearestNeighbors nn, Uploaded u) {
        Neighbors found = nn.kneighbors(u.queries());
        found.distances().close();
        return found.ids();
    }

    private static boolean pcaAgrees(PCA a, PCA b) {
        if (rel(a.explainedVariance(), b.explainedVariance()) > 1e-8) {
            return false;
        }
        double[] ca = HostArrays.doubles(a.components());
        double[] cb = HostArrays.doubles(b.components());
        int d = (int) a.components().dim(1);
        for (int c = 0; c < a.components().dim(0); c++) {
            double dot = 0;
            for (int j = 0; j < d; j++) {
                dot += ca[c * d + j] * cb[c * d + j];
            }
            for (int j = 0; dot < 0 && j < d; j++) {
                ca[c * d + j] = -ca[c * d + j];
            }
        }
        return rel(ca, cb) <= 1e-8;
    }

    private static double rel(NdArray a, NdArray ref) {
        return rel(HostArrays.numbers(a), HostArrays.numbers(ref));
    }

    private static double rel(double[] a, double[] ref) {
        if (a.length != ref.length) {
            return Double.POSITIVE_INFINITY;
        }
        double diff = 0;
        double scale = 0;
        for (int i = 0; i < a.length; i++) {
            diff = Math.max(diff, Math.abs(a[i] - ref[i]));
            scale = Math.max(scale, Math.abs(ref[i]));
        }
        return Double.isNaN(diff) ? Double.POSITIVE_INFINITY : scale == 0 ? diff : diff / scale;
    }

    private static double absDiff(NdArray a, NdArray ref) {
        double[] x = HostArrays.numbers(a);
        double[] y = HostArrays.numbers(ref);
        if (x.length != y.length) {
            return Double.POSITIVE_INFINITY;
        }
        double m = 0;
        for (int i = 0; i < x.length; i++) {
            m = Math.max(m, Math.abs(x[i] - y[i]));
        }
        return Double.isNaN(m) ? Double.POSITIVE_INFINITY : m;
    }
}
