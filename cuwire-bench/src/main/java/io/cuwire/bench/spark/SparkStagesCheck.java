package io.cuwire.bench.spark;

import io.cuwire.bench.harness.Results;
import io.cuwire.bench.harness.Table;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.NdArray;
import io.cuwire.ml.cluster.KMeans;
import io.cuwire.ml.decomposition.PCA;
import io.cuwire.ml.linear.LinearModel;
import io.cuwire.ml.linear.LogisticRegression;
import io.cuwire.ml.naivebayes.MultinomialNB;
import io.cuwire.spark.CuwireSpark;
import io.cuwire.spark.NodeStats;
import io.cuwire.spark.ml.CuwireKMeans;
import io.cuwire.spark.ml.CuwireLinearRegression;
import io.cuwire.spark.ml.CuwireLogisticRegression;
import io.cuwire.spark.ml.CuwireModel;
import io.cuwire.spark.ml.CuwireMultinomialNB;
import io.cuwire.spark.ml.CuwirePCA;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Supplier;
import org.apache.spark.ml.linalg.Vector;
import org.apache.spark.ml.linalg.VectorUDT;
import org.apache.spark.ml.linalg.Vectors;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * {@code cuwire bench spark-stages}: cuwire's Spark ML stages fitted and transformed in the executors of a Spark
 * application, each against the same cuwire estimator (the stage's own, with its params) fitted in this process on
 * the same rows in host memory, so on the CPU backend; and the compute backend each executor's endpoint reports its
 * partial fits and scored rows ran on ({@link NodeStats#partialFits()}, {@link NodeStats#scoredRows()}). Linear
 * regression, PCA and naive Bayes are sums over the rows, equal up to rounding; logistic regression and k-means
 * iterate from there (L-BFGS on the merged gradients; k-means|| seeded per partition), equal within the tolerances
 * printed. The forests are left out: each partition grows its share of the trees on its own rows, so the forest
 * depends on the partitioning (cuwire-spark's tests check it against the merged partials). Fails, naming the stage
 * or the executor, when a result differs by more than its tolerance, an executor computed nothing, or an executor
 * computed on another backend than {@code --expect-backend} (or than the others).
 */
public final class SparkStagesCheck {
    private static final int CLASSES = 3;

    private SparkStagesCheck() {}

    /**
     * One stage's run.
     *
     * @param stage the stage
     * @param fitMs its fit's time in the executors
     * @param transformMs its transform's, with the output column collected to the driver
     * @param compared what was compared with the single-process fit
     * @param difference the largest difference found (relative to the values' scale, or a fraction of rows)
     * @param tolerance the largest difference allowed
     */
    public record Check(
            String stage, double fitMs, double transformMs, String compared, double difference, double tolerance) {
        /** Whether the stage's results equal the single-process fit's within the tolerance. */
        public boolean ok() {
            return difference <= tolerance;
        }
    }

    /** What an executor's endpoint reported. */
    private record Executor(String id, String device, String partialFits, String scoredRows, Set<String> backends) {}

    /** The rows of the check, on the driver and as a Dataset. */
    private record Data(double[][] x, double[] y, int[] cls, double[][] counts, Dataset<Row> frame) {}

    /**
     * Runs the check; prints each stage's line and a {@code RESULT} line to {@code out}; records the run with
     * {@code --out}.
     *
     * @return whether every check passed
     */
    public static boolean run(SparkStagesArgs.Options o, PrintStream out) {
        SparkSession spark = SparkBenchSession.start("cuwire-bench-spark-stages", o.master(), o.conf(), o.executors());
        try (BufferAllocator<HostBuffer> host = BufferAllocator.host("spark-stages", BufferAllocator.UNLIMITED)) {
            CuwireSpark.executorStats(true);
            Data d = data(spark, o);
            out.printf(
                    Locale.ROOT,
                    "INFO master=%s executors=%s rows=%d features=%d partitions=%d spark=%s java=%s%n",
                    o.master(),
                    CuwireSpark.executors().keySet(),
                    o.rows(),
                    o.features(),
                    o.partitions(),
                    spark.version(),
                    Runtime.version());
            List<Check> checks = new ArrayList<>();
            for (Supplier<Check> c : List.<Supplier<Check>>of(
                    () -> linear(d, host),
                    () -> logistic(d, host),
                    () -> kmeans(d, host, o.seed()),
                    () -> pca(d, host),
                    () -> naiveBayes(d, host))) {
                Check r = c.get();
                checks.add(r);
                out.printf(
                        Locale.ROOT,
                        "%s %s: fit %.0f ms, transform %.0f ms; %s: %.3g (tolerance %.3g)%n",
                        r.ok() ? "OK" : "FAILED",
                        r.stage(),
                        r.fitMs(),
                        r.transformMs(),
                        r.compared(),
                        r.difference(),
                        r.tolerance());
            }
            d.frame().unpersist();
            List<Executor> executors = executors();
            List<String> problems = problems(o, checks, executors);
            for (Executor e : executors) {
                out.printf(
                        Locale.ROOT,
                        "EXECUTOR %s on %s: backends %s, partial fits %s, scored rows %s%n",
                        e.id(),
                        e.device(),
                        e.backends(),
                        e.partialFits(),
                        e.scoredRows());
            }
            problems.forEach(p -> out.println("FAILED " + p));
            Set<String> backends = new TreeSet<>();
            executors.forEach(e -> backends.addAll(e.backends()));
            out.printf(
                    Locale.ROOT,
                    "RESULT check=spark-stages stages=%d failed=%d executors=%d backends=%s ok=%b%n",
                    checks.size(),
                    checks.stream().filter(c -> !c.ok()).count(),
                    executors.size(),
                    String.join("+", backends),
                    problems.isEmpty());
            if (o.out() != null) {
                record(o, spark, checks, executors, problems);
            }
            return problems.isEmpty();
        } finally {
            spark.stop();
        }
    }

    /** What failed: the stages out of tolerance, then executors that computed nothing or elsewhere. */
    private static List<String> problems(SparkStagesArgs.Options o, List<Check> checks, List<Executor> executors) {
        List<String> out = new ArrayList<>();
        for (Check c : checks) {
            if (!c.ok()) {
                out.add(c.stage() + ": " + c.compared() + " differs by " + c.difference() + " (tolerance "
                        + c.tolerance() + ")");
            }
        }
        if (executors.size() < o.executors()) {
            out.add(executors.size() + " executors answered (expected: " + o.executors() + ")");
        }
        Set<String> all = new TreeSet<>();
        for (Executor e : executors) {
            all.addAll(e.backends());
            if (e.partialFits().equals("{}") || e.scoredRows().equals("{}")) {
                out.add("executor " + e.id() + " ran no partial fit or scored no row (" + e.partialFits() + ", "
                        + e.scoredRows() + ")");
            }
            if (o.expectBackend() != null && !Set.of(o.expectBackend()).containsAll(e.backends())) {
                out.add("executor " + e.id() + " on " + e.device() + " computed on " + e.backends() + " (expected: "
                        + o.expectBackend() + ")");
            }
        }
        if (all.size() > 1) {
            out.add("the executors computed on " + all + " (expected: one backend)");
        }
        return out;
    }

    private static List<Executor> executors() {
        List<Executor> out = new ArrayList<>();
        for (NodeStats s : CuwireSpark.executorStats(false)) {
            out.add(new Executor(
                    s.executorId(),
                    s.device(),
                    s.partialFits().toString(),
                    s.scoredRows().toString(),
                    s.backends()));
        }
        return out;
    }

    /**
     * Blobs of {@value #CLASSES} classes (their labels {@code cls}), a linear target {@code y} of the same rows, and
     * non-negative counts that lean towards the row's class (naive Bayes' features), in {@code partitions}
     * partitions.
     */
    private static Data data(SparkSession spark, SparkStagesArgs.Options o) {
        Random r = new Random(o.seed());
        int n = o.rows();
        int f = o.features();
        double[][] centers = new double[CLASSES][f];
        for (double[] c : centers) {
            for (int j = 0; j < f; j++) {
                c[j] = r.nextDouble() * 10 - 5;
            }
        }
        double[] w = new double[f];
        for (int j = 0; j < f; j++) {
            w[j] = r.nextDouble() * 4 - 2;
        }
        double[][] x = new double[n][f];
        double[][] counts = new double[n][f];
        double[] y = new double[n];
        int[] cls = new int[n];
        List<Row> rows = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            cls[i] = i % CLASSES;
            double t = 0.5;
            for (int j = 0; j < f; j++) {
                x[i][j] = centers[cls[i]][j] + r.nextGaussian();
                counts[i][j] = r.nextInt(5) + (j % CLASSES == cls[i] ? 3 : 0);
                t += w[j] * x[i][j];
            }
            y[i] = t + r.nextGaussian() * 0.1;
            rows.add(RowFactory.create((long) i, Vectors.dense(x[i]), Vectors.dense(counts[i]), y[i], (double) cls[i]));
        }
        StructType schema = new StructType(new StructField[] {
            new StructField("id", DataTypes.LongType, false, Metadata.empty()),
            new StructField("features", new VectorUDT(), false, Metadata.empty()),
            new StructField("counts", new VectorUDT(), false, Metadata.empty()),
            new StructField("y", DataTypes.DoubleType, false, Metadata.empty()),
            new StructField("cls", DataTypes.DoubleType, false, Metadata.empty())
        });
        Dataset<Row> frame =
                spark.createDataFrame(rows, schema).repartition(o.partitions()).cache();
        frame.count();
        return new Data(x, y, cls, counts, frame);
    }

    private static Check linear(Data d, BufferAllocator<HostBuffer> host) {
        CuwireLinearRegression stage = new CuwireLinearRegression().setLabelCol("y");
        try (var f = fitted(stage, d, "prediction")) {
            double[] got = f.scalars();
            LinearModel fitted = f.model().estimator();
            try (NdArray x = NdArray.fromMatrix(host, d.x());
                    NdArray y = NdArray.fromArray(host, d.y(), d.y().length);
                    LinearModel single = stage.estimator();
                    NdArray want = fit(single, host).fit(x, y).predict(x)) {
                double diff = Math.max(
                        relative(single.coef().toDoubleArray(), fitted.coef().toDoubleArray()),
                        relative(new double[] {single.intercept()}, new double[] {fitted.intercept()}));
                diff = Math.max(diff, relative(want.toDoubleArray(), got));
                return new Check(
                        "CuwireLinearRegression",
                        f.fitMs(),
                        f.transformMs(),
                        "coefficients, intercept, predictions",
                        diff,
                        1e-7);
            }
        }
    }

    private static Check logistic(Data d, BufferAllocator<HostBuffer> host) {
        CuwireLogisticRegression stage =
                new CuwireLogisticRegression().setC(1.0).setLabelCol("cls");
        try (var f = fitted(stage, d, "prediction")) {
            double[] got = f.scalars();
            LogisticRegression fitted = f.model().estimator();
            try (NdArray x = NdArray.fromMatrix(host, d.x());
                    NdArray y = NdArray.fromArray(host, d.cls(), d.cls().length);
                    LogisticRegression single = stage.estimator();
                    NdArray want = fit(single, host).fit(x, y).predict(x)) {
                double coef =
                        relative(single.coef().toDoubleArray(), fitted.coef().toDoubleArray());
                double rows = mismatched(doubles(want), got);
                return new Check(
                        "CuwireLogisticRegression (3 classes)",
                        f.fitMs(),
                        f.transformMs(),
                        String.format(
                                Locale.ROOT,
                                "coefficients (%.3g, tolerance 1e-3) and the share of rows predicted otherwise",
                                coef),
                        coef <= 1e-3 ? rows : Double.POSITIVE_INFINITY,
                        1e-3);
            }
        }
    }

    private static Check kmeans(Data d, BufferAllocator<HostBuffer> host, long seed) {
        CuwireKMeans stage = new CuwireKMeans().setK(CLASSES).setSeed(seed);
        try (var f = fitted(stage, d, "prediction")) {
            double[] got = f.scalars();
            KMeans fitted = f.model().estimator();
            try (NdArray x = NdArray.fromMatrix(host, d.x());
                    KMeans single = stage.estimator();
                    NdArray want = fit(single, host).fit(x).predict(x)) {
                double centers = relative(
                        sorted(single.clusterCenters().toDoubleMatrix()),
                        sorted(fitted.clusterCenters().toDoubleMatrix()));
                // the labels are the clusters' indices, which the two fits may number differently
                double rows = mismatched(relabel(doubles(want), got), got);
                return new Check(
                        "CuwireKMeans (k 3)",
                        f.fitMs(),
                        f.transformMs(),
                        String.format(
                                Locale.ROOT,
                                "centers (%.3g, tolerance 1e-6) and the share of rows clustered otherwise",
                                centers),
                        centers <= 1e-6 ? rows : Double.POSITIVE_INFINITY,
                        1e-4);
            }
        }
    }

    private static Check pca(Data d, BufferAllocator<HostBuffer> host) {
        CuwirePCA stage = new CuwirePCA()
                .setK(CLASSES)
                .setInputCol("features")
                .setOutputCol("pca")
                .setCenter(true);
        try (var f = fitted(stage, d, "pca")) {
            double[][] got = f.out();
            PCA fitted = f.model().estimator();
            try (NdArray x = NdArray.fromMatrix(host, d.x());
                    PCA single = stage.estimator();
                    NdArray want = fit(single, host).fit(x).transform(x)) {
                double[][] a = single.components().toDoubleMatrix();
                double[][] b = fitted.components().toDoubleMatrix();
                double[][] w = want.toDoubleMatrix();
                double diff = relative(
                        single.explainedVariance().toDoubleArray(),
                        fitted.explainedVariance().toDoubleArray());
                for (int c = 0; c < a.length; c++) {
                    // a component is defined up to its sign
                    double sign = Math.signum(dot(a[c], b[c]));
                    double[] bc = scaled(b[c], sign);
                    diff = Math.max(diff, relative(a[c], bc));
                    double[] wc = new double[w.length];
                    double[] gc = new double[w.length];
                    for (int i = 0; i < w.length; i++) {
                        wc[i] = w[i][c];
                        gc[i] = sign * got[i][c];
                    }
                    diff = Math.max(diff, relative(wc, gc));
                }
                return new Check(
                        "CuwirePCA (k 3, centered)",
                        f.fitMs(),
                        f.transformMs(),
                        "explained variance, components and projections (up to sign)",
                        diff,
                        1e-7);
            }
        }
    }

    private static Check naiveBayes(Data d, BufferAllocator<HostBuffer> host) {
        CuwireMultinomialNB stage = new CuwireMultinomialNB()
                .setSmoothing(1.0)
                .setFeaturesCol("counts")
                .setLabelCol("cls");
        try (var f = fitted(stage, d, "prediction")) {
            double[] got = f.scalars();
            MultinomialNB fitted = f.model().estimator();
            try (NdArray x = NdArray.fromMatrix(host, d.counts());
                    NdArray y = NdArray.fromArray(host, d.cls(), d.cls().length);
                    MultinomialNB single = stage.estimator();
                    NdArray want = fit(single, host).fit(x, y).predict(x)) {
                double logs = Math.max(
                        relative(
                                single.featureLogProb().toDoubleArray(),
                                fitted.featureLogProb().toDoubleArray()),
                        relative(
                                single.classLogPrior().toDoubleArray(),
                                fitted.classLogPrior().toDoubleArray()));
                return new Check(
                        "CuwireMultinomialNB (smoothing 1)",
                        f.fitMs(),
                        f.transformMs(),
                        String.format(
                                Locale.ROOT,
                                "log probabilities and priors (%.3g, tolerance 1e-9) and the share of rows predicted "
                                        + "otherwise",
                                logs),
                        logs <= 1e-9 ? mismatched(doubles(want), got) : Double.POSITIVE_INFINITY,
                        1e-4);
            }
        }
    }

    /** {@code e}, its fitted state in {@code host}. */
    private static <E extends io.cuwire.ml.Estimator> E fit(E e, BufferAllocator<HostBuffer> host) {
        e.allocator(host);
        return e;
    }

    private static double ms(long since) {
        return (System.nanoTime() - since) / 1e6;
    }

    /**
     * A stage's model, fitted on the rows in the executors, with its output column collected by id; the fit and the
     * transform timed.
     *
     * @param out each row's value: one number, or a vector's elements
     */
    private record Fitted<M extends CuwireModel<M>>(M model, double fitMs, double transformMs, double[][] out)
            implements AutoCloseable {
        /** The column's numbers. */
        double[] scalars() {
            return Arrays.stream(out)
                    .mapToDouble(v -> v == null ? Double.NaN : v[0])
                    .toArray();
        }

        @Override
        public void close() {
            model.close();
        }
    }

    private static <M extends CuwireModel<M>> Fitted<M> fitted(
            org.apache.spark.ml.Estimator<M> stage, Data d, String column) {
        long t0 = System.nanoTime();
        M model = stage.fit(d.frame());
        double fit = ms(t0);
        try {
            long t1 = System.nanoTime();
            double[][] out = new double[d.x().length][];
            for (Row r : model.transform(d.frame()).select("id", column).collectAsList()) {
                out[(int) r.getLong(0)] =
                        r.get(1) instanceof Vector v ? v.toArray() : new double[] {((Number) r.get(1)).doubleValue()};
            }
            return new Fitted<>(model, fit, ms(t1), out);
        } catch (RuntimeException e) {
            model.close();
            throw e;
        }
    }

    private static double[] doubles(NdArray a) {
        return switch (a.dtype()) {
            case FLOAT64 -> a.toDoubleArray();
            case INT32 -> Arrays.stream(a.toIntArray()).asDoubleStream().toArray();
            default -> Arrays.stream(a.toLongArray()).asDoubleStream().toArray();
        };
    }

    /** The largest difference of {@code a} and {@code b}, relative to the largest magnitude of {@code a}, or 1. */
    static double relative(double[] a, double[] b) {
        if (a.length != b.length) {
            return Double.POSITIVE_INFINITY;
        }
        double scale = 1;
        double diff = 0;
        for (int i = 0; i < a.length; i++) {
            scale = Math.max(scale, Math.abs(a[i]));
            diff = Math.max(diff, Math.abs(a[i] - b[i]));
        }
        return Double.isNaN(diff) ? Double.POSITIVE_INFINITY : diff / scale;
    }

    private static double relative(double[][] a, double[][] b) {
        double diff = a.length == b.length ? 0 : Double.POSITIVE_INFINITY;
        for (int i = 0; i < Math.min(a.length, b.length); i++) {
            diff = Math.max(diff, relative(a[i], b[i]));
        }
        return diff;
    }

    /** The share of rows where {@code a} and {@code b} differ (a NaN, a row not returned, counts as different). */
    static double mismatched(double[] a, double[] b) {
        long wrong = 0;
        for (int i = 0; i < a.length; i++) {
            wrong += a[i] == b[i] ? 0 : 1;
        }
        return (double) wrong / a.length;
    }

    /** {@code labels} renamed to the label of {@code other} that each most often goes with. */
    private static double[] relabel(double[] labels, double[] other) {
        int k = (int) Arrays.stream(labels).max().orElse(0) + 1;
        int m = (int) Arrays.stream(other).filter(v -> !Double.isNaN(v)).max().orElse(0) + 1;
        long[][] together = new long[k][m];
        for (int i = 0; i < labels.length; i++) {
            if (!Double.isNaN(other[i])) {
                together[(int) labels[i]][(int) other[i]]++;
            }
        }
        double[] to = new double[k];
        for (int a = 0; a < k; a++) {
            int best = 0;
            for (int b = 1; b < m; b++) {
                best = together[a][b] > together[a][best] ? b : best;
            }
            to[a] = best;
        }
        return Arrays.stream(labels).map(v -> to[(int) v]).toArray();
    }

    private static double[][] sorted(double[][] centers) {
        double[][] c = centers.clone();
        Arrays.sort(c, Comparator.comparingDouble((double[] v) -> v[0]));
        return c;
    }

    private static double dot(double[] a, double[] b) {
        double s = 0;
        for (int i = 0; i < a.length; i++) {
            s += a[i] * b[i];
        }
        return s;
    }

    private static double[] scaled(double[] a, double by) {
        return Arrays.stream(a).map(v -> v * by).toArray();
    }

    private static void record(
            SparkStagesArgs.Options o,
            SparkSession spark,
            List<Check> checks,
            List<Executor> executors,
            List<String> problems) {
        Table t = new Table(
                "stage",
                "fit",
                "transform",
                "compared with the single-process fit",
                "difference",
                "tolerance",
                "result");
        Table csv = new Table("stage", "fit_ms", "transform_ms", "difference", "tolerance", "ok");
        for (Check c : checks) {
            String diff = String.format(Locale.ROOT, "%.3g", c.difference());
            String tol = String.format(Locale.ROOT, "%.3g", c.tolerance());
            t.row(c.stage(), ms(c.fitMs()), ms(c.transformMs()), c.compared(), diff, tol, c.ok() ? "equal" : "FAILED");
            csv.row(c.stage(), Table.num(c.fitMs(), 1), Table.num(c.transformMs(), 1), diff, tol, c.ok());
        }
        Table e = new Table("executor", "endpoint's device", "backends", "partial fits", "scored rows");
        for (Executor x : executors) {
            e.row(x.id(), x.device(), String.join(", ", x.backends()), x.partialFits(), x.scoredRows());
        }
        StringBuilder md = new StringBuilder();
        md.append("### cuwire's Spark ML stages in the executors against the single-process fits\n\n");
        md.append(String.format(
                Locale.ROOT,
                "**How.** `cuwire bench spark-stages --master %s --executors %d --rows %d --features %d --seed %d "
                        + "--partitions %d%s`%s: Spark %s, JDK %s, %d cores seen by the driver. Each stage fits and "
                        + "transforms in the executors (the transform's column collected to the driver); the "
                        + "reference is the stage's own cuwire estimator fitted in the driver's JVM on the same rows "
                        + "in host memory (the CPU backend).\n\n",
                o.master(),
                o.executors(),
                o.rows(),
                o.features(),
                o.seed(),
                o.partitions(),
                o.expectBackend() == null ? "" : " --expect-backend " + o.expectBackend(),
                o.conf().isEmpty() ? "" : " with `--conf " + String.join("`, `--conf ", o.conf()) + "`",
                spark.version(),
                Runtime.version(),
                Runtime.getRuntime().availableProcessors()));
        md.append("#### Stages\n\n").append(t.markdown()).append('\n');
        md.append("#### Executors (each endpoint's counts, by compute backend)\n\n")
                .append(e.markdown())
                .append('\n');
        md.append(
                problems.isEmpty() ? "**Every check passed.**\n" : "**Failed:** " + String.join("; ", problems) + "\n");
        String heading = Results.now() + ", " + o.master() + (o.note() == null ? "" : ", " + o.note());
        Path file = Results.record(
                o.out(),
                "spark-stages",
                "`cuwire bench spark-stages` on " + Results.machine(),
                heading,
                md.toString(),
                csv.csv());
        System.out.println("recorded in " + file);
    }

    private static String ms(double v) {
        return String.format(Locale.ROOT, "%,.0f ms", v);
    }
}
