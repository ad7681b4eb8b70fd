package io.cuwire.bench.ml;

import io.cuwire.bench.harness.Cli;
import io.cuwire.bench.harness.Stats;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.DType;
import io.cuwire.memory.Device;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import io.cuwire.ml.ComputeBackends;
import io.cuwire.ml.Reduction;
import io.cuwire.ml.cluster.KMeans;
import io.cuwire.ml.linear.LinearRegression;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.stream.IntStream;
import picocli.CommandLine.Option;

/**
 * {@code cuwire bench roofline [--rows N] [--cols D] [--clusters K] [--fit-rows N] [--repeat R]}: how close the
 * bandwidth-bound predictions come to the device's memory roofline. On device 0 ({@link Devices#get}: a GPU where
 * one is present, else the emulated device), with float32 {@code X} of {@code rows x cols} (default 10,000,000 x 64,
 * 2.56 GB), it prints
 * <pre>
 * RESULT bench=roofline copy=d2d bytes=… copy_ms=… gbps=…
 * RESULT bench=roofline read=sum bytes=… read_ms=… gbps=…
 * RESULT bench=roofline estimator=LinearRegression rows=… cols=… predict_ms=… gbps=… roofline_gbps=… fraction=…
 *     read_gbps=… vs_read=… …
 * RESULT bench=roofline estimator=KMeans rows=… cols=… predict_ms=… gbps=… roofline_gbps=… fraction=…
 *     read_gbps=… vs_read=… … kernel=…
 * </pre>
 *
 * <h2>What is measured</h2>
 * <ul>
 *   <li>The data: {@code X} and the regression targets are generated on the host, a chunk of rows at a time, and
 *       copied into device arrays (no kernel generates random numbers, and no Java array holds all of {@code X}):
 *       {@code K} gaussian-like blobs (row {@code i} belongs to blob {@code i mod K}), targets linear in {@code X}
 *       plus noise. Outside every timing.</li>
 *   <li>The roofline: a synchronous device-to-device copy of the bytes of {@code X} through the
 *       {@link CopyEngine}, in the same run, median of {@code repeat} after one warm-up; {@code gbps} counts the bytes
 *       once (a copy reads and writes them, so the memory moves twice that).</li>
 *   <li>The read ceiling: the backend's {@link io.cuwire.ml.Reduction#SUM} of {@code X}, in the same run, median of
 *       {@code repeat} after one warm-up: a reduction that reads every byte of {@code X} once and writes nothing
 *       (on CUDA, float4 loads: {@code ml_reduce_sum_v4_f32}). A prediction also reads {@code X} once, so its
 *       {@code vs_read}, the predict time over the read time, is how far it is from the memory roofline (1: there;
 *       the copy's {@code fraction} counts the copy's bytes once while it reads and writes them, and so
 *       overstates how close a prediction is).</li>
 *   <li>The models: LinearRegression fitted on all rows; KMeans with {@code K} clusters fitted on the first
 *       {@code fit-rows} rows (default at most 1,000,000), started from the first {@code K} rows, at most 30 Lloyd
 *       steps. Fit times are printed for information.</li>
 *   <li>The predictions: {@code predict(X)} as an application calls it, median of {@code repeat} after two warm-ups.
 *       The clock stops when {@code predict} returns: every backend operation has waited for the device by then,
 *       and the result is still on the device (its bytes are {@code out_bytes}; closing it is outside the time).
 *       LinearRegression's predict is a fill of the output with the intercept and {@code X w + out} (one pass over
 *       {@code X}); KMeans's is one fused distance-and-argmin pass over {@code X}.</li>
 *   <li>{@code gbps} is the bytes of {@code X} (read once) over the median predict time, {@code roofline_gbps} the
 *       copy's, {@code fraction} their ratio. Since a copy moves each byte twice and a prediction reads it once,
 *       {@code fraction} can exceed 1.</li>
 *   <li>KMeans's line names the kernel its predict ran ({@code kernel=}, see {@link #kmeansKernel}): run the bench
 *       once per {@code -Dcuwire.ml.nearestKernel} setting ({@code auto}, {@code v4}, {@code scalar}) to time each
 *       kernel on the same data. LinearRegression's names its product's
 *       ({@link io.cuwire.ml.ComputeBackend#gemvPath}; on CUDA {@code -Dcuwire.ml.gemvKernel=auto} or
 *       {@code scalar}).</li>
 *   <li>A check outside the timing: the predictions of the first {@value #CHECKED_ROWS} rows, copied to the host, are
 *       compared with the fitted model evaluated in Java in double precision ({@code matches_cpu}): relative
 *       difference at most {@code 1e-4} for the regression, labels equal for KMeans.</li>
 * </ul>
 */
