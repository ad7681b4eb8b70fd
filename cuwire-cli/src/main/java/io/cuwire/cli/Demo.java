package io.cuwire.cli;

import io.cuwire.cluster.BroadcastOptions;
import io.cuwire.cluster.BroadcastResult;
import io.cuwire.cluster.Client;
import io.cuwire.cluster.ClusterException;
import io.cuwire.cluster.Distributed;
import io.cuwire.cluster.LocalCluster;
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
import io.cuwire.ml.MlTypes;
import io.cuwire.ml.cluster.KMeans;
import io.cuwire.ml.ensemble.RandomForestClassifier;
import io.cuwire.ml.linear.LinearRegression;
import io.cuwire.serialize.DecodeTarget;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.Limits;
import io.cuwire.serialize.Serialized;
import io.cuwire.serialize.TypeRegistry;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * {@code cuwire demo}, the main job: makes a data set on the client's device, starts a local cluster, fits
 * {@link LinearRegression}, {@link KMeans} and {@link RandomForestClassifier} on the workers (merged on the client),
 * checks them against single-process fits, then — per transport, a cluster each — broadcasts every model with every
 * family, predicts on every partition and checks the predictions. It prints a table per model and writes an HTML
 * report with inline SVG charts (no AWT: it runs on the GPU bundle's runtime, which has no {@code java.desktop}).
 */
final class Demo {
    /** The families every model is broadcast with; {@code java} is explained in {@link #JAVA_NOTE}. */
    private static final List<Family> FAMILIES = List.of(Family.CUDA, Family.HOST, Family.JAVA);

    static final String JAVA_NOTE = "java family: JDK serialization of the whole estimator, the pickle baseline "
            + "(the estimators are java.io.Serializable and on the cluster's java allow-list): every device array is "
            + "copied to the heap inside the stream, travels in one host frame and is rebuilt on each worker's device";

    /** The demo's options. */
    record Options(int workers, List<String> transports, Path report, int rows, int features, int clusters,
            int trees, long seed) {
        static Options parse(List<String> args) {
            int workers = -1;
            List<String> transports = null;
            Path report = Path.of("cuwire-demo-report");
            int rows = 50_000;
            int features = 16;
            int clusters = 4;
            int trees = 16;
            long seed = 42;
            for (int i = 0; i < args.size(); i++) {
                String a = args.get(i);
                if (i + 1 >= args.size()) {
                    throw new IllegalArgumentException("option " + a + " needs a value (or is unknown)");
                }
                String v = args.get(++i);
                switch (a) {
                    case "--workers" -> workers = positive(a, v);
                    case "--transports" -> transports = List.of(v.split(","));
                    case "--report" -> report = Path.of(v);
                    case "--rows" -> rows = positive(a, v);
                    case "--features" -> features = positive(a, v);
                    case "--clusters" -> clusters = positive(a, v);
                    case "--trees" -> trees = positive(a, v);
                    case "--seed" -> seed = Long.parseLong(v);
                    default -> throw new IllegalArgumentException("unknown option " + a + " (expected: --workers N,"
                            + " --transports tcp,ipc,ucx, --report DIR, --rows N, --features N, --clusters N,"
                            + " --trees N, --seed N)");
                }
            }
            for (String t : transports == null ? List.<String>of() : transports) {
                if (!List.of("tcp", "ipc", "ucx").contains(t)) {
                    throw new IllegalArgumentException("--transports: unknown transport '" + t + "' (expected: tcp,"
                            + " ipc, ucx)");
                }
            }
            return new Options(workers, transports, report, rows, features, clusters, trees, seed);
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
     * One measured path: a model broadcast with one family over one transport, then used to predict.
     *
     * @param model the model's class name
     * @param transport the cluster's transport
     * @param family the broadcast's serializer family
     * @param broadcastMillis the broadcast, from the call to the last worker's acknowledgement
     * @param d2h bytes copied device to host during the broadcast, client and workers
     * @param h2d bytes copied host to device during the broadcast, client and workers
     * @param predictMillis predicting every partition on its worker (results stay there)
     * @param match whether the predictions agree with the reference
     * @param detail how they were compared
     */
    record Row(String model, String transport, String family, double broadcastMillis, long d2h, long h2d,
            double predictMillis, boolean match, String detail) {
        String path() {
            return transport + " / " + family;
        }
    }

    /** A transport not measured, and why. */
    record Skipped(String transport, String reason) {
    }

    /** A fit on the workers and how it compares with the single-process fit. */
    record Fit(String model, double millis, boolean match, String detail) {
    }

    private final Options options;
    private final PrintStream out;
    private final BufferAllocator<DeviceBuffer> mem;
    private final BufferAllocator<HostBuffer> host;
    private final TypeRegistry registry = MlTypes.register(new TypeRegistry());
    private final DecodeTarget target;
    final List<Row> rows = new ArrayList<>();
    final List<Fit> fits = new ArrayList<>();
    final List<Skipped> skipped = new ArrayList<>();
    String setting = "";

    private Demo(Options options, PrintStream out) {
        this.options = options;
        this.out = out;
        this.mem = Devices.get(0).newAllocator("cuwire-demo", BufferAllocator.UNLIMITED);
        this.host = BufferAllocator.host("cuwire-demo-host", BufferAllocator.UNLIMITED);
        this.target = new DecodeTarget(mem, host, Limits.DEFAULT);
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
        List<String> transports = transports(platform);
        int n = options.rows();
        int d = options.features();
        int k = options.clusters();
        progress(String.format(Locale.ROOT, "making the data set: %,d rows x %d float32 features in %d blobs, a linear"
                + " target and the blob as class label, on the client's device (%s)", n, d, k, platform));
        Data data = Data.make(mem, n, d, k, options.seed());
        try (data) {
            Models models = null;
            try {
                for (String transport : transports) {
                    models = onCluster(transport, data, models);
                }
            } finally {
                if (models != null) {
                    models.close();
                }
            }
        }
        out.println();
        out.println(JAVA_NOTE + ".");
        for (Skipped s : skipped) {
            out.println("transport " + s.transport() + ": skipped: " + s.reason());
        }
        printTables();
        boolean ok = fits.stream().allMatch(Fit::match) && rows.stream().allMatch(Row::match) && !rows.isEmpty();
        Path report = Report.write(this, options.report());
        out.println("report: " + report.toAbsolutePath());
        out.printf(Locale.ROOT, "%s in %.1f s%n", ok ? "all checks MATCH; done" : "some checks MISMATCH; failed",
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

    /** The data set, its partitions (views) and what the single-process fits predict on each. */
    private record Data(NdArray x, NdArray y, NdArray labels, List<NdArray> xs, List<NdArray> ys, List<NdArray> ls,
            int clusters) implements AutoCloseable {
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
    private record Models(LinearRegression lr, KMeans km, RandomForestClassifier rf, List<float[]> lrExpected,
            List<int[]> kmExpected, List<int[]> rfExpected) implements AutoCloseable {
        List<Estimator> all() {
            return List.of(lr, km, rf);
        }

        @Override
        public void close() {
            lr.close();
            km.close();
            rf.close();
        }
    }

    private Models onCluster(String transport, Data data, Models fitted) {
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
            progress(String.format(Locale.ROOT, "cluster over %s: %s, started in %.1f s", transport, setting,
                    (System.nanoTime() - t0) / 1e9));
            List<ObjectRef> xr = client.scatter(data.xs());
            List<ObjectRef> yr = client.scatter(data.ys());
            List<ObjectRef> lr = client.scatter(data.ls());
            try {
                Models models = fitted != null ? fitted : fit(client, transport, data, xr, yr, lr);
                for (Estimator model : models.all()) {
                    for (Family family : FAMILIES) {
                        progress("broadcasting " + name(model) + " over " + transport + " with the "
                                + family.wireName() + " family, predicting on every partition");
                        rows.add(path(client, transport, family, model, models, xr));
                    }
                }
                return models;
            } finally {
                client.free(xr);
                client.free(yr);
                client.free(lr);
            }
        }
    }

    private Models fit(Client client, String transport, Data data, List<ObjectRef> xr, List<ObjectRef> yr,
            List<ObjectRef> lr) {
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
            double coefDiff = maxDiff(lrModel.coef().toFloatArray(), single.coef().toFloatArray());
            double interceptDiff = Math.abs(lrModel.intercept() - single.intercept());
            double scale = 1 + Math.abs(single.intercept());
            for (float v : single.coef().toFloatArray()) {
                scale = Math.max(scale, 1 + Math.abs(v));
            }
            // float32 data gives float32 coefficients, summed per partition here and in one pass there: they agree
            // to a few dozen float32 ulps, not to 1e-6 absolute.
            fits.add(new Fit("LinearRegression", lrMillis, Math.max(coefDiff, interceptDiff) <= 1e-5 * scale,
                    String.format(Locale.ROOT, "float32 coefficients vs a single-process fit: max |diff| %.1e, "
                            + "intercept |diff| %.1e (tolerance 1e-5 x %.1f)", coefDiff, interceptDiff, scale)));

            progress("fitting KMeans k=" + k + " on the workers (a Lloyd round per iteration, from the same first "
                    + "centers as a single-process fit)");
            t0 = System.nanoTime();
            kmModel = Distributed.fit(client, newKMeans(k), xr, start);
            double kmMillis = (System.nanoTime() - t0) / 1e6;
            double centerDiff = maxDiff(kmModel.clusterCenters().toFloatArray(),
                    kmSingle.clusterCenters().toFloatArray());
            fits.add(new Fit("KMeans", kmMillis, centerDiff <= 1e-3, String.format(Locale.ROOT, "centers vs a "
                    + "single-process fit from the same first centers: max |diff| %.1e (tolerance 1e-3); %d and %d "
                    + "iterations", centerDiff, kmModel.nIter(), kmSingle.nIter())));

            progress("fitting RandomForestClassifier (" + options.trees() + " trees) on the workers (each partition "
                    + "grows its share of the trees, the client concatenates them)");
            t0 = System.nanoTime();
            rfModel = Distributed.fit(client, new RandomForestClassifier().nEstimators(options.trees()).maxDepth(8)
                    .seed(options.seed()).nClasses(k), xr, lr);
            double rfMillis = (System.nanoTime() - t0) / 1e6;
            List<float[]> lrExpected = new ArrayList<>();
            List<int[]> kmExpected = new ArrayList<>();
            List<int[]> rfExpected = new ArrayList<>();
            long right = 0;
            for (int p = 0; p < data.xs().size(); p++) {
                try (NdArray a = single.predict(data.xs().get(p)); NdArray l = kmSingle.predict(data.xs().get(p));
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
            fits.add(new Fit("RandomForestClassifier", rfMillis, true, String.format(Locale.ROOT, "%d trees; "
                    + "training accuracy %.4f; broadcasts are checked against the client's own model",
                    rfModel.info().trees(), right / (double) data.x().dim(0))));
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

    /** Broadcasts a copy of {@code model} (so that no worker holds it yet) with {@code family}, predicts, checks. */
    private Row path(Client client, String transport, Family family, Estimator model, Models models,
            List<ObjectRef> xr) {
        try (Estimator copy = copyOf(model)) {
            long[] c0 = copies(client);
            long t0 = System.nanoTime();
            BroadcastResult r = client.broadcast(copy, BroadcastOptions.DEFAULT.family(family));
            long t1 = System.nanoTime();
            long[] c1 = copies(client);
            if (r.sent() != client.workers()) {
                throw new ClusterException("the broadcast reached " + r.sent() + " of " + client.workers()
                        + " workers");
            }
            long t2 = System.nanoTime();
            List<ObjectRef> predicted = Distributed.predict(client, r.handle(), xr);
            long t3 = System.nanoTime();
            List<NdArray> back = client.gather(predicted, NdArray.class);
            client.free(predicted);
            boolean match = true;
            double diff = 0;
            long differ = 0;
            long total = 0;
            try {
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
                            int[] want = model instanceof KMeans ? models.kmExpected().get(p)
                                    : models.rfExpected().get(p);
                            for (int i = 0; i < want.length; i++) {
                                differ += got[i] == want[i] ? 0 : 1;
                            }
                            total += want.length;
                            match &= differ == 0;
                        }
                    }
                }
            } finally {
                back.forEach(NdArray::close);
            }
            String detail = switch (model) {
                case LinearRegression m -> String.format(Locale.ROOT, "vs single-process fit: max |diff| %.1e", diff);
                case KMeans m -> String.format(Locale.ROOT, "labels vs single-process fit: %d of %d differ", differ,
                        total);
                default -> String.format(Locale.ROOT, "vs the client's model: %d of %d differ", differ, total);
            };
            return new Row(name(model), transport, family.wireName(), (t1 - t0) / 1e6, c1[0] - c0[0], c1[1] - c0[1],
                    (t3 - t2) / 1e6, match, detail);
        }
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

    List<String> modelNames() {
        List<String> names = new ArrayList<>();
        for (Row r : rows) {
            if (!names.contains(r.model())) {
                names.add(r.model());
            }
        }
        return names;
    }

    private void printTables() {
        out.println();
        out.println("fits on the workers (" + setting + "):");
        for (Fit f : fits) {
            out.printf(Locale.ROOT, "  %-24s %9.1f ms  %-8s %s%n", f.model(), f.millis(), f.match() ? "MATCH"
                    : "MISMATCH", f.detail());
        }
        for (String model : modelNames()) {
            out.println();
            out.println(model + ":");
            out.printf(Locale.ROOT, "  %-12s %12s %14s %14s %11s  %s%n", "path", "broadcast ms", "D2H bytes",
                    "H2D bytes", "predict ms", "check");
            for (Row r : rows) {
                if (r.model().equals(model)) {
                    out.printf(Locale.ROOT, "  %-12s %12.1f %,14d %,14d %11.1f  %s (%s)%n", r.path(),
                            r.broadcastMillis(), r.d2h(), r.h2d(), r.predictMillis(),
                            r.match() ? "MATCH" : "MISMATCH", r.detail());
                }
            }
        }
        out.println();
        out.println("path: transport / family. D2H, H2D: bytes the copy engines of the client and all workers moved "
                + "between device");
        out.println("and host memory during the broadcast. cuda keeps device arrays device frames (over tcp they are"
                + " staged through");
        out.println("host bounce buffers); host copies them to host frames once at the client and rebuilds them on "
                + "each worker's");
        out.println("device; java copies them to the heap inside one JDK serialization stream. predict: every "
                + "partition on its");
        out.println("worker, results kept there.");
    }
}
