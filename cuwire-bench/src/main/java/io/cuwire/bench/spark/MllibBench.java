package io.cuwire.bench.spark;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.sum;

import io.cuwire.bench.harness.Results;
import io.cuwire.bench.harness.Scripts;
import io.cuwire.bench.harness.Stats;
import io.cuwire.bench.harness.Table;
import io.cuwire.spark.CuwireSpark;
import io.cuwire.spark.NodeStats;
import io.cuwire.spark.ml.CuwireKMeans;
import io.cuwire.spark.ml.CuwireKMeansModel;
import io.cuwire.spark.ml.CuwireLinearRegression;
import io.cuwire.spark.ml.CuwireLogisticRegression;
import io.cuwire.spark.ml.CuwireMultinomialNB;
import io.cuwire.spark.ml.CuwirePCA;
import io.cuwire.spark.ml.CuwirePCAModel;
import io.cuwire.spark.ml.CuwireRandomForestClassifier;
import io.cuwire.spark.ml.CuwireRandomForestRegressor;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.PrintStream;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.SplittableRandom;
import java.util.function.Supplier;
import org.apache.spark.ml.Estimator;
import org.apache.spark.ml.Model;
import org.apache.spark.ml.classification.LogisticRegression;
import org.apache.spark.ml.classification.NaiveBayes;
import org.apache.spark.ml.classification.RandomForestClassifier;
import org.apache.spark.ml.clustering.KMeans;
import org.apache.spark.ml.clustering.KMeansModel;
import org.apache.spark.ml.evaluation.MulticlassClassificationEvaluator;
import org.apache.spark.ml.evaluation.RegressionEvaluator;
import org.apache.spark.ml.feature.PCA;
import org.apache.spark.ml.feature.PCAModel;
import org.apache.spark.ml.functions;
import org.apache.spark.ml.linalg.SQLDataTypes;
import org.apache.spark.ml.linalg.Vector;
import org.apache.spark.ml.linalg.Vectors;
import org.apache.spark.ml.regression.LinearRegression;
import org.apache.spark.ml.regression.RandomForestRegressor;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * {@code cuwire bench mllib}: cuwire's Spark ML stages against Spark MLlib's, side by side in one application on the
 * same cached {@code Dataset}s and executors. Per pair and data set: the fit time ({@code fit} on the training rows),
 * the transform time ({@code transform} of the training rows forced by an aggregate over the output column:
 * {@code sum(prediction)}, for PCA the sum of the first component; the aggregate reads the column, so Catalyst cannot
 * prune the model), and the quality on held-out rows, computed the same way for both sides: RMSE and R² (Spark's
 * {@code RegressionEvaluator}), accuracy and log-loss ({@code MulticlassClassificationEvaluator} over the
 * {@code probability} column), inertia (the test rows' summed squared distance to their predicted center, from each
 * model's centers) and the explained variance (the sum of each model's {@code explainedVariance}, the share of the
 * training variance its components explain). The parameters are matched, and stated in the results by
 * {@link #params}.
 *
 * <p>Data: {@code synthetic}, {@code --rows} training and {@code --rows / 5} test rows of {@code --features}
 * non-negative features, generated in the executors from the seed and the row's index alone (the same rows for every
 * partitioning): 8 clusters ({@code |center + N(0, 1)|}, centers uniform in {@code [0, 3)}), a linear target with
 * noise, a binary and a 4-class label drawn from logistic and softmax models of the features; and {@code real},
 * scikit-learn's shipped data sets (no download): digits (1,797 × 64 pixel counts, 10 classes) for the multinomial
 * logistic regression, k-means (k = 10), the forest classifier, PCA and naive Bayes; breast cancer (569 × 30,
 * binary) for the binary logistic regression; diabetes (442 × 10, a disease-progression score) for the regressors.
 * Every fifth real row (index mod 5 = 4) is a test row. {@code sklearn_datasets.py}, a resource of this package,
 * converts them at run time ({@code --python}) or has converted them ({@code --real-dir}).
 *
 * <p>Prints one line per pair, data set and side:
 * <pre>RESULT data=synthetic pair=KMeans side=cuwire fit_ms=… transform_ms=… inertia=…</pre>
 * With {@code --out DIR} records the run in {@code DIR/mllib-<machine>.md} and {@code .csv} ({@link Results#record}).
 */
public final class MllibBench {
    private static final int CLUSTERS = 8;
    private static final int CLASSES = 4;
    private static final double LOGISTIC_REG = 1e-4;
    private static final double LOGISTIC_TOL = 1e-6;
    private static final double KMEANS_TOL = 1e-4;
    private static final int MAX_BINS = 256;

    private MllibBench() {}

    /** What a pair does: its label column and which quality metrics it reports. */
    private enum Kind {
        REGRESSION("RMSE", "R²"),
        CLASSIFICATION("accuracy", "log-loss"),
        CLUSTERING("inertia", null),
        PROJECTION("explained variance", null);

        final String first;
        final String second;

        Kind(String first, String second) {
            this.first = first;
            this.second = second;
        }
    }

    /** A data set's train and test rows, cached, and what it is. */
    private record Data(String name, Dataset<Row> train, Dataset<Row> test, long trainRows, int features) {}

    /** The data set each pair fits: a name and the stages' settings that depend on it. */
    private record Fit(Data data, String label, int k) {}

    /**
     * One pair's figures on one data set and side.
     *
     * @param data the data set's name
     * @param pair the pair
     * @param side {@code cuwire} or {@code MLlib}
     * @param rows training rows
     * @param features features
     * @param fitMs fit times
     * @param transformMs transform times
     * @param quality metric name to value, in the pair's order
     */
    public record Result(
            String data,
            String pair,
            String side,
            long rows,
            int features,
            Stats fitMs,
            Stats transformMs,
            Map<String, Double> quality) {}

    /**
     * Runs the pairs of {@code o} on each data set and prints them to {@code out}; records the run with
     * {@code --out}.
     *
     * @throws IllegalStateException if an executor's endpoint is not on {@code --expect-device}'s platform
     */
    public static List<Result> run(MllibArgs.Options o, PrintStream out) {
        SparkSession spark = SparkBenchSession.start("cuwire-bench-mllib", o.master(), o.conf(), o.executors());
        try {
            return run(spark, o, out);
        } finally {
            spark.stop();
        }
    }

    private static List<Result> run(SparkSession spark, MllibArgs.Options o, PrintStream out) {
        List<String> devices = devices();
        out.printf(
                Locale.ROOT,
                "INFO master=%s executors=%s spark=%s java=%s cores=%d%n",
                o.master(),
                devices,
                spark.version(),
                Runtime.version(),
                Runtime.getRuntime().availableProcessors());
        if (o.expectDevice() != null) {
            if (devices.isEmpty() || !devices.stream().allMatch(d -> d.contains(" on " + o.expectDevice()))) {
                throw new IllegalStateException("the executors' cuwire endpoints are on " + devices
                        + " (expected: every one on " + o.expectDevice() + ")");
            }
        }
        int partitions =
                o.partitions() > 0 ? o.partitions() : spark.sparkContext().defaultParallelism();
        List<Result> results = new ArrayList<>();
        List<String> skipped = new ArrayList<>();
        if (o.warmRows() > 0) {
            Data warm = synthetic(spark, o, o.warmRows(), Math.min(2, partitions), "warm-up");
            for (String pair : o.pairs()) {
                measure(pair, synthFit(warm, pair), o, 1, null);
            }
            release(warm);
        }
        if (o.data().contains("synthetic")) {
            Data d = synthetic(spark, o, o.rows(), partitions, "synthetic");
            for (String pair : o.pairs()) {
                results.addAll(measure(pair, synthFit(d, pair), o, o.repeat(), out));
            }
            release(d);
        }
        if (o.data().contains("real")) {
            Path dir = o.realDir();
            String why = null;
            if (dir == null) {
                dir = tempDir();
                why = convert(o.python(), dir, out);
            }
            if (why == null) {
                Map<String, Data> real = new LinkedHashMap<>();
                for (String name : List.of("digits", "breast_cancer", "diabetes")) {
                    real.put(name, real(spark, dir.resolve(name + ".csv"), name, partitions));
                }
                for (String pair : o.pairs()) {
                    results.addAll(measure(pair, realFit(real, pair), o, o.repeat(), out));
                }
                real.values().forEach(MllibBench::release);
            } else {
                skipped.add("real data sets skipped: " + why);
                out.println("SKIPPED real: " + why);
            }
        }
        if (o.out() != null) {
            record(o, spark, partitions, devices, results, skipped);
        }
        return results;
    }

    /** Every executor's cuwire endpoint and its device ({@code 0 on cuda0}); the driver's in local mode. */
    private static List<String> devices() {
        List<String> out = new ArrayList<>();
        for (NodeStats s : CuwireSpark.executorStats(false)) {
            out.add(s.executorId() + " on " + s.device());
        }
        if (out.isEmpty()) {
            NodeStats d = CuwireSpark.driverStats();
            out.add("driver (local mode) on " + d.device());
        }
        return List.copyOf(out);
    }

    private static Fit synthFit(Data d, String pair) {
        return switch (pair) {
            case "LinearRegression", "RandomForestRegressor" -> new Fit(d, "y", 0);
            case "LogisticRegression-binary" -> new Fit(d, "binary", 0);
            case "LogisticRegression-multinomial", "RandomForestClassifier" -> new Fit(d, "multi", 0);
            case "KMeans", "NaiveBayes" -> new Fit(d, "cluster", CLUSTERS);
            case "PCA" -> new Fit(d, "y", CLUSTERS);
            default -> throw new IllegalArgumentException("unknown pair " + pair);
        };
    }

    private static Fit realFit(Map<String, Data> real, String pair) {
        return switch (pair) {
            case "LinearRegression", "RandomForestRegressor" -> new Fit(real.get("diabetes"), "label", 0);
            case "LogisticRegression-binary" -> new Fit(real.get("breast_cancer"), "label", 0);
            default -> new Fit(real.get("digits"), "label", 10);
        };
    }

    private static Kind kind(String pair) {
        return switch (pair) {
            case "LinearRegression", "RandomForestRegressor" -> Kind.REGRESSION;
            case "KMeans" -> Kind.CLUSTERING;
            case "PCA" -> Kind.PROJECTION;
            default -> Kind.CLASSIFICATION;
        };
    }

    /** The pair's two stages, cuwire's first, with the matched parameters of {@link #params}. */
    private static List<Supplier<Estimator<?>>> stages(String pair, Fit f, MllibArgs.Options o) {
        String label = f.label();
        long seed = o.seed();
        return switch (pair) {
            case "LinearRegression" ->
                List.of(
                        () -> new CuwireLinearRegression().setLabelCol(label).setRegParam(0.0),
                        () -> new LinearRegression()
                                .setLabelCol(label)
                                .setRegParam(0.0)
                                .setElasticNetParam(0.0)
                                .setSolver("normal"));
            case "LogisticRegression-binary", "LogisticRegression-multinomial" -> {
                String family = pair.endsWith("binary") ? "binomial" : "multinomial";
                yield List.of(
                        () -> new CuwireLogisticRegression()
                                .setLabelCol(label)
                                .setRegParam(LOGISTIC_REG)
                                .setStandardization(false)
                                .setMaxIter(o.logisticIter())
                                .setTol(LOGISTIC_TOL),
                        () -> new LogisticRegression()
                                .setLabelCol(label)
                                .setFamily(family)
                                .setRegParam(LOGISTIC_REG)
                                .setElasticNetParam(0.0)
                                .setStandardization(false)
                                .setMaxIter(o.logisticIter())
                                .setTol(LOGISTIC_TOL));
            }
            case "KMeans" ->
                List.of(
                        () -> new CuwireKMeans()
                                .setK(f.k())
                                .setMaxIter(o.kmeansIter())
                                .setTol(KMEANS_TOL)
                                .setInitMode("k-means||")
                                .setSeed(seed),
                        () -> new KMeans()
                                .setK(f.k())
                                .setMaxIter(o.kmeansIter())
                                .setTol(KMEANS_TOL)
                                .setInitMode("k-means||")
                                .setSeed(seed));
            case "RandomForestClassifier" ->
                List.of(
                        () -> new CuwireRandomForestClassifier()
                                .setLabelCol(label)
                                .setNumTrees(o.trees())
                                .setMaxDepth(o.depth())
                                .setFeatureSubsetStrategy("sqrt")
                                .setMinInstancesPerNode(1)
                                .setBootstrap(true)
                                .setSeed(seed),
                        () -> new RandomForestClassifier()
                                .setLabelCol(label)
                                .setNumTrees(o.trees())
                                .setMaxDepth(o.depth())
                                .setFeatureSubsetStrategy("sqrt")
                                .setMinInstancesPerNode(1)
                                .setBootstrap(true)
                                .setMaxBins(MAX_BINS)
                                .setSeed(seed));
            case "RandomForestRegressor" ->
                List.of(
                        () -> new CuwireRandomForestRegressor()
                                .setLabelCol(label)
                                .setNumTrees(o.trees())
                                .setMaxDepth(o.depth())
                                .setFeatureSubsetStrategy("onethird")
                                .setMinInstancesPerNode(1)
                                .setBootstrap(true)
                                .setSeed(seed),
                        () -> new RandomForestRegressor()
                                .setLabelCol(label)
                                .setNumTrees(o.trees())
                                .setMaxDepth(o.depth())
                                .setFeatureSubsetStrategy("onethird")
                                .setMinInstancesPerNode(1)
                                .setBootstrap(true)
                                .setMaxBins(MAX_BINS)
                                .setSeed(seed));
            case "PCA" ->
                List.of(
                        () -> new CuwirePCA()
                                .setK(f.k())
                                .setInputCol("features")
                                .setOutputCol("pca"),
                        () -> new PCA().setK(f.k()).setInputCol("features").setOutputCol("pca"));
            case "NaiveBayes" ->
                List.of(
                        () -> new CuwireMultinomialNB()
                                .setLabelCol(label)
                                .setSmoothing(1.0)
                                .setModelType("multinomial"),
                        () -> new NaiveBayes()
                                .setLabelCol(label)
                                .setSmoothing(1.0)
                                .setModelType("multinomial"));
            default -> throw new IllegalArgumentException("unknown pair " + pair);
        };
    }

    /** The matched parameters of each pair, as the results state them. */
    static Map<String, String> params(MllibArgs.Options o) {
        Map<String, String> p = new LinkedHashMap<>();
        p.put(
                "LinearRegression",
                "regParam 0, elasticNetParam 0, fitIntercept true: least squares by the normal equations on both "
                        + "sides (MLlib's solver=normal; cuwire merges the partitions' X'X and X'y)");
        String logistic = "regParam " + LOGISTIC_REG + " (L2), elasticNetParam 0, standardization false, "
                + "fitIntercept true, maxIter " + o.logisticIter() + ", tol " + LOGISTIC_TOL + ", L-BFGS on the "
                + "driver over the partitions' gradients on both sides; the tolerances differ in kind: MLlib's is the "
                + "relative change of the loss, cuwire's the largest gradient component";
        p.put("LogisticRegression-binary", logistic + "; MLlib family=binomial");
        p.put("LogisticRegression-multinomial", logistic + "; MLlib family=multinomial (softmax on both sides)");
        p.put(
                "KMeans",
                "k 8 (synthetic; 10 on digits), maxIter " + o.kmeansIter() + ", tol " + KMEANS_TOL
                        + ", initMode k-means||, seed " + o.seed()
                        + "; the tolerances differ in kind: MLlib stops when no center moved "
                        + "more than tol, cuwire when the centers' squared movement is below tol times the mean "
                        + "squared distance");
        String forest = "numTrees " + o.trees() + ", maxDepth " + o.depth() + ", minInstancesPerNode 1, bootstrap "
                + "true (subsampling rate 1), seed " + o.seed() + ", splits on at most " + MAX_BINS
                + " quantile bins per feature (MLlib's "
                + "maxBins set to " + MAX_BINS + ", its default is 32; cuwire's default); MLlib grows every tree on "
                + "all the rows, cuwire each partition's share of the trees on that partition's rows";
        p.put("RandomForestClassifier", forest + "; featureSubsetStrategy sqrt, Gini impurity");
        p.put("RandomForestRegressor", forest + "; featureSubsetStrategy onethird, variance impurity");
        p.put(
                "PCA",
                "k 8 (synthetic; 10 on digits), the rows projected as they are (not centered) on both sides, "
                        + "components of the covariance matrix");
        p.put("NaiveBayes", "modelType multinomial, smoothing 1.0 (Laplace), class priors from the labels");
        return Map.copyOf(p);
    }

    /**
     * Fits and transforms the pair's two stages {@code repeat} times each on {@code f}'s data, cuwire first; with a
     * {@code null} {@code out} (the warm-up) nothing is measured.
     */
    private static List<Result> measure(String pair, Fit f, MllibArgs.Options o, int repeat, PrintStream out) {
        List<Result> results = new ArrayList<>();
        List<Supplier<Estimator<?>>> stages = stages(pair, f, o);
        for (int s = 0; s < stages.size(); s++) {
            String side = s == 0 ? "cuwire" : "MLlib";
            double[] fit = new double[repeat];
            double[] transform = new double[repeat];
            Map<String, Double> quality = Map.of();
            for (int r = 0; r < repeat; r++) {
                Estimator<?> e = stages.get(s).get();
                long t0 = System.nanoTime();
                Model<?> m = (Model<?>) e.fit(f.data().train());
                fit[r] = (System.nanoTime() - t0) / 1e6;
                try {
                    long t1 = System.nanoTime();
                    force(m.transform(f.data().train()), pair);
                    transform[r] = (System.nanoTime() - t1) / 1e6;
                    if (r == repeat - 1 && out != null) {
                        quality = quality(pair, f, m);
                    }
                } finally {
                    if (m instanceof AutoCloseable c) {
                        close(c);
                    }
                }
            }
            if (out == null) {
                continue;
            }
            Result res = new Result(
                    f.data().name(),
                    pair,
                    side,
                    f.data().trainRows(),
                    f.data().features(),
                    Stats.of(fit),
                    Stats.of(transform),
                    quality);
            StringBuilder line = new StringBuilder(String.format(
                    Locale.ROOT,
                    "RESULT data=%s pair=%s side=%s rows=%d features=%d fit_ms=%.1f transform_ms=%.1f",
                    res.data(),
                    pair,
                    side,
                    res.rows(),
                    res.features(),
                    res.fitMs().median(),
                    res.transformMs().median()));
            quality.forEach((k, v) -> line.append(' ')
                    .append(k.replace(' ', '_').replace("²", "2"))
                    .append('=')
                    .append(String.format(Locale.ROOT, "%.6g", v)));
            out.println(line);
            out.flush();
            results.add(res);
        }
        return results;
    }

    /** An action that reads the model's output column of every row. */
    private static void force(Dataset<Row> transformed, String pair) {
        if (pair.equals("PCA")) {
            transformed
                    .agg(sum(functions.vector_to_array(col("pca"), "float64").getItem(0)))
                    .first();
        } else {
            transformed.agg(sum(col("prediction"))).first();
        }
    }

    private static Map<String, Double> quality(String pair, Fit f, Model<?> m) {
        Map<String, Double> q = new LinkedHashMap<>();
        Kind kind = kind(pair);
        switch (kind) {
            case REGRESSION -> {
                Dataset<Row> p = m.transform(f.data().test());
                RegressionEvaluator ev = new RegressionEvaluator().setLabelCol(f.label());
                q.put(kind.first, ev.setMetricName("rmse").evaluate(p));
                q.put(kind.second, ev.setMetricName("r2").evaluate(p));
            }
            case CLASSIFICATION -> {
                Dataset<Row> p = m.transform(f.data().test());
                MulticlassClassificationEvaluator ev = new MulticlassClassificationEvaluator().setLabelCol(f.label());
                q.put(kind.first, ev.setMetricName("accuracy").evaluate(p));
                q.put(kind.second, ev.setMetricName("logLoss").evaluate(p));
            }
            case CLUSTERING -> {
                Vector[] centers =
                        m instanceof KMeansModel k ? k.clusterCenters() : ((CuwireKMeansModel) m).clusterCenters();
                double[][] c = new double[centers.length][];
                for (int i = 0; i < c.length; i++) {
                    c[i] = centers[i].toArray();
                }
                q.put(kind.first, inertia(m.transform(f.data().test()), c));
            }
            default -> { // PROJECTION
                Vector v = m instanceof PCAModel p ? p.explainedVariance() : ((CuwirePCAModel) m).explainedVariance();
                double s = 0;
                for (double x : v.toArray()) {
                    s += x;
                }
                q.put(kind.first, s);
            }
        }
        return q;
    }

    /** The summed squared distance of each row to the center it was assigned. */
    private static double inertia(Dataset<Row> predicted, double[][] centers) {
        return predicted
                .select("features", "prediction")
                .javaRDD()
                .map(r -> {
                    double[] x = ((Vector) r.get(0)).toArray();
                    double[] c = centers[((Number) r.get(1)).intValue()];
                    double d = 0;
                    for (int j = 0; j < x.length; j++) {
                        d += (x[j] - c[j]) * (x[j] - c[j]);
                    }
                    return d;
                })
                .reduce(Double::sum);
    }

    private static void close(AutoCloseable c) {
        try {
            c.close();
        } catch (Exception e) {
            throw new IllegalStateException("closing " + c + ": " + e, e);
        }
    }

    // ---- data ----

    private static final StructType SYNTHETIC = new StructType(new StructField[] {
        DataTypes.createStructField("features", SQLDataTypes.VectorType(), false),
        DataTypes.createStructField("y", DataTypes.DoubleType, false),
        DataTypes.createStructField("binary", DataTypes.DoubleType, false),
        DataTypes.createStructField("multi", DataTypes.DoubleType, false),
        DataTypes.createStructField("cluster", DataTypes.DoubleType, false)
    });

    private static final StructType REAL = new StructType(new StructField[] {
        DataTypes.createStructField("features", SQLDataTypes.VectorType(), false),
        DataTypes.createStructField("label", DataTypes.DoubleType, false)
    });

    /**
     * The synthetic data's model: the clusters' centers, the linear target's weights and the logistic and softmax
     * labels' weights, all drawn from the seed; {@link #row} makes row {@code i} from it and {@code i} alone.
     */
    record Generator(long seed, int features, double[][] centers, double[] w, double[] binary, double[][] multi)
            implements Serializable {
        static Generator of(long seed, int features) {
            Random r = new Random(seed);
            double[][] centers = new double[CLUSTERS][features];
            for (double[] c : centers) {
                for (int j = 0; j < features; j++) {
                    c[j] = 3 * r.nextDouble();
                }
            }
            double scale = 3 / Math.sqrt(features);
            double[] w = new double[features];
            double[] b = new double[features];
            double[][] m = new double[CLASSES][features];
            for (int j = 0; j < features; j++) {
                w[j] = r.nextGaussian();
                b[j] = scale * r.nextGaussian();
                for (double[] mk : m) {
                    mk[j] = scale * r.nextGaussian();
                }
            }
            return new Generator(seed, features, centers, w, b, m);
        }

        /** Row {@code i}: features, the linear target, the binary, 4-class and cluster labels. */
        Row row(long i) {
            SplittableRandom r = new SplittableRandom(seed * 0x9E3779B97F4A7C15L + i);
            int k = r.nextInt(CLUSTERS);
            double[] x = new double[features];
            double y = 0;
            double margin = 0;
            double[] scores = new double[CLASSES];
            for (int j = 0; j < features; j++) {
                x[j] = Math.abs(centers[k][j] + r.nextGaussian());
                double z = x[j] - 1.5;
                y += w[j] * x[j];
                margin += binary[j] * z;
                for (int c = 0; c < CLASSES; c++) {
                    scores[c] += multi[c][j] * z;
                }
            }
            y += r.nextGaussian();
            double bin = r.nextDouble() < 1 / (1 + Math.exp(-margin)) ? 1 : 0;
            int best = 0;
            double bestScore = Double.NEGATIVE_INFINITY;
            for (int c = 0; c < CLASSES; c++) {
                double s = scores[c] - Math.log(-Math.log(r.nextDouble())); // Gumbel: a draw from the softmax
                if (s > bestScore) {
                    best = c;
                    bestScore = s;
                }
            }
            return RowFactory.create(Vectors.dense(x), y, bin, (double) best, (double) k);
        }
    }

    private static Data synthetic(SparkSession spark, MllibArgs.Options o, int rows, int partitions, String name) {
        Generator g = Generator.of(o.seed(), o.features());
        long testRows = Math.max(1, rows / 5);
        Dataset<Row> train = spark.createDataFrame(
                        spark.range(0, rows, 1, partitions).javaRDD().map(g::row), SYNTHETIC)
                .cache();
        Dataset<Row> test = spark.createDataFrame(
                        spark.range(rows, rows + testRows, 1, partitions)
                                .javaRDD()
                                .map(g::row),
                        SYNTHETIC)
                .cache();
        train.count();
        test.count();
        return new Data(name, train, test, rows, o.features());
    }

    private static Data real(SparkSession spark, Path csv, String name, int partitions) {
        List<Row> train = new ArrayList<>();
        List<Row> test = new ArrayList<>();
        int features = 0;
        try (BufferedReader r = Files.newBufferedReader(csv, StandardCharsets.UTF_8)) {
            int i = 0;
            for (String line = r.readLine(); line != null; line = r.readLine(), i++) {
                String[] v = line.split(",", -1);
                double[] x = new double[v.length - 1];
                for (int j = 0; j < x.length; j++) {
                    x[j] = Double.parseDouble(v[j + 1]);
                }
                features = x.length;
                (i % 5 == 4 ? test : train).add(RowFactory.create(Vectors.dense(x), Double.parseDouble(v[0])));
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + csv + ": " + e.getMessage(), e);
        }
        Dataset<Row> tr =
                spark.createDataFrame(train, REAL).repartition(partitions).cache();
        Dataset<Row> te =
                spark.createDataFrame(test, REAL).repartition(partitions).cache();
        tr.count();
        te.count();
        return new Data(name, tr, te, train.size(), features);
    }

    private static void release(Data d) {
        d.train().unpersist(true);
        d.test().unpersist(true);
    }

    private static Path tempDir() {
        try {
            return Files.createTempDirectory("cuwire-mllib-data");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create a temporary directory: " + e.getMessage(), e);
        }
    }

    /** Converts scikit-learn's shipped data sets into {@code dir}; why it could not, or {@code null}. */
    static String convert(String python, Path dir, PrintStream out) {
        Path script = Scripts.write(MllibBench.class, "sklearn_datasets.py", dir);
        try {
            Process p = new ProcessBuilder(python, script.toString(), dir.toString())
                    .redirectErrorStream(true)
                    .start();
            String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            int code = p.waitFor();
            text.lines().filter(l -> l.startsWith("DATASET ")).forEach(out::println);
            if (code != 0) {
                String last = text.strip().lines().reduce((a, b) -> b).orElse("");
                return python + " sklearn_datasets.py exited with " + code + ": " + last;
            }
            return null;
        } catch (IOException e) {
            return "cannot start " + python + " (" + e.getMessage() + ")";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "interrupted";
        }
    }

    // ---- the results file ----

    private static void record(
            MllibArgs.Options o,
            SparkSession spark,
            int partitions,
            List<String> devices,
            List<Result> results,
            List<String> skipped) {
        Table csv = new Table(
                "data",
                "rows",
                "features",
                "pair",
                "side",
                "fit_ms",
                "transform_ms",
                "metric1",
                "value1",
                "metric2",
                "value2",
                "runs");
        for (Result r : results) {
            List<Map.Entry<String, Double>> q = new ArrayList<>(r.quality().entrySet());
            csv.row(
                    r.data(),
                    r.rows(),
                    r.features(),
                    r.pair(),
                    r.side(),
                    Table.num(r.fitMs().median(), 1),
                    Table.num(r.transformMs().median(), 1),
                    q.isEmpty() ? null : q.get(0).getKey(),
                    q.isEmpty()
                            ? null
                            : String.format(Locale.ROOT, "%.6g", q.get(0).getValue()),
                    q.size() < 2 ? null : q.get(1).getKey(),
                    q.size() < 2
                            ? null
                            : String.format(Locale.ROOT, "%.6g", q.get(1).getValue()),
                    r.fitMs().count());
        }
        StringBuilder md = new StringBuilder();
        md.append("### cuwire's Spark ML stages against Spark MLlib, same Datasets and executors\n\n");
        md.append(String.format(
                Locale.ROOT,
                "**How.** `cuwire bench mllib --master %s --rows %d --features %d --seed %d --repeat %d --trees %d "
                        + "--depth %d --logistic-iter %d --kmeans-iter %d`%s: Spark %s, JDK %s, %d cores seen by the driver; executors' cuwire endpoints "
                        + "(so the backend of cuwire's partial fits and predictions: cuda = CUDA, emulated = the CPU "
                        + "backend): %s; %d partitions per data set; each pair fits cuwire's stage then MLlib's on "
                        + "the same cached Dataset, after one warm-up fit and transform of each on %d rows; times "
                        + "are the median of %d run(s); quality on the held-out rows.\n\n",
                o.master(),
                o.rows(),
                o.features(),
                o.seed(),
                o.repeat(),
                o.trees(),
                o.depth(),
                o.logisticIter(),
                o.kmeansIter(),
                o.conf().isEmpty()
                        ? ""
                        : " with "
                                + String.join(
                                        ", ",
                                        o.conf().stream()
                                                .map(c -> "`--conf " + c + "`")
                                                .toList()),
                spark.version(),
                Runtime.version(),
                Runtime.getRuntime().availableProcessors(),
                String.join(", ", devices),
                partitions,
                o.warmRows(),
                o.repeat()));
        for (String s : skipped) {
            md.append("**").append(s).append(".**\n\n");
        }
        Table t = new Table(
                "data",
                "pair",
                "cuwire fit",
                "MLlib fit",
                "cuwire transform",
                "MLlib transform",
                "quality: cuwire",
                "quality: MLlib");
        for (int i = 0; i + 1 < results.size(); i += 2) {
            Result c = results.get(i);
            Result m = results.get(i + 1);
            t.row(
                    c.data() + " " + c.rows() + " × " + c.features(),
                    c.pair(),
                    ms(c.fitMs()),
                    ms(m.fitMs()),
                    ms(c.transformMs()),
                    ms(m.transformMs()),
                    quality(c.quality()),
                    quality(m.quality()));
        }
        md.append("#### Figures\n\n").append(t.markdown()).append('\n');
        md.append("#### Matched parameters\n\n");
        Table p = new Table("pair", "parameters (both sides unless said)");
        Map<String, String> params = params(o);
        for (String pair : o.pairs()) {
            p.row(pair, params.get(pair));
        }
        md.append(p.markdown());
        String heading = Results.now() + ", " + o.master() + (o.note() == null ? "" : ", " + o.note());
        Path file = Results.record(
                o.out(), "mllib", "`cuwire bench mllib` on " + Results.machine(), heading, md.toString(), csv.csv());
        System.out.println("recorded in " + file);
    }

    private static String ms(Stats s) {
        return String.format(Locale.ROOT, "%,.0f ms", s.median());
    }

    private static String quality(Map<String, Double> q) {
        List<String> parts = new ArrayList<>();
        q.forEach((k, v) -> parts.add(k + " " + String.format(Locale.ROOT, "%.4g", v)));
        return String.join(", ", parts);
    }
}
