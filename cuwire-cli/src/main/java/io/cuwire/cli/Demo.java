package io.cuwire.cli;

import io.cuwire.bench.harness.Cli;
import io.cuwire.bench.harness.Sizes;
import io.cuwire.bench.harness.Stats;
import io.cuwire.cli.DemoResults.Fit;
import io.cuwire.cli.DemoResults.Row;
import io.cuwire.cli.DemoResults.Skipped;
import io.cuwire.cli.DemoResults.SweepPoint;
import io.cuwire.cluster.BroadcastOptions;
import io.cuwire.cluster.BroadcastResult;
import io.cuwire.cluster.Client;
import io.cuwire.cluster.ClusterException;
import io.cuwire.cluster.Distributed;
import io.cuwire.cluster.LocalCluster;
import io.cuwire.cluster.MlTasks;
import io.cuwire.cluster.ModelHandle;
import io.cuwire.cluster.ObjectRef;
import io.cuwire.cluster.WorkerStats;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyDirection;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.DType;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import io.cuwire.memory.TransferStats;
import io.cuwire.ml.Estimator;
import io.cuwire.ml.cluster.KMeans;
import io.cuwire.ml.ensemble.RandomForestClassifier;
import io.cuwire.ml.linear.LinearRegression;
import io.cuwire.ml.neighbors.NearestNeighbors;
import io.cuwire.ml.neighbors.Neighbors;
import io.cuwire.ml.types.MlTypes;
import io.cuwire.serialize.DecodeTarget;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.Frame;
import io.cuwire.serialize.Limits;
import io.cuwire.serialize.Serialized;
import io.cuwire.serialize.TypeRegistry;
import io.cuwire.transport.spi.Availability;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import picocli.CommandLine;
import picocli.CommandLine.Option;

/**
 * {@code cuwire demo}, the main job: makes a data set on the client's device, starts a local cluster, fits
 * {@link LinearRegression}, {@link KMeans} and {@link RandomForestClassifier} on the workers (merged on the client),
 * checks them against single-process fits, and makes the payload model, a {@link NearestNeighbors} whose training
 * rows (the model is its data, as cuML's) are sized per platform ({@link #defaultModelBytes}): large enough that
 * bytes, not per-message costs, decide a broadcast. Then — per transport, a cluster each — it broadcasts every model
 * with every family, predicts and checks the predictions: one untimed round through every path first (so that no
 * path pays the JVMs' class loading and JIT compilation for the others), then {@code --repeat} timed rounds, each
 * starting with another family; a row holds the median. Last, per transport, the sweep: the payload model at each
 * smaller size, every family. It prints the {@link Verdict}s and a table per model and writes an HTML
 * {@link Report} with inline SVG (no AWT: it runs on the GPU bundle's runtime, which has no {@code java.desktop}).
 */
final class Demo {
    /** The families every model is broadcast with; {@code java} is explained in {@link #JAVA_NOTE}. */
    private static final List<Family> FAMILIES = List.of(Family.CUDA, Family.HOST, Family.JAVA);

    /** The payload model's default size on a CUDA host: hundreds of MiB, as production models are. */
    static final long GPU_MODEL_BYTES = 512L << 20;
    /** The payload model's default size on the emulated device: enough to show the paths apart, quick on 2 cores. */
    static final long EMULATED_MODEL_BYTES = 32L << 20;
    /** The payload model's columns (float32). */
    static final int PAYLOAD_COLS = 64;
    /** The bytes of one payload row. */
    static final long PAYLOAD_ROW_BYTES = 4L * PAYLOAD_COLS;
    /** The payload model's query rows per worker: rows of the model, each must find itself. */
    static final int QUERIES = 8;
    /** The smallest payload model: every worker's queries must be distinct rows. */
    static final long MIN_MODEL_BYTES = 64L << 10;

    static final String JAVA_NOTE = "java family: JDK serialization of the whole estimator, the pickle baseline "
            + "(the estimators are java.io.Serializable and on the cluster's java allow-list): every device array is "
            + "copied to the heap inside the stream, travels in one host frame and is rebuilt on each worker's device";

    static final String PAYLOAD_NOTE = "payload model: a NearestNeighbors fitted on the client on random float32 "
            + "rows of " + PAYLOAD_COLS + " columns (the model is its training rows, as cuML's); refitted (a device "
            + "copy) before each broadcast so that no worker holds it; its predict, after the last timed broadcast of "
            + "each path, is a nearest-neighbor query of " + QUERIES + " of its rows on each worker, each of which "
            + "must find itself";

    static final String TABLE_NOTE = "path: transport / family. broadcast: from the call to the last worker's "
            + "acknowledgement (the model decoded on its device), the median of the timed runs. D2H, H2D: bytes the "
            + "copy engines of the client and all workers moved between device and host memory during one broadcast. "
            + "cuda keeps device arrays device frames (over tcp, and over ucx where its UCX cannot carry device "
            + "memory, they are staged through host bounce buffers: D2H and H2D show where); host copies them to "
            + "host frames once at the client and rebuilds them on each worker's device; java copies them to the "
            + "heap inside one JDK serialization stream. predict: every partition on its worker (the payload "
            + "model: its queries), results kept there";