public final class RooflineBench {
    static final int CHECKED_ROWS = 10_000;
    private static final int KMEANS_STEPS = 30;
    /** The most rows KMeans is fitted on unless {@code --fit-rows} says. */
    public static final long FIT_ROWS = 1_000_000;

    private static final long CHUNK_BYTES = 64L << 20;

    private RooflineBench() {}

    /**
     * The options.
     *
     * @param rows rows of X
     * @param cols columns of X
     * @param clusters KMeans clusters (and blobs in the data)
     * @param fitRows rows KMeans is fitted on (the first ones)
     * @param repeat timed runs of each measurement (the median is reported)
     */
    public record Options(long rows, int cols, int clusters, long fitRows, int repeat) {
        /** Checks the ranges. */
        public Options {
            if (clusters < 1) {
                throw new IllegalArgumentException("--clusters " + clusters + " (expected: >= 1)");
            }
            if (rows < clusters) {
                throw new IllegalArgumentException("--rows " + rows + " (expected: >= " + clusters + ", the clusters)");
            }
            if (cols < 1 || rows > Long.MAX_VALUE / 4 / cols) {
                throw new IllegalArgumentException("--cols " + cols + " (expected: >= 1)");
            }
            if (fitRows < clusters || fitRows > rows || fitRows * cols > NdArray.MAX_ARRAY_LENGTH) {
                throw new IllegalArgumentException("--fit-rows " + fitRows + " (expected: " + clusters + " .. " + rows
                        + ", the rows, and fit-rows x cols <= " + NdArray.MAX_ARRAY_LENGTH + ")");
            }
            if (repeat < 1) {
                throw new IllegalArgumentException("--repeat " + repeat + " (expected: >= 1)");
            }
        }

        /** Parses the options of {@link Args} ({@code cuwire bench roofline --help}). */
        public static Options parse(String... args) {
            return Cli.parse(new Args(), args).options();
        }
    }

    /** The options of {@code cuwire bench roofline}, declared to picocli (the command mixes them in). */
    public static final class Args {
        /** The options at their defaults, for picocli to fill. */
        public Args() {}

        @Option(
                names = "--rows",
                paramLabel = "N",
                defaultValue = "10000000",
                description = "rows of X (default: ${DEFAULT-VALUE})")
        long rows;

        @Option(
                names = "--cols",
                paramLabel = "D",
                defaultValue = "64",
                description = "columns of X (default: ${DEFAULT-VALUE})")
        int cols;

        @Option(
                names = "--clusters",
                paramLabel = "K",
                defaultValue = "8",
                description = "KMeans clusters, and blobs in the data (default: ${DEFAULT-VALUE})")
        int clusters;

        @Option(
                names = "--fit-rows",
                paramLabel = "N",
                description = "rows KMeans is fitted on (default: the rows, at most " + FIT_ROWS + ")")
        Long fitRows;

        @Option(
                names = "--repeat",
                paramLabel = "R",
                defaultValue = "10",
                description = "timed runs of each measurement, the median reported (default: ${DEFAULT-VALUE})")
        int repeat;

        /**
         * The typed options.
         *
         * @throws IllegalArgumentException naming the option whose value is out of range
         */
        public Options options() {
            return new Options(rows, cols, clusters, fitRows == null ? Math.min(rows, FIT_ROWS) : fitRows, repeat);
        }
    }

