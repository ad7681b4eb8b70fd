package io.cuwire.bench.spark;

import io.cuwire.bench.harness.Cli;
import java.nio.file.Path;
import java.util.List;
import picocli.CommandLine.Option;

/**
 * The options of {@code cuwire bench spark-stages} ({@link SparkStagesCheck}), declared to picocli; no Spark class is
 * referenced here ({@link SparkClassPath} says why).
 */
public final class SparkStagesArgs {
    /** The compute backends an executor's stages may be expected to run on. */
    static final List<String> BACKENDS = List.of("cuda", "cpu");

    /** The options at their defaults, for picocli to fill. */
    public SparkStagesArgs() {}

    @Option(
            names = "--master",
            paramLabel = "URL",
            defaultValue = "local-cluster[2,1,2048]",
            description = "the Spark master: local-cluster[E,C,MiB] or spark://HOST:PORT, with at least 2 executors "
                    + "(default: ${DEFAULT-VALUE})")
    String master;

    @Option(
            names = "--executors",
            paramLabel = "N",
            defaultValue = "-1",
            description = "executors whose cuwire endpoints to wait for, each of which must compute (default: E of "
                    + "local-cluster[E,...], 2 for spark://)")
    int executors;

    @Option(
            names = "--conf",
            paramLabel = "KEY=VALUE",
            description = "a Spark setting, after the check's own (repeatable)")
    List<String> conf = List.of();

    @Option(
            names = "--rows",
            paramLabel = "N",
            defaultValue = "20000",
            description = "rows of the data set, made on the driver (default: ${DEFAULT-VALUE})")
    int rows;

    @Option(
            names = "--features",
            paramLabel = "D",
            defaultValue = "8",
            description = "features (default: ${DEFAULT-VALUE})")
    int features;

    @Option(
            names = "--seed",
            paramLabel = "S",
            defaultValue = "7",
            description = "the seed of the data and of k-means (default: ${DEFAULT-VALUE})")
    long seed;

    @Option(
            names = "--partitions",
            paramLabel = "P",
            defaultValue = "0",
            description = "partitions of the data set (default: 2 per executor)")
    int partitions;

    @Option(
            names = "--expect-backend",
            paramLabel = "NAME",
            description = "the compute backend every executor's stages must run on: cuda or cpu (default: any one, "
                    + "the same for all)")
    String expectBackend;

    @Option(names = "--note", paramLabel = "TEXT", description = "added to the run's heading in the results file")
    String note;

    @Option(
            names = "--out",
            paramLabel = "DIR",
            description = "where the run is recorded, spark-stages-<machine>.md and .csv (default: nowhere)")
    Path out;

    /**
     * The typed options.
     *
     * @throws IllegalArgumentException naming the option whose value is out of range
     */
    public Options options() {
        if (expectBackend != null && !BACKENDS.contains(expectBackend)) {
            throw new IllegalArgumentException(
                    "--expect-backend " + expectBackend + " (expected: one of " + BACKENDS + ")");
        }
        int e = executors >= 0 ? executors : MllibArgs.defaultExecutors(master);
        if (e < 2) {
            throw new IllegalArgumentException("--executors " + e + " (expected: at least 2 executor JVMs, from "
                    + "--master local-cluster[E,...] or spark://)");
        }
        return new Options(
                master,
                e,
                MllibArgs.conf(conf),
                Cli.atLeast("--rows", rows, 100),
                Cli.atLeast("--features", features, 3),
                seed,
                partitions > 0 ? partitions : 2 * e,
                expectBackend,
                note,
                out);
    }

    /**
     * {@code cuwire bench spark-stages}'s typed options (see the {@code Args} fields for each).
     *
     * @param master the Spark master
     * @param executors the executors whose endpoints to wait for, each of which must compute
     * @param conf Spark settings, {@code KEY=VALUE}
     * @param rows rows of the data set
     * @param features its features
     * @param seed the data's and k-means' seed
     * @param partitions partitions of the data set
     * @param expectBackend the backend every executor must compute on, or {@code null} for any one
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
            String expectBackend,
            String note,
            Path out) {}
}