    /**
     * The demo's options.
     *
     * @param modelBytes the payload model's array bytes; 0: {@link #defaultModelBytes} of the platform
     * @param sweep the payload sizes below {@code modelBytes} to sweep; {@code null}: {@link #defaultSweep}
     * @param repeat the timed broadcasts per path
     */
    record Options(
            int workers,
            List<String> transports,
            Path report,
            int rows,
            int features,
            int clusters,
            int trees,
            long seed,
            long modelBytes,
            List<Long> sweep,
            int repeat) {
        /** Parses the options of {@link Args} ({@code cuwire demo --help}). */
        static Options parse(List<String> args) {
            return Cli.parse(new Args(), args.toArray(String[]::new)).options();
        }

        /** The payload model's bytes on {@code platform}: {@code --model-size}, else the platform's default. */
        long modelBytesOn(String platform) {
            return modelBytes > 0 ? modelBytes : defaultModelBytes(platform);
        }

        /** The sweep's sizes for a payload model of {@code bytes}: {@code --sweep}, else the default. */
        List<Long> sweepFor(long bytes) {
            if (sweep == null) {
                return defaultSweep(bytes);
            }
            checkSweep(sweep, bytes);
            return sweep.stream().sorted().distinct().toList();
        }

        private static void checkSweep(List<Long> sizes, long modelBytes) {
            for (long s : sizes) {
                if (s >= modelBytes) {
                    throw new IllegalArgumentException("--sweep " + s + " bytes (expected: below the payload model's "
                            + modelBytes + " bytes, which its own table measures)");
                }
            }
        }

        private static long payloadSize(String option, long bytes) {
            if (bytes < MIN_MODEL_BYTES || bytes % PAYLOAD_ROW_BYTES != 0) {
                throw new IllegalArgumentException(option + " " + bytes + " (expected: at least 64KiB and whole rows"
                        + " of " + PAYLOAD_ROW_BYTES + " bytes, " + PAYLOAD_COLS + " float32 each)");
            }
            return bytes;
        }
    }

    /** The options of {@code cuwire demo}, declared to picocli (the command mixes them in). */
    static final class Args {
        @Option(
                names = "--workers",
                paramLabel = "N",
                description = "workers of each local cluster (default: the " + "local cluster's)")
        Integer workers;

        @Option(
                names = "--transports",
                split = ",",
                paramLabel = "T",
                converter = TransportName.class,
                description = "tcp, ipc, ucx: a cluster each, of those usable here (default: tcp,ipc,ucx)")
        List<String> transports;

        @Option(
                names = "--model-size",
                paramLabel = "SIZE",
                converter = Cli.SizeConverter.class,
                description = "the payload model's bytes: at least 64KiB, whole rows of " + PAYLOAD_ROW_BYTES
                        + " bytes (default: 512MiB on CUDA, 32MiB on the emulated device)")
        Long modelSize;

        @Option(
                names = "--sweep",
                paramLabel = "SIZE,...|none",
                description = "the payload sizes below --model-size that the sweep measures, or none (default: 1MiB "
                        + "times the powers of 4 below it)")
        String sweep;

        @Option(
                names = "--repeat",
                paramLabel = "N",
                defaultValue = "3",
                description = "timed broadcasts per path, the median shown (default: ${DEFAULT-VALUE})")
        int repeat;

        @Option(
                names = "--report",
                paramLabel = "DIR",
                defaultValue = "cuwire-demo-report",
                description = "the HTML report's directory (default: ${DEFAULT-VALUE})")
        Path report;

        @Option(
                names = "--rows",
                paramLabel = "N",
                defaultValue = "50000",
                description = "rows of the data set (default: ${DEFAULT-VALUE})")
        int rows;

        @Option(
                names = "--features",
                paramLabel = "N",
                defaultValue = "16",
                description = "float32 features of the data set (default: ${DEFAULT-VALUE})")
        int features;

        @Option(
                names = "--clusters",
                paramLabel = "N",
                defaultValue = "4",
                description = "blobs in the data set, KMeans's clusters and the classes (default: ${DEFAULT-VALUE})")
        int clusters;

        @Option(
                names = "--trees",
                paramLabel = "N",
                defaultValue = "16",
                description = "trees of the random forest (default: ${DEFAULT-VALUE})")
        int trees;

        @Option(
                names = "--seed",
                paramLabel = "N",
                defaultValue = "42",
                description = "the data's random seed (default: ${DEFAULT-VALUE})")
        long seed;

        /**
         * The typed options.
         *
         * @throws IllegalArgumentException naming the option whose value is out of range
         */
        Options options() {
            long modelBytes = modelSize == null ? 0 : Options.payloadSize("--model-size", modelSize);
            List<Long> sizes = null;
            if (sweep != null) {
                sizes = new ArrayList<>();
                if (!sweep.equals("none")) {
                    for (String s : sweep.split(",")) {
                        long bytes;
                        try {
                            bytes = Sizes.parse(s);
                        } catch (IllegalArgumentException e) {
                            throw new IllegalArgumentException("--sweep " + s + ": " + e.getMessage(), e);
                        }
                        sizes.add(Options.payloadSize("--sweep", bytes));
                    }
                }
                if (modelBytes > 0) {
                    Options.checkSweep(sizes, modelBytes);
                }
            }
            return new Options(
                    workers == null ? -1 : Cli.atLeast("--workers", workers, 1),
                    transports,
                    report,
                    Cli.atLeast("--rows", rows, 1),
                    Cli.atLeast("--features", features, 1),
                    Cli.atLeast("--clusters", clusters, 1),
                    Cli.atLeast("--trees", trees, 1),
                    seed,
                    modelBytes,
                    sizes,
                    Cli.atLeast("--repeat", repeat, 1));
        }
    }

    /** A transport of {@code --transports}. */
    static final class TransportName implements CommandLine.ITypeConverter<String> {
        @Override
        public String convert(String t) {
            if (!List.of("tcp", "ipc", "ucx").contains(t)) {
                throw new CommandLine.TypeConversionException(
                        "unknown transport '" + t + "' (expected: tcp, ipc, " + "ucx)");
            }
            return t;
        }
    }