    /**
     * One prediction's measurement.
     *
     * @param estimator the estimator's class name
     * @param backend the backend that computed
     * @param fitMs the one fit's time
     * @param predictMs the median predict time
     * @param gbps bytes of X over the predict time, GB/s
     * @param rooflineGbps the device copy's bandwidth, GB/s
     * @param readGbps the read ceiling's bandwidth (the sum of X), GB/s
     * @param outBytes bytes of the prediction (left on the device)
     * @param matchesCpu whether the checked rows agree with the model evaluated on the host
     * @param kernel the kernel the predict runs: for KMeans {@link #kmeansKernel}, for LinearRegression its
     *     product's ({@link io.cuwire.ml.ComputeBackend#gemvPath}); {@code null} for none
     */
    public record Result(
            String estimator,
            String backend,
            long rows,
            int cols,
            double fitMs,
            double predictMs,
            double gbps,
            double rooflineGbps,
            double readGbps,
            long outBytes,
            boolean matchesCpu,
            String kernel) {
        /** {@code gbps / rooflineGbps}. */
        public double fraction() {
            return gbps / rooflineGbps;
        }

        /** The predict time over the read ceiling's ({@code readGbps / gbps}): 1 at the memory roofline. */
        public double vsRead() {
            return readGbps / gbps;
        }

        /** The RESULT line. */
        public String line() {
            return String.format(
                    Locale.ROOT,
                    "RESULT bench=roofline estimator=%s rows=%d cols=%d predict_ms=%.3f "
                            + "gbps=%.1f roofline_gbps=%.1f fraction=%.3f read_gbps=%.1f vs_read=%.3f backend=%s%s "
                            + "fit_ms=%.1f out_bytes=%d out=device checked_rows=%d matches_cpu=%s",
                    estimator,
                    rows,
                    cols,
                    predictMs,
                    gbps,
                    rooflineGbps,
                    fraction(),
                    readGbps,
                    vsRead(),
                    backend,
                    kernel == null ? "" : " kernel=" + kernel,
                    fitMs,
                    outBytes,
                    Math.min(rows, CHECKED_ROWS),
                    matchesCpu);
        }
    }

    /** Runs the benchmark, printing the copy line and a RESULT line per estimator; returns the results. */
    public static Result[] run(Options o, PrintStream out) {
        Device device = Devices.get(0);
        long bytes = o.rows() * o.cols() * Float.BYTES;
        out.printf(
                Locale.ROOT,
                "INFO bench=roofline device=%s%d (%s) rows=%d cols=%d bytes=%d clusters=%d "
                        + "kmeans_fit_rows=%d repeat=%d%n",
                device.platform(),
                device.ordinal(),
                device.name(),
                o.rows(),
                o.cols(),
                bytes,
                o.clusters(),
                o.fitRows(),
                o.repeat());
        try (BufferAllocator<DeviceBuffer> mem = device.newAllocator("bench-roofline", BufferAllocator.UNLIMITED);
                NdArray x = NdArray.empty(mem, DType.FLOAT32, Order.C, o.rows(), o.cols());
                NdArray y = NdArray.empty(mem, DType.FLOAT32, Order.C, o.rows())) {
            long t0 = System.nanoTime();
            generate(o, x, y);
            out.printf(
                    Locale.ROOT,
                    "INFO bench=roofline generated_ms=%.1f (host, copied to the device in chunks)%n",
                    (System.nanoTime() - t0) / 1e6);
            double copyMs = copyMs(mem, x, o.repeat());
            double roofline = bytes / (copyMs * 1e6);
            out.printf(
                    Locale.ROOT,
                    "RESULT bench=roofline copy=d2d bytes=%d copy_ms=%.3f gbps=%.1f%n",
                    bytes,
                    copyMs,
                    roofline);
            double readMs = medianMs(1, o.repeat(), () -> {
                ComputeBackends.forArray(x).reduce(Reduction.SUM, x);
                return () -> {};
            });
            double read = bytes / (readMs * 1e6);
            out.printf(
                    Locale.ROOT,
                    "RESULT bench=roofline read=sum bytes=%d read_ms=%.3f gbps=%.1f%n",
                    bytes,
                    readMs,
                    read);
            out.flush();
            String backend = ComputeBackends.forArray(x).name();
            Result[] results = new Result[2];
            long f0 = System.nanoTime();
            try (LinearRegression lr = new LinearRegression().fit(x, y)) {
                double fitMs = (System.nanoTime() - f0) / 1e6;
                double ms = predictMs(o.repeat(), () -> lr.predict(x));
                boolean ok = check(x, o, lr::predict, rows -> linearReference(lr, rows, o.cols()));
                results[0] = new Result(
                        "LinearRegression",
                        backend,
                        o.rows(),
                        o.cols(),
                        fitMs,
                        ms,
                        bytes / (ms * 1e6),
                        roofline,
                        read,
                        o.rows() * Float.BYTES,
                        ok,
                        ComputeBackends.forArray(x).gemvPath(false, x));
            }
            out.println(results[0].line());
            out.flush();
            try (NdArray fitX = NdArray.view(x.buffer(), 0, DType.FLOAT32, Order.C, o.fitRows(), o.cols());
                    NdArray init = NdArray.empty(mem, DType.FLOAT32, Order.C, o.clusters(), o.cols())) {
                CopyEngine.copy(x.buffer(), 0, init.buffer(), 0, init.byteSize());
                long k0 = System.nanoTime();
                try (KMeans km = new KMeans()
                        .nClusters(o.clusters())
                        .maxIter(KMEANS_STEPS)
                        .fit(fitX, init)) {
                    double fitMs = (System.nanoTime() - k0) / 1e6;
                    double ms = predictMs(o.repeat(), () -> km.predict(x));
                    boolean ok = check(x, o, km::predict, rows -> kmeansReference(km, rows, o.cols()));
                    results[1] = new Result(
                            "KMeans",
                            backend,
                            o.rows(),
                            o.cols(),
                            fitMs,
                            ms,
                            bytes / (ms * 1e6),
                            roofline,
                            read,
                            o.rows() * Integer.BYTES,
                            ok,
                            kmeansKernel(x, o.clusters()));
                }
            }
            out.println(results[1].line());
            out.flush();
            return results;
        }
    }

