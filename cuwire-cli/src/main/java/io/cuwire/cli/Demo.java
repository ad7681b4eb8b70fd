package io.cuwire.cli;

import io.cuwire.cluster.BroadcastOptions;
import io.cuwire.cluster.BroadcastResult;
import io.cuwire.cluster.Client;
import io.cuwire.cluster.ClusterException;
import io.cuwire.cluster.Distributed;
import io.cuwire.cluster.LocalCluster;
import io.cuwire.cluster.ModelHandle;
import io.cuwire.cluster.ObjectRef;
import io.cuwire.cluster.WireStats;
import io.cuwire.cluster.WorkerStats;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyDirection;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.DType;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import io.cuwire.memory.TransferStats;
import io.cuwire.ml.Metrics;
import io.cuwire.ml.cluster.KMeans;
import io.cuwire.ml.decomposition.PCA;
import io.cuwire.ml.linear.LinearRegression;
import io.cuwire.ml.neighbors.NearestNeighbors;
import io.cuwire.serialize.Family;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.function.Supplier;

/**
 * {@code cuwire demo}, the main job: starts a local cluster, makes a data set on the client's device, scatters it,
 * fits estimators on the workers and merges them on the client, broadcasts a model with each family and strategy,
 * predicts on every partition in parallel, and shows what each path cost — time, bytes copied between device and
 * host (client and workers together, from the copy engines' counters) and bytes the client moved on the wire — as
 * a table and a bar chart (PNG).
 */
final class Demo {
    /** The demo's options. */
    record Options(int workers, String transport, Path plot, int rows, int features, int modelRows, long seed) {
        static Options parse(List<String> args) {
            int workers = -1;
            String transport = "tcp";
            Path plot = Path.of("demo.png");
            int rows = 100_000;
            int features = 32;
            int modelRows = 50_000;
            long seed = 42;
            for (int i = 0; i < args.size(); i++) {
                String a = args.get(i);
                if (i + 1 >= args.size()) {
                    throw new IllegalArgumentException("option " + a + " needs a value (or is unknown)");
                }
                String v = args.get(++i);
                switch (a) {
                    case "--workers" -> workers = positive(a, v);
                    case "--transport" -> transport = v;
                    case "--plot" -> plot = Path.of(v);
                    case "--rows" -> rows = positive(a, v);
                    case "--features" -> features = positive(a, v);
                    case "--model-rows" -> modelRows = positive(a, v);
                    case "--seed" -> seed = Long.parseLong(v);
                    default -> throw new IllegalArgumentException("unknown option " + a + " (expected: --workers N,"
                            + " --transport SCHEME, --plot FILE.png, --rows N, --features N, --model-rows N,"
                            + " --seed N)");
                }
            }
            return new Options(workers, transport, plot, rows, features, modelRows, seed);
        }

        private static int positive(String option, String value) {
            try {
                int n = Integer.parseInt(value);
                if (n >= 1) {
                    return n;
                }
            } catch (NumberFormatException e) {
                // reported below
            }
            throw new IllegalArgumentException(option + " " + value + " (expected: a whole number >= 1)");
        }
    }

    /**
     * One measured path.
     *
     * @param path what ran
     * @param millis wall time
     * @param d2h bytes copied device to host, client and workers
     * @param h2d bytes copied host to device, client and workers
     * @param wire bytes the client sent and received
     */
    record Row(String path, double millis, long d2h, long h2d, long wire) {
    }

    private final Options options;
    private final PrintStream out;
    private final List<Row> rows = new ArrayList<>();
    private Client client;

    private Demo(Options options, PrintStream out) {
        this.options = options;
        this.out = out;
    }

    static int run(List<String> args, PrintStream out, PrintStream err) {
        Options options;
        try {
            options = Options.parse(args);
        } catch (IllegalArgumentException e) {
            err.println("cuwire demo: " + e.getMessage());
            return Main.USAGE;
        }
        try {
            new Demo(options, out).run();
            return Main.OK;
        } catch (ClusterException | IOException e) {
            err.println("cuwire demo: " + e.getMessage());
            return Main.FAILED;
        }
    }