    /** The payload model's default bytes: {@link #GPU_MODEL_BYTES} on CUDA, else {@link #EMULATED_MODEL_BYTES}. */
    static long defaultModelBytes(String platform) {
        return platform.equals("cuda") ? GPU_MODEL_BYTES : EMULATED_MODEL_BYTES;
    }

    /** 1 MiB, 4 MiB, 16 MiB, ...: 1 MiB times the powers of 4, below {@code modelBytes}. */
    static List<Long> defaultSweep(long modelBytes) {
        List<Long> sizes = new ArrayList<>();
        for (long s = 1L << 20; s < modelBytes; s *= 4) {
            sizes.add(s);
        }
        return sizes;
    }

    private final Options options;
    private final PrintStream out;
    private final BufferAllocator<DeviceBuffer> mem;
    private final BufferAllocator<HostBuffer> host;
    private final TypeRegistry registry = MlTypes.register(new TypeRegistry());
    private final DecodeTarget target;
    private final List<Row> rows = new ArrayList<>();
    private final List<Fit> fits = new ArrayList<>();
    private final List<Skipped> skipped = new ArrayList<>();
    private final List<SweepPoint> sweep = new ArrayList<>();
    private String setting = "";

    private Demo(Options options, PrintStream out) {
        this.options = options;
        this.out = out;
        this.mem = Devices.get(0).newAllocator("cuwire-demo", BufferAllocator.UNLIMITED);
        this.host = BufferAllocator.host("cuwire-demo-host", BufferAllocator.UNLIMITED);
        this.target = new DecodeTarget(mem, host, Limits.DEFAULT);
    }

    /** Runs the demo with checked options; the exit code. */
    static int run(Options options, PrintStream out, PrintStream err) {
        try {
            return new Demo(options, out).run() ? Main.OK : Main.FAILED;
        } catch (ClusterException | IOException e) {
            err.println("cuwire demo: " + e.getMessage());
            return Main.FAILED;
        }
    }

    private void progress(String what) {
        out.println("... " + what);
        out.flush();
    }

    /** Runs the job; true if every check matched. */
    private boolean run() throws IOException {
        long start = System.nanoTime();
        String platform = Devices.platform();
        long modelBytes = options.modelBytesOn(platform);
        List<Long> sweepSizes = options.sweepFor(modelBytes);
        List<String> transports = transports(platform);
        int n = options.rows();
        int d = options.features();
        int k = options.clusters();
        progress(String.format(
                Locale.ROOT,
                "making the data set: %,d rows x %d float32 features in %d blobs, a linear"
                        + " target and the blob as class label, on the client's device (%s)",
                n,
                d,
                k,
                platform));
        try (Data data = Data.make(mem, n, d, k, options.seed())) {
            progress(String.format(
                    Locale.ROOT,
                    "making the payload model's rows: %s, %,d rows x %d float32, on the "
                            + "client's device (the default on %s: %s)",
                    Info.bytes(modelBytes),
                    modelBytes / PAYLOAD_ROW_BYTES,
                    PAYLOAD_COLS,
                    platform,
                    Info.bytes(defaultModelBytes(platform))));
            try (NdArray payload = payloadRows(mem, modelBytes, options.seed())) {
                Models models = null;
                try {
                    for (String transport : transports) {
                        models = onCluster(transport, data, payload, sweepSizes, models);
                    }
                } finally {
                    if (models != null) {
                        models.close();
                    }
                }
            }
        }
        DemoResults results = new DemoResults(setting, options.repeat(), fits, rows, sweep, skipped);
        List<Verdict> verdicts = Verdict.all(results.rows());
        print(results, verdicts);
        Path report = Report.write(results, verdicts, options.report());
        out.println("report: " + report.toAbsolutePath());
        boolean ok = results.allMatch();
        out.printf(
                Locale.ROOT,
                "%s in %.1f s%n",
                ok ? "all checks MATCH; done" : "some checks MISMATCH; failed",
                (System.nanoTime() - start) / 1e9);
        return ok;
    }

    private List<String> transports(String platform) {
        List<String> wanted = options.transports() != null ? options.transports() : List.of("tcp", "ipc", "ucx");
        List<String> use = new ArrayList<>();
        for (String t : wanted) {
            Availability a = switch (t) {
                case "ipc" -> Transports.ipc(platform);
                case "ucx" -> Transports.ucx();
                default -> Availability.available("sockets");
            };
            if (a.available()) {
                use.add(t);
            } else {
                skipped.add(new Skipped(t, a.reason()));
            }
        }
        return use;
    }

