package io.cuwire.bench;

import io.cuwire.bench.harness.BenchChild;
import io.cuwire.bench.harness.Results;
import io.cuwire.bench.harness.Secrets;
import io.cuwire.bench.transport.TransferBench;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.text.ParseException;
import java.time.Duration;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import jdk.jfr.Configuration;
import jdk.jfr.Recording;

/**
 * {@code cuwire bench model-transfer}: a plain Java model ({@link TransferModel}: a {@code float[]} and a few
 * scalars) from this JVM (the client) to a worker JVM it starts ({@link ModelTransferWorker}), over loopback TCP,
 * by every {@link TransferPath}: cuwire's TCP transport with the chains {@code cuda,host} and {@code host}, JDK
 * serialization, Kryo, Fory with out-of-band buffers, and the raw-socket ceiling in four variants.
 *
 * <p>One transfer is timed on the client from the start of serializing until the worker's acknowledgement, which
 * the worker sends once it has the decoded model (a fresh {@code float[]}). Per size, every path gets a connection
 * of its own; the first transfer on it is the cold one; then come untimed warm-up rounds and the timed rounds. Each
 * round runs every path once, in an order rotated by one path per round and reversed every other round. Below
 * {@value #SINGLE_TRANSFER_BYTES} bytes a sample is {@code --reps} transfers back to back (reported per message),
 * after {@code --small-warmup} untimed transfers per path. The ceiling of a size is the raw variant with the lowest
 * median; every ratio is made of medians. Worker and client run with the same JVM flags (the worker gets this JVM's
 * own), printed with the results.
 *
 * <p>Options: {@code --sizes 512MiB,1MiB --paths a,b --rounds 9 --warmup 2 --reps 200 --small-warmup 2000
 * --out DIR --fresh --jfr DIR}. Results: {@code model-transfer-<machine>.md} ({@link Results#machine}) and
 * {@code .csv} in {@code --out}; a run adds itself to the files of the same name (the CSV keeps every run's samples,
 * the Markdown file one section per run and a summary over all), unless {@code --fresh}.
 */
public final class ModelTransferBench {
    /** Sizes from here up move one transfer per sample. */
    static final long SINGLE_TRANSFER_BYTES = 64L << 20;

    private static final long WORKER_WAIT_SECONDS = 60;

    private ModelTransferBench() {}

