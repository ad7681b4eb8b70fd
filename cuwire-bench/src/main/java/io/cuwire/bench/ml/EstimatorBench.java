package io.cuwire.bench.ml;

import io.cuwire.bench.harness.Cli;
import io.cuwire.bench.harness.Results;
import io.cuwire.bench.harness.Stats;
import io.cuwire.bench.harness.Table;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DType;
import io.cuwire.memory.Device;
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
import io.cuwire.ml.linear.LinearRegression;
import io.cuwire.ml.linear.LogisticRegression;
import io.cuwire.ml.linear.Ridge;
import io.cuwire.ml.naivebayes.MultinomialNB;
import io.cuwire.ml.neighbors.KNeighborsClassifier;
import io.cuwire.ml.neighbors.NearestNeighbors;
import io.cuwire.ml.neighbors.Neighbors;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.stream.Collectors;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code cuwire bench estimators [--rows N] [--cols D] [--repeat R] [--warmup W] [--backends device,cpu]
 * [--neighbors K] [--estimators NAME,NAME] [--peer sklearn] [--python PATH] [--out DIR] [--forest-rows N]
 * [--forest-trees T] [--forest-depth D] [--forest-peer sklearn]}: per estimator (all, or those named) and backend,
 * the median fit and predict time on the same synthetic data and whether the fitted model matches the reference, one
 * line each:
 * <pre>RESULT estimator=KMeans backend=cuda fit_ms=… predict_ms=… rows=… matches_reference=true</pre>
 * With {@code --out DIR} it also records the run ({@link Results#record}) in {@code DIR/estimators-<machine>.md} (the
 * backends side by side, with the CPU-to-device time ratio) and {@code DIR/estimators-<machine>.csv} (one row per line
 * above).
 *
 * <h2>Backends</h2>
 * {@code device} is device 0 ({@link Devices#get}): a GPU where one is present (the CUDA backend, printed
 * {@code backend=cuda}), else the emulated device (the CPU backend staging every operand through the copy engine,
 * printed {@code backend=emulated}); {@code cuda} is the same but refuses to run without a CUDA device 0;
 * {@code cpu} is the CPU backend on host memory, all of its arithmetic in doubles, on
 * {@link io.cuwire.ml.ComputeBackends#cpuThreads()} threads.
 *
 * <h2>scikit-learn beside it</h2>
 * With {@code --peer sklearn} the bench writes its data sets to a temporary directory and runs scikit-learn on them in
 * the same run ({@code sklearn_peer.py}, a resource of this package, with {@code --python}, default {@link
 * SklearnForests#python()}), with the same settings ({@code n_jobs=-1} wherever an estimator takes it; equal {@code
 * tol}, {@code max_iter}, {@code n_init} and start; the same predict calls), and prints its lines ({@code INFO
 * peer=sklearn ...} with the versions, threads and BLAS; {@code PEER estimator=... fit_ms=... predict_ms=...
 * n_iter=...}); the table files get a section with cuwire's CPU backend beside scikit-learn, their time ratios and both
 * iteration counts. Forests are left out (their bench grows fewer, shallower trees than scikit-learn's defaults).
 * Without Python or scikit-learn the peer is skipped, with the reason printed and written.
 *
 * <h2>What "matches the reference" means</h2>
 * scikit-learn is not at hand at arbitrary sizes, so the reference is the same estimator fitted on the same
 * synthetic float64 data by the CPU backend on host memory (the {@code cpu} run itself when it is one of the
 * backends, so its own line matches by definition); another backend's model must agree with it within the
 * tolerances of {@code SklearnReferenceTest} (which ties the CPU backend to scikit-learn on fixed data sets):
 * linear models relative 1e-9 (coefficients, intercept, predictions); logistic regression probabilities absolute
 * 1e-4; KMeans (from the same start) labels exact, centers relative 1e-9; PCA explained variance and components
 * (up to sign) relative 1e-8; naive Bayes counts exact, probabilities relative 1e-9; neighbors indices exact,
 * distances relative 1e-9; forests (the same seeds, so the same trees) accuracy or R² within 0.05. "Relative"
 * is {@code max |a - ref| / max |ref|}.
 *
 * <h2>Timing</h2>
 * Data is generated on the host and uploaded once per estimator and backend, outside the timings. A fit ends when the
 * estimator returns; a predict ends after a {@link Reduction#SUM} of its result, a scalar read back to the host, so
 * that asynchronous device work is inside the time. Each is the median of {@code repeat} runs after {@code warmup}
 * untimed fits and predicts (default 3: the CPU backend's kernels reach the JIT's optimized code within a few calls,
 * and until then one estimator's time would depend on which ran before it; scikit-learn's peer gets as many, its
 * forests none); an {@code INFO} line gives the first untimed fit and predict of each. NearestNeighbors and
 * KNeighborsClassifier are fitted with {@code fitView}, which keeps a view of X as scikit-learn's {@code fit} keeps a
 * reference (the bench keeps X open meanwhile), and an {@code INFO} line gives their copying {@code fit}'s median in
 * the same run ({@code copying_fit_ms}). Neighbor queries and predictions are on the first {@value #QUERIES} rows at
 * most (brute force is quadratic); forests grow {@value #TREES} trees of depth at most {@value #DEPTH}, trying
 * {@code sqrt(features)} features per split (the regressor's default would try all), on the first {@value #FOREST_ROWS}
 * rows at most (the {@code rows} of their lines say so; {@code --forest-trees}, {@code --forest-depth} and
 * {@code --forest-rows} change the three, e.g. to issue 23's 100 trees of depth 12 on 10<sup>6</sup> x 64 with
 * {@code --rows 1000000 --cols 64}): with histogram splits, the CUDA backend grows the trees on the GPU, the CPU and
 * emulated backends on the host (in parallel).
 *
 * <h2>scikit-learn beside the forests</h2>
 * With {@code --forest-peer sklearn} each forest is also fitted by scikit-learn ({@link SklearnForests}, every core)
 * on the same rows with the same trees, depth and {@code sqrt} features per split, and predicts the same rows: a
 * line {@code backend=sklearn} whose {@code matches_reference} says that its training accuracy or R² is within
 * 0.05 of the CPU backend's. Where Python cannot import scikit-learn an {@code INFO} line says why and there is no
 * such line. This peer is the forests' own; it measures nothing else.
 */
public final class EstimatorBench {
    static final int QUERIES = 1000;
    static final int TREES = 8;
    static final int DEPTH = 10;
    static final int FOREST_ROWS = 50_000;
    private static final int CLASSES = 3;
    private static final int CLUSTERS = 8;

    private EstimatorBench() {}

    /** A backend to run on: where the data live. */
    public enum Backend {
        /** Device 0, whatever it is (CUDA where present, else the emulated device). */
        DEVICE,
        /** Device 0, which must be a CUDA device. */
        CUDA,
        /** The CPU backend on host memory. */
        CPU
    }

    /**
     * The benchmark's options.
     *
     * @param rows samples of each synthetic data set
     * @param cols features
     * @param repeat runs per measured time (the median is reported)
     * @param backends where to run, in order (at most one device backend)
     * @param neighbors the {@code k} of NearestNeighbors and KNeighborsClassifier
     * @param estimators the estimators to run, by name, or empty for all
     * @param out the directory for the table files, or {@code null} for none
     * @param peerSklearn whether to run scikit-learn beside the bench
     * @param python the Python that runs scikit-learn
     * @param forests the forests' sizes and peer
     */
    public record Options(
            long rows,
            int cols,
            int repeat,
            int warmup,
            List<Backend> backends,
            int neighbors,
            List<String> estimators,
            Path out,
            boolean peerSklearn,
            String python,
            Forests forests) {
        /** Checks the ranges. */
        public Options {
            if (rows < CLUSTERS || rows > Integer.MAX_VALUE) {
                throw new IllegalArgumentException(
                        "--rows " + rows + " (expected: " + CLUSTERS + " .. " + Integer.MAX_VALUE + ")");
            }
            if (cols < 2 || rows * cols > NdArray.MAX_ARRAY_LENGTH) {
                throw new IllegalArgumentException(
                        "--cols " + cols + " (expected: >= 2 and rows x cols <= " + NdArray.MAX_ARRAY_LENGTH + ")");
            }
            if (repeat < 1) {
                throw new IllegalArgumentException("--repeat " + repeat + " (expected: >= 1)");
            }
            if (warmup < 1) {
                throw new IllegalArgumentException("--warmup " + warmup + " (expected: >= 1)");
            }
            if (neighbors < 1 || neighbors > Math.min(rows, QUERIES)) {
                throw new IllegalArgumentException(
                        "--neighbors " + neighbors + " (expected: 1 .. " + Math.min(rows, QUERIES) + ")");
            }
            estimators = List.copyOf(estimators);
            List<String> known =
                    benches(neighbors, forests).stream().map(Bench::name).toList();
            for (String e : estimators) {
                if (!known.contains(e)) {
                    throw new IllegalArgumentException(
                            "--estimators: unknown estimator '" + e + "' (expected: " + String.join(", ", known) + ")");
                }
            }
            backends = List.copyOf(backends);
            if (backends.isEmpty()
                    || backends.size() != backends.stream().distinct().count()
                    || backends.stream().filter(b -> b != Backend.CPU).count() > 1) {
                throw new IllegalArgumentException("--backends "
                        + backends.stream()
                                .map(b -> b.name().toLowerCase(Locale.ROOT))
                                .toList() + " (expected: one or more of device or cuda, and cpu, "
                        + "each once)");
            }
        }

        /** Parses the options of {@link Args} ({@code cuwire bench estimators --help}). */
        public static Options parse(String... args) {
            return Cli.parse(new Args(), args).options();
        }
    }

    /** A peer library that runs beside the bench on the same data. */
    public enum Peer {
        /** None. */
        NONE,
        /** scikit-learn, through the Python of {@code --python}. */
        SKLEARN
    }

    /** scikit-learn beside a bench, {@code --peer sklearn} and {@code --python PATH}: the benches' Args mix it in. */
    public static final class PeerArgs {
        /** The options at their defaults, for picocli to fill. */
        public PeerArgs() {}

        @Option(
                names = "--peer",
                paramLabel = "sklearn",
                defaultValue = "none",
                description = "scikit-learn beside the bench on the same data: sklearn or none (default: "
                        + "${DEFAULT-VALUE})")
        Peer peer;

        @Option(
                names = "--python",
                paramLabel = "PATH",
                description = "the Python that runs scikit-learn "
                        + "(default: python3 on the path, else /usr/bin/python3, whichever imports scikit-learn)")
        String python;

        /** Whether scikit-learn runs beside the bench. */
        boolean sklearn() {
            return peer == Peer.SKLEARN;
        }

        /** The Python that runs scikit-learn: {@code --python}, else {@link SklearnForests#python()}. */
        String python() {
            return python != null ? python : SklearnForests.python();
        }
    }

    /** The options of {@code cuwire bench estimators}, declared to picocli (the command mixes them in). */
    public static final class Args {
        /** The options at their defaults, for picocli to fill. */
        public Args() {}

        @Option(
                names = "--rows",
                paramLabel = "N",
                defaultValue = "100000",
                description = "samples of each synthetic data set (default: ${DEFAULT-VALUE})")
        long rows;

        @Option(
                names = "--cols",
                paramLabel = "D",
                defaultValue = "32",
                description = "features (default: " + "${DEFAULT-VALUE})")
        int cols;

        @Option(
                names = "--repeat",
                paramLabel = "R",
                defaultValue = "3",
                description = "runs per measured time, the median reported (default: ${DEFAULT-VALUE})")
        int repeat;

        @Option(
                names = "--warmup",
                paramLabel = "W",
                defaultValue = "3",
                description =
                        "untimed fits and predicts before the timed ones, on both sides (default: ${DEFAULT-VALUE})")
        int warmup;

        @Option(
                names = "--backends",
                split = ",",
                paramLabel = "B",
                defaultValue = "device,cpu",
                description = "where to run, in order: device (device 0, whatever it is), cuda (device 0, which must "
                        + "be CUDA), cpu; at most one of device and cuda (default: ${DEFAULT-VALUE})")
        List<Backend> backends;

        @Option(
                names = "--neighbors",
                paramLabel = "K",
                defaultValue = "5",
                description = "the k of NearestNeighbors and KNeighborsClassifier (default: ${DEFAULT-VALUE})")
        int neighbors;

        @Option(
                names = "--estimators",
                split = ",",
                paramLabel = "NAME",
                description = "the estimators to run, by class name (default: every one)")
        List<String> estimators = List.of();

        @Mixin
        PeerArgs peer;

        @Option(
                names = "--out",
                paramLabel = "DIR",
                description = "where the run is recorded, estimators-<machine>.md and .csv (default: nowhere)")
        Path out;

        @Option(
                names = "--forest-rows",
                paramLabel = "N",
                defaultValue = "" + FOREST_ROWS,
                description = "the most rows a forest is grown on (default: ${DEFAULT-VALUE})")
        int forestRows;

        @Option(
                names = "--forest-trees",
                paramLabel = "T",
                defaultValue = "" + TREES,
                description = "trees per forest (default: ${DEFAULT-VALUE})")
        int forestTrees;

        @Option(
                names = "--forest-depth",
                paramLabel = "D",
                defaultValue = "" + DEPTH,
                description = "the deepest a tree grows (default: ${DEFAULT-VALUE})")
        int forestDepth;

        @Option(
                names = "--forest-peer",
                paramLabel = "sklearn",
                defaultValue = "none",
                description = "scikit-learn's forests beside them: sklearn or none (default: ${DEFAULT-VALUE})")
        Peer forestPeer;

        /**
         * The typed options.
         *
         * @throws IllegalArgumentException naming the option whose value is out of range
         */
        public Options options() {
            return new Options(
                    rows,
                    cols,
                    repeat,
                    warmup,
                    backends,
                    neighbors,
                    estimators,
                    out,
                    peer.sklearn(),
                    peer.python(),
                    new Forests(forestRows, forestTrees, forestDepth, forestPeer == Peer.SKLEARN));
        }
    }

    /**
     * The forests' part of the options.
     *
     * @param rows the most rows a forest is grown on
     * @param trees trees per forest
     * @param depth the deepest a tree grows
     * @param sklearn whether scikit-learn's forests run beside them
     */
    public record Forests(int rows, int trees, int depth, boolean sklearn) {
        /** Checks the ranges. */
        public Forests {
            if (rows < 1 || trees < 1 || depth < 1) {
                throw new IllegalArgumentException("--forest-rows " + rows + ", --forest-trees " + trees
                        + ", --forest-depth " + depth + " (expected: each >= 1)");
            }
        }
    }

    /** One estimator's measurement. */
    public record Result(
            String estimator, String backend, double fitMs, double predictMs, long rows, boolean matchesReference) {
        /** The RESULT line. */
        public String line() {
            return String.format(
                    Locale.ROOT,
                    "RESULT estimator=%s backend=%s fit_ms=%.3f predict_ms=%.3f rows=%d " + "matches_reference=%s",
                    estimator,
                    backend,
                    fitMs,
                    predictMs,
                    rows,
                    matchesReference);
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

    /**
     * Runs every estimator on every backend (the CPU first when it is one of them: it is the reference), printing a
     * RESULT line as each finishes and writing the table files when asked; returns the results.
     *
     * @throws IllegalArgumentException if {@code cuda} is asked for and device 0 is not a CUDA device
     * @throws UncheckedIOException if the table files cannot be written
     */
    public static List<Result> run(Options o, PrintStream out) {
        boolean onDevice = o.backends().stream().anyMatch(b -> b != Backend.CPU);
        Device device = onDevice ? Devices.get(0) : null;
        if (o.backends().contains(Backend.CUDA) && !device.platform().equals("cuda")) {
            throw new IllegalArgumentException(
                    "--backends cuda: device 0 is " + device.platform() + " " + device.name() + ", not a CUDA device");
        }
        List<Backend> order = new ArrayList<>(o.backends());
        if (order.remove(Backend.CPU)) {
            order.addFirst(Backend.CPU);
        }
        String settings = settings(o, device);
        out.println("INFO bench=estimators " + settings);
        Data data = Data.make(o, new SplittableRandom(20240611L));
        List<Result> results = new ArrayList<>();
        Map<String, String> iterations = new HashMap<>();
        try (BufferAllocator<DeviceBuffer> onGpu =
                        onDevice ? device.newAllocator("bench-estimators", BufferAllocator.UNLIMITED) : null;
                BufferAllocator<HostBuffer> host =
                        BufferAllocator.host("bench-estimators-host", BufferAllocator.UNLIMITED)) {
            for (Bench b : benches(o.neighbors(), o.forests())) {
                if (!o.estimators().isEmpty() && !o.estimators().contains(b.name())) {
                    continue;
                }
                int rows = b.rows(o);
                try (Uploaded h = data.upload(host, rows)) {
                    Measured reference = null;
                    try {
                        for (Backend backend : order) {
                            Result r;
                            if (backend == Backend.CPU) {
                                reference = b.measure(o, h);
                                r = reference.result(b.name(), "cpu", rows, true);
                                out.println(reference.firstLine(b.name(), "cpu"));
                                copyingFitLine(b, o, h, "cpu", out);
                                iterations.put(b.name(), iterations(reference.model()));
                            } else {
                                try (Uploaded d = data.upload(onGpu, rows);
                                        Measured m = b.measure(o, d)) {
                                    if (reference == null) {
                                        reference = b.reference(h);
                                    }
                                    boolean matches = b.agree()
                                            .agree(
                                                    m.model(),
                                                    m.predicted(),
                                                    reference.model(),
                                                    reference.predicted(),
                                                    d,
                                                    h);
                                    String label = device.platform().equals("emulated")
                                            ? "emulated"
                                            : ComputeBackends.forArray(d.x()).name();
                                    r = m.result(b.name(), label, rows, matches);
                                    out.println(m.firstLine(b.name(), label));
                                    copyingFitLine(b, o, d, label, out);
                                }
                            }
                            results.add(r);
                            out.println(r.line());
                            out.flush();
                        }
                        if (o.forests().sklearn() && FORESTS.contains(b.name())) {
                            if (reference == null) {
                                reference = b.reference(h);
                            }
                            Result r = sklearnForest(b.name(), o, data, rows, reference, h, out);
                            if (r != null) {
                                results.add(r);
                                out.println(r.line());
                                out.flush();
                            }
                        }
                    } finally {
                        if (reference != null) {
                            reference.close();
                        }
                    }
                }
            }
        }
        SklearnPeer.Outcome peer = o.peerSklearn() ? peer(o, data, results, out) : null;
        if (o.out() != null) {
            writeTables(o.out(), settings, results, peer, iterations);
        }
        return results;
    }

    /** The INFO line of an estimator's copying fit, timed beside the fit of its RESULT line; none for the others. */
    private static void copyingFitLine(Bench b, Options o, Uploaded u, String backend, PrintStream out) {
        double ms = b.copyingFitMs(o, u);
        if (!Double.isNaN(ms)) {
            out.println(String.format(
                    Locale.ROOT,
                    "INFO estimator=%s backend=%s copying_fit_ms=%.3f (fit, which copies X; fit_ms is fitView's, "
                            + "which keeps a view of X as scikit-learn keeps a reference)",
                    b.name(),
                    backend,
                    ms));
        }
    }

    /** The iterations an estimator ran (LogisticRegression's and KMeans's), else {@code -}. */
    private static String iterations(Estimator e) {
        return switch (e) {
            case LogisticRegression lr -> Integer.toString(lr.nIter());
            case KMeans km -> Integer.toString(km.nIter());
            default -> "-";
        };
    }

    /** Runs scikit-learn on the data of the estimators measured (forests aside), in a temporary directory. */
    private static SklearnPeer.Outcome peer(Options o, Data data, List<Result> results, PrintStream out) {
        List<String> names = results.stream()
                .map(Result::estimator)
                .distinct()
                .filter(e -> !e.startsWith("RandomForest"))
                .toList();
        SklearnPeer.Outcome outcome;
        Path dir = null;
        try {
            dir = Files.createTempDirectory("cuwire-sklearn-peer");
            data.write(dir);
            outcome = names.isEmpty()
                    ? SklearnPeer.Outcome.skipped("no estimator it runs was measured")
                    : SklearnPeer.run(o.python(), dir, o.repeat(), o.warmup(), o.neighbors(), names, out);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the peer's data: " + e.getMessage(), e);
        } finally {
            deleteAll(dir);
        }
        if (outcome.skipped() != null) {
            out.println("INFO peer=sklearn skipped: " + outcome.skipped());
        }
        return outcome;
    }

    private static void deleteAll(Path dir) {
        if (dir == null) {
            return;
        }
        try (var files = Files.list(dir)) {
            for (Path f : files.toList()) {
                Files.deleteIfExists(f);
            }
            Files.deleteIfExists(dir);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot delete the peer's data in " + dir + ": " + e.getMessage(), e);
        }
    }

    private static String settings(Options o, Device device) {
        return String.format(
                Locale.ROOT,
                "rows=%d cols=%d repeat=%d warmup=%d backends=%s device=%s neighbors=%d "
                        + "neighbors_queries=%d forest_trees=%d forest_depth=%d forest_rows=%d",
                o.rows(),
                o.cols(),
                o.repeat(),
                o.warmup(),
                o.backends().stream()
                        .map(b -> b.name().toLowerCase(Locale.ROOT))
                        .collect(Collectors.joining(",")),
                device == null ? "none" : device.platform() + device.ordinal() + " (" + device.name() + ")",
                o.neighbors(),
                Math.min(o.rows(), QUERIES),
                o.forests().trees(),
                o.forests().depth(),
                Math.min(o.rows(), o.forests().rows()));
    }

    /**
     * scikit-learn's forest on the rows the CPU backend's {@code reference} was grown on; null (with an INFO line)
     * where Python cannot import it.
     */
    private static Result sklearnForest(
            String name, Options o, Data data, int rows, Measured reference, Uploaded h, PrintStream out) {
        Optional<String> why = SklearnForests.unavailable();
        if (why.isPresent()) {
            out.println("INFO estimator=" + name + " backend=sklearn skipped: " + why.get());
            return null;
        }
        boolean classifier = name.equals("RandomForestClassifier");
        double[] x = Arrays.copyOf(data.x(), rows * data.d());
        double[] y = classifier
                ? Arrays.stream(data.labels(), 0, rows).asDoubleStream().toArray()
                : Arrays.copyOf(data.y(), rows);
        SklearnForests.Run run = SklearnForests.run(
                classifier,
                x,
                rows,
                data.d(),
                y,
                rows,
                o.forests().trees(),
                o.forests().depth(),
                0,
                7,
                o.repeat());
        double ours = classifier
                ? Metrics.accuracy(h.labels(), reference.predicted())
                : Metrics.r2(h.y(), reference.predicted());
        out.println(String.format(
                Locale.ROOT,
                "INFO estimator=%s training score cuwire cpu %.4f, scikit-learn %s " + "%.4f",
                name,
                ours,
                run.version(),
                run.score()));
        return new Result(name, "sklearn", run.fitMs(), run.predictMs(), rows, Math.abs(ours - run.score()) <= 0.05);
    }

    // ---------------------------------------------------------------- tables

    /**
     * Records {@code estimators-<machine>.csv} (one row per result) and {@code .md} (backends side by side, and
     * cuwire's CPU backend beside scikit-learn when {@code peer} is not {@code null}).
     */
    static void writeTables(
            Path dir, String settings, List<Result> results, SklearnPeer.Outcome peer, Map<String, String> iterations) {
        List<String> backends = results.stream().map(Result::backend).distinct().toList();
        List<String> estimators =
                results.stream().map(Result::estimator).distinct().toList();
        Table csv = new Table("estimator", "backend", "rows", "fit_ms", "predict_ms", "matches_reference");
        for (Result r : results) {
            csv.row(
                    r.estimator(),
                    r.backend(),
                    r.rows(),
                    Table.num(r.fitMs(), 3),
                    Table.num(r.predictMs(), 3),
                    r.matchesReference());
        }
        List<String> columns = new ArrayList<>(List.of("estimator", "rows"));
        for (String b : backends) {
            columns.addAll(List.of(b + " fit", b + " predict"));
        }
        String device =
                backends.stream().filter(b -> !b.equals("cpu")).findFirst().orElse(null);
        boolean ratios = device != null && backends.contains("cpu");
        if (ratios) {
            columns.addAll(List.of("fit cpu/" + device, "predict cpu/" + device));
        }
        columns.add("matches reference");
        Table side = new Table(columns.toArray(String[]::new));
        for (String e : estimators) {
            List<Object> row = new ArrayList<>(List.of(
                    e,
                    results.stream()
                            .filter(r -> r.estimator().equals(e))
                            .findFirst()
                            .orElseThrow()
                            .rows()));
            boolean matches = true;
            for (String b : backends) {
                Result r = find(results, e, b);
                row.add(r == null ? "" : Table.num(r.fitMs(), 3));
                row.add(r == null ? "" : Table.num(r.predictMs(), 3));
                matches &= r == null || r.matchesReference();
            }
            if (ratios) {
                Result c = find(results, e, "cpu");
                Result g = find(results, e, device);
                row.add(c == null || g == null ? "" : Table.num(c.fitMs() / g.fitMs(), 1));
                row.add(c == null || g == null ? "" : Table.num(c.predictMs() / g.predictMs(), 1));
            }
            row.add(matches);
            side.row(row.toArray());
        }
        StringBuilder md = new StringBuilder("# cuwire bench estimators\n\n`")
                .append(settings)
                .append("`\n\n")
                .append("Median times in ms. The cpu backend is the reference (its rows match by definition); forests "
                        + "are grown on the GPU by the cuda backend, on the host by the others.\n\n")
                .append(side.markdown());
        if (peer != null) {
            peerTable(md, results, peer, iterations);
        }
        Results.record(
                dir,
                "estimators",
                "`cuwire bench estimators` on " + Results.machine(),
                Results.now(),
                md.toString(),
                csv.csv());
    }

    /** The section with the CPU backend beside scikit-learn. */
    private static void peerTable(
            StringBuilder md, List<Result> results, SklearnPeer.Outcome peer, Map<String, String> iterations) {
        md.append("\n## cuwire's CPU backend beside scikit-learn\n\n");
        if (peer.info() != null) {
            md.append('`').append(peer.info()).append("`\n\n");
        }
        if (peer.skipped() != null) {
            md.append("scikit-learn did not run: ").append(peer.skipped()).append(".\n");
        }
        if (peer.rows().isEmpty()) {
            return;
        }
        md.append("Median ms in the same run, on the same data. Ratios are cuwire / scikit-learn (below 1: cuwire "
                + "is faster). Iterations: cuwire / scikit-learn (for PCA and the neighbors, the solver or "
                + "algorithm scikit-learn chose).\n\n| estimator | cuwire cpu fit | scikit-learn fit | fit ratio | "
                + "cuwire cpu predict | scikit-learn predict | predict ratio | iterations | scikit-learn settings "
                + "|\n|---|---:|---:|---:|---:|---:|---:|---|---|\n");
        for (Result r : results) {
            SklearnPeer.Row p = peer.rows().get(r.estimator());
            if (!r.backend().equals("cpu") || p == null) {
                continue;
            }
            md.append(String.format(
                    Locale.ROOT,
                    "| %s | %.3f | %.3f | %.2f | %.3f | %.3f | %.2f | %s / %s | %s |%n",
                    r.estimator(),
                    r.fitMs(),
                    p.fitMs(),
                    r.fitMs() / p.fitMs(),
                    r.predictMs(),
                    p.predictMs(),
                    r.predictMs() / p.predictMs(),
                    iterations.getOrDefault(r.estimator(), "-"),
                    p.nIter(),
                    p.settings()));
        }
    }

    private static Result find(List<Result> results, String estimator, String backend) {
        return results.stream()
                .filter(r -> r.estimator().equals(estimator) && r.backend().equals(backend))
                .findFirst()
                .orElse(null);
    }

    // ---------------------------------------------------------------- data

    /** The synthetic data sets, on the host. */
    private record Data(
            int n,
            int d,
            int q,
            double[] x,
            double[] y,
            int[] labels,
            double[] blobs,
            double[] init,
            double[] counts,
            double[] scaled) {
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

        /**
         * Writes every data set to {@code dir} for the peer: {@code NAME.bin} (raw little-endian elements, rows in
         * order) and {@code data.txt} (a line per set: name, NumPy dtype, shape).
         */
        void write(Path dir) throws IOException {
            StringBuilder index = new StringBuilder();
            String matrix = " " + n + " " + d + "\n";
            writeDoubles(dir, "x", x);
            index.append("x f8").append(matrix);
            writeDoubles(dir, "y", y);
            index.append("y f8 ").append(n).append('\n');
            ByteBuffer l = ByteBuffer.allocate(labels.length * Integer.BYTES).order(ByteOrder.LITTLE_ENDIAN);
            l.asIntBuffer().put(labels);
            Files.write(dir.resolve("labels.bin"), l.array());
            index.append("labels i4 ").append(n).append('\n');
            writeDoubles(dir, "blobs", blobs);
            index.append("blobs f8").append(matrix);
            writeDoubles(dir, "init", init);
            index.append("init f8 ").append(CLUSTERS).append(' ').append(d).append('\n');
            writeDoubles(dir, "counts", counts);
            index.append("counts f8").append(matrix);
            writeDoubles(dir, "scaled", scaled);
            index.append("scaled f8").append(matrix);
            writeDoubles(dir, "queries", Arrays.copyOf(x, q * d));
            index.append("queries f8 ").append(q).append(' ').append(d).append('\n');
            Files.writeString(dir.resolve("data.txt"), index);
        }

        private static void writeDoubles(Path dir, String name, double[] v) throws IOException {
            ByteBuffer b = ByteBuffer.allocate(v.length * Double.BYTES).order(ByteOrder.LITTLE_ENDIAN);
            b.asDoubleBuffer().put(v);
            Files.write(dir.resolve(name + ".bin"), b.array());
        }

        /** The first {@code rows} rows of every data set (the start and the queries whole), in {@code mem}. */
        Uploaded upload(BufferAllocator<?> mem, int rows) {
            int m = rows * d;
            int qr = Math.min(q, rows);
            List<NdArray> made = new ArrayList<>();
            try {
                NdArray ax = add(made, NdArray.fromArray(mem, Arrays.copyOf(x, m), rows, d));
                NdArray ay = add(made, NdArray.fromArray(mem, Arrays.copyOf(y, rows), rows));
                NdArray al = add(made, NdArray.fromArray(mem, Arrays.copyOf(labels, rows), rows));
                NdArray ab = add(made, NdArray.fromArray(mem, Arrays.copyOf(blobs, m), rows, d));
                NdArray ai = add(made, NdArray.fromArray(mem, init, CLUSTERS, d));
                NdArray ac = add(made, NdArray.fromArray(mem, Arrays.copyOf(counts, m), rows, d));
                NdArray as = add(made, NdArray.fromArray(mem, Arrays.copyOf(scaled, m), rows, d));
                NdArray aq = add(made, NdArray.fromArray(mem, Arrays.copyOf(x, qr * d), qr, d));
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
    private record Uploaded(
            NdArray x,
            NdArray y,
            NdArray labels,
            NdArray blobs,
            NdArray init,
            NdArray counts,
            NdArray scaled,
            NdArray queries)
            implements AutoCloseable {
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
        boolean agree(
                Estimator device,
                NdArray devicePredicted,
                Estimator host,
                NdArray hostPredicted,
                Uploaded d,
                Uploaded h);
    }

    /** A fitted model, its prediction and their median times; closing releases both. */
    private record Measured(
            Estimator model,
            NdArray predicted,
            double fitMs,
            double predictMs,
            double firstFitMs,
            double firstPredictMs)
            implements AutoCloseable {
        /** The INFO line of the first, untimed fit and predict (the JIT's first compilations are in them). */
        String firstLine(String estimator, String backend) {
            return String.format(
                    Locale.ROOT,
                    "INFO estimator=%s backend=%s first_fit_ms=%.3f first_predict_ms=%.3f (the first untimed run)",
                    estimator,
                    backend,
                    firstFitMs,
                    firstPredictMs);
        }

        Result result(String estimator, String backend, long rows, boolean matches) {
            return new Result(estimator, backend, fitMs, predictMs, rows, matches);
        }

        @Override
        public void close() {
            try {
                predicted.close();
            } finally {
                model.close();
            }
        }
    }

    /**
     * An estimator to measure, on the first {@code maxRows} rows of the data (0: all); {@code copyingFit}, where not
     * {@code null}, is the neighbors' copying {@code fit}, timed beside their {@code fitView} ({@code fit}).
     */
    private record Bench(String name, Fit fit, Predict predict, Agree agree, int maxRows, Fit copyingFit) {
        Bench(String name, Fit fit, Predict predict, Agree agree) {
            this(name, fit, predict, agree, 0, null);
        }

        Bench(String name, Fit fit, Predict predict, Agree agree, int maxRows) {
            this(name, fit, predict, agree, maxRows, null);
        }

        /**
         * The median time of {@code repeat} copying fits after {@code warmup} untimed ones (each model closed
         * outside the time), or NaN without one.
         */
        double copyingFitMs(Options o, Uploaded u) {
            if (copyingFit == null) {
                return Double.NaN;
            }
            double[] fits = new double[o.repeat()];
            for (int i = -o.warmup(); i < o.repeat(); i++) {
                long t0 = System.nanoTime();
                Estimator e = copyingFit.fit(u);
                long t1 = System.nanoTime();
                e.close();
                if (i >= 0) {
                    fits[i] = (t1 - t0) / 1e6;
                }
            }
            return Stats.median(fits);
        }

        /** The rows it runs on. */
        int rows(Options o) {
            return (int) (maxRows == 0 ? o.rows() : Math.min(o.rows(), maxRows));
        }

        /** Fits and predicts {@code repeat} times each on one place's data; keeps the last model and prediction. */
        Measured measure(Options o, Uploaded u) {
            double[] fits = new double[o.repeat()];
            double[] predicts = new double[o.repeat()];
            Estimator model = null;
            NdArray predicted = null;
            double firstFitMs = 0;
            double firstPredictMs = 0;
            try {
                for (int i = 0; i < o.warmup(); i++) {
                    long t0 = System.nanoTime();
                    try (Estimator warm = fit.fit(u)) {
                        long t1 = System.nanoTime();
                        try (NdArray p = predict.predict(warm, u)) {
                            ComputeBackends.forArray(p).reduce(Reduction.SUM, p);
                        }
                        long t2 = System.nanoTime();
                        if (i == 0) {
                            firstFitMs = (t1 - t0) / 1e6;
                            firstPredictMs = (t2 - t1) / 1e6;
                        }
                    }
                }
                for (int i = 0; i < o.repeat(); i++) {
                    if (model != null) {
                        model.close();
                    }
                    long t0 = System.nanoTime();
                    model = fit.fit(u);
                    long t1 = System.nanoTime();
                    fits[i] = (t1 - t0) / 1e6;
                }
                for (int i = 0; i < o.repeat(); i++) {
                    if (predicted != null) {
                        predicted.close();
                    }
                    long t0 = System.nanoTime();
                    predicted = predict.predict(model, u);
                    ComputeBackends.forArray(predicted).reduce(Reduction.SUM, predicted);
                    long t1 = System.nanoTime();
                    predicts[i] = (t1 - t0) / 1e6;
                }
                Measured m = new Measured(
                        model, predicted, Stats.median(fits), Stats.median(predicts), firstFitMs, firstPredictMs);
                model = null;
                predicted = null;
                return m;
            } finally {
                if (predicted != null) {
                    predicted.close();
                }
                if (model != null) {
                    model.close();
                }
            }
        }

        /** The reference, untimed: fitted and predicted once on host data. */
        Measured reference(Uploaded h) {
            Estimator model = fit.fit(h);
            try {
                return new Measured(model, predict.predict(model, h), 0, 0, 0, 0);
            } catch (RuntimeException | Error e) {
                model.close();
                throw e;
            }
        }
    }

    /** The forests, which {@code --forest-…} options size. */
    private static final List<String> FORESTS = List.of("RandomForestClassifier", "RandomForestRegressor");

    private static List<Bench> benches(int neighbors, Forests forests) {
        List<Bench> all = new ArrayList<>();
        Agree linear = (dm, dp, hm, hp, d, h) -> rel(dp, hp) <= 1e-9
                && rel(((io.cuwire.ml.linear.LinearModel) dm).coef(), ((io.cuwire.ml.linear.LinearModel) hm).coef())
                        <= 1e-9;
        all.add(new Bench(
                "LinearRegression",
                u -> new LinearRegression().fit(u.x(), u.y()),
                (e, u) -> ((LinearRegression) e).predict(u.x()),
                linear));
        all.add(new Bench(
                "Ridge", u -> new Ridge().alpha(1.0).fit(u.x(), u.y()), (e, u) -> ((Ridge) e).predict(u.x()), linear));
        all.add(new Bench(
                "LogisticRegression",
                u -> new LogisticRegression().tol(1e-8).maxIter(200).fit(u.x(), u.labels()),
                (e, u) -> ((LogisticRegression) e).predictProba(u.x()),
                (dm, dp, hm, hp, d, h) -> absDiff(dp, hp) <= 1e-4));
        all.add(new Bench(
                "KMeans",
                u -> new KMeans().nClusters(CLUSTERS).tol(0).maxIter(100).fit(u.blobs(), u.init()),
                (e, u) -> ((KMeans) e).predict(u.blobs()),
                (dm, dp, hm, hp, d, h) -> Arrays.equals(dp.toIntArray(), hp.toIntArray())
                        && rel(((KMeans) dm).clusterCenters(), ((KMeans) hm).clusterCenters()) <= 1e-9));
        all.add(new Bench(
                "PCA",
                u -> new PCA().nComponents(Math.min(8, (int) u.scaled().dim(1))).fit(u.scaled()),
                (e, u) -> ((PCA) e).transform(u.scaled()),
                (dm, dp, hm, hp, d, h) -> pcaAgrees((PCA) dm, (PCA) hm)));
        all.add(new Bench(
                "MultinomialNB",
                u -> new MultinomialNB().fit(u.counts(), u.labels()),
                (e, u) -> ((MultinomialNB) e).predictProba(u.counts()),
                (dm, dp, hm, hp, d, h) -> Arrays.equals(
                                BenchArgs.numbers(((MultinomialNB) dm).featureCount()),
                                BenchArgs.numbers(((MultinomialNB) hm).featureCount()))
                        && rel(dp, hp) <= 1e-9));
        all.add(new Bench(
                "NearestNeighbors",
                u -> new NearestNeighbors().nNeighbors(neighbors).fitView(u.x()),
                (e, u) -> ids((NearestNeighbors) e, u),
                (dm, dp, hm, hp, d, h) -> {
                    try (Neighbors a = ((NearestNeighbors) dm).kneighbors(d.queries());
                            Neighbors b = ((NearestNeighbors) hm).kneighbors(h.queries())) {
                        // float32 distances summed in another order differ in their last bits (the CPU backend's
                        // vectorized sums against the GPU's): a float32 tolerance, float64's for float64
                        double tol = a.distances().dtype() == DType.FLOAT32 ? 1e-5 : 1e-9;
                        return Arrays.equals(BenchArgs.numbers(dp), BenchArgs.numbers(hp))
                                && rel(a.distances(), b.distances()) <= tol;
                    }
                },
                0,
                u -> new NearestNeighbors().nNeighbors(neighbors).fit(u.x())));
        all.add(new Bench(
                "KNeighborsClassifier",
                u -> new KNeighborsClassifier().nNeighbors(neighbors).fitView(u.x(), u.labels()),
                (e, u) -> ((KNeighborsClassifier) e).predict(u.queries()),
                (dm, dp, hm, hp, d, h) -> Arrays.equals(dp.toIntArray(), hp.toIntArray()),
                0,
                u -> new KNeighborsClassifier().nNeighbors(neighbors).fit(u.x(), u.labels())));
        all.add(new Bench(
                "RandomForestClassifier",
                u -> new RandomForestClassifier()
                        .nEstimators(forests.trees())
                        .maxDepth(forests.depth())
                        .seed(7)
                        .fit(u.x(), u.labels()),
                (e, u) -> ((RandomForestClassifier) e).predict(u.x()),
                (dm, dp, hm, hp, d, h) ->
                        Math.abs(Metrics.accuracy(d.labels(), dp) - Metrics.accuracy(h.labels(), hp)) <= 0.05,
                forests.rows()));
        all.add(new Bench(
                "RandomForestRegressor",
                u -> new RandomForestRegressor()
                        .nEstimators(forests.trees())
                        .maxDepth(forests.depth())
                        .maxFeatures(0)
                        .seed(7)
                        .fit(u.x(), u.y()),
                (e, u) -> ((RandomForestRegressor) e).predict(u.x()),
                (dm, dp, hm, hp, d, h) -> Math.abs(Metrics.r2(d.y(), dp) - Metrics.r2(h.y(), hp)) <= 0.05,
                forests.rows()));
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
        double[] ca = BenchArgs.numbers(a.components());
        double[] cb = BenchArgs.numbers(b.components());
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
        return rel(BenchArgs.numbers(a), BenchArgs.numbers(ref));
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
        double[] x = BenchArgs.numbers(a);
        double[] y = BenchArgs.numbers(ref);
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