    /**
     * The kernel KMeans's predict runs on {@code x}: {@link io.cuwire.ml.ComputeBackend#nearestRowsPath} of its
     * backend for {@code clusters} centers (on CUDA, the nearest-rows kernel that {@code -Dcuwire.ml.nearestKernel}
     * picks for this shape, or {@code gemm_argmin} beyond the centers it takes; elsewhere the backend's name).
     */
    static String kmeansKernel(NdArray x, int clusters) {
        return ComputeBackends.forArray(x).nearestRowsPath(x, clusters);
    }

    // ---------------------------------------------------------------- data

    /**
     * Fills X (rows x cols) with {@code clusters} blobs and y with {@code X w + 0.5 + noise}, chunk by chunk: the rows
     * of a chunk are made in parallel on the host (each row from its own seed, so the data do not depend on the
     * chunking or the threads) and copied to the device.
     */
    private static void generate(Options o, NdArray x, NdArray y) {
        int d = o.cols();
        SplittableRandom r = new SplittableRandom(20261130L);
        double[] centers = new double[o.clusters() * d];
        for (int i = 0; i < centers.length; i++) {
            centers[i] = r.nextDouble(-5, 5);
        }
        double[] w = new double[d];
        for (int j = 0; j < d; j++) {
            w[j] = r.nextDouble(-2, 2);
        }
        int chunk = (int) Math.max(1, Math.min(o.rows(), CHUNK_BYTES / ((long) d * Float.BYTES)));
        float[] xs = new float[chunk * d];
        float[] ys = new float[chunk];
        long seed = r.nextLong();
        for (long first = 0; first < o.rows(); first += chunk) {
            int count = (int) Math.min(chunk, o.rows() - first);
            long base = first;
            IntStream.range(0, count).parallel().forEach(i -> {
                long row = base + i;
                SplittableRandom rr = new SplittableRandom(seed + row);
                int c = (int) (row % o.clusters());
                double s = 0.5 + 0.1 * (rr.nextDouble() - 0.5);
                for (int j = 0; j < d; j++) {
                    float v = (float) (centers[c * d + j] + rr.nextDouble() + rr.nextDouble() - 1);
                    xs[i * d + j] = v;
                    s += w[j] * v;
                }
                ys[i] = (float) s;
            });
            CopyEngine.copyFromSegment(
                    MemorySegment.ofArray(xs).asSlice(0, (long) count * d * Float.BYTES),
                    x.buffer(),
                    first * d * Float.BYTES);
            CopyEngine.copyFromSegment(
                    MemorySegment.ofArray(ys).asSlice(0, (long) count * Float.BYTES), y.buffer(), first * Float.BYTES);
        }
    }