    /** {@code bytes} of random float32 rows of {@link #PAYLOAD_COLS} columns on {@code mem}, made in pieces. */
    static NdArray payloadRows(BufferAllocator<DeviceBuffer> mem, long bytes, long seed) {
        NdArray x = NdArray.empty(mem, DType.FLOAT32, Order.C, bytes / PAYLOAD_ROW_BYTES, PAYLOAD_COLS);
        try {
            SplittableRandom random = new SplittableRandom(seed);
            float[] piece = new float[(int) (Math.min(bytes, 4L << 20) / 4)];
            for (long at = 0; at < bytes; at += 4L * piece.length) {
                int floats = (int) (Math.min(4L * piece.length, bytes - at) / 4);
                for (int i = 0; i < floats; i++) {
                    piece[i] = (float) random.nextDouble(-1, 1);
                }
                CopyEngine.copyFromSegment(MemorySegment.ofArray(piece).asSlice(0, 4L * floats), x.buffer(), at);
            }
            return x;
        } catch (RuntimeException | Error e) {
            x.close();
            throw e;
        }
    }
    /** The data set, its partitions (views) and what the single-process fits predict on each. */
    private record Data(
            NdArray x, NdArray y, NdArray labels, List<NdArray> xs, List<NdArray> ys, List<NdArray> ls, int clusters)
            implements AutoCloseable {
        static Data make(BufferAllocator<DeviceBuffer> mem, int n, int d, int k, long seed) {
            SplittableRandom random = new SplittableRandom(seed);
            float[] xv = new float[n * d];
            float[] yv = new float[n];
            int[] lv = new int[n];
            double[] w = new double[d];
            for (int j = 0; j < d; j++) {
                w[j] = random.nextDouble(-1, 1);
            }
            double[][] centers = new double[k][d];
            for (double[] c : centers) {
                for (int j = 0; j < d; j++) {
                    c[j] = random.nextDouble(-5, 5);
                }
            }
            for (int i = 0; i < n; i++) {
                int label = random.nextInt(k);
                double t = 0.5;
                for (int j = 0; j < d; j++) {
                    float v = (float) (centers[label][j] + random.nextGaussian());
                    xv[i * d + j] = v;
                    t += w[j] * v;
                }
                yv[i] = (float) (t + 0.1 * random.nextGaussian());
                lv[i] = label;
            }
            NdArray x = NdArray.fromArray(mem, xv, n, d);
            NdArray y = NdArray.fromArray(mem, yv, n);
            NdArray labels = NdArray.fromArray(mem, lv, n);
            int parts = 4;
            List<NdArray> xs = new ArrayList<>();
            List<NdArray> ys = new ArrayList<>();
            List<NdArray> ls = new ArrayList<>();
            for (int p = 0; p < parts; p++) {
                long from = (long) n * p / parts;
                long to = (long) n * (p + 1) / parts;
                xs.add(NdArray.view(x.buffer(), from * d * 4, DType.FLOAT32, Order.C, to - from, d));
                ys.add(NdArray.view(y.buffer(), from * 4, DType.FLOAT32, Order.C, to - from));
                ls.add(NdArray.view(labels.buffer(), from * 4, DType.INT32, Order.C, to - from));
            }
            return new Data(x, y, labels, xs, ys, ls, k);
        }

        @Override
        public void close() {
            xs.forEach(NdArray::close);
            ys.forEach(NdArray::close);
            ls.forEach(NdArray::close);
            x.close();
            y.close();
            labels.close();
        }
    }

    /**
     * The models fitted on the workers (in the client's memory) and the reference predictions per partition: the
     * single-process fits' for LinearRegression and KMeans, the client's own forest's for the forest.
     */
    private record Models(
            LinearRegression lr,
            KMeans km,
            RandomForestClassifier rf,
            List<float[]> lrExpected,
            List<int[]> kmExpected,
            List<int[]> rfExpected)
            implements AutoCloseable {
        @Override
        public void close() {
            lr.close();
            km.close();
            rf.close();
        }
    }

    /** A version of a model that no worker holds yet; closing it releases what the demo made for it. */
    private record Version(Object model, Runnable release) implements AutoCloseable {
        @Override
        public void close() {
            release.run();
        }
    }

    /** A prediction with a broadcast model on every worker, and how it compared with the reference. */
    private record Check(double millis, boolean match, String detail) {}

    /** One timed broadcast of a path and the prediction after it ({@code null}: none after this one). */
    private record Run(double broadcastMillis, long d2h, long h2d, Check check) {}

    /** A model the demo broadcasts: a new version each time, and the prediction that checks the workers' copies. */
    private interface Subject {
        String name();

        /** The bytes of the model's arrays. */
        long modelBytes();

        /** A version no worker holds yet. */
        Version next();

        /**
         * Whether a prediction is cheap enough to follow every broadcast; if not, it follows the first broadcast of
         * the untimed round (JIT) and the last timed broadcast of each path (the check).
         */
        boolean predictsEveryRun();

        Check predict(Client client, ModelHandle handle);
    }

    private Models onCluster(String transport, Data data, NdArray payload, List<Long> sweepSizes, Models fitted) {
        progress("starting a local cluster over " + transport);
        long t0 = System.nanoTime();
        LocalCluster.Builder b = LocalCluster.builder().transport(transport);
        if (options.workers() > 0) {
            b.workers(options.workers());
        }
        LocalCluster cluster;
        try {
            cluster = b.start();
        } catch (ClusterException e) {
            if (transport.equals("tcp")) {
                throw e;
            }
            skipped.add(new Skipped(transport, "the cluster did not start: " + firstLine(e.getMessage())));
            progress("transport " + transport + " skipped: " + firstLine(e.getMessage()));
            return fitted;
        }
        try (cluster) {
            Client client = cluster.client();
            StringBuilder devices = new StringBuilder();
            for (int w = 0; w < cluster.size(); w++) {
                devices.append(w == 0 ? "" : " ").append(cluster.deviceOf(w));
            }
            setting = cluster.size() + " workers on platform " + Devices.platform() + " (devices " + devices + ")";
            progress(String.format(
                    Locale.ROOT,
                    "cluster over %s: %s, started in %.1f s",
                    transport,
                    setting,
                    (System.nanoTime() - t0) / 1e9));
            List<ObjectRef> xr = client.scatter(data.xs());
            List<ObjectRef> yr = client.scatter(data.ys());
            List<ObjectRef> lr = client.scatter(data.ls());
            Payload p = null;
            try (NearestNeighbors nn = new NearestNeighbors().nNeighbors(1)) {
                Models models = fitted != null ? fitted : fit(client, transport, data, xr, yr, lr);
                p = new Payload(nn, payload, client);
                List<Subject> subjects = List.of(
                        fitted(models.lr(), models, xr),
                        fitted(models.km(), models, xr),
                        fitted(models.rf(), models, xr),
                        p);
                measure(client, transport, subjects);
                sweep(client, transport, p, sweepSizes);
                return models;
            } finally {
                if (p != null) {
                    client.free(p.queryRefs);
                }
                client.free(xr);
                client.free(yr);
                client.free(lr);
            }
        }
    }

