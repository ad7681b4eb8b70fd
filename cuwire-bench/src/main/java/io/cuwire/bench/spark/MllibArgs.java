package io.cuwire.bench.spark;

import io.cuwire.bench.harness.Cli;
import io.cuwire.bench.ml.SklearnForests;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import picocli.CommandLine.Option;

/**
 * The options of {@code cuwire bench mllib} ({@link MllibBench}), declared to picocli; no Spark class is referenced
 * here, so that a class path without Spark can parse them and refuse the benchmark by name
 * ({@link SparkClassPath}).
 */
public final class MllibArgs {
    /** The pairs, in the order they run. */
    public static final List<String> PAIRS = List.of(
            "LinearRegression",
            "LogisticRegression-binary",
            "LogisticRegression-multinomial",
            "KMeans",
            "RandomForestClassifier",
            "RandomForestRegressor",
            "PCA",
            "NaiveBayes");

    /** The data sets: the seeded synthetic one and scikit-learn's shipped ones. */
    public static final List<String> DATA = List.of("synthetic", "real");

    /** The options at their defaults, for picocli to fill. */
    public MllibArgs() {}

    @Option(
            names = "--master",
            paramLabel = "URL",
            defaultValue = "local-cluster[2,1,4096]",
            description = "the Spark master: local[N], local-cluster[E,C,MiB] (E executor JVMs) or spark://HOST:PORT "
                    + "(default: ${DEFAULT-VALUE})")
    String master;

    @Option(
            names = "--executors",
            paramLabel = "N",
            defaultValue = "-1",
            description = "executors whose cuwire endpoints to wait for before the run (default: E of "
                    + "local-cluster[E,...], 0 for local[N], 2 for spark://)")
    int executors;

    @Option(
            names = "--conf",
            paramLabel = "KEY=VALUE",
            description = "a Spark setting, after the bench's own (repeatable), e.g. spark.executor.memory=4g")
    List<String> conf = List.of();

    @Option(
            names = "--rows",
            paramLabel = "N",
            defaultValue = "1000000",
            description = "training rows of the synthetic data set (default: ${DEFAULT-VALUE}); its test rows are a "
                    + "fifth as many more")
    long rows;

    @Option(
            names = "--features",
            paramLabel = "D",
            defaultValue = "64",
            description = "features of the synthetic data set (default: ${DEFAULT-VALUE})")
    int features;

    @Option(
            names = "--seed",
            paramLabel = "S",
            defaultValue = "42",
            description = "the seed of the synthetic data and of every seeded estimator (default: ${DEFAULT-VALUE})")
    long seed;

    @Option(
            names = "--partitions",
            paramLabel = "P",
            defaultValue = "0",
            description = "partitions of each data set (default: Spark's default parallelism)")
    int partitions;

    @Option(
            names = "--repeat",
            paramLabel = "R",
            defaultValue = "1",
            description = "fits and transforms per pair and side, the median reported (default: ${DEFAULT-VALUE})")
    int repeat;

    @Option(
            names = "--pairs",
            split = ",",
            paramLabel = "NAME",
            description = "the pairs to run (default: all: LinearRegression, LogisticRegression-binary, "
                    + "LogisticRegression-multinomial, KMeans, RandomForestClassifier, RandomForestRegressor, PCA, "
                    + "NaiveBayes)")
    List<String> pairs = PAIRS;

    @Option(
            names = "--data",
            split = ",",
            paramLabel = "NAME",
            description = "synthetic (--rows x --features, seeded), real (scikit-learn's shipped digits, breast "
                    + "cancer and diabetes sets) or both (default: synthetic,real)")
    List<String> data = DATA;

    @Option(
            names = "--real-dir",
            paramLabel = "DIR",
            description = "where the real data sets' CSV files are (digits.csv, breast_cancer.csv, diabetes.csv, as "
                    + "sklearn_datasets.py writes them); default: written by --python into a temporary directory")
    Path realDir;

    @Option(
            names = "--python",
            paramLabel = "PATH",
            description = "the Python with scikit-learn that converts the real data sets "
                    + "(default: python3 on the path, else /usr/bin/python3, whichever imports scikit-learn)")
    String python;

    @Option(
            names = "--trees",
            paramLabel = "T",
            defaultValue = "20",
            description = "trees of each random forest, both sides (default: ${DEFAULT-VALUE}, MLlib's)")
    int trees;

    @Option(
            names = "--depth",
            paramLabel = "D",
            defaultValue = "8",
            description = "the deepest a forest's tree grows, both sides (default: ${DEFAULT-VALUE})")
    int depth;

    @Option(
            names = "--logistic-iter",
            paramLabel = "N",
            defaultValue = "100",
            description = "maxIter of both logistic regressions (default: ${DEFAULT-VALUE}, MLlib's)")
    int logisticIter;

