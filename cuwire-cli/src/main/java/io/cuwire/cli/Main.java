package io.cuwire.cli;

import io.cuwire.bench.cluster.ModelBroadcastBench;
import io.cuwire.bench.cuda.CopyBenchmark;
import io.cuwire.bench.ml.EstimatorBench;
import io.cuwire.bench.ml.RooflineBench;
import io.cuwire.bench.transport.TransferBench;
import io.cuwire.cuda.Cuda;
import io.cuwire.memory.MemoryException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The {@code cuwire} command: a small dispatcher from the first argument to a {@link Command}. */
public final class Main {
    public static final int OK = 0;
    public static final int FAILED = 1;
    public static final int USAGE = 2;

    /** One subcommand: runs with the arguments after its name and returns the exit code. */
    @FunctionalInterface
    interface Command {
        int run(List<String> args, PrintStream out, PrintStream err);
    }

    private record Entry(String summary, Command command) {
    }

    private static final Map<String, Entry> COMMANDS = new LinkedHashMap<>();

    static {
        COMMANDS.put("demo", new Entry("the main job: a local cluster fits three models beside a payload model "
                + "sized per platform, broadcasts each by every family and transport, predicts and checks; prints a "
                + "verdict and a table per model and writes an HTML report with a sweep over model sizes ('demo "
                + "[--workers N] [--transports tcp,ipc,ucx] [--model-size SIZE] [--sweep SIZES|none] [--repeat N] "
                + "[--report DIR]')", Demo::run));
        COMMANDS.put("worker", new Entry("a cluster worker started by hand; prints its address ('worker [--listen "
                + "tcp://127.0.0.1:0] [--device N] [--index N]', secret as hex in CUWIRE_SECRET or on stdin); its exit"
                + " code says why it stopped ('worker --help' lists the codes)", WorkerCommand::run));
        COMMANDS.put("info", new Entry("devices, the chosen platform and the transports usable here", Main::info));
        COMMANDS.put("bench", new Entry("'bench copy [--size BYTES] [--repeat N] [--out FILE.csv]': copy "
                + "bandwidth; 'bench transfer [--transports inproc,tcp,tls,ucx,ipc] [--families cuda,host,java] "
                + "[--sizes 1KiB,1MiB,64MiB,1GiB] [--repeat N] [--warmup N] [--out DIR]': a model between two "
                + "processes (tls: TCP inside TLS); 'bench broadcast [--workers N] [--sizes 1MiB,1GiB] "
                + "[--strategies each,chain,tree] [--chunk 4MiB] "
                + "[--repeat N] [--warmup N] [--out DIR] [--java true|false]': a cluster broadcast from device 0 to "
                + "N workers (devices 1..N) over ipc (cuda family), each in turn and pipelined, cold, warm and "
                + "unchanged, against the raw peer copy, and with one worker over tcp with the java family; 'bench "
                + "estimators [--rows N] [--cols D] [--repeat R] [--backends device,cpu] [--out DIR]': fit and "
                + "predict time per estimator on device 0 and the CPU, checked against the CPU; 'bench roofline "
                + "[--rows N] [--cols D] [--clusters K] [--fit-rows N] [--repeat R]': LinearRegression and KMeans "
                + "predict against the device copy bandwidth",
                Main::bench));
        COMMANDS.put("help", new Entry("this text", (args, out, err) -> usage(out)));
    }

    private Main() {
    }

    public static void main(String[] args) {
        if (System.getProperty("java.util.logging.config.file") == null) {
            // One line per log record on stderr instead of java.util.logging's two.
            System.setProperty("java.util.logging.SimpleFormatter.format", "%4$s: %5$s%6$s%n");
        }
        System.exit(run(args, System.out, System.err));
    }