    /**
     * One untimed round through every model and family, then {@link Options#repeat} timed rounds, each starting
     * with the next family, so that neither the JVMs' first calls nor the order favours a family; a row per model
     * and family from the median.
     */
    private void measure(Client client, String transport, List<Subject> subjects) {
        progress("over " + transport + ": an untimed round through every model and family (class loading, JIT, "
                + "first allocations)");
        for (Subject s : subjects) {
            for (Family f : FAMILIES) {
                run(client, s, f, s.predictsEveryRun() || f == FAMILIES.getFirst());
            }
        }
        List<List<List<Run>>> runs = new ArrayList<>();
        for (int i = 0; i < subjects.size(); i++) {
            runs.add(new ArrayList<>());
            for (int j = 0; j < FAMILIES.size(); j++) {
                runs.get(i).add(new ArrayList<>());
            }
        }
        for (int round = 0; round < options.repeat(); round++) {
            progress("over " + transport + ": timed round " + (round + 1) + " of " + options.repeat() + ": "
                    + "broadcasting every model with every family, predicting, checking");
            for (int i = 0; i < subjects.size(); i++) {
                for (int j = 0; j < FAMILIES.size(); j++) {
                    int f = (j + round) % FAMILIES.size();
                    Subject s = subjects.get(i);
                    runs.get(i)
                            .get(f)
                            .add(run(
                                    client, s, FAMILIES.get(f), s.predictsEveryRun() || round == options.repeat() - 1));
                }
            }
        }
        for (int i = 0; i < subjects.size(); i++) {
            for (int f = 0; f < FAMILIES.size(); f++) {
                rows.add(row(
                        subjects.get(i), transport, FAMILIES.get(f), runs.get(i).get(f)));
            }
        }
    }

    /** The payload model at each of {@code sizes}, every family, {@link Options#repeat} broadcasts each. */
    private void sweep(Client client, String transport, Payload p, List<Long> sizes) {
        for (long size : sizes) {
            progress("over " + transport + ": sweep: the payload model at " + Info.bytes(size) + ", every family");
            double[][] ms = new double[FAMILIES.size()][options.repeat()];
            for (int round = 0; round < options.repeat(); round++) {
                for (int j = 0; j < FAMILIES.size(); j++) {
                    int f = (j + round) % FAMILIES.size();
                    try (Version v = p.next(size)) {
                        long t0 = System.nanoTime();
                        BroadcastResult r =
                                client.broadcast(v.model(), BroadcastOptions.DEFAULT.family(FAMILIES.get(f)));
                        ms[f][round] = (System.nanoTime() - t0) / 1e6;
                        reached(client, r);
                    }
                }
            }
            for (int f = 0; f < FAMILIES.size(); f++) {
                sweep.add(new SweepPoint(transport, FAMILIES.get(f).wireName(), size, Stats.median(ms[f])));
            }
        }
        for (Row r : rows) {
            if (r.transport().equals(transport) && r.model().equals(p.name())) {
                sweep.add(new SweepPoint(transport, r.family(), r.modelBytes(), r.broadcastMillis()));
            }
        }
    }

    /** Broadcasts a new version of {@code s} with {@code family}; predicts and checks if {@code predict}. */
    private Run run(Client client, Subject s, Family family, boolean predict) {
        try (Version v = s.next()) {
            long[] c0 = copies(client);
            long t0 = System.nanoTime();
            BroadcastResult r = client.broadcast(v.model(), BroadcastOptions.DEFAULT.family(family));
            long t1 = System.nanoTime();
            long[] c1 = copies(client);
            reached(client, r);
            Check check = predict ? s.predict(client, r.handle()) : null;
            return new Run((t1 - t0) / 1e6, c1[0] - c0[0], c1[1] - c0[1], check);
        }
    }

    private static void reached(Client client, BroadcastResult r) {
        if (r.sent() != client.workers()) {
            throw new ClusterException("the broadcast reached " + r.sent() + " of " + client.workers() + " workers");
        }
    }

    private static Row row(Subject s, String transport, Family family, List<Run> runs) {
        double[] ms = runs.stream().mapToDouble(Run::broadcastMillis).toArray();
        List<Check> checks =
                runs.stream().map(Run::check).filter(c -> c != null).toList();
        double[] predict = checks.stream().mapToDouble(Check::millis).toArray();
        boolean match = !checks.isEmpty() && checks.stream().allMatch(Check::match);
        String detail = checks.stream()
                .filter(c -> !c.match())
                .map(Check::detail)
                .findFirst()
                .orElse(checks.isEmpty() ? "not checked" : checks.getLast().detail());
        return new Row(
                s.name(),
                transport,
                family.wireName(),
                s.modelBytes(),
                Stats.median(ms),
                Arrays.stream(ms).min().orElseThrow(),
                Arrays.stream(ms).max().orElseThrow(),
                runs.stream().mapToLong(Run::d2h).max().orElseThrow(),
                runs.stream().mapToLong(Run::h2d).max().orElseThrow(),
                predict.length == 0 ? 0 : Stats.median(predict),
                match,
                detail);
    }

