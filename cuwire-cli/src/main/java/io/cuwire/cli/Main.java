package io.cuwire.cli;

import io.cuwire.bench.cluster.ModelBroadcastBench;
import io.cuwire.bench.cuda.CopyBenchmark;
import io.cuwire.bench.ml.EstimatorBench;
import io.cuwire.bench.ml.KnnBench;
import io.cuwire.bench.ml.RooflineBench;
import io.cuwire.bench.spark.MllibArgs;
import io.cuwire.bench.spark.MllibBench;
import io.cuwire.bench.spark.SparkBroadcastArgs;
import io.cuwire.bench.spark.SparkBroadcastBench;
import io.cuwire.bench.spark.SparkClassPath;
import io.cuwire.bench.spark.SparkStagesArgs;
import io.cuwire.bench.spark.SparkStagesCheck;
import io.cuwire.bench.transport.TransferBench;
import io.cuwire.cluster.StandaloneWorker;
import io.cuwire.cuda.Cuda;
import io.cuwire.memory.DType;
import io.cuwire.memory.Devices;
import io.cuwire.memory.MemoryException;
import io.cuwire.ml.modelfile.ModelFile;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

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
    private static final String BROADCAST_HELP = "A cluster broadcast from device 0 to N workers (devices 1..N) over "
            + "ipc (cuda family), each in turn and pipelined, cold, warm and unchanged, against the raw peer copy, and "
            + "with one worker over tcp with the java family.";

    private Main() {}

    public static void main(String[] args) {
        if (System.getProperty("java.util.logging.config.file") == null) {
            // One line per log record on stderr instead of java.util.logging's two.
            System.setProperty("java.util.logging.SimpleFormatter.format", "%4$s: %5$s%6$s%n");
        }
        System.exit(run(args, System.out, System.err));
    }

    /** Runs the command named by {@code args[0]}; returns the process exit code. */
    public static int run(String[] args, PrintStream out, PrintStream err) {
        CommandLine cl = commandLine(out, err);
        int code = cl.execute(args);
        cl.getOut().flush();
        cl.getErr().flush();
        return code;
    }

    /** The command line of every command, printing to {@code out} and {@code err}. */
    static CommandLine commandLine(PrintStream out, PrintStream err) {
        PrintWriter o = new PrintWriter(out, true);
        PrintWriter e = new PrintWriter(err, true);
        CommandLine cl = new CommandLine(new Root(out, err));
        cl.setOut(o).setErr(e).setExpandAtFiles(false).setCaseInsensitiveEnumValuesAllowed(true);
        cl.getSubcommands().get("worker").getCommandSpec().usageMessage().footer(WorkerCommand.exitCodes());
        cl.setParameterExceptionHandler((ex, a) -> refuse(ex, e));
        return cl;
    }

    /** Prints one line naming the command and what was wrong; for the top-level command its usage too. */
    private static int refuse(ParameterException ex, PrintWriter err) {
        CommandLine c = ex.getCommandLine();
        String message = ex.getMessage();
        if (ex instanceof CommandLine.UnmatchedArgumentException u
                && !c.getSubcommands().isEmpty()
                && !u.getUnmatched().isEmpty()
                && !u.getUnmatched().getFirst().startsWith("-")) {
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

    /** {@code -h}, {@code --help} of every command. */
    static final class HelpOption {
        @Option(
                names = {"-h", "--help"},
                usageHelp = true,
                description = "this text")
        boolean help;
    }

    @Command(
            name = "cuwire",
            synopsisHeading = "usage: ",
            customSynopsis = "cuwire <command> [arguments]",
            description = "Moves GPU-resident ML models between a client and workers as header + device frames.",
            commandListHeading = "%ncommands:%n",
            footer = {
                "",
                "the ./cuwire launcher also runs:",
                "  build    compile and package every module (mvn package, no tests)",
                "  test     run the whole test suite (mvn verify)",
                "  bundle   a self-contained directory for GPU hosts (Java runtime, jars, tests)",
                "  bench serialization, bench model-transfer   the JMH and two-JVM benchmarks (cuwire-bench's class "
                        + "path)",
                "",
                "JVM options (e.g. -Dcuwire.device.platform=emulated) go in CUWIRE_JAVA_OPTS.",
                "'cuwire help COMMAND' or 'cuwire COMMAND --help' describes one command."
            },
            subcommands = {
                DemoCommand.class,
                Worker.class,
                InfoCommand.class,
                ModelGroup.class,
                Bench.class,
                CommandLine.HelpCommand.class
            })
    static final class Root implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        final PrintStream out;
        final PrintStream err;

        @Option(
                names = {"-h", "--help"},
                usageHelp = true,
                description = "this text")
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

    @Command(
            name = "demo",
            synopsisHeading = "usage: ",
            sortOptions = false,
            sortSynopsis = false,
            description = DEMO_HELP)
    static final class DemoCommand implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Mixin
        HelpOption help;

        @Mixin
        Demo.Args args;

        @Override
        public Integer call() {
            Demo.Options options;
            try {
                options = args.options();
                options.sweepFor(options.modelBytesOn(Devices.platform()));
            } catch (IllegalArgumentException e) {
                throw bad(spec, e);
            }
            Root r = root(spec);
            return Demo.run(options, r.out, r.err);
        }
    }

    @Command(
            name = "worker",
            synopsisHeading = "usage: ",
            sortOptions = false,
            sortSynopsis = false,
            description = "A cluster worker started by hand: prints '" + StandaloneWorker.LISTENING + " ADDRESS', "
                    + "serves the first client that authenticates with the cluster secret (hex, at least 16 bytes, from "
                    + WorkerCommand.SECRET_VARIABLE + " or else the first line of standard input, never the command "
                    + "line) and exits when that client goes or closes the cluster. It logs why it stopped, and each "
                    + "connection or peer it refused (rate-limited), on standard error.")
    static final class Worker implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Mixin
        HelpOption help;

        @Mixin
        WorkerCommand.Args args;

        @Override
        public Integer call() {
            Root r = root(spec);
            return WorkerCommand.run(args, System.getenv(WorkerCommand.SECRET_VARIABLE), System.in, r.out, r.err);
        }
    }

    @Command(
            name = "info",
            synopsisHeading = "usage: ",
            description = "Devices, the chosen platform and the transports usable here.")
    static final class InfoCommand implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Mixin
        HelpOption help;

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

    @Command(
            name = "model",
            synopsisHeading = "usage: ",
            description = "Model files (docs/model-file.md): what one holds, and cuwire's estimator from one.",
            subcommands = {ModelInspect.class, ModelImport.class, ModelExport.class, ModelHelper.class})
    static final class ModelGroup implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Mixin
        HelpOption help;

        @Override
        public Integer call() {
            spec.commandLine().usage(root(spec).out);
            return OK;
        }
    }

    @Command(
            name = "inspect",
            synopsisHeading = "usage: ",
            description = "Prints a model file's estimator, parameters, attributes and arrays (dtype, shape, range).")
    static final class ModelInspect implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Mixin
        HelpOption help;

        @Parameters(paramLabel = "FILE", arity = "0..1", description = "the model file")
        Path file;

        @Override
        public Integer call() {
            Root r = root(spec);
            if (file == null) {
                throw new ParameterException(spec.commandLine(), "a model FILE is needed");
            }
            return ModelCommand.inspect(file, r.out, r.err);
        }
    }

    @Command(
            name = "import",
            synopsisHeading = "usage: ",
            description = "Builds cuwire's estimator from a model file (as cuwire_sklearn.py writes it from "
                    + "scikit-learn), checking all of it, and prints it.")
    static final class ModelImport implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Mixin
        HelpOption help;

        @Parameters(paramLabel = "FILE", arity = "0..1", description = "the model file")
        Path file;

        @Option(names = "--device", description = "put the estimator on device 0 (default: host memory)")
        boolean device;

        @Option(names = "--dtype", description = "float64 (default) or float32")
        String dtype = "float64";

        @Override
        public Integer call() {
            Root r = root(spec);
            if (file == null) {
                throw new ParameterException(spec.commandLine(), "a model FILE is needed");
            }
            return ModelCommand.importFile(file, device, DType.byName(dtype), r.out, r.err);
        }
    }

    @Command(
            name = "export",
            synopsisHeading = "usage: ",
            description = "Writes a model file's estimator (built as 'cuwire model import' builds it) as an ONNX model "
                    + "(docs/onnx.md): input X float32 (N, features).")
    static final class ModelExport implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Mixin
        HelpOption help;

        @Parameters(paramLabel = "FILE", arity = "0..1", description = "the model file")
        Path file;

        @Option(names = "--onnx", paramLabel = "OUT", description = "the ONNX file to write (replaced if it exists)")
        Path onnx;

        @Override
        public Integer call() {
            Root r = root(spec);
            if (file == null) {
                throw new ParameterException(spec.commandLine(), "a model FILE is needed");
            }
            if (onnx == null) {
                throw new ParameterException(spec.commandLine(), "--onnx OUT is needed (the only format written)");
            }
            return ModelCommand.exportOnnx(file, onnx, r.out, r.err);
        }
    }

    @Command(
            name = "python-helper",
            synopsisHeading = "usage: ",
            description = "Prints cuwire_sklearn.py, the Python helper (NumPy and json only) that writes model files "
                    + "from scikit-learn and rebuilds scikit-learn estimators from them.")
    static final class ModelHelper implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Mixin
        HelpOption help;

        @Override
        public Integer call() {
            root(spec).out.print(ModelFile.sklearnHelper());
            return OK;
        }
    }

    @Command(
            name = "bench",
            synopsisHeading = "usage: ",
            description = "The benchmarks; 'cuwire bench BENCHMARK " + "--help' describes one.",
            commandListHeading = "%nbenchmarks:%n",
            subcommands = {
                Copy.class,
                Transfer.class,
                Broadcast.class,
                Estimators.class,
                Knn.class,
                Roofline.class,
                Mllib.class,
                SparkBroadcast.class,
                SparkStages.class
            })
    static final class Bench implements Callable<Integer> {
        static final String WHICH = "which benchmark? one of: copy, transfer, broadcast, estimators, knn, roofline, "
                + "mllib, spark-broadcast, spark-stages (these three need Spark on the class path; serialization and "
                + "model-transfer run "
                + "through the ./cuwire launcher: ./cuwire bench serialization)";

        @Spec
        CommandSpec spec;

        @Mixin
        HelpOption help;

        @Override
        public Integer call() {
            root(spec).err.println("cuwire bench: " + WHICH);
            return USAGE;
        }
    }

    /**
     * A benchmark: its options are its class's picocli {@code Args} (mixed in), checked into its typed options record
     * before it runs; what goes wrong while it runs is one line naming the command, exit code {@link #FAILED}.
     */
    abstract static class BenchCommand<O> implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Mixin
        HelpOption help;

        /** The typed options; an {@link IllegalArgumentException} names the option that is out of range. */
        abstract O options();

        /** Runs the benchmark; the exit code. */
        abstract int run(O options, PrintStream out) throws Exception;

        @Override
        public Integer call() {
            O options;
            try {
                options = options();
            } catch (IllegalArgumentException e) {
                throw bad(spec, e);
            }
            Root r = root(spec);
            try {
                return run(options, r.out);
            } catch (IllegalArgumentException | IllegalStateException | UncheckedIOException e) {
                r.err.println(spec.qualifiedName(" ") + ": " + e.getMessage());
                return FAILED;
            } catch (Exception e) {
                r.err.println(spec.qualifiedName(" ") + ": " + e);
                return FAILED;
            }
        }
    }

    @Command(
            name = "copy",
            synopsisHeading = "usage: ",
            sortOptions = false,
            sortSynopsis = false,
            description = "Copy bandwidth of the CUDA device: host to device and back (pinned and pageable), device "
                    + "to device and to a second GPU. Needs a CUDA device.")
    static final class Copy extends BenchCommand<CopyBenchmark.Options> {
        @Mixin
        CopyBenchmark.Args args;

        @Override
        CopyBenchmark.Options options() {
            return args.options();
        }

        @Override
        int run(CopyBenchmark.Options options, PrintStream out) {
            if (!Cuda.isAvailable()) {
                throw new IllegalStateException("needs a CUDA device: " + Cuda.unavailableReason());
            }
            CopyBenchmark.run(options, out);
            return OK;
        }
    }

    @Command(
            name = "roofline",
            synopsisHeading = "usage: ",
            sortOptions = false,
            sortSynopsis = false,
            description = "LinearRegression and KMeans predict against the device copy bandwidth and against a "
                    + "read-only pass over X in the same run.")
    static final class Roofline extends BenchCommand<RooflineBench.Options> {
        @Mixin
        RooflineBench.Args args;

        @Override
        RooflineBench.Options options() {
            return args.options();
        }

        @Override
        int run(RooflineBench.Options options, PrintStream out) {
            RooflineBench.Result[] results = RooflineBench.run(options, out);
            return Arrays.stream(results).allMatch(RooflineBench.Result::matchesCpu) ? OK : FAILED;
        }
    }

    @Command(
            name = "transfer",
            synopsisHeading = "usage: ",
            sortOptions = false,
            sortSynopsis = false,
            description = "A model between two processes, per transport, family and size (tls: TCP inside TLS).")
    static final class Transfer extends BenchCommand<TransferBench.Options> {
        @Mixin
        TransferBench.Args args;

        @Override
        TransferBench.Options options() {
            return args.options();
        }

        @Override
        int run(TransferBench.Options options, PrintStream out) throws Exception {
            return TransferBench.run(options, out) == 0 ? OK : FAILED;
        }
    }

    @Command(
            name = "broadcast",
            synopsisHeading = "usage: ",
            sortOptions = false,
            sortSynopsis = false,
            description = BROADCAST_HELP)
    static final class Broadcast extends BenchCommand<ModelBroadcastBench.Options> {
        @Mixin
        ModelBroadcastBench.Args args;

        @Override
        ModelBroadcastBench.Options options() {
            return args.options();
        }

        @Override
        int run(ModelBroadcastBench.Options options, PrintStream out) throws Exception {
            return ModelBroadcastBench.run(options, out) == 0 ? OK : FAILED;
        }
    }

    @Command(
            name = "estimators",
            synopsisHeading = "usage: ",
            sortOptions = false,
            sortSynopsis = false,
            description = "Fit and predict time per estimator on device 0 and the CPU, checked against the CPU (and "
                    + "scikit-learn's beside the CPU's with --peer sklearn).")
    static final class Estimators extends BenchCommand<EstimatorBench.Options> {
        @Mixin
        EstimatorBench.Args args;

        @Override
        EstimatorBench.Options options() {
            return args.options();
        }

        @Override
        int run(EstimatorBench.Options options, PrintStream out) {
            List<EstimatorBench.Result> results = EstimatorBench.run(options, out);
            return results.stream().allMatch(EstimatorBench.Result::matchesReference) ? OK : FAILED;
        }
    }

    @Command(
            name = "knn",
            synopsisHeading = "usage: ",
            sortOptions = false,
            sortSynopsis = false,
            description = "k-nearest-neighbor prediction at scale on device 0: kNearestRows (on CUDA the fused kernel) "
                    + "against a GEMM + select baseline in the same run (and scikit-learn's with --peer sklearn), "
                    + "checked against the CPU.")
    static final class Knn extends BenchCommand<KnnBench.Options> {
        @Mixin
        KnnBench.Args args;

        @Override
        KnnBench.Options options() {
            return args.options();
        }

        @Override
        int run(KnnBench.Options options, PrintStream out) {
            List<KnnBench.Result> results = KnnBench.run(options, out);
            return results.stream().allMatch(KnnBench.Result::matchesCpu) ? OK : FAILED;
        }
    }

    @Command(
            name = "mllib",
            synopsisHeading = "usage: ",
            sortOptions = false,
            sortSynopsis = false,
            description = "cuwire's Spark ML stages against Spark MLlib's on the same Datasets and executors: fit "
                    + "and transform time and quality per pair, on seeded synthetic data and scikit-learn's shipped "
                    + "data sets. Needs Spark on the class path (./cuwire bench mllib, the Spark bundle).")
    static final class Mllib extends BenchCommand<MllibArgs.Options> {
        @Mixin
        MllibArgs args;

        @Override
        MllibArgs.Options options() {
            return args.options();
        }

        @Override
        int run(MllibArgs.Options options, PrintStream out) {
            requireSpark();
            MllibBench.run(options, out);
            return OK;
        }
    }

    @Command(
            name = "spark-broadcast",
            synopsisHeading = "usage: ",
            sortOptions = false,
            sortSynopsis = false,
            description = "A model on every Spark executor: the cuwire handle against sc.broadcast with Kryo, per "
                    + "size, alternating rounds. Needs Spark on the class path (./cuwire bench spark-broadcast, the "
                    + "Spark bundle).")
    static final class SparkBroadcast extends BenchCommand<SparkBroadcastArgs.Options> {
        @Mixin
        SparkBroadcastArgs args;

        @Override
        SparkBroadcastArgs.Options options() {
            return args.options();
        }

        @Override
        int run(SparkBroadcastArgs.Options options, PrintStream out) {
            requireSpark();
            List<SparkBroadcastBench.Result> results = SparkBroadcastBench.run(options, out);
            return results.stream().allMatch(r -> r.cuwireFailed() == null) ? OK : FAILED;
        }
    }

    @Command(
            name = "spark-stages",
            synopsisHeading = "usage: ",
            sortOptions = false,
            sortSynopsis = false,
            description = "cuwire's Spark ML stages fitted and transformed in the executors against the same "
                    + "estimators in one process, and the compute backend each executor ran them on; fails when "
                    + "they differ. Needs Spark on the class path (./cuwire bench spark-stages, the Spark bundle).")
    static final class SparkStages extends BenchCommand<SparkStagesArgs.Options> {
        @Mixin
        SparkStagesArgs args;

        @Override
        SparkStagesArgs.Options options() {
            return args.options();
        }

        @Override
        int run(SparkStagesArgs.Options options, PrintStream out) {
            requireSpark();
            return SparkStagesCheck.run(options, out) ? OK : FAILED;
        }
    }

    /** Refuses a Spark benchmark, naming what is missing, before any of its Spark classes loads. */
    static void requireSpark() {
        SparkClassPath.missing().ifPresent(why -> {
            throw new IllegalStateException(why);
        });
    }
}