    /** Runs the command named by {@code args[0]}; returns the process exit code. */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        if (args.length == 0 || args[0].equals("--help") || args[0].equals("-h")) {
            return usage(out);
        }
        Entry entry = COMMANDS.get(args[0]);
        if (entry == null) {
            err.println("cuwire: unknown command '" + args[0] + "'");
            usage(err);
            return USAGE;
        }
        return entry.command().run(Arrays.asList(args).subList(1, args.length), out, err);
    }

    private static int info(List<String> args, PrintStream out, PrintStream err) {
        if (!args.isEmpty()) {
            err.println("cuwire info: takes no arguments, got " + args);
            return USAGE;
        }
        try {
            Info.collect().print(out);
            return OK;
        } catch (MemoryException e) {
            err.println("cuwire info: " + e.getMessage());
            return FAILED;
        }
    }

    private static int bench(List<String> args, PrintStream out, PrintStream err) {
        if (!args.isEmpty() && args.getFirst().equals("transfer")) {
            return transfer(args.subList(1, args.size()), out, err);
        }
        if (!args.isEmpty() && args.getFirst().equals("broadcast")) {
            return broadcast(args.subList(1, args.size()), out, err);
        }
        if (!args.isEmpty() && args.getFirst().equals("estimators")) {
            return estimators(args.subList(1, args.size()), out, err);
        }
        if (!args.isEmpty() && args.getFirst().equals("roofline")) {
            return roofline(args.subList(1, args.size()), out, err);
        }
        if (args.isEmpty() || !args.getFirst().equals("copy")) {
            err.println("cuwire bench: which benchmark? one of: copy, transfer, broadcast, estimators, roofline "
                    + "(serialization runs through the ./cuwire launcher: ./cuwire bench serialization)");
            return USAGE;
        }
        CopyBenchmark.Options options;
        try {
            options = CopyBenchmark.Options.parse(args.subList(1, args.size()).toArray(String[]::new));
        } catch (IllegalArgumentException e) {
            err.println("cuwire bench copy: " + e.getMessage());
            return USAGE;
        }
        if (!Cuda.isAvailable()) {
            err.println("cuwire bench copy: needs a CUDA device: " + Cuda.unavailableReason());
            return FAILED;
        }
        CopyBenchmark.run(options, out);
        return OK;
    }

    private static int transfer(List<String> args, PrintStream out, PrintStream err) {
        TransferBench.Options options;
        try {
            options = TransferBench.Options.parse(args.toArray(String[]::new));
        } catch (IllegalArgumentException e) {
            err.println("cuwire bench transfer: " + e.getMessage());
            return USAGE;
        }
        try {
            return TransferBench.run(options, out) == 0 ? OK : FAILED;
        } catch (Exception e) {
            err.println("cuwire bench transfer: " + e);
            return FAILED;
        }
    }

    private static int broadcast(List<String> args, PrintStream out, PrintStream err) {
        ModelBroadcastBench.Options options;
        try {
            options = ModelBroadcastBench.Options.parse(args.toArray(String[]::new));
        } catch (IllegalArgumentException e) {
            err.println("cuwire bench broadcast: " + e.getMessage());
            return USAGE;
        }
        try {
            return ModelBroadcastBench.run(options, out) == 0 ? OK : FAILED;
        } catch (Exception e) {
            err.println("cuwire bench broadcast: " + e);
            return FAILED;
        }
    }

    private static int estimators(List<String> args, PrintStream out, PrintStream err) {
        EstimatorBench.Options options;
        try {
            options = EstimatorBench.Options.parse(args.toArray(String[]::new));
        } catch (IllegalArgumentException e) {
            err.println("cuwire bench estimators: " + e.getMessage());
            return USAGE;
        }
        List<EstimatorBench.Result> results;
        try {
            results = EstimatorBench.run(options, out);
        } catch (IllegalArgumentException | UncheckedIOException e) {
            err.println("cuwire bench estimators: " + e.getMessage());
            return FAILED;
        }
        return results.stream().allMatch(EstimatorBench.Result::matchesReference) ? OK : FAILED;
    }

    private static int roofline(List<String> args, PrintStream out, PrintStream err) {
        RooflineBench.Options options;
        try {
            options = RooflineBench.Options.parse(args.toArray(String[]::new));
        } catch (IllegalArgumentException e) {
            err.println("cuwire bench roofline: " + e.getMessage());
            return USAGE;
        }
        RooflineBench.Result[] results = RooflineBench.run(options, out);
        return Arrays.stream(results).allMatch(RooflineBench.Result::matchesCpu) ? OK : FAILED;
    }

    private static int usage(PrintStream out) {
        out.println("usage: cuwire <command> [arguments]");
        out.println();
        out.println("commands:");
        COMMANDS.forEach((name, entry) -> out.printf("  %-8s %s%n", name, entry.summary()));
        out.println();
        out.println("the ./cuwire launcher also runs:");
        out.printf("  %-8s %s%n", "build", "compile and package every module (mvn package, no tests)");
        out.printf("  %-8s %s%n", "test", "run the whole test suite (mvn verify)");
        out.printf("  %-8s %s%n", "bundle", "a self-contained directory for GPU hosts (Java runtime, jars, tests)");
        out.println();
        out.println("JVM options (e.g. -Dcuwire.device.platform=emulated) go in CUWIRE_JAVA_OPTS.");
        return OK;
    }
}