    /** A model fitted on the workers: each version a copy; checked against the reference predictions. */
    private Subject fitted(Estimator model, Models models, List<ObjectRef> xr) {
        long bytes;
        try (Serialized s = registry.serialize(model, Family.CUDA)) {
            bytes = s.frames().stream().mapToLong(Frame::length).sum();
        }
        return new Subject() {
            @Override
            public String name() {
                return Demo.name(model);
            }

            @Override
            public long modelBytes() {
                return bytes;
            }

            @Override
            public Version next() {
                Estimator copy = copyOf(model);
                return new Version(copy, copy::close);
            }

            @Override
            public boolean predictsEveryRun() {
                return true;
            }

            @Override
            public Check predict(Client client, ModelHandle handle) {
                long t0 = System.nanoTime();
                List<ObjectRef> predicted = Distributed.predict(client, handle, xr);
                double millis = (System.nanoTime() - t0) / 1e6;
                List<NdArray> back = client.gather(predicted, NdArray.class);
                client.free(predicted);
                try {
                    return compare(model, models, back, millis);
                } finally {
                    back.forEach(NdArray::close);
                }
            }
        };
    }

    private static Check compare(Estimator model, Models models, List<NdArray> back, double millis) {
        boolean match = true;
        double diff = 0;
        long differ = 0;
        long total = 0;
        for (int p = 0; p < back.size(); p++) {
            switch (model) {
                case LinearRegression m -> {
                    float[] got = back.get(p).toFloatArray();
                    float[] want = models.lrExpected().get(p);
                    for (int i = 0; i < want.length; i++) {
                        double dv = Math.abs(got[i] - want[i]);
                        diff = Math.max(diff, dv);
                        match &= dv <= 1e-4 * (1 + Math.abs(want[i]));
                    }
                }
                default -> {
                    int[] got = back.get(p).toIntArray();
                    int[] want = model instanceof KMeans
                            ? models.kmExpected().get(p)
                            : models.rfExpected().get(p);
                    for (int i = 0; i < want.length; i++) {
                        differ += got[i] == want[i] ? 0 : 1;
                    }
                    total += want.length;
                    match &= differ == 0;
                }
            }
        }
        String detail = switch (model) {
            case LinearRegression m -> String.format(Locale.ROOT, "vs single-process fit: max |diff| %.1e", diff);
            case KMeans m -> String.format(Locale.ROOT, "labels vs single-process fit: %d of %d differ", differ, total);
            default -> String.format(Locale.ROOT, "vs the client's model: %d of %d differ", differ, total);
        };
        return new Check(millis, match, detail);
    }

    /**
     * The payload model: one {@link NearestNeighbors} refitted on (a prefix of) the payload rows before each
     * broadcast, so that each broadcast is a new version of the same model (the workers drop the one before).
     */
    private static final class Payload implements Subject {
        private final NearestNeighbors nn;
        private final NdArray rows;
        private final int workers;
        /** Each worker's query rows, stored there. */
        final List<ObjectRef> queryRefs;

        /** The payload of {@code rows}, refitting {@code nn}; puts query rows {@code w} on worker {@code w}. */
        Payload(NearestNeighbors nn, NdArray rows, Client client) {
            this.nn = nn;
            this.rows = rows;
            this.workers = client.workers();
            List<NdArray> queries = new ArrayList<>();
            try {
                for (int w = 0; w < workers; w++) {
                    queries.add(queries(w));
                }
                this.queryRefs = client.scatter(queries);
            } finally {
                queries.forEach(NdArray::close);
            }
        }

        @Override
        public String name() {
            return Demo.name(nn);
        }

        @Override
        public long modelBytes() {
            return rows.byteSize();
        }

        @Override
        public Version next() {
            nn.fit(rows);
            return new Version(nn, () -> {});
        }

        /** No: the CPU backend of the emulated device copies the whole model to the heap for each query. */
        @Override
        public boolean predictsEveryRun() {
            return false;
        }

        /** A version of {@code bytes} (the first rows). */
        Version next(long bytes) {
            try (NdArray prefix =
                    NdArray.view(rows.buffer(), 0, DType.FLOAT32, Order.C, bytes / PAYLOAD_ROW_BYTES, PAYLOAD_COLS)) {
                nn.fit(prefix);
            }
            return new Version(nn, () -> {});
        }

        /** Query {@code j} of worker {@code w}: a row number of the model, spread over all of them. */
        long queryRow(int w, int j) {
            long n = rows.dim(0);
            return ((long) (w * QUERIES + j) * 2 + 1) * n / (2L * workers * QUERIES);
        }

        /** Worker {@code w}'s query rows, copied out of the model's rows on the client's device. */
        private NdArray queries(int w) {
            NdArray q = NdArray.empty(rows.buffer().allocator(), DType.FLOAT32, Order.C, QUERIES, PAYLOAD_COLS);
            try {
                for (int j = 0; j < QUERIES; j++) {
                    CopyEngine.copy(
                            rows.buffer(),
                            queryRow(w, j) * PAYLOAD_ROW_BYTES,
                            q.buffer(),
                            j * PAYLOAD_ROW_BYTES,
                            PAYLOAD_ROW_BYTES);
                }
                return q;
            } catch (RuntimeException | Error e) {
                q.close();
                throw e;
            }
        }

