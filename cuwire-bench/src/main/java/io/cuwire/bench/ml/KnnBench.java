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
import io.cuwire.memory.Order;
import io.cuwire.ml.ComputeBackend;
import io.cuwire.ml.ComputeBackends;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code cuwire bench knn [--rows N] [--queries Q] [--cols D] [--k K,K] [--dtype float32|float64] [--repeat R]
 * [--warmup W] [--gemm-block-elements E] [--check Q] [--peer sklearn] [--python PATH] [--out DIR]}: brute-force
 * k-nearest-neighbor prediction at scale (default 1,000,000 rows, 10,000 queries, 32 float32 columns, k = 5) on
 * device 0 ({@link Devices#get}: a GPU where one is present, else the emulated device), three ways in one run on the
 * same data, per {@code k}:
 * <pre>
 * RESULT bench=knn path=fused_k8 rows=… queries=… cols=… k=… dtype=… predict_ms=… queries_per_s=… vs_fused=1.000
 *     ids_agree=… matches_cpu=true
 * RESULT bench=knn path=gemm_select … predict_ms=… … vs_fused=… block_queries=… …
 * RESULT bench=knn path=sklearn … predict_ms=… … vs_fused=… fit_ms=…
 * </pre>
 *
 * <ul>
 *   <li>{@code kNearestRows}, what {@code NearestNeighbors.kneighbors} runs: on CUDA up to 32 neighbors the fused
 *       kernel (distances and selection through shared memory, no distance matrix; {@code path} names it as
 *       {@link ComputeBackend#kNearestRowsPath} does), on the emulated device the CPU backend.</li>
 *   <li>The brute-force baseline, built from the backend's public operations: blocks of queries (as many as
 *       {@code --gemm-block-elements} distances hold, default 2^28: 1 GiB of float32) through
 *       {@link ComputeBackend#squaredDistances} (on CUDA a cuBLAS GEMM, {@code ||q||² - 2 q·x + ||x||²}, into the
 *       block) and {@link ComputeBackend#smallestK} (the top-k selection of each row of the block).</li>
 *   <li>With {@code --peer sklearn}: scikit-learn's {@code NearestNeighbors(n_neighbors=k, n_jobs=-1)} fitted on the
 *       same rows and asked the same queries ({@code kneighbors}, distances too), through the estimators bench's
 *       {@code sklearn_peer.py} ({@link SklearnPeer}) with {@code --python} (default {@link SklearnForests#python()}),
 *       on the host's cores; its fit time is printed too.</li>
 * </ul>
 * Each time is the median of {@code repeat} runs after {@code warmup} untimed ones; the outputs are allocated
 * outside the time, and every backend operation has waited for the device when it returns. Data: rows and queries
 * drawn independently from 16 gaussian blobs (each row from its own seed, so the data do not depend on the threads),
 * generated on the host and copied to the device outside every timing. Checked outside the timing against the CPU
 * backend on host copies for the first {@code --check} queries (default 100): {@code ids_agree} is the share of
 * neighbor ids equal position by position, {@code matches_cpu} that the distances agree (float64: exactly for the
 * fused path; otherwise within a relative {@code 1e-9}, float32 {@code 1e-5}, of the largest), as the estimators
 * bench compares neighbors. With {@code --out DIR} the run is recorded ({@link Results#record}) in
 * {@code DIR/knn-<machine>.md} and {@code .csv}.
 */
public final class KnnBench {
    private static final int BLOBS = 16;
    private static final long SEED = 20261207L;

    private KnnBench() {}

    /**
     * The options.
     *
     * @param rows rows of the training set
     * @param queries queries
     * @param cols columns
     * @param ks the numbers of neighbors, each measured
     * @param dtype float32 or float64
     * @param repeat timed runs of each measurement (the median is reported)
     * @param warmup untimed runs before them
     * @param gemmBlockElements the most distances one block of the baseline holds
     * @param check queries checked against the CPU backend
     * @param peerSklearn whether scikit-learn runs beside
     * @param python the Python that runs scikit-learn
     * @param out the directory for the table files, or {@code null}
     */
    public record Options(
            long rows,
            int queries,
            int cols,
            List<Integer> ks,
            DType dtype,
            int repeat,
            int warmup,
            long gemmBlockElements,
            int check,
            boolean peerSklearn,
            String python,
            Path out) {
        /** Checks the ranges. */
        public Options {
            if (rows < 1 || rows > Integer.MAX_VALUE) {
                throw new IllegalArgumentException("--rows " + rows + " (expected: 1 .. " + Integer.MAX_VALUE + ")");
            }
            if (cols < 1 || rows * cols > NdArray.MAX_ARRAY_LENGTH) {
                throw new IllegalArgumentException(
                        "--cols " + cols + " (expected: >= 1 and rows x cols <= " + NdArray.MAX_ARRAY_LENGTH + ")");
            }
            if (queries < 1 || (long) queries * cols > NdArray.MAX_ARRAY_LENGTH) {
                throw new IllegalArgumentException("--queries " + queries + " (expected: >= 1)");
            }
            ks = List.copyOf(ks);
            if (ks.isEmpty() || ks.stream().anyMatch(k -> k < 1 || k > rows)) {
                throw new IllegalArgumentException("--k " + ks + " (expected: each 1 .. " + rows + ", the rows)");
            }
            if (dtype != DType.FLOAT32 && dtype != DType.FLOAT64) {
                throw new IllegalArgumentException("--dtype " + dtype.wireName() + " (expected: float32 or float64)");
            }
            Cli.atLeast("--repeat", repeat, 1);
            Cli.atLeast("--warmup", warmup, 0);
            if (gemmBlockElements < rows) {
                throw new IllegalArgumentException("--gemm-block-elements " + gemmBlockElements + " (expected: >= "
                        + rows + ", the rows: one query's distances)");
            }
            Cli.atLeast("--check", check, 0);
        }

        /** Queries of one block of the baseline. */
        public int gemmBlockQueries() {
            return (int) Math.min(queries, gemmBlockElements / rows);
        }

        /** Parses the options of {@link Args} ({@code cuwire bench knn --help}). */
        public static Options parse(String... args) {
            return Cli.parse(new Args(), args).options();
        }
    }

    /** The options of {@code cuwire bench knn}, declared to picocli (the command mixes them in). */
    public static final class Args {
        /** The options at their defaults, for picocli to fill. */
        public Args() {}

        @Option(
                names = "--rows",
                paramLabel = "N",
                defaultValue = "1000000",
                description = "rows of the training set (default: ${DEFAULT-VALUE})")
        long rows;

        @Option(
                names = "--queries",
                paramLabel = "Q",
                defaultValue = "10000",
                description = "queries (default: ${DEFAULT-VALUE})")
        int queries;

        @Option(
                names = "--cols",
                paramLabel = "D",
                defaultValue = "32",
                description = "columns (default: ${DEFAULT-VALUE})")
        int cols;

        @Option(
                names = "--k",
                split = ",",
                paramLabel = "K",
                defaultValue = "5",
                description = "the numbers of neighbors, each measured (default: ${DEFAULT-VALUE})")
        List<Integer> ks;

        @Option(
                names = "--dtype",
                paramLabel = "T",
                defaultValue = "float32",
                description = "float32 or float64 (default: ${DEFAULT-VALUE})")
        String dtype;

        @Option(
                names = "--repeat",
                paramLabel = "R",
                defaultValue = "3",
                description = "timed runs of each measurement, the median reported (default: ${DEFAULT-VALUE})")
        int repeat;

        @Option(
                names = "--warmup",
                paramLabel = "W",
                defaultValue = "1",
                description = "untimed runs before the timed ones, on every side (default: ${DEFAULT-VALUE})")
        int warmup;

        @Option(
                names = "--gemm-block-elements",
                paramLabel = "E",
                defaultValue = "268435456",
                description = "the most distances one block of the GEMM + select baseline holds (default: "
                        + "${DEFAULT-VALUE})")
        long gemmBlockElements;

        @Option(
                names = "--check",
                paramLabel = "Q",
                defaultValue = "100",
                description = "queries checked against the CPU backend (default: ${DEFAULT-VALUE})")
        int check;

        @Mixin
        EstimatorBench.PeerArgs peer;

        @Option(
                names = "--out",
                paramLabel = "DIR",
                description = "where the run is recorded, knn-<machine>.md and .csv (default: nowhere)")
        Path out;

        /**
         * The typed options.
         *
         * @throws IllegalArgumentException naming the option whose value is out of range
         */
        public Options options() {
            DType t;
            try {
                t = DType.byName(dtype);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("--dtype " + dtype + " (expected: float32 or float64)", e);
            }
            return new Options(
                    rows,
                    queries,
                    cols,
                    ks,
                    t,
                    repeat,
                    warmup,
                    gemmBlockElements,
                    check,
                    peer.sklearn(),
                    peer.python(),
                    out);
        }
    }

    /**
     * One path's measurement.
     *
     * @param path {@code fused_k8}, {@code fused_k32} or the backend's name (kNearestRows), {@code gemm_select}, or
     *     {@code sklearn}
     * @param k the neighbors
     * @param predictMs the median time of all queries
     * @param vsFused the time over kNearestRows's (1 for it)
     * @param idsAgree the share of the checked queries' neighbor ids equal to the CPU backend's (NaN: not checked)
     * @param matchesCpu whether the checked distances agree with the CPU backend's (true when not checked)
     * @param fitMs scikit-learn's fit (NaN for the others)
     * @param blockQueries the baseline's queries per block (0 for the others)
     */
    public record Result(
            String path,
            long rows,
            int queries,
            int cols,
            int k,
            String dtype,
            double predictMs,
            double vsFused,
            double idsAgree,
            boolean matchesCpu,
            double fitMs,
            int blockQueries) {
        /** Queries answered per second. */
        public double queriesPerSecond() {
            return queries / (predictMs / 1e3);
        }

        /** The RESULT line. */
        public String line() {
            return String.format(
                    Locale.ROOT,
                    "RESULT bench=knn path=%s rows=%d queries=%d cols=%d k=%d dtype=%s predict_ms=%.3f "
                            + "queries_per_s=%.0f vs_fused=%.3f%s%s%s",
                    path,
                    rows,
                    queries,
                    cols,
                    k,
                    dtype,
                    predictMs,
                    queriesPerSecond(),
                    vsFused,
                    blockQueries > 0 ? " block_queries=" + blockQueries : "",
                    Double.isNaN(idsAgree)
                            ? ""
                            : String.format(Locale.ROOT, " ids_agree=%.4f matches_cpu=%s", idsAgree, matchesCpu),
                    Double.isNaN(fitMs) ? "" : String.format(Locale.ROOT, " fit_ms=%.3f", fitMs));
        }
    }

    /**
     * Runs the benchmark, printing an INFO line and the RESULT lines of each {@code k}; returns the results.
     *
     * @throws UncheckedIOException if the peer's data or the table files cannot be written
     */
    public static List<Result> run(Options o, PrintStream out) {
        Device device = Devices.get(0);
        int n = (int) o.rows();
        int m = o.queries();
        int d = o.cols();
        DType dt = o.dtype();
        String settings = String.format(
                Locale.ROOT,
                "device=%s%d (%s) rows=%d queries=%d cols=%d dtype=%s k=%s repeat=%d warmup=%d gemm_block_queries=%d "
                        + "check_queries=%d",
                device.platform(),
                device.ordinal(),
                device.name(),
                n,
                m,
                d,
                dt.wireName(),
                o.ks().stream().map(String::valueOf).collect(Collectors.joining(",")),
                o.repeat(),
                o.warmup(),
                o.gemmBlockQueries(),
                Math.min(o.check(), m));
        out.println("INFO bench=knn " + settings);
        double[] xs = generate(SEED, n, d);
        double[] qs = generate(SEED + 1, m, d);
        List<Result> results = new ArrayList<>();
        int check = Math.min(o.check(), m);
        try (BufferAllocator<DeviceBuffer> mem = device.newAllocator("bench-knn", BufferAllocator.UNLIMITED);
                BufferAllocator<HostBuffer> host = BufferAllocator.host("bench-knn-host", BufferAllocator.UNLIMITED);
                NdArray x = array(mem, dt, xs, n, d);
                NdArray q = array(mem, dt, qs, m, d);
                NdArray hx = array(host, dt, xs, n, d);
                NdArray hq = array(host, dt, Arrays.copyOf(qs, check * d), check, d)) {
            ComputeBackend backend = ComputeBackends.forArray(x);
            for (int k : o.ks()) {
                Neighbors want = check == 0 ? null : reference(hq, hx, k);
                Measured fused = fused(o, backend, q, x, k);
                Measured gemm = gemmSelect(o, backend, q, x, k);
                String path = backend.kNearestRowsPath(q, x, k);
                results.add(fused.result(path, o, k, fused.ms(), want, dt, !path.equals("gemm_select"), 0));
                out.println(results.getLast().line());
                results.add(gemm.result("gemm_select", o, k, fused.ms(), want, dt, false, o.gemmBlockQueries()));
                out.println(results.getLast().line());
                out.flush();
            }
        }
        SklearnPeer.Outcome peer = null;
        if (o.peerSklearn()) {
            peer = peer(o, xs, qs, results, out);
        }
        if (o.out() != null) {
            writeTables(o.out(), settings, results, peer);
        }
        return results;
    }

    // ---------------------------------------------------------------- the paths

    /** Neighbors of the checked queries: distances and ids, in the C order of their rows. */
    private record Neighbors(double[] distances, long[] ids) {}

    /** A path's median time and its neighbors of the checked queries. */
    private record Measured(double ms, Neighbors found) {
        /** The result, checked against {@code want} (or unchecked without it). */
        Result result(
                String path, Options o, int k, double fusedMs, Neighbors want, DType dt, boolean exact, int block) {
            double agree = Double.NaN;
            boolean matches = true;
            if (want != null) {
                long same = 0;
                for (int i = 0; i < want.ids().length; i++) {
                    same += want.ids()[i] == found.ids()[i] ? 1 : 0;
                }
                agree = (double) same / want.ids().length;
                double tol = dt == DType.FLOAT32 ? 1e-5 : 1e-9;
                matches = exact && dt == DType.FLOAT64
                        ? Arrays.equals(want.distances(), found.distances())
                        : relative(found.distances(), want.distances()) <= tol;
            }
            return new Result(
                    path,
                    o.rows(),
                    o.queries(),
                    o.cols(),
                    k,
                    o.dtype().wireName(),
                    ms,
                    ms / fusedMs,
                    agree,
                    matches,
                    Double.NaN,
                    block);
        }
    }

    /** kNearestRows over all queries, timed; the checked queries' neighbors from the last run. */
    private static Measured fused(Options o, ComputeBackend backend, NdArray q, NdArray x, int k) {
        BufferAllocator<?> mem = q.buffer().allocator();
        try (NdArray dist = NdArray.empty(mem, q.dtype(), Order.C, q.dim(0), k);
                NdArray ids = NdArray.empty(mem, DType.INT64, Order.C, q.dim(0), k)) {
            double ms = medianMs(o, () -> backend.kNearestRows(q, x, 0, dist, ids));
            return new Measured(ms, head(dist, ids, Math.min(o.check(), o.queries()), k));
        }
    }

    /**
     * The baseline: blocks of queries through squaredDistances (a distance block of at most
     * {@code --gemm-block-elements}) and smallestK, timed; the checked queries' neighbors from the last run.
     */
    private static Measured gemmSelect(Options o, ComputeBackend backend, NdArray q, NdArray x, int k) {
        BufferAllocator<?> mem = q.buffer().allocator();
        int m = (int) q.dim(0);
        long n = x.dim(0);
        long d = x.dim(1);
        long es = q.dtype().byteSize();
        int block = o.gemmBlockQueries();
        try (NdArray distances = NdArray.empty(mem, q.dtype(), Order.C, block, n);
                NdArray dist = NdArray.empty(mem, q.dtype(), Order.C, m, k);
                NdArray ids = NdArray.empty(mem, DType.INT64, Order.C, m, k)) {
            double ms = medianMs(o, () -> {
                for (int first = 0; first < m; first += block) {
                    int rows = Math.min(block, m - first);
                    try (NdArray qv = NdArray.view(q.buffer(), first * d * es, q.dtype(), Order.C, rows, d);
                            NdArray all = NdArray.view(distances.buffer(), 0, q.dtype(), Order.C, rows, n);
                            NdArray dv = NdArray.view(dist.buffer(), first * k * es, q.dtype(), Order.C, rows, k);
                            NdArray iv = NdArray.view(
                                    ids.buffer(), (long) first * k * Long.BYTES, DType.INT64, Order.C, rows, k)) {
                        backend.squaredDistances(qv, x, all);
                        backend.smallestK(all, 0, dv, iv);
                    }
                }
            });
            return new Measured(ms, head(dist, ids, Math.min(o.check(), o.queries()), k));
        }
    }

    /** The CPU backend's neighbors of the checked queries {@code hq} among {@code hx} (host arrays). */
    private static Neighbors reference(NdArray hq, NdArray hx, int k) {
        BufferAllocator<?> mem = hq.buffer().allocator();
        try (NdArray dist = NdArray.empty(mem, hq.dtype(), Order.C, hq.dim(0), k);
                NdArray ids = NdArray.empty(mem, DType.INT64, Order.C, hq.dim(0), k)) {
            ComputeBackends.forArray(hq).kNearestRows(hq, hx, 0, dist, ids);
            return new Neighbors(BenchArgs.numbers(dist), ids.toLongArray());
        }
    }

    /** The first {@code rows} rows of a result (copied to the host). */
    private static Neighbors head(NdArray dist, NdArray ids, int rows, int k) {
        double[] dv = new double[rows * k];
        long[] iv = new long[rows * k];
        if (rows > 0) {
            try (NdArray d = NdArray.view(dist.buffer(), 0, dist.dtype(), Order.C, rows, k);
                    NdArray i = NdArray.view(ids.buffer(), 0, DType.INT64, Order.C, rows, k)) {
                dv = BenchArgs.numbers(d);
                iv = i.toLongArray();
            }
        }
        return new Neighbors(dv, iv);
    }

    /** The median of {@code repeat} timed runs after {@code warmup} untimed ones, in ms. */
    private static double medianMs(Options o, Runnable run) {
        double[] ms = new double[o.repeat()];
        for (int i = -o.warmup(); i < o.repeat(); i++) {
            long t0 = System.nanoTime();
            run.run();
            long t1 = System.nanoTime();
            if (i >= 0) {
                ms[i] = (t1 - t0) / 1e6;
            }
        }
        return Stats.median(ms);
    }

    private static double relative(double[] a, double[] ref) {
        double diff = 0;
        double scale = 0;
        for (int i = 0; i < a.length; i++) {
            diff = Math.max(diff, Math.abs(a[i] - ref[i]));
            scale = Math.max(scale, Math.abs(ref[i]));
        }
        return Double.isNaN(diff) ? Double.POSITIVE_INFINITY : scale == 0 ? diff : diff / scale;
    }

    // ---------------------------------------------------------------- data

    /** {@code rows x d} values: each row a point of one of {@value #BLOBS} gaussian blobs, from its own seed. */
    static double[] generate(long seed, int rows, int d) {
        SplittableRandom r = new SplittableRandom(seed);
        double[] centers = new double[BLOBS * d];
        for (int i = 0; i < centers.length; i++) {
            centers[i] = r.nextDouble(-4, 4);
        }
        long base = r.nextLong();
        double[] v = new double[rows * d];
        IntStream.range(0, rows).parallel().forEach(i -> {
            SplittableRandom rr = new SplittableRandom(base + i);
            int c = rr.nextInt(BLOBS);
            for (int j = 0; j < d; j++) {
                double g = Math.sqrt(-2 * Math.log1p(-rr.nextDouble())) * Math.cos(2 * Math.PI * rr.nextDouble());
                v[i * d + j] = centers[c * d + j] + g;
            }
        });
        return v;
    }

    private static NdArray array(BufferAllocator<?> mem, DType dt, double[] v, int rows, int d) {
        if (dt == DType.FLOAT64) {
            return NdArray.fromArray(mem, v, rows, d);
        }
        float[] f = new float[v.length];
        for (int i = 0; i < v.length; i++) {
            f[i] = (float) v[i];
        }
        return NdArray.fromArray(mem, f, rows, d);
    }

    // ---------------------------------------------------------------- scikit-learn

    /**
     * scikit-learn's NearestNeighbors on the same rows and queries (in the bench's dtype), per {@code k}, in a
     * temporary directory: a {@code sklearn} result after each {@code k}'s two, or the reason it was skipped.
     */
    private static SklearnPeer.Outcome peer(
            Options o, double[] xs, double[] qs, List<Result> results, PrintStream out) {
        Path dir = null;
        SklearnPeer.Outcome last = null;
        try {
            dir = Files.createTempDirectory("cuwire-knn-peer");
            String type = o.dtype() == DType.FLOAT32 ? "f4" : "f8";
            write(dir.resolve("x.bin"), o.dtype(), xs);
            write(dir.resolve("queries.bin"), o.dtype(), qs);
            Files.writeString(
                    dir.resolve("data.txt"),
                    "x " + type + " " + o.rows() + " " + o.cols() + "\nqueries " + type + " " + o.queries() + " "
                            + o.cols() + "\n");
            List<Result> ours = List.copyOf(results);
            for (int k : o.ks()) {
                Files.deleteIfExists(dir.resolve(SklearnPeer.SCRIPT));
                last = SklearnPeer.run(o.python(), dir, o.repeat(), o.warmup(), k, List.of("NearestNeighbors"), out);
                SklearnPeer.Row row = last.rows().get("NearestNeighbors");
                if (row == null) {
                    out.println("INFO peer=sklearn skipped: " + last.skipped());
                    break;
                }
                Result fused = ours.stream()
                        .filter(r -> r.k() == k && !r.path().equals("gemm_select"))
                        .findFirst()
                        .orElseThrow();
                Result r = new Result(
                        "sklearn",
                        o.rows(),
                        o.queries(),
                        o.cols(),
                        k,
                        o.dtype().wireName(),
                        row.predictMs(),
                        row.predictMs() / fused.predictMs(),
                        Double.NaN,
                        true,
                        row.fitMs(),
                        0);
                results.add(r);
                out.println(r.line());
                out.flush();
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the peer's data: " + e.getMessage(), e);
        } finally {
            deleteAll(dir);
        }
        return last;
    }

    private static void write(Path file, DType dt, double[] v) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(v.length * dt.byteSize()).order(ByteOrder.LITTLE_ENDIAN);
        for (double e : v) {
            if (dt == DType.FLOAT32) {
                b.putFloat((float) e);
            } else {
                b.putDouble(e);
            }
        }
        Files.write(file, b.array());
    }

    private static void deleteAll(Path dir) {
        if (dir == null) {
            return;
        }
        try (var files = Files.walk(dir)) {
            for (Path f : files.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(f);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot delete the peer's data in " + dir + ": " + e.getMessage(), e);
        }
    }

    // ---------------------------------------------------------------- tables

    /** Records {@code knn-<machine>.csv} (one row per result) and {@code .md} (the paths side by side per k). */
    static void writeTables(Path dir, String settings, List<Result> results, SklearnPeer.Outcome peer) {
        Table csv = new Table(
                "path",
                "rows",
                "queries",
                "cols",
                "k",
                "dtype",
                "predict_ms",
                "queries_per_s",
                "vs_fused",
                "ids_agree",
                "matches_cpu",
                "fit_ms");
        Table md = new Table(
                "k", "path", "predict ms", "queries/s", "vs fused", "ids agree (checked)", "matches cpu", "fit ms");
        for (Result r : results) {
            List<Object> measured = List.of(
                    Table.num(r.predictMs(), 3),
                    Table.num(r.queriesPerSecond(), 0),
                    Table.num(r.vsFused(), 3),
                    Double.isNaN(r.idsAgree()) ? "" : Table.num(r.idsAgree(), 4),
                    Double.isNaN(r.idsAgree()) ? "" : r.matchesCpu(),
                    Double.isNaN(r.fitMs()) ? "" : Table.num(r.fitMs(), 3));
            List<Object> line = new ArrayList<>(List.of(r.path(), r.rows(), r.queries(), r.cols(), r.k(), r.dtype()));
            line.addAll(measured);
            csv.row(line.toArray());
            List<Object> cells = new ArrayList<>(List.of(
                    r.k(), r.path() + (r.blockQueries() > 0 ? " (" + r.blockQueries() + " queries a block)" : "")));
            cells.addAll(measured);
            md.row(cells.toArray());
        }
        StringBuilder text = new StringBuilder("# cuwire bench knn\n\n`")
                .append(settings)
                .append("`\n\nMedian ms of all queries, the three paths in the same run on the same data: "
                        + "kNearestRows (on CUDA the fused kernel up to 32 neighbors), the GEMM + select baseline "
                        + "(squaredDistances + smallestK per block of queries), scikit-learn (brute force on the "
                        + "host's cores). `vs fused` is the time over kNearestRows's; ids agree and matches cpu "
                        + "compare the checked queries with the CPU backend.\n\n")
                .append(md.markdown());
        text.append("\nIts `RESULT` lines:\n\n```text\n");
        for (Result r : results) {
            text.append(r.line()).append('\n');
        }
        text.append("```\n");
        if (peer != null) {
            text.append('\n');
            if (peer.info() != null) {
                text.append('`').append(peer.info()).append("`\n");
            }
            if (peer.skipped() != null) {
                text.append("\nscikit-learn did not run: ")
                        .append(peer.skipped())
                        .append(".\n");
            }
        }
        Results.record(
                dir, "knn", "`cuwire bench knn` on " + Results.machine(), Results.now(), text.toString(), csv.csv());
    }
}