    @Option(
            names = "--kmeans-iter",
            paramLabel = "N",
            defaultValue = "20",
            description = "maxIter of both k-means (default: ${DEFAULT-VALUE}, MLlib's)")
    int kmeansIter;

    @Option(
            names = "--warm-rows",
            paramLabel = "N",
            defaultValue = "2000",
            description = "rows of the warm-up: one fit and transform of each stage before the timed ones; 0 for "
                    + "none (default: ${DEFAULT-VALUE})")
    int warmRows;

    @Option(
            names = "--expect-device",
            paramLabel = "PLATFORM",
            description = "fail unless every executor's cuwire endpoint is on a device of this platform, e.g. cuda")
    String expectDevice;

    @Option(
            names = "--note",
            paramLabel = "TEXT",
            description = "added to the run's heading in the results file, e.g. what else ran on the machine")
    String note;

    @Option(
            names = "--out",
            paramLabel = "DIR",
            description = "where the run is recorded, mllib-<machine>.md and .csv (default: nowhere)")
    Path out;

    /**
     * The typed options.
     *
     * @throws IllegalArgumentException naming the option whose value is out of range
     */
    public Options options() {
        for (String p : pairs) {
            if (!PAIRS.contains(p)) {
                throw new IllegalArgumentException(
                        "--pairs: unknown pair '" + p + "' (expected: some of " + PAIRS + ")");
            }
        }
        for (String d : data) {
            if (!DATA.contains(d.toLowerCase(Locale.ROOT))) {
                throw new IllegalArgumentException(
                        "--data: unknown data set '" + d + "' (expected: some of " + DATA + ")");
            }
        }
        return new Options(
                master,
                executors >= 0 ? executors : defaultExecutors(master),
                conf(conf),
                Cli.atLeast("--rows", (int) Math.min(Integer.MAX_VALUE, rows), 100),
                Cli.atLeast("--features", features, 2),
                seed,
                Cli.atLeast("--partitions", partitions, 0),
                Cli.atLeast("--repeat", repeat, 1),
                List.copyOf(pairs),
                data.stream().map(d -> d.toLowerCase(Locale.ROOT)).toList(),
                realDir,
                python != null ? python : SklearnForests.python(),
                Cli.atLeast("--trees", trees, 1),
                Cli.atLeast("--depth", depth, 1),
                Cli.atLeast("--logistic-iter", logisticIter, 1),
                Cli.atLeast("--kmeans-iter", kmeansIter, 1),
                Cli.atLeast("--warm-rows", warmRows, 0),
                expectDevice,
                note,
                out);
    }

    /**
     * {@code --conf}'s settings, checked.
     *
     * @throws IllegalArgumentException naming the first that is not {@code KEY=VALUE}
     */
    static List<String> conf(List<String> conf) {
        for (String c : conf) {
            if (c.indexOf('=') <= 0) {
                throw new IllegalArgumentException("--conf " + c + " (expected: KEY=VALUE)");
            }
        }
        return List.copyOf(conf);
    }

    /** The executors a master brings: E of {@code local-cluster[E,C,M]}, 0 for {@code local}, else 2. */
    static int defaultExecutors(String master) {
        if (master.startsWith("local-cluster[")) {
            return Integer.parseInt(master.substring("local-cluster[".length(), master.indexOf(','))
                    .strip());
        }
        return master.startsWith("local") ? 0 : 2;
    }

    /**
     * {@code cuwire bench mllib}'s typed options (see the {@code Args} fields for each).
     *
     * @param master the Spark master
     * @param executors the executors whose endpoints to wait for
     * @param conf Spark settings, {@code KEY=VALUE}
     * @param rows synthetic training rows
     * @param features synthetic features
     * @param seed the data's and the estimators' seed
     * @param partitions partitions per data set, 0 for Spark's default parallelism
     * @param repeat fits and transforms per pair and side
     * @param pairs the pairs to run
     * @param data the data sets
     * @param realDir the real data's CSV directory, or {@code null} to convert them with {@code python}
     * @param python the Python that converts them
     * @param trees trees per forest
     * @param depth the forests' depth
     * @param logisticIter both logistic regressions' maxIter
     * @param kmeansIter both k-means' maxIter
     * @param warmRows rows of the warm-up, 0 for none
     * @param expectDevice the platform every executor's endpoint must be on, or {@code null}
     * @param note added to the run's heading, or {@code null}
     * @param out where the run is recorded, or {@code null}
     */
    public record Options(
            String master,
            int executors,
            List<String> conf,
            int rows,
            int features,
            long seed,
            int partitions,
            int repeat,
            List<String> pairs,
            List<String> data,
            Path realDir,
            String python,
            int trees,
            int depth,
            int logisticIter,
            int kmeansIter,
            int warmRows,
            String expectDevice,
            String note,
            Path out) {}
}