        @Override
        public Check predict(Client client, ModelHandle handle) {
            long t0 = System.nanoTime();
            List<CompletableFuture<Neighbors>> futures = new ArrayList<>();
            for (int w = 0; w < workers; w++) {
                futures.add(client.call(w, MlTasks.NEIGHBORS_PARTIAL, handle, queryRefs.get(w), 1L, 0L));
            }
            List<Neighbors> found = joinAll(futures);
            double millis = (System.nanoTime() - t0) / 1e6;
            try {
                long wrong = 0;
                double far = 0;
                for (int w = 0; w < workers; w++) {
                    long[] ids = found.get(w).ids().toLongArray();
                    float[] dist = found.get(w).distances().toFloatArray();
                    for (int j = 0; j < QUERIES; j++) {
                        wrong += ids[j] == queryRow(w, j) ? 0 : 1;
                        far = Math.max(far, dist[j]);
                    }
                }
                return new Check(
                        millis,
                        wrong == 0,
                        String.format(
                                Locale.ROOT,
                                "%d query rows of the model per "
                                        + "worker: %d of %d did not find themselves; largest distance to the row found %.1e",
                                QUERIES,
                                wrong,
                                (long) QUERIES * workers,
                                far));
            } finally {
                found.forEach(Neighbors::close);
            }
        }
    }

    /** Every future's value; if one failed, closes the values of the others and throws its failure. */
    private static List<Neighbors> joinAll(List<CompletableFuture<Neighbors>> futures) {
        List<Neighbors> out = new ArrayList<>();
        RuntimeException failure = null;
        for (CompletableFuture<Neighbors> f : futures) {
            try {
                out.add(f.join());
            } catch (CompletionException e) {
                RuntimeException r = e.getCause() instanceof RuntimeException re ? re : e;
                if (failure == null) {
                    failure = r;
                } else {
                    failure.addSuppressed(r);
                }
            }
        }
        if (failure != null) {
            out.forEach(Neighbors::close);
            throw failure;
        }
        return out;
    }

    private Models fit(
            Client client, String transport, Data data, List<ObjectRef> xr, List<ObjectRef> yr, List<ObjectRef> lr) {
        int k = data.clusters();
        progress("fitting LinearRegression on the workers over " + transport + " (partials, merged on the client)");
        long t0 = System.nanoTime();
        LinearRegression lrModel = Distributed.fit(client, new LinearRegression(), xr, yr);
        double lrMillis = (System.nanoTime() - t0) / 1e6;
        KMeans kmModel = null;
        RandomForestClassifier rfModel = null;
        try (LinearRegression single = new LinearRegression().fit(data.x(), data.y());
                KMeans.Candidates c = new KMeans().nClusters(k).seed(1).partialInit(data.x(), options.seed());
                NdArray start = new KMeans().nClusters(k).seed(1).initialCenters(List.of(c));
                KMeans kmSingle = newKMeans(k).fit(data.x(), start)) {
            double coefDiff =
                    maxDiff(lrModel.coef().toFloatArray(), single.coef().toFloatArray());
            double interceptDiff = Math.abs(lrModel.intercept() - single.intercept());
            double scale = 1 + Math.abs(single.intercept());
            for (float v : single.coef().toFloatArray()) {
                scale = Math.max(scale, 1 + Math.abs(v));
            }
            // float32 data gives float32 coefficients, summed per partition here and in one pass there: they agree
            // to a few dozen float32 ulps, not to 1e-6 absolute.
            fits.add(new Fit(
                    "LinearRegression",
                    lrMillis,
                    Math.max(coefDiff, interceptDiff) <= 1e-5 * scale,
                    String.format(
                            Locale.ROOT,
                            "float32 coefficients vs a single-process fit: max |diff| %.1e, "
                                    + "intercept |diff| %.1e (tolerance 1e-5 x %.1f)",
                            coefDiff,
                            interceptDiff,
                            scale)));

            progress("fitting KMeans k=" + k + " on the workers (a Lloyd round per iteration, from the same first "
                    + "centers as a single-process fit)");
            t0 = System.nanoTime();
            kmModel = Distributed.fit(client, newKMeans(k), xr, start);
            double kmMillis = (System.nanoTime() - t0) / 1e6;
            double centerDiff = maxDiff(
                    kmModel.clusterCenters().toFloatArray(),
                    kmSingle.clusterCenters().toFloatArray());
            fits.add(new Fit(
                    "KMeans",
                    kmMillis,
                    centerDiff <= 1e-3,
                    String.format(
                            Locale.ROOT,
                            "centers vs a "
                                    + "single-process fit from the same first centers: max |diff| %.1e (tolerance 1e-3); %d and %d "
                                    + "iterations",
                            centerDiff,
                            kmModel.nIter(),
                            kmSingle.nIter())));

            progress("fitting RandomForestClassifier (" + options.trees() + " trees) on the workers (each partition "
                    + "grows its share of the trees, the client concatenates them)");
            t0 = System.nanoTime();
            rfModel = Distributed.fit(
                    client,
                    new RandomForestClassifier()
                            .nEstimators(options.trees())
                            .maxDepth(8)
                            .seed(options.seed())
                            .nClasses(k),
                    xr,
                    lr);
            double rfMillis = (System.nanoTime() - t0) / 1e6;
            List<float[]> lrExpected = new ArrayList<>();
            List<int[]> kmExpected = new ArrayList<>();
            List<int[]> rfExpected = new ArrayList<>();
            long right = 0;
            for (int p = 0; p < data.xs().size(); p++) {
                try (NdArray a = single.predict(data.xs().get(p));
                        NdArray l = kmSingle.predict(data.xs().get(p));
                        NdArray f = rfModel.predict(data.xs().get(p))) {
                    lrExpected.add(a.toFloatArray());
                    kmExpected.add(l.toIntArray());
                    int[] fv = f.toIntArray();
                    rfExpected.add(fv);
                    int[] truth = data.ls().get(p).toIntArray();
                    for (int i = 0; i < fv.length; i++) {
                        right += fv[i] == truth[i] ? 1 : 0;
                    }
                }
            }
            fits.add(new Fit(
                    "RandomForestClassifier",
                    rfMillis,
                    true,
                    String.format(
                            Locale.ROOT,
                            "%d trees; "
                                    + "training accuracy %.4f; broadcasts are checked against the client's own model",
                            rfModel.info().trees(),
                            right / (double) data.x().dim(0))));
            return new Models(lrModel, kmModel, rfModel, lrExpected, kmExpected, rfExpected);
        } catch (RuntimeException | Error e) {
            lrModel.close();
            if (kmModel != null) {
                kmModel.close();
            }
            if (rfModel != null) {
                rfModel.close();
            }
            throw e;
        }
    }