    /**
     * What to run.
     *
     * @param sizes weight bytes per model
     * @param paths the paths, each run once per round
     * @param rounds timed rounds per size
     * @param warmup untimed rounds per size after the cold transfer (sizes of at least
     *     {@value #SINGLE_TRANSFER_BYTES} bytes)
     * @param reps transfers per sample below {@value #SINGLE_TRANSFER_BYTES} bytes
     * @param smallWarmup untimed transfers per path before the rounds below {@value #SINGLE_TRANSFER_BYTES} bytes
     * @param out the results directory, or {@code null} for none
     * @param fresh whether to start the results files afresh instead of adding this run to them
     * @param jfr a directory for a flight recording of each JVM ({@code client.jfr}, {@code worker.jfr}), or
     *     {@code null}
     * @param workerJvmArgs the worker's JVM flags
     * @param leftOut why a path of the default set was left out ({@code dask-scatter} where Python has no Dask), or
     *     {@code null}
     */
    record Options(
            List<Long> sizes,
            List<TransferPath> paths,
            int rounds,
            int warmup,
            int reps,
            int smallWarmup,
            Path out,
            boolean fresh,
            Path jfr,
            List<String> workerJvmArgs,
            String leftOut) {
        static Options parse(String... args) {
            List<Long> sizes = List.of(512L << 20, 1L << 20);
            List<TransferPath> paths = null;
            int rounds = 9;
            int warmup = 2;
            int reps = 200;
            int smallWarmup = 2000;
            Path out = Path.of("bench", "results");
            boolean fresh = false;
            Path jfr = null;
            for (int i = 0; i < args.length; i++) {
                String flag = args[i];
                if (flag.equals("--fresh")) {
                    fresh = true;
                    continue;
                }
                if (i + 1 >= args.length) {
                    throw new IllegalArgumentException(flag + " needs a value");
                }
                String v = args[++i];
                switch (flag) {
                    case "--sizes" -> {
                        List<Long> ss = new ArrayList<>();
                        for (String s : v.split(",")) {
                            ss.add(TransferBench.parseSize(s));
                        }
                        sizes = ss;
                    }
                    case "--paths" -> paths = TransferPath.parse(v);
                    case "--rounds" -> rounds = TransferBench.atLeast(flag, v, 1);
                    case "--warmup" -> warmup = TransferBench.atLeast(flag, v, 0);
                    case "--reps" -> reps = TransferBench.atLeast(flag, v, 1);
                    case "--small-warmup" -> smallWarmup = TransferBench.atLeast(flag, v, 0);
                    case "--out" -> out = Path.of(v);
                    case "--jfr" -> jfr = Path.of(v);
                    default -> throw new IllegalArgumentException("unknown option " + flag);
                }
            }
            String leftOut = null;
            if (paths == null) {
                // every path; Dask's where this machine's Python has it
                paths = new ArrayList<>(List.of(TransferPath.values()));
                leftOut = DaskPeer.unavailable()
                        .map(why -> TransferPath.DASK.label() + " not run: " + why)
                        .orElse(null);
                if (leftOut != null) {
                    paths.remove(TransferPath.DASK);
                }
            }
            return new Options(sizes, paths, rounds, warmup, reps, smallWarmup, out, fresh, jfr, ownJvmArgs(), leftOut);
        }

        Options withWorkerJvmArgs(List<String> args) {
            return new Options(
                    sizes, paths, rounds, warmup, reps, smallWarmup, out, fresh, jfr, List.copyOf(args), leftOut);
        }
    }

    /** This JVM's flags, less those a second JVM must not copy (a debugger's port, a recording's file). */
    static List<String> ownJvmArgs() {
        List<String> args = new ArrayList<>();
        for (String a : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
            if (!a.startsWith("-agentlib:jdwp")
                    && !a.startsWith("-XX:StartFlightRecording")
                    && !a.startsWith("-XX:FlightRecorderOptions")) {
                args.add(a);
            }
        }
        return args;
    }

    private static final String USAGE = "usage: cuwire bench model-transfer [--sizes 512MiB,1MiB] [--paths a,b]"
            + " [--rounds 9] [--warmup 2] [--reps 200] [--small-warmup 2000] [--out DIR]"
            + " [--fresh] [--jfr DIR]\npaths (default: all; dask-scatter where Python imports distributed): "
            + String.join(
                    ",",
                    Stream.of(TransferPath.values()).map(TransferPath::label).toList());

    public static void main(String[] args) throws Exception {
        if (List.of(args).contains("--help")) {
            System.out.println(USAGE);
            return;
        }
        Options options;
        try {
            options = Options.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("cuwire bench model-transfer: " + e.getMessage());
            System.err.println(USAGE);
            System.exit(2);
            return;
        }
        System.exit(run(options, System.out));
    }