    private void run() throws IOException {
        long start = System.nanoTime();
        LocalCluster.Builder b = LocalCluster.builder().transport(options.transport());
        if (options.workers() > 0) {
            b.workers(options.workers());
        }
        try (LocalCluster cluster = b.start()) {
            client = cluster.client();
            out.printf(Locale.ROOT, "cluster: %d workers on platform %s (devices:", cluster.size(), Devices.platform());
            for (int w = 0; w < cluster.size(); w++) {
                out.print(" " + cluster.deviceOf(w));
            }
            out.printf(Locale.ROOT, "), transport %s, started in %.1f s%n", cluster.transport(),
                    (System.nanoTime() - start) / 1e9);
            job(cluster.size());
        }
        printTable();
        if (ModuleLayer.boot().findModule("java.desktop").isPresent()) {
            Plot.write(rows, options.plot(), "cuwire demo: " + client.workers() + " workers, " + Devices.platform()
                    + ", " + options.transport());
            out.println("plot: " + options.plot().toAbsolutePath());
        } else {
            out.println("plot: skipped, this Java runtime has no java.desktop (the GPU bundle's leaves it out)");
        }
        out.printf(Locale.ROOT, "done in %.1f s%n", (System.nanoTime() - start) / 1e9);
    }

    private void job(int workers) {
        BufferAllocator<DeviceBuffer> mem = client.memory();
        int n = options.rows();
        int d = options.features();
        SplittableRandom random = new SplittableRandom(options.seed());
        float[] xv = new float[n * d];
        float[] yv = new float[n];
        double[] w = new double[d];
        for (int j = 0; j < d; j++) {
            w[j] = random.nextDouble(-1, 1);
        }
        int clusters = 8;
        double[][] centers = new double[clusters][d];
        for (double[] c : centers) {
            for (int j = 0; j < d; j++) {
                c[j] = random.nextDouble(-5, 5);
            }
        }
        for (int i = 0; i < n; i++) {
            double[] c = centers[random.nextInt(clusters)];
            double t = 0.5;
            for (int j = 0; j < d; j++) {
                float v = (float) (c[j] + random.nextGaussian());
                xv[i * d + j] = v;
                t += w[j] * v;
            }
            yv[i] = (float) (t + 0.1 * random.nextGaussian());
        }
        int parts = 2 * workers;
        out.printf(Locale.ROOT, "data: %,d rows x %d float32 features (%.1f MiB) in %d partitions, on the client's "
                + "device%n", n, d, n * (long) d * 4 / 1048576.0, parts);
        try (NdArray x = NdArray.fromArray(mem, xv, n, d); NdArray y = NdArray.fromArray(mem, yv, n)) {
            List<NdArray> xs = new ArrayList<>();
            List<NdArray> ys = new ArrayList<>();
            for (int p = 0; p < parts; p++) {
                long from = (long) n * p / parts;
                long to = (long) n * (p + 1) / parts;
                xs.add(NdArray.view(x.buffer(), from * d * 4, DType.FLOAT32, Order.C, to - from, d));
                ys.add(NdArray.view(y.buffer(), from * 4, DType.FLOAT32, Order.C, to - from));
            }
            List<ObjectRef> xr = measure("scatter X and y", () -> client.scatter(xs));
            List<ObjectRef> yr = client.scatter(ys);
            try (LinearRegression lr = measure("fit LinearRegression (partials, merge)",
                    () -> Distributed.fit(client, new LinearRegression(), xr, yr));
                    KMeans km = measure("fit KMeans k=8 (a round per iteration)",
                            () -> Distributed.fit(client, new KMeans().nClusters(clusters).maxIter(30).seed(1), xr));
                    PCA pca = measure("fit PCA 4 components", () -> Distributed.fit(client,
                            new PCA().nComponents(4), xr))) {
                out.printf(Locale.ROOT, "fitted: LinearRegression intercept %.3f (true 0.5); KMeans %d iterations, "
                        + "inertia/row %.2f (true ~%d); PCA explained variance ratio of 4 components %.3f%n",
                        lr.intercept(), km.nIter(), km.inertia() / n, d, sum(pca.explainedVarianceRatio()));
                broadcasts(x);
                ModelHandle lrHandle = client.broadcast(lr);
                ModelHandle kmHandle = client.broadcast(km);
                List<ObjectRef> predicted = measure("predict LinearRegression on every partition",
                        () -> Distributed.predict(client, lrHandle, xr));
                List<ObjectRef> labels = measure("predict KMeans on every partition",
                        () -> Distributed.predict(client, kmHandle, xr));
                List<NdArray> back = measure("gather the predictions", () -> client.gather(predicted,
                        NdArray.class));
                double r2 = 0;
                for (int p = 0; p < parts; p++) {
                    r2 += Metrics.r2(ys.get(p), back.get(p)) * ys.get(p).dim(0) / n;
                    back.get(p).close();
                }
                out.printf(Locale.ROOT, "predicted: R² of LinearRegression on the training partitions %.4f%n", r2);
                client.free(predicted);
                client.free(labels);
            } finally {
                client.free(xr);
                client.free(yr);
                xs.forEach(NdArray::close);
                ys.forEach(NdArray::close);
            }
        }
    }