    private static KMeans newKMeans(int k) {
        return new KMeans().nClusters(k).maxIter(50).seed(1);
    }

    /** A copy of {@code model} in the client's memory, through the host family. */
    private Estimator copyOf(Estimator model) {
        try (Serialized s = registry.serialize(model, Family.HOST)) {
            return registry.deserialize(s, Estimator.class, target);
        }
    }

    /** Bytes copied device to host and host to device so far, by the client and every worker. */
    private static long[] copies(Client client) {
        TransferStats t = CopyEngine.totals();
        long d2h = t.bytes(CopyDirection.D2H);
        long h2d = t.bytes(CopyDirection.H2D);
        for (WorkerStats w : client.workerStats()) {
            d2h += w.deviceToHostBytes();
            h2d += w.hostToDeviceBytes();
        }
        return new long[] {d2h, h2d};
    }

    private static double maxDiff(float[] a, float[] b) {
        if (a.length != b.length) {
            return Double.POSITIVE_INFINITY;
        }
        double m = 0;
        for (int i = 0; i < a.length; i++) {
            m = Math.max(m, Math.abs(a[i] - b[i]));
        }
        return m;
    }

    static String name(Object model) {
        return model.getClass().getSimpleName();
    }

    private static String firstLine(String s) {
        int nl = s == null ? -1 : s.indexOf('\n');
        return nl < 0 ? String.valueOf(s) : s.substring(0, nl);
    }

    /** The verdicts first, then the fits and a table per model. */
    private void print(DemoResults results, List<Verdict> verdicts) {
        out.println();
        out.println("verdict (from the tables below; broadcast times are medians of " + results.repeat()
                + " timed runs per path):");
        for (Verdict v : verdicts) {
            out.println("  " + v.text());
        }
        out.println();
        out.println(JAVA_NOTE + ".");
        out.println(PAYLOAD_NOTE + ".");
        for (Skipped s : results.skipped()) {
            out.println("transport " + s.transport() + ": skipped: " + s.reason());
        }
        out.println();
        out.println("fits on the workers (" + results.setting() + "):");
        for (Fit f : results.fits()) {
            out.printf(
                    Locale.ROOT,
                    "  %-24s %9.1f ms  %-8s %s%n",
                    f.model(),
                    f.millis(),
                    f.match() ? "MATCH" : "MISMATCH",
                    f.detail());
        }
        for (String model : results.modelNames()) {
            List<Row> rs = results.rowsOf(model);
            out.println();
            out.println(model + " (" + Info.bytes(rs.getFirst().modelBytes()) + "):");
            out.printf(
                    Locale.ROOT,
                    "  %-12s %12s %15s %15s %15s %11s  %s%n",
                    "path",
                    "broadcast ms",
                    "min-max ms",
                    "D2H bytes",
                    "H2D bytes",
                    "predict ms",
                    "check");
            for (Row r : rs) {
                out.printf(
                        Locale.ROOT,
                        "  %-12s %12s %15s %,15d %,15d %11s  %s (%s)%n",
                        r.path(),
                        Verdict.ms(r.broadcastMillis()),
                        Verdict.ms(r.broadcastMinMillis()) + "-" + Verdict.ms(r.broadcastMaxMillis()),
                        r.d2h(),
                        r.h2d(),
                        Verdict.ms(r.predictMillis()),
                        r.match() ? "MATCH" : "MISMATCH",
                        r.detail());
            }
        }
        if (!results.sweep().isEmpty()) {
            out.println();
            out.println("sweep: median broadcast ms of the payload model by size (the report plots it):");
            List<Long> sizes = results.sweep().stream()
                    .map(SweepPoint::bytes)
                    .distinct()
                    .sorted()
                    .toList();
            StringBuilder head = new StringBuilder(String.format(Locale.ROOT, "  %-12s", "path"));
            for (long s : sizes) {
                head.append(String.format(Locale.ROOT, " %10s", Report.size(s)));
            }
            out.println(head);
            List<String> paths =
                    results.sweep().stream().map(SweepPoint::path).distinct().toList();
            for (String path : paths) {
                StringBuilder line = new StringBuilder(String.format(Locale.ROOT, "  %-12s", path));
                for (long s : sizes) {
                    String cell = results.sweep().stream()
                            .filter(p -> p.path().equals(path) && p.bytes() == s)
                            .findFirst()
                            .map(p -> Verdict.ms(p.broadcastMillis()))
                            .orElse("-");
                    line.append(String.format(Locale.ROOT, " %10s", cell));
                }
                out.println(line);
            }
        }
        out.println();
        out.println(TABLE_NOTE + ".");
    }
}