    /** One run: every size, every path; prints as it goes, writes the results; the exit code (1 if a path failed). */
    static int run(Options options, PrintStream out) throws IOException, InterruptedException {
        ModelTransferReport.Run run = new ModelTransferReport.Run(
                ZonedDateTime.now(ZoneOffset.UTC).format(DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm 'UTC'")),
                commit(),
                options,
                load());
        out.println("cuwire bench model-transfer: " + run.environment().replace("\n", "\n  "));
        Recording recording = null;
        if (options.jfr() != null) {
            Files.createDirectories(options.jfr());
            recording = startRecording(options.jfr().resolve("client.jfr"));
        }
        boolean ok = true;
        long largest = options.sizes().stream().mapToLong(Long::longValue).max().orElse(0);
        if (largest + 4096 > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("a model of " + largest + " bytes: the plain-socket paths move at most "
                    + (Integer.MAX_VALUE - 8 - 4096) + " (one direct buffer)");
        }
        // raw-once writes from it, Fory stages its out-of-band buffers in it (a slice per size)
        ByteBuffer bigSource = ModelTransferWorker.touched((int) largest + 4096);
        try (WorkerProcess worker = WorkerProcess.start(options)) {
            run.workerMaxHeap = worker.maxHeap;
            for (long size : options.sizes()) {
                ok &= runSize(
                        options,
                        run,
                        worker,
                        size,
                        bigSource.duplicate().clear().limit((int) size + 4096).slice(),
                        out);
            }
        } finally {
            if (recording != null) {
                recording.close();
                out.println("wrote " + options.jfr().resolve("client.jfr") + " and worker.jfr");
            }
        }
        run.loadAtEnd = load();
        List<Path> written = options.out() == null
                ? List.of()
                : ModelTransferReport.write(options.out(), "model-transfer-" + Results.machine(), run, options.fresh());
        out.println();
        out.print(run.markdown());
        if (!written.isEmpty()) {
            out.println("wrote " + written.get(0) + " and " + written.get(1));
        }
        return ok ? 0 : 1;
    }

    /** The transfers of one size: connections, cold transfers, warm-up, timed rounds, the worker's checks. */
    private static boolean runSize(
            Options options,
            ModelTransferReport.Run run,
            WorkerProcess worker,
            long size,
            ByteBuffer bigSource,
            PrintStream out)
            throws IOException, InterruptedException {
        long[] clientGcStart = gc();
        TransferModel model = TransferModel.of(size);
        boolean single = size >= SINGLE_TRANSFER_BYTES;
        int reps = single ? 1 : options.reps();
        Map<TransferPath, TransferSender> senders = new LinkedHashMap<>();
        Map<TransferPath, Long> sent = new LinkedHashMap<>();
        boolean ok = true;
        out.printf(Locale.ROOT, "%n%s: cold transfers%n", ModelTransferReport.size(size));
        try {
            for (TransferPath p : options.paths()) {
                try {
                    senders.put(
                            p,
                            TransferSender.open(
                                    p,
                                    "127.0.0.1",
                                    worker.socketPort,
                                    worker.cuwireAddress,
                                    worker.secret,
                                    size,
                                    bigSource));
                    sent.put(p, 0L);
                } catch (IOException | RuntimeException e) {
                    run.fail(size, p, "cannot connect: " + e);
                    out.println("  " + p.label() + ": cannot connect: " + e);
                    ok = false;
                }
            }
            for (TransferPath p : List.copyOf(senders.keySet())) {
                long ns = timed(senders, sent, p, model, 1, run, size, out);
                if (ns >= 0) {
                    run.sample(size, p, "cold", 0, 0, 1, ns);
                    out.printf(Locale.ROOT, "  %-17s %10.3f ms%n", p.label(), ns / 1e6);
                }
            }
            if (single) {
                for (int r = 0; r < options.warmup(); r++) {
                    for (TransferPath p : rotated(senders, r)) {
                        timed(senders, sent, p, model, 1, run, size, out);
                    }
                }
            } else {
                for (TransferPath p : rotated(senders, 0)) {
                    timed(senders, sent, p, model, options.smallWarmup(), run, size, out);
                }
            }
            out.printf(
                    Locale.ROOT,
                    "%s: %d rounds%s%n",
                    ModelTransferReport.size(size),
                    options.rounds(),
                    single ? "" : " of " + reps + " messages per path");
            for (int r = 0; r < options.rounds(); r++) {
                StringBuilder line = new StringBuilder("  round " + (r + 1) + ":");
                int position = 0;
                for (TransferPath p : rotated(senders, r)) {
                    long ns = timed(senders, sent, p, model, reps, run, size, out);
                    if (ns >= 0) {
                        run.sample(size, p, "warm", r + 1, position, reps, (double) ns / reps);
                        line.append(String.format(Locale.ROOT, " %s %.3f", p.label(), ns / 1e6 / reps));
                    }
                    position++;
                }
                out.println(line.append(" ms"));
            }
        } finally {
            for (TransferSender s : senders.values()) {
                if (s.receiver() != null) {
                    run.workerReport(size, s.path, s.receiver());
                }
                if (!s.phases().isEmpty()) {
                    run.phases(
                            size,
                            s.path,
                            "client",
                            Phases.parseMillis(s.phases().split(" ")));
                }
                try {
                    s.close();
                } catch (IOException | RuntimeException e) {
                    out.println("  closing " + s.path.label() + ": " + e);
                }
            }
        }
        long[] workerGc = worker.gc.clone();
        List<TransferPath> toWorker =
                sent.keySet().stream().filter(TransferPath::toWorker).toList();
        for (var e : worker.awaitReports(toWorker, WORKER_WAIT_SECONDS).entrySet()) {
            TransferPath p = e.getKey();
            String report = e.getValue();
            long expected = sent.get(p);
            run.workerReport(size, p, report);
            String[] parts = report.split(" ");
            if (report.startsWith("DONE ") && parts.length >= 5) {
                worker.gc[0] = Math.max(worker.gc[0], Long.parseLong(parts[3]));
                worker.gc[1] = Math.max(worker.gc[1], Long.parseLong(parts[4]));
                Map<String, Double> phases = Phases.parseMillis(parts);
                if (!phases.isEmpty()) {
                    run.phases(size, p, "worker", phases);
                }
            }
            if (!report.startsWith("DONE ") || Long.parseLong(parts[2]) != expected) {
                if (!run.failed(size, p)) {
                    run.fail(size, p, "the worker reports '" + report + "' after " + expected + " transfers");
                }
                ok = false;
            }
        }
        long[] clientGc = gc();
        run.gc(
                size,
                clientGc[0] - clientGcStart[0],
                clientGc[1] - clientGcStart[1],
                worker.gc[0] - workerGc[0],
                worker.gc[1] - workerGc[1]);
        return ok && !run.anyFailed(size);
    }

    /** This JVM's collections so far and their time in ms. */
    private static long[] gc() {
        String[] g = ModelTransferWorker.gc().split(" ");
        return new long[] {Long.parseLong(g[0]), Long.parseLong(g[1])};
    }

    /**
     * Times {@code reps} transfers of {@code model} over {@code p}'s sender, in ns; -1 if one failed (the path is
     * then marked failed, its sender closed and dropped from {@code senders}).
     */
    private static long timed(
            Map<TransferPath, TransferSender> senders,
            Map<TransferPath, Long> sent,
            TransferPath p,
            TransferModel model,
            int reps,
            ModelTransferReport.Run run,
            long size,
            PrintStream out) {
        TransferSender s = senders.get(p);
        long seq = sent.get(p);
        try {
            long ns = s.transfers(model, seq, reps);
            seq += reps;
            sent.put(p, seq);
            return ns;
        } catch (IOException | RuntimeException e) {
            sent.put(p, seq);
            run.fail(size, p, "transfers from " + seq + " failed: " + e);
            out.println("  " + p.label() + ": transfers from " + seq + " failed: " + e);
            senders.remove(p);
            try {
                s.close();
            } catch (IOException | RuntimeException suppressed) {
                e.addSuppressed(suppressed);
            }
            return -1;
        }
    }

    /** The system property that makes a worker record itself into the file it names. */
    static final String JFR_PROPERTY = "cuwire.bench.jfr";

    /**
     * Starts a flight recording to {@code file}, written when it is closed: the JDK's {@code profile} settings,
     * with Java and native method samples every millisecond (their 10 and 20 ms see too little of a 0.3 ms transfer).
     */
    static Recording startRecording(Path file) throws IOException {
        Recording r;
        try {
            r = new Recording(Configuration.getConfiguration("profile"));
        } catch (ParseException e) {
            throw new IOException("the JDK's 'profile' recording settings do not parse: " + e.getMessage(), e);
        }
        r.enable("jdk.ExecutionSample").withPeriod(Duration.ofMillis(1));
        r.enable("jdk.NativeMethodSample").withPeriod(Duration.ofMillis(1));
        r.setDestination(file);
        r.start();
        return r;
    }

    /**
     * The order of round {@code r}: the senders' paths rotated left by {@code r}, and reversed in odd rounds, so that
     * no path always runs right after the same one (what a path leaves behind, in the caches or the worker's heap,
     * falls on its neighbours).
     */
    static List<TransferPath> rotated(Map<TransferPath, ?> senders, int r) {
        List<TransferPath> paths = new ArrayList<>(senders.keySet());
        if (!paths.isEmpty()) {
            Collections.rotate(paths, -(r % paths.size()));
        }
        if (r % 2 == 1) {
            Collections.reverse(paths);
        }
        return paths;
    }

    /** The one-minute load average, or -1. */
    static double load() {
        return ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage();
    }

    /** The checked-out commit (with "+changes" when the tree differs from it), or "unknown". */
    static String commit() {
        try {
            String head = git("rev-parse", "--short", "HEAD");
            return head.isEmpty()
                    ? "unknown"
                    : head
                            + (git("status", "--porcelain", "--untracked-files=no")
                                            .isEmpty()
                                    ? ""
                                    : "+changes");
        } catch (IOException e) {
            return "unknown";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "unknown";
        }
    }

    private static String git(String... args) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of("git"));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd)
                .redirectError(ProcessBuilder.Redirect.DISCARD)
                .start();
        String s = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        return p.waitFor() == 0 ? s : "";
    }

    /** The worker JVM: its addresses, and the report lines it writes on its standard output. */
    static final class WorkerProcess implements AutoCloseable {
        final BenchChild jvm;
        final String cuwireAddress;
        final int socketPort;
        final long maxHeap;
        /** The worker's collections and their ms, as of its last line. */
        final long[] gc;

        /** The worker's output lines, from its first: {@link #awaitReports} reads its reports from here. */
        private final BlockingQueue<String> lines;

        /** The run's secret, which the worker got in its environment. */
        final byte[] secret;

        private WorkerProcess(BenchChild jvm, BlockingQueue<String> lines, byte[] secret) {
            this.jvm = jvm;
            this.lines = lines;
            this.secret = secret;
            List<String> ready = jvm.ready();
            this.cuwireAddress = ready.get(0);
            this.socketPort = Integer.parseInt(ready.get(1));
            this.maxHeap = Long.parseLong(ready.get(2));
            this.gc = new long[] {Long.parseLong(ready.get(3)), Long.parseLong(ready.get(4))};
        }

        static WorkerProcess start(Options options) throws IOException {
            List<String> jvmOptions = new ArrayList<>(options.workerJvmArgs());
            if (options.jfr() != null) {
                jvmOptions.add("-D" + JFR_PROPERTY + "="
                        + options.jfr().resolve("worker.jfr").toAbsolutePath());
            }
            byte[] secret = Secrets.generate();
            BlockingQueue<String> lines = new LinkedBlockingQueue<>();
            return new WorkerProcess(
                    BenchChild.start(ModelTransferWorker.class, jvmOptions, secret, lines::add), lines, secret);
        }

        /** The worker's {@code DONE} or {@code FAIL} line for each of {@code paths}, waiting up to {@code seconds}. */
        Map<TransferPath, String> awaitReports(Iterable<TransferPath> paths, long seconds) throws InterruptedException {
            Map<TransferPath, String> reports = new LinkedHashMap<>();
            Map<String, TransferPath> byLabel = new LinkedHashMap<>();
            for (TransferPath p : paths) {
                byLabel.put(p.label(), p);
                reports.put(p, "no report from the worker within " + seconds + " s");
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
            int missing = byLabel.size();
            while (missing > 0) {
                String line = lines.poll(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                if (line == null) {
                    break;
                }
                String[] parts = line.split(" ", 3);
                TransferPath p = parts.length > 1 ? byLabel.remove(parts[1]) : null;
                if (p != null) {
                    reports.put(p, line);
                    missing--;
                }
            }
            return reports;
        }

        @Override
        public void close() {
            jvm.close();
        }
    }
}