    // ---------------------------------------------------------------- timing

    /** The median time of a synchronous device-to-device copy of X's bytes, in ms, after one warm-up. */
    private static double copyMs(BufferAllocator<DeviceBuffer> mem, NdArray x, int repeat) {
        try (NdArray target = NdArray.empty(mem, DType.FLOAT32, Order.C, x.shape())) {
            return medianMs(1, repeat, () -> {
                CopyEngine.copy(x.buffer(), 0, target.buffer(), 0, x.byteSize());
                return () -> {};
            });
        }
    }

    /** Something to time; returns what to do after the clock stopped (close the result). */
    private interface Timed {
        Runnable run();
    }

    /** The median time of {@code timed} over {@code repeat} runs after {@code warmups}, in ms. */
    private static double medianMs(int warmups, int repeat, Timed timed) {
        double[] ms = new double[repeat];
        for (int i = -warmups; i < repeat; i++) {
            long t0 = System.nanoTime();
            Runnable after = timed.run();
            long t1 = System.nanoTime();
            after.run();
            if (i >= 0) {
                ms[i] = (t1 - t0) / 1e6;
            }
        }
        return Stats.median(ms);
    }

    /** The median time of {@code predict}, which leaves its result on the device, after two warm-ups, in ms. */
    private static double predictMs(int repeat, Supplier<NdArray> predict) {
        return medianMs(2, repeat, () -> predict.get()::close);
    }

    // ---------------------------------------------------------------- checks

    /** Predicts the first rows of X on the device and compares them with {@code reference} of those rows. */
    private static boolean check(
            NdArray x, Options o, Function<NdArray, NdArray> predict, Function<double[], double[]> reference) {
        int n = (int) Math.min(o.rows(), CHECKED_ROWS);
        try (NdArray head = NdArray.view(x.buffer(), 0, DType.FLOAT32, Order.C, n, o.cols());
                NdArray got = predict.apply(head)) {
            double[] want = reference.apply(BenchArgs.numbers(head));
            double[] have = BenchArgs.numbers(got);
            double diff = 0;
            double scale = 0;
            for (int i = 0; i < n; i++) {
                diff = Math.max(diff, Math.abs(have[i] - want[i]));
                scale = Math.max(scale, Math.abs(want[i]));
            }
            return got.dtype() == DType.INT32 ? diff == 0 : diff <= 1e-4 * Math.max(scale, 1);
        }
    }

    private static double[] linearReference(LinearRegression lr, double[] rows, int d) {
        double[] w = BenchArgs.numbers(lr.coef());
        double[] out = new double[rows.length / d];
        for (int i = 0; i < out.length; i++) {
            double s = lr.intercept();
            for (int j = 0; j < d; j++) {
                s += rows[i * d + j] * w[j];
            }
            out[i] = s;
        }
        return out;
    }

    private static double[] kmeansReference(KMeans km, double[] rows, int d) {
        double[] c = BenchArgs.numbers(km.clusterCenters());
        int k = c.length / d;
        double[] out = new double[rows.length / d];
        for (int i = 0; i < out.length; i++) {
            double best = Double.POSITIVE_INFINITY;
            for (int q = 0; q < k; q++) {
                double s = 0;
                for (int j = 0; j < d; j++) {
                    double diff = rows[i * d + j] - c[q * d + j];
                    s += diff * diff;
                }
                if (s < best) {
                    best = s;
                    out[i] = q;
                }
            }
        }
        return out;
    }
}
