package io.cuwire.bench.spark;

import io.cuwire.bench.harness.Cli;
import io.cuwire.bench.harness.Sizes;
import java.nio.file.Path;
import java.util.List;
import picocli.CommandLine.Option;

/**
 * The options of {@code cuwire bench spark-broadcast} ({@link SparkBroadcastBench}), declared to picocli; no Spark
 * class is referenced here ({@link SparkClassPath} says why).
 */
public final class SparkBroadcastArgs {
    /** The options at their defaults, for picocli to fill. */
    public SparkBroadcastArgs() {}

    @Option(
            names = "--master",
            paramLabel = "URL",
            defaultValue = "local-cluster[2,1,3072]",
            description = "the Spark master, with at least 2 executors (default: ${DEFAULT-VALUE})")
    String master;

    @Option(
            names = "--executors",
            paramLabel = "N",
            defaultValue = "-1",
            description = "executors to wait for, at least 2 (default: E of local-cluster[E,...], else 2)")
    int executors;

    @Option(
            names = "--conf",
            paramLabel = "KEY=VALUE",
            description = "a Spark setting, after the bench's own (repeatable)")
    List<String> conf = List.of();

    @Option(
            names = "--sizes",
            paramLabel = "SIZE",
            split = ",",
            defaultValue = "512m",
            converter = Cli.SizeConverter.class,
            description = "model sizes, float64 values (" + Sizes.EXPECTED + "; default: ${DEFAULT-VALUE})")
    List<Long> sizes;

    @Option(
            names = "--rounds",
            paramLabel = "R",
            defaultValue = "3",
            description = "rounds per size, cuwire then Spark in each (default: ${DEFAULT-VALUE})")
    int rounds;

    @Option(
            names = "--tasks",
            paramLabel = "T",
            defaultValue = "8",
            description = "tasks of the job that reads the model in each round (default: ${DEFAULT-VALUE})")
    int tasks;

    @Option(names = "--note", paramLabel = "TEXT", description = "added to the run's heading in the results file")
    String note;

    @Option(
            names = "--out",
            paramLabel = "DIR",
            description = "where the run is recorded, spark-broadcast-<machine>.md and .csv (default: nowhere)")
    Path out;

    /**
     * The typed options.
     *
     * @throws IllegalArgumentException naming the option whose value is out of range
     */
    public Options options() {
        for (long s : sizes) {
            if (s < 8 || s % 8 != 0 || s / 8 > Integer.MAX_VALUE - 8) {
                throw new IllegalArgumentException("--sizes " + Sizes.format(s)
                        + " (expected: a multiple of 8 bytes, at most 16 GiB: one Java double[])");
            }
        }
        int e = executors >= 0
                ? executors
                : master.startsWith("local-cluster[") ? MllibArgs.defaultExecutors(master) : 2;
        return new Options(
                master,
                Cli.atLeast("--executors", e, 2),
                MllibArgs.conf(conf),
                List.copyOf(sizes),
                Cli.atLeast("--rounds", rounds, 1),
                Cli.atLeast("--tasks", tasks, 1),
                note,
                out);
    }

    /**
     * {@code cuwire bench spark-broadcast}'s typed options.
     *
     * @param master the Spark master
     * @param executors executors to wait for (at least 2: the bench checks the two-level tree)
     * @param conf Spark settings, {@code KEY=VALUE}
     * @param sizes model sizes in bytes
     * @param rounds rounds per size
     * @param tasks tasks per round's job
     * @param note added to the run's heading, or {@code null}
     * @param out where the run is recorded, or {@code null}
     */
    public record Options(
            String master,
            int executors,
            List<String> conf,
            List<Long> sizes,
            int rounds,
            int tasks,
            String note,
            Path out) {}
}
