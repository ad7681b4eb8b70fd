package io.cuwire.cli;

import io.cuwire.bench.cluster.ModelBroadcastBench;
import io.cuwire.bench.cuda.CopyBenchmark;
import io.cuwire.bench.harness.Sizes;
import io.cuwire.bench.ml.EstimatorBench;
import io.cuwire.bench.ml.RooflineBench;
import io.cuwire.bench.transport.TransferBench;
import io.cuwire.cuda.Cuda;
import io.cuwire.memory.MemoryException;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Unmatched;

/**
 * The {@code cuwire} command, on picocli: typed options, help generated per command ({@code cuwire COMMAND
 * --help}), and one exact error line naming the command for a bad option or value ({@code cuwire bench copy:
 * Invalid value for option '--size': ...}), exit code {@link #USAGE}.
 */
public final class Main {
    public static final int OK = 0;
    public static final int FAILED = 1;
    public static final int USAGE = 2;

    private static final String DEMO_HELP = "The main job: a local cluster fits three models beside a payload model "
            + "sized per platform, broadcasts each by every family and transport, predicts and checks; prints a "
            + "verdict and a table per model and writes an HTML report with a sweep over model sizes.";
    private static final String DEMO_OPTIONS = "Options: [--workers N] [--transports tcp,ipc,ucx] [--model-size SIZE] "
            + "[--sweep SIZES|none] [--repeat N] [--report DIR]";
    private static final String BROADCAST_HELP = "A cluster broadcast from device 0 to N workers (devices 1..N) over "
            + "ipc (cuda family), each in turn and pipelined, cold, warm and unchanged, against the raw peer copy, and "
            + "with one worker over tcp with the java family.";
    private static final String BROADCAST_OPTIONS = "Options: [--workers N] [--sizes 1MiB,1GiB] "
            + "[--strategies each,chain,tree] [--chunk 4MiB] [--repeat N] [--warmup N] [--out DIR] [--java true|false]";

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
        PrintWriter o = new PrintWriter(out, true);
        PrintWriter e = new PrintWriter(err, true);
        CommandLine cl = new CommandLine(new Root(out, err));
        cl.setOut(o).setErr(e).setExpandAtFiles(false);
        cl.setParameterExceptionHandler((ex, a) -> refuse(ex, e));
        int code = cl.execute(args);
        o.flush();
        e.flush();
        return code;
    }

    /** Prints one line naming the command and what was wrong; for the top-level command its usage too. */
    private static int refuse(ParameterException ex, PrintWriter err) {
        CommandLine c = ex.getCommandLine();
        String message = ex.getMessage();
        if (ex instanceof CommandLine.UnmatchedArgumentException u && !c.getSubcommands().isEmpty()
                && !u.getUnmatched().isEmpty() && !u.getUnmatched().getFirst().startsWith("-")) {
            message = "unknown command '" + u.getUnmatched().getFirst() + "'";
            if (c.getCommand() instanceof Bench) {
                message += "; " + Bench.WHICH;
            }
        }
        err.println(c.getCommandSpec().qualifiedName(" ") + ": " + message);
        if (c.getParent() == null) {
            c.usage(err);
        }
        err.flush();
        return USAGE;
    }

    /** A refusal of a value that the command's own checks found wrong, reported like picocli's own. */
    private static ParameterException bad(CommandSpec spec, IllegalArgumentException e) {
        return new ParameterException(spec.commandLine(), e.getMessage(), e);
    }

    /** {@code --size}, {@code --sizes}: {@link Sizes}. */
    static final class SizeConverter implements CommandLine.ITypeConverter<Long> {
        @Override
        public Long convert(String value) {
            try {
                return Sizes.parse(value);
            } catch (IllegalArgumentException e) {
                throw new CommandLine.TypeConversionException(e.getMessage());
            }
        }
    }

    @Command(name = "cuwire", synopsisHeading = "usage: ", customSynopsis = "cuwire <command> [arguments]",
            description = "Moves GPU-resident ML models between a client and workers as header + device frames.",
            commandListHeading = "%ncommands:%n",
            footer = {"", "the ./cuwire launcher also runs:",
                "  build    compile and package every module (mvn package, no tests)",
                "  test     run the whole test suite (mvn verify)",
                "  bundle   a self-contained directory for GPU hosts (Java runtime, jars, tests)",
                "  bench serialization, bench model-transfer   the JMH and two-JVM benchmarks (cuwire-bench's class "
                        + "path)",
                    "", "JVM options (e.g. -Dcuwire.device.platform=emulated) go in CUWIRE_JAVA_OPTS.",
                    "'cuwire help COMMAND' or 'cuwire COMMAND --help' describes one command."},
            subcommands = {DemoCommand.class, Worker.class, InfoCommand.class, Bench.class,
                CommandLine.HelpCommand.class})
    static final class Root implements Callable<Integer> {
        @Spec
        CommandSpec spec;
        final PrintStream out;
        final PrintStream err;

        @Option(names = {"-h", "--help"}, usageHelp = true, description = "this text")
        boolean help;

        Root(PrintStream out, PrintStream err) {
            this.out = out;
            this.err = err;
        }

        @Override
        public Integer call() {
            spec.commandLine().usage(spec.commandLine().getOut());
            return OK;
        }
    }

    /** The streams of the top-level command, for the commands that print to them directly. */
    private static Root root(CommandSpec spec) {
        CommandSpec s = spec;
        while (s.parent() != null) {
            s = s.parent();
        }
        return (Root) s.userObject();
    }

    @Command(name = "demo", synopsisHeading = "usage: ", description = {DEMO_HELP, DEMO_OPTIONS})
    static final class DemoCommand implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Unmatched
        List<String> args = new ArrayList<>();

        @Override
        public Integer call() {
            Root r = root(spec);
            return Demo.run(args, r.out, r.err);
        }
    }

    @Command(name = "worker", synopsisHeading = "usage: ",
            description = {"A cluster worker started by hand; prints its address. Secret as hex in CUWIRE_SECRET or "
                        + "on stdin; its exit code says why it stopped ('worker --help' lists the codes).",
                "Options: [--listen tcp://127.0.0.1:0] [--device N] [--index N]"})
    static final class Worker implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Unmatched
        List<String> args = new ArrayList<>();

        @Override
        public Integer call() {
            Root r = root(spec);
            return WorkerCommand.run(args, r.out, r.err);
        }
    }

    @Command(name = "info", synopsisHeading = "usage: ",
            description = "Devices, the chosen platform and the transports usable here.")
    static final class InfoCommand implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Option(names = {"-h", "--help"}, usageHelp = true, description = "this text")
        boolean help;

        @Override
        public Integer call() {
            Root r = root(spec);
            try {
                Info.collect().print(r.out);
                return OK;
            } catch (MemoryException e) {
                r.err.println("cuwire info: " + e.getMessage());
                return FAILED;
            }
        }
    }

    @Command(name = "bench", synopsisHeading = "usage: ", description = "The benchmarks; 'cuwire bench BENCHMARK "
            + "--help' describes one.", commandListHeading = "%nbenchmarks:%n",
            subcommands = {Copy.class, Transfer.class, Broadcast.class, Estimators.class, Roofline.class})
    static final class Bench implements Callable<Integer> {
        static final String WHICH = "which benchmark? one of: copy, transfer, broadcast, estimators, roofline "
                + "(serialization and model-transfer run through the ./cuwire launcher: ./cuwire bench serialization)";

        @Spec
        CommandSpec spec;

        @Option(names = {"-h", "--help"}, usageHelp = true, description = "this text")
        boolean help;

        @Override
        public Integer call() {
            root(spec).err.println("cuwire bench: " + WHICH);
            return USAGE;
        }
    }

    @Command(name = "copy", synopsisHeading = "usage: ", sortOptions = false,
            description = "Copy bandwidth of the CUDA device: host to device and back (pinned and pageable), device "
                + "to device and to a second GPU. Needs a CUDA device.")
    static final class Copy implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Option(names = "--size", paramLabel = "SIZE", converter = SizeConverter.class,
                description = "bytes per copy (e.g. 1g, 1GiB, 64m; default: ${DEFAULT-VALUE})", defaultValue = "1GiB")
        long size;

        @Option(names = "--repeat", paramLabel = "N", defaultValue = "20",
                description = "timed copies per case (default: ${DEFAULT-VALUE})")
        int repeat;

        @Option(names = "--out", paramLabel = "FILE.csv", description = "a CSV of the results")
        Path out;

        @Option(names = {"-h", "--help"}, usageHelp = true, description = "this text")
        boolean help;

        @Override
        public Integer call() {
            CopyBenchmark.Options options;
            try {
                options = new CopyBenchmark.Options(size, repeat, out);
            } catch (IllegalArgumentException e) {
                throw bad(spec, e);
            }
            Root r = root(spec);
            if (!Cuda.isAvailable()) {
                r.err.println("cuwire bench copy: needs a CUDA device: " + Cuda.unavailableReason());
                return FAILED;
            }
            CopyBenchmark.run(options, r.out);
            return OK;
        }
    }

    @Command(name = "roofline", synopsisHeading = "usage: ", sortOptions = false,
            description = "LinearRegression and KMeans predict against the device copy bandwidth and against a "
                    + "read-only pass over X in the same run.")
    static final class Roofline implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Option(names = "--rows", paramLabel = "N", defaultValue = "10000000",
                description = "rows of X (default: ${DEFAULT-VALUE})")
        long rows;

        @Option(names = "--cols", paramLabel = "D", defaultValue = "64",
                description = "columns of X (default: ${DEFAULT-VALUE})")
        int cols;

        @Option(names = "--clusters", paramLabel = "K", defaultValue = "8",
                description = "KMeans clusters, and blobs in the data (default: ${DEFAULT-VALUE})")
        int clusters;

        @Option(names = "--fit-rows", paramLabel = "N",
                description = "rows KMeans is fitted on (default: the rows, at most 1000000)")
        Long fitRows;

        @Option(names = "--repeat", paramLabel = "R", defaultValue = "10",
                description = "timed runs of each measurement, the median reported (default: ${DEFAULT-VALUE})")
        int repeat;

        @Option(names = {"-h", "--help"}, usageHelp = true, description = "this text")
        boolean help;

        @Override
        public Integer call() {
            RooflineBench.Options options;
            try {
                options = new RooflineBench.Options(rows, cols, clusters,
                        fitRows == null ? Math.min(rows, RooflineBench.FIT_ROWS) : fitRows, repeat);
            } catch (IllegalArgumentException e) {
                throw bad(spec, e);
            }
            RooflineBench.Result[] results = RooflineBench.run(options, root(spec).out);
            return Arrays.stream(results).allMatch(RooflineBench.Result::matchesCpu) ? OK : FAILED;
        }
    }

    /** A benchmark whose options its own class parses (its --help: 'cuwire bench NAME --help'). */
    abstract static class PassThrough implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Unmatched
        List<String> args = new ArrayList<>();

        @Option(names = {"-h", "--help"}, usageHelp = true, description = "this text")
        boolean help;

        abstract int run(String[] a, PrintStream out) throws Exception;

        @Override
        public Integer call() {
            String[] a = args.toArray(String[]::new);
            try {
                return run(a, root(spec).out);
            } catch (IllegalArgumentException e) {
                throw bad(spec, e);
            } catch (IllegalStateException | UncheckedIOException e) {
                root(spec).err.println(spec.qualifiedName(" ") + ": " + e.getMessage());
                return FAILED;
            } catch (Exception e) {
                root(spec).err.println(spec.qualifiedName(" ") + ": " + e);
                return FAILED;
            }
        }
    }

    @Command(name = "transfer", synopsisHeading = "usage: ",
            description = {"A model between two processes, per transport, family and size (tls: TCP inside TLS).",
                "Options: [--transports inproc,tcp,tls,ucx,ipc] [--families cuda,host,java] "
                        + "[--sizes 1KiB,1MiB,64MiB,1GiB] [--repeat N] [--warmup N] [--out DIR] "
                        + "[--arrays N] [--array-bytes 100KiB]"})
    static final class Transfer extends PassThrough {
        @Override
        int run(String[] a, PrintStream out) throws Exception {
            TransferBench.Options options = TransferBench.Options.parse(a);
            try {
                return TransferBench.run(options, out) == 0 ? OK : FAILED;
            } catch (IllegalArgumentException e) {
                throw new IllegalStateException(e.getMessage(), e);
            }
        }
    }

    @Command(name = "broadcast", synopsisHeading = "usage: ", description = {BROADCAST_HELP, BROADCAST_OPTIONS})
    static final class Broadcast extends PassThrough {
        @Override
        int run(String[] a, PrintStream out) throws Exception {
            ModelBroadcastBench.Options options = ModelBroadcastBench.Options.parse(a);
            try {
                return ModelBroadcastBench.run(options, out) == 0 ? OK : FAILED;
            } catch (IllegalArgumentException e) {
                throw new IllegalStateException(e.getMessage(), e);
            }
        }
    }

    static final String ESTIMATORS_HELP = "Fit and predict time per estimator on device 0 and the CPU, checked "
            + "against the CPU (and scikit-learn's beside the CPU's with --peer sklearn).";
    static final String ESTIMATORS_OPTIONS = "Options: [--rows N] [--cols D] [--repeat R] [--backends device,cpu] "
            + "[--neighbors K] [--estimators NAME,NAME] [--peer sklearn] [--python PATH] [--out DIR] "
            + "[--forest-rows N] [--forest-trees T] [--forest-depth D] [--forest-peer sklearn]";

    @Command(name = "estimators", synopsisHeading = "usage: ",
            description = {ESTIMATORS_HELP, ESTIMATORS_OPTIONS})
    static final class Estimators extends PassThrough {
        @Override
        int run(String[] a, PrintStream out) {
            EstimatorBench.Options options = EstimatorBench.Options.parse(a);
            List<EstimatorBench.Result> results;
            try {
                results = EstimatorBench.run(options, out);
            } catch (IllegalArgumentException e) {
                throw new IllegalStateException(e.getMessage(), e);
            }
            return results.stream().allMatch(EstimatorBench.Result::matchesReference) ? OK : FAILED;
        }
    }
}