    /** A model worth moving: nearest neighbours over the first rows (it keeps them), by each family and strategy. */
    private void broadcasts(NdArray x) {
        int m = (int) Math.min(options.modelRows(), x.dim(0));
        try (NdArray sample = NdArray.view(x.buffer(), 0, DType.FLOAT32, Order.C, m, x.dim(1))) {
            String size = String.format(Locale.ROOT, "%.1f MiB", sample.byteSize() / 1048576.0);
            NearestNeighbors last = null;
            for (Family family : new Family[] {Family.CUDA, Family.HOST}) {
                for (BroadcastOptions.Strategy s : BroadcastOptions.Strategy.values()) {
                    NearestNeighbors model = new NearestNeighbors().fit(sample);
                    BroadcastOptions o = BroadcastOptions.DEFAULT.family(family).strategy(s);
                    BroadcastResult r = measure("broadcast " + size + " model, " + family.wireName() + ", "
                            + (s == BroadcastOptions.Strategy.CHAIN ? "chain" : "each in turn"),
                            () -> client.broadcast(model, o));
                    if (r.sent() != client.workers()) {
                        throw new ClusterException("broadcast reached " + r.sent() + " workers");
                    }
                    if (last != null) {
                        last.close();
                    }
                    last = model;
                }
            }
            NearestNeighbors cached = last;
            BroadcastResult again = measure("broadcast it again, unchanged (cache)", () -> client.broadcast(cached,
                    BroadcastOptions.DEFAULT));
            out.printf(Locale.ROOT, "broadcast again: %d cache hits, %d workers sent frames%n", again.cacheHits(),
                    again.sent());
            cached.close();
        }
    }

    private static double sum(NdArray a) {
        if (a.dtype() == DType.FLOAT64) {
            return java.util.Arrays.stream(a.toDoubleArray()).sum();
        }
        double s = 0;
        for (float v : a.toFloatArray()) {
            s += v;
        }
        return s;
    }

    private <T> T measure(String path, Supplier<T> action) {
        TransferStats c0 = CopyEngine.totals();
        List<WorkerStats> w0 = client.workerStats();
        WireStats s0 = client.wireStats();
        long t0 = System.nanoTime();
        T result = action.get();
        long t1 = System.nanoTime();
        WireStats s1 = client.wireStats();
        TransferStats c1 = CopyEngine.totals();
        List<WorkerStats> w1 = client.workerStats();
        long d2h = c1.bytes(CopyDirection.D2H) - c0.bytes(CopyDirection.D2H);
        long h2d = c1.bytes(CopyDirection.H2D) - c0.bytes(CopyDirection.H2D);
        for (int i = 0; i < w1.size() && i < w0.size(); i++) {
            d2h += w1.get(i).deviceToHostBytes() - w0.get(i).deviceToHostBytes();
            h2d += w1.get(i).hostToDeviceBytes() - w0.get(i).hostToDeviceBytes();
        }
        WireStats ds = s1.minus(s0);
        rows.add(new Row(path, (t1 - t0) / 1e6, d2h, h2d, ds.bytesSent() + ds.bytesReceived()));
        return result;
    }

    private void printTable() {
        out.println();
        out.printf(Locale.ROOT, "%-48s %10s %14s %14s %14s%n", "path", "time ms", "D2H bytes", "H2D bytes",
                "wire bytes");
        for (Row r : rows) {
            out.printf(Locale.ROOT, "%-48s %10.1f %,14d %,14d %,14d%n", r.path(), r.millis(), r.d2h(), r.h2d(),
                    r.wire());
        }
        out.println();
        out.println("D2H/H2D: bytes the copy engines of the client and all workers moved between device and host"
                + " memory;");
        out.println("wire: header and frame bytes the client sent and received. Over tcp, device frames are staged"
                + " through");
        out.println("host bounce buffers (counted as D2H at the sender, H2D at the receiver); the host family copies"
                + " once at the");
        out.println("client and rebuilds on each worker's device. ipc and ucx transports plug in by scheme"
                + " (--transport).");
    }
}
