package io.cuwire.bench.cluster;

import io.cuwire.bench.harness.Cli;
import io.cuwire.bench.harness.Results;
import io.cuwire.bench.harness.Stats;
import io.cuwire.bench.harness.Table;
import io.cuwire.bench.transport.TransferBench;
import io.cuwire.cluster.BroadcastOptions;
import io.cuwire.cluster.BroadcastResult;
import io.cuwire.cluster.Client;
import io.cuwire.cluster.LocalCluster;
import io.cuwire.cluster.MlTasks;
import io.cuwire.cluster.WorkerStats;
import io.cuwire.memory.CopyDirection;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.DType;
import io.cuwire.memory.Devices;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import io.cuwire.memory.TransferStats;
import io.cuwire.ml.neighbors.NearestNeighbors;
import io.cuwire.ml.neighbors.Neighbors;
import io.cuwire.serialize.Family;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.stream.Collectors;
import picocli.CommandLine;
import picocli.CommandLine.Option;

/**
 * {@code cuwire bench broadcast}: a model broadcast from the client (device 0) to {@code --workers} workers, per size
 * and strategy, measured against the raw copy of the same bytes in the same run (a peer copy to the first worker's
 * GPU; on a host of one device, where the workers share device 0 with the client, a device-to-device copy).
 *
 * <p>Worker {@code i} sits on device {@code 1 + i mod (devices - 1)}: devices 1..N when the host has N + 1, spread
 * round-robin over the devices but 0 when it has fewer, device 0 when it has only one (the header line says where
 * each worker is). The model is a {@link NearestNeighbors} whose training rows ({@code float32}, 64 columns) hold
 * each of {@code --sizes} bytes on the client's device. Per size, over IPC with the {@code cuda} family: the raw
 * ceiling, the median copy engine copy of the same bytes device 0 → the first worker's device
 * ({@link TransferBench#copyMs}); then per strategy of {@code --strategies} ({@code each}: each worker in turn from
 * the client, {@code chain}, {@code tree}: pipelined through the workers, see {@link BroadcastOptions.Strategy}),
 * starting from a new model version: the first broadcast (cold: no worker holds it), {@code --repeat} warm ones, each
 * of a new version (the model is refitted, so no worker's cache can short-circuit it), and {@code --repeat}
 * re-broadcasts of the unchanged model (only its identity travels: the run fails if one sends frames). A broadcast's
 * time runs from the call to the last worker's acknowledgement (the model decoded on its device and cached).
 * Outside the timing, every worker's copy is checked after the cold and the last warm broadcast: each of a few rows
 * of the model, as a query, finds itself as its nearest row there.
 *
 * <p>With one worker, the same model then goes over TCP with the {@code java} family (JDK serialization, the pickle
 * baseline): cold and {@code min(repeat, 3)} warm. With more workers that part is skipped, with a printed reason: it
 * is a single-link baseline, and seven JVMs deserializing gigabytes of heap would measure the heap, not the link.
 *
 * <p>Before anything is timed, {@code --warmup} broadcasts of a small model (16 KiB, new and unchanged versions
 * alternating, cycling through the strategies; default {@value #DEFAULT_WARMUP}) run untimed over the same cluster,
 * so that "warm" means JIT-compiled too: a JVM runs a method's first thousands of calls in the interpreter or lower
 * compiler tiers (the transfer benchmark measured 1.5 ms per 1 KiB IPC message after 30 messages, 0.2 ms after 500).
 * The small model's frames take IPC's push path (frames of at most 64 KiB go into the worker's arena); a larger
 * model's are pulled by the worker, a path the JIT first sees in the case itself. So after each case's cold broadcast
 * more broadcasts of the case's model, each a new version, run untimed before the timed ones: at least
 * {@value #CASE_WARMUP} (or {@code --repeat} if fewer) and until {@code --case-warmup} ms have passed (0: none).
 * Without them the warm 64 MiB broadcast over IPC took twice as long on one H200 (2026-12-03: 0.76 against 0.37 ms,
 * the means of three runs each).
 *
 * <p>Lines start with {@code RESULT}: one per case, with {@code vs_raw} (the broadcast's time over the raw copy's)
 * and {@code gbps_aggregate} (workers × size / time; the java lines carry {@code java_vs_cuda} instead, java warm over
 * cuda warm), and one summary per size. With one worker the summary checks the single-link targets (warm at most
 * 1.15 × raw, java at least 50 × cuda); with more, issue 8's: the best pipelined strategy's warm broadcast at most
 * 1.5 × raw from 1 GiB up, and every re-broadcast of an unchanged model under 1 ms. A CSV and a markdown table go
 * to {@code --out}.
 */
public final class ModelBroadcastBench {
    private static final int COLS = 64;
    private static final int JAVA_MAX_REPEAT = 3;
    private static final int CHECK_ROWS = 4;
    /** Untimed small broadcasts before the timed ones, unless {@code --warmup} says. */
    static final int DEFAULT_WARMUP = 5000;

    private static final long WARMUP_BYTES = 16 << 10;
    /** The least untimed broadcasts of a case's model after its cold one. */
    static final int CASE_WARMUP = 3;
    /** The rows are generated in pieces of this many bytes (whole rows). */
    private static final long PIECE = 16L << 20;

    private static final double SINGLE_TARGET = 1.15;
    private static final double JAVA_TARGET = 50;
    private static final double PIPELINED_TARGET = 1.5;
    private static final long PIPELINED_TARGET_FROM = 1L << 30;
    private static final double UNCHANGED_TARGET_MS = 1;

    private ModelBroadcastBench() {}

    /**
     * What to run.
     *
     * @param sizes bytes of the model's array, per case (multiples of 256)
     * @param workers worker JVMs
     * @param strategies how the broadcasts go, in this order
     * @param repeat warm and unchanged broadcasts per case (and raw copies)
     * @param out directory for the CSV and markdown, or {@code null}
     * @param java whether to run the {@code java} family over TCP (one worker only)
     * @param warmup untimed broadcasts of a small model before the timed ones
     * @param chunkBytes the pieces a chain or tree forwards
     * @param transports the local cluster's transports for the {@code cuda} family's broadcasts, in this order
     *     ({@code ipc}, {@code ucx})
     * @param caseWarmupMillis the least time each case's untimed broadcasts after its cold one take
     *     ({@code --case-warmup})
     */
    public record Options(
            List<Long> sizes,
            int workers,
            List<BroadcastOptions.Strategy> strategies,
            int repeat,
            Path out,
            boolean java,
            int warmup,
            long chunkBytes,
            List<String> transports,
            int caseWarmupMillis) {
        public Options {
            sizes = List.copyOf(sizes);
            strategies = List.copyOf(strategies);
            transports = List.copyOf(transports);
        }

        /** Parses the options of {@link Args} ({@code cuwire bench broadcast --help}). */
        public static Options parse(String... args) {
            return Cli.parse(new Args(), args).options();
        }
    }

    /** The options of {@code cuwire bench broadcast}, declared to picocli (the command mixes them in). */
    public static final class Args {
        /** The options at their defaults, for picocli to fill. */
        public Args() {}

        @Option(
                names = "--workers",
                paramLabel = "N",
                defaultValue = "1",
                description =
                        "worker JVMs, on devices 1..N (device 0 on a one-device host) " + "(default: ${DEFAULT-VALUE})")
        int workers;

        @Option(
                names = {"--sizes", "--size"},
                split = ",",
                paramLabel = "SIZE",
                converter = RowsSize.class,
                defaultValue = "1GiB",
                description = "model sizes, whole rows of " + COLS + " float32 " + "(default: ${DEFAULT-VALUE})")
        List<Long> sizes;

        @Option(
                names = "--strategies",
                split = ",",
                paramLabel = "S",
                converter = StrategyName.class,
                description = "each, chain, tree, in this order (default: each for one worker, all three for more)")
        List<BroadcastOptions.Strategy> strategies;

        @Option(
                names = "--chunk",
                paramLabel = "SIZE",
                converter = Cli.SizeConverter.class,
                description = "the pieces a chain or tree forwards, at least 4KiB (default: the cluster's own, "
                        + "BroadcastOptions.DEFAULT)")
        Long chunkBytes;

        @Option(
                names = "--repeat",
                paramLabel = "N",
                defaultValue = "5",
                description = "warm and unchanged broadcasts per case, and raw copies (default: ${DEFAULT-VALUE})")
        int repeat;

        @Option(
                names = "--transports",
                split = ",",
                paramLabel = "T",
                defaultValue = "ipc",
                description = "the cluster's transports for the cuda family, in this order: ipc, ucx (default: "
                        + "${DEFAULT-VALUE})")
        List<String> transports;

        @Option(
                names = "--warmup",
                paramLabel = "N",
                defaultValue = "" + DEFAULT_WARMUP,
                description = "untimed broadcasts of a small model first (default: ${DEFAULT-VALUE})")
        int warmup;

        @Option(
                names = "--case-warmup",
                paramLabel = "MS",
                defaultValue = "1000",
                description = "untimed broadcasts of each case's model after its cold one, each a new version: at "
                        + "least " + CASE_WARMUP + " and until MS ms have passed; 0: none (default: ${DEFAULT-VALUE})")
        int caseWarmupMillis;

        @Option(
                names = "--java",
                paramLabel = "true|false",
                arity = "1",
                defaultValue = "true",
                description = "whether to run the java family over tcp, one worker (default: ${DEFAULT-VALUE})")
        boolean java;

        @Option(
                names = "--out",
                paramLabel = "DIR",
                defaultValue = "bench/results",
                description = "where the run is recorded, broadcast-<machine>.md and .csv (default: ${DEFAULT-VALUE})")
        Path out;

        /**
         * The typed options.
         *
         * @throws IllegalArgumentException naming the option whose value is out of range or repeated
         */
        public Options options() {
            long chunk = chunkBytes != null ? chunkBytes : BroadcastOptions.DEFAULT.chunkBytes();
            if (chunk < 4096) {
                throw new IllegalArgumentException("--chunk " + chunk + " (expected: at least 4KiB)");
            }
            List<BroadcastOptions.Strategy> s = strategies != null
                    ? strategies
                    : workers == 1
                            ? List.of(BroadcastOptions.Strategy.EACH_IN_TURN)
                            : List.of(BroadcastOptions.Strategy.values());
            if (s.size() != s.stream().distinct().count()) {
                throw new IllegalArgumentException("--strategies "
                        + s.stream().map(ModelBroadcastBench::name).toList()
                        + " (expected: each strategy at most once)");
            }
            for (String t : transports) {
                if (!List.of("ipc", "ucx").contains(t)) {
                    throw new IllegalArgumentException(
                            "--transports " + String.join(",", transports) + " (expected: ipc, ucx)");
                }
            }
            if (transports.size() != transports.stream().distinct().count()) {
                throw new IllegalArgumentException(
                        "--transports " + String.join(",", transports) + " (expected: each transport at most once)");
            }
            return new Options(
                    sizes,
                    Cli.atLeast("--workers", workers, 1),
                    s,
                    Cli.atLeast("--repeat", repeat, 1),
                    out,
                    java,
                    Cli.atLeast("--warmup", warmup, 0),
                    chunk,
                    transports,
                    Cli.atLeast("--case-warmup", caseWarmupMillis, 0));
        }
    }

    /** A size of {@code --sizes}: whole rows of the model. */
    static final class RowsSize implements CommandLine.ITypeConverter<Long> {
        @Override
        public Long convert(String s) {
            long size;
            try {
                size = TransferBench.parseSize(s);
            } catch (IllegalArgumentException e) {
                throw new CommandLine.TypeConversionException(e.getMessage());
            }
            if (size % (COLS * 4) != 0) {
                throw new CommandLine.TypeConversionException(
                        s + " (expected: a multiple of " + COLS * 4 + " bytes, whole rows of " + COLS + " float32)");
            }
            return size;
        }
    }

    /** A strategy of {@code --strategies} by its short name. */
    static final class StrategyName implements CommandLine.ITypeConverter<BroadcastOptions.Strategy> {
        @Override
        public BroadcastOptions.Strategy convert(String s) {
            for (BroadcastOptions.Strategy strategy : BroadcastOptions.Strategy.values()) {
                if (name(strategy).equals(s.strip())) {
                    return strategy;
                }
            }
            throw new CommandLine.TypeConversionException(
                    "unknown strategy '" + s + "' (expected: each, chain or " + "tree)");
        }
    }

    /** The short name of {@code s} on the command line and in the lines: {@code each}, {@code chain}, {@code tree}. */
    static String name(BroadcastOptions.Strategy s) {
        return switch (s) {
            case EACH_IN_TURN -> "each";
            case CHAIN -> "chain";
            case TREE -> "tree";
        };
    }

    /**
     * Worker {@code i}'s device: {@code 1 + i mod (devices - 1)} (devices 1..N on a host of N + 1), or 0 on a host of
     * one device.
     */
    static int[] placement(int workers, int devices) {
        int[] ordinals = new int[workers];
        for (int i = 0; i < workers; i++) {
            ordinals[i] = devices >= 2 ? 1 + i % (devices - 1) : 0;
        }
        return ordinals;
    }

    /**
     * One measured case.
     *
     * @param size bytes of the model's array
     * @param strategy {@code each}, {@code chain} or {@code tree}; {@code none} for the raw copy
     * @param transport {@code ipc} or {@code tcp}
     * @param family the serializer family
     * @param phase {@code raw}, {@code cold}, {@code warm} or {@code unchanged}
     * @param medianMs the median (the one time for {@code cold})
     * @param minMs the fastest
     * @param maxMs the slowest
     * @param copies how many copies of the bytes arrived: the workers for a broadcast, 1 for the raw copy
     * @param hostBytes bytes the client's and the workers' copy engines moved device to host and back in the last
     *     broadcast of the case
     * @param sent workers that received the model's frames in the last broadcast of the case (0 for the raw copy)
     * @param ratio for the cuda family, the median over the raw copy's ({@code vs_raw}); for the java family, over
     *     the cuda family's warm ({@code java_vs_cuda})
     * @param checked whether every worker's copy checked out
     */
    public record Result(
            long size,
            String strategy,
            String transport,
            Family family,
            String phase,
            double medianMs,
            double minMs,
            double maxMs,
            int copies,
            long hostBytes,
            int sent,
            double ratio,
            boolean checked) {
        /** Bytes per second of one copy over the median, in GB/s. */
        public double gbps() {
            return size / (medianMs * 1e6);
        }

        /** Every copy's bytes over the median, in GB/s. */
        public double gbpsAggregate() {
            return copies * gbps();
        }
    }

    public static void main(String[] args) throws IOException {
        Options options;
        try {
            options = Options.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("cuwire bench broadcast: " + e.getMessage());
            System.exit(2);
            return;
        }
        System.exit(run(options, System.out));
    }

    /** Runs the benchmark, printing to {@code out}; the exit code (1 if a worker's copy did not check out). */
    public static int run(Options options, PrintStream out) throws IOException {
        int n = options.workers();
        int[] devices = placement(n, Devices.all().size());
        String where = Arrays.stream(devices).mapToObj(Integer::toString).collect(Collectors.joining(","));
        out.printf(
                Locale.ROOT,
                "cuwire bench broadcast: platform %s, client on device 0 (%s), %d worker(s) on "
                        + "device(s) %s (worker i on the i-th), sizes %s, strategies %s, repeat %d, chunks of %d bytes; "
                        + "vs_raw = broadcast time (to the last worker's acknowledgement) / raw %s time device 0 -> %d, "
                        + "gbps_aggregate = workers x size / time; targets: %s%n",
                Devices.platform(),
                Devices.get(0).name(),
                n,
                where,
                options.sizes().stream().map(String::valueOf).collect(Collectors.joining(",")),
                options.strategies().stream().map(ModelBroadcastBench::name).collect(Collectors.joining(",")),
                options.repeat(),
                options.chunkBytes(),
                devices[0] == 0 ? "device-to-device copy" : "peer copy",
                devices[0],
                n == 1
                        ? "warm <= 1.15 x raw, java warm >= 50 x cuda warm"
                        : "best pipelined warm <= 1.5 x raw from 1 GiB up, unchanged < 1 ms");
        List<Result> results = new ArrayList<>();
        for (String transport : options.transports()) {
            try (LocalCluster cluster = LocalCluster.builder()
                    .workers(n)
                    .devices(devices)
                    .transport(transport)
                    .start()) {
                Client client = cluster.client();
                warmUp(client, options.warmup(), options.strategies());
                for (long size : options.sizes()) {
                    try (NdArray x = rows(client, size);
                            NearestNeighbors model = new NearestNeighbors().fit(x)) {
                        double[] copies =
                                TransferBench.copyMs(client.memory(), Devices.get(devices[0]), size, options.repeat());
                        double raw = Stats.median(copies);
                        results.add(print(
                                out,
                                n,
                                new Result(
                                        size,
                                        "none",
                                        transport,
                                        Family.CUDA,
                                        "raw",
                                        raw,
                                        min(copies),
                                        max(copies),
                                        1,
                                        0,
                                        0,
                                        1,
                                        true)));
                        for (BroadcastOptions.Strategy s : options.strategies()) {
                            BroadcastOptions cuda = BroadcastOptions.DEFAULT
                                    .family(Family.CUDA)
                                    .strategy(s)
                                    .chunkBytes(options.chunkBytes());
                            results.addAll(broadcasts(
                                    out,
                                    client,
                                    n,
                                    model,
                                    x,
                                    cuda,
                                    transport,
                                    options.repeat(),
                                    options.caseWarmupMillis(),
                                    size,
                                    raw));
                        }
                    }
                }
            }
        }
        if (options.java() && n > 1) {
            out.printf(
                    Locale.ROOT,
                    "SKIP bench=broadcast transport=tcp family=java reason=\"the java family runs "
                            + "with --workers 1 only: it is the single-link baseline\"%n");
        } else if (options.java()) {
            for (long size : options.sizes()) {
                results.addAll(javaFamily(out, size, devices[0], options.repeat(), reference(results, size)));
            }
        }
        boolean ok = results.stream().allMatch(Result::checked);
        List<String> summaries = new ArrayList<>();
        for (long size : options.sizes()) {
            String line = n == 1 ? singleSummary(results, size) : summary(results, n, size);
            out.println(line);
            summaries.add(line);
        }
        if (options.out() != null) {
            for (Path p : write(options.out(), n, where, results, summaries)) {
                out.println("wrote " + p);
            }
        }
        return ok ? 0 : 1;
    }

    /** The java family over TCP to one worker, cold and warm, against the cuda family's warm {@code cudaWarm}. */
    private static List<Result> javaFamily(PrintStream out, long size, int device, int repeat, Result cudaWarm) {
        long heap = Runtime.getRuntime().maxMemory();
        if (heap < 5 * size) {
            out.printf(
                    Locale.ROOT,
                    "SKIP bench=broadcast transport=tcp family=java size=%d reason=\"JDK "
                            + "serialization needs about 5 x the model on the client's heap; this JVM has %d MiB: set "
                            + "CUWIRE_JAVA_OPTS=-Xmx%dg\"%n",
                    size,
                    heap >> 20,
                    Math.max(2, (6 * size >> 30) + 1));
            return List.of();
        }
        long workerHeap = Math.max(2, (4 * size >> 30) + 1);
        try (LocalCluster cluster = LocalCluster.builder()
                .workers(1)
                .devices(device)
                .transport("tcp")
                .jvmOptions(List.of("-Xmx" + workerHeap + "g"))
                .start()) {
            Client client = cluster.client();
            try (NdArray x = rows(client, size);
                    NearestNeighbors model = new NearestNeighbors().fit(x)) {
                BroadcastOptions java =
                        BroadcastOptions.DEFAULT.family(Family.JAVA).strategy(BroadcastOptions.Strategy.EACH_IN_TURN);
                return broadcasts(
                        out,
                        client,
                        1,
                        model,
                        x,
                        java,
                        "tcp",
                        Math.min(repeat, JAVA_MAX_REPEAT),
                        0,
                        size,
                        cudaWarm.medianMs());
            }
        }
    }

    /**
     * From a new version of {@code model}: cold, untimed new versions (at least {@value #CASE_WARMUP} or
     * {@code repeat} if fewer, until {@code warmupMillis} have passed), then warm (new versions) and, for the cuda
     * family, unchanged broadcasts; ratios against {@code against}.
     */
    private static List<Result> broadcasts(
            PrintStream out,
            Client client,
            int workers,
            NearestNeighbors model,
            NdArray x,
            BroadcastOptions options,
            String transport,
            int repeat,
            int warmupMillis,
            long size,
            double against) {
        String strategy = name(options.strategy());
        List<Result> results = new ArrayList<>();
        model.fit(x); // a new version: an earlier strategy left the current one on every worker
        Measured cold = measure(client, model, options, workers, true);
        boolean checked = check(client, cold.result(), x, workers);
        results.add(print(
                out,
                workers,
                new Result(
                        size,
                        strategy,
                        transport,
                        options.family(),
                        "cold",
                        cold.ms(),
                        cold.ms(),
                        cold.ms(),
                        workers,
                        cold.hostBytes(),
                        cold.result().sent(),
                        cold.ms() / against,
                        checked)));
        long warmUntil = System.nanoTime() + warmupMillis * 1_000_000L;
        for (int i = 0; warmupMillis > 0 && (i < Math.min(CASE_WARMUP, repeat) || System.nanoTime() < warmUntil); i++) {
            model.fit(x);
            measure(client, model, options, workers, true);
        }
        double[] warm = new double[repeat];
        Measured last = cold;
        for (int i = 0; i < repeat; i++) {
            model.fit(x); // a new version: new fitted buffers
            last = measure(client, model, options, workers, true);
            warm[i] = last.ms();
        }
        checked = check(client, last.result(), x, workers);
        double median = Stats.median(warm);
        results.add(print(
                out,
                workers,
                new Result(
                        size,
                        strategy,
                        transport,
                        options.family(),
                        "warm",
                        median,
                        min(warm),
                        max(warm),
                        workers,
                        last.hostBytes(),
                        last.result().sent(),
                        median / against,
                        checked)));
        if (options.family() == Family.CUDA) {
            double[] same = new double[repeat];
            for (int i = 0; i < repeat; i++) {
                last = measure(client, model, options, workers, false);
                same[i] = last.ms();
            }
            median = Stats.median(same);
            results.add(print(
                    out,
                    workers,
                    new Result(
                            size,
                            strategy,
                            transport,
                            options.family(),
                            "unchanged",
                            median,
                            min(same),
                            max(same),
                            workers,
                            last.hostBytes(),
                            last.result().sent(),
                            median / against,
                            true)));
        }
        return results;
    }

    private record Measured(BroadcastResult result, double ms, long hostBytes) {}

    /**
     * One broadcast; {@code fresh}: of a version no worker holds (every worker must get the frames), else of one every
     * worker holds (none may get them).
     */
    private static Measured measure(
            Client client, NearestNeighbors model, BroadcastOptions options, int workers, boolean fresh) {
        TransferStats before = CopyEngine.totals();
        long workerBefore = workerHostBytes(client);
        BroadcastResult r = client.broadcast(model, options);
        TransferStats after = CopyEngine.totals();
        long host = after.bytes(CopyDirection.D2H)
                - before.bytes(CopyDirection.D2H)
                + after.bytes(CopyDirection.H2D)
                - before.bytes(CopyDirection.H2D)
                + workerHostBytes(client)
                - workerBefore;
        if (fresh && r.sent() != workers) {
            throw new IllegalStateException("a new version reached " + r.sent() + " of " + workers + " workers: " + r);
        }
        if (!fresh && (r.sent() != 0 || r.cacheHits() != workers)) {
            throw new IllegalStateException("an unchanged model was sent again: " + r);
        }
        return new Measured(r, r.nanos() / 1e6, host);
    }

    private static long workerHostBytes(Client client) {
        long bytes = 0;
        for (WorkerStats w : client.workerStats()) {
            bytes += w.deviceToHostBytes() + w.hostToDeviceBytes();
        }
        return bytes;
    }

    /** On every worker, each of a few rows of {@code x}, as a query on its copy, finds itself nearest. */
    private static boolean check(Client client, BroadcastResult r, NdArray x, int workers) {
        long rows = x.dim(0);
        long[] picked = new long[CHECK_ROWS];
        float[] q = new float[CHECK_ROWS * COLS];
        for (int i = 0; i < CHECK_ROWS; i++) {
            picked[i] = (rows - 1) * i / Math.max(1, CHECK_ROWS - 1);
            x.copyStorageTo(picked[i] * COLS, q, i * COLS, COLS);
        }
        try (NdArray queries = NdArray.fromArray(client.memory(), q, CHECK_ROWS, COLS)) {
            for (int w = 0; w < workers; w++) {
                try (Neighbors n = client.call(w, MlTasks.NEIGHBORS_PARTIAL, r.handle(), queries, 1L, 0L)
                        .join()) {
                    if (!Arrays.equals(n.ids().toLongArray(), picked)) {
                        return false;
                    }
                }
            }
            return true;
        }
    }

    /**
     * {@code count} untimed broadcasts of a small model, new and unchanged versions alternating, each pair by the next
     * of {@code strategies}.
     */
    private static void warmUp(Client client, int count, List<BroadcastOptions.Strategy> strategies) {
        try (NdArray x = rows(client, WARMUP_BYTES);
                NearestNeighbors model = new NearestNeighbors().fit(x)) {
            for (int i = 0; i < count; i++) {
                if (i % 2 == 0) {
                    model.fit(x);
                }
                BroadcastOptions.Strategy s = strategies.get(i / 2 % strategies.size());
                client.broadcast(
                        model, BroadcastOptions.DEFAULT.family(Family.CUDA).strategy(s));
            }
        }
    }

    /**
     * {@code size} bytes of float32 rows (64 columns) on the client's device: one 16 MiB piece of random values in
     * [0, 1), then piece {@code k} is that piece with 1 added to column {@code b} for each bit {@code b} set in
     * {@code k}. Rows of one piece are independent random rows (squared distance about 64 / 6 apart); the same row
     * of two pieces differs by 1 in at least one column. So each row is its own nearest row by a wide margin, and with
     * values below 2 squared distances in float32 keep it. Fast: per piece, a few columns rewritten and one copy to
     * the device (on a 2-core VM, 0.1–0.3 s of host time per GiB, where filling every piece with random numbers took
     * 0.6–0.9 s).
     */
    private static NdArray rows(Client client, long size) {
        NdArray x = NdArray.empty(client.memory(), DType.FLOAT32, Order.C, size / (COLS * 4), COLS);
        long piece = Math.min(size, PIECE);
        long pieceRows = piece / (COLS * 4);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment base = arena.allocate(piece, 64);
            MemorySegment staging = arena.allocate(piece, 64);
            SplittableRandom random = new SplittableRandom(42);
            for (long i = 0; i < piece; i += 4) {
                base.set(ValueLayout.JAVA_FLOAT_UNALIGNED, i, (float) random.nextDouble());
            }
            staging.copyFrom(base);
            for (long k = 0, off = 0; off < size; k++, off += piece) {
                long changed = k == 0 ? 0 : k ^ (k - 1); // the columns whose bit differs from piece k - 1's
                for (int b = 0; changed != 0; b++, changed >>>= 1) {
                    if ((changed & 1) != 0) {
                        float add = (k >>> b & 1) != 0 ? 1f : 0f;
                        for (long r = 0; r < pieceRows; r++) {
                            long at = (r * COLS + b) * 4;
                            staging.set(
                                    ValueLayout.JAVA_FLOAT_UNALIGNED,
                                    at,
                                    base.get(ValueLayout.JAVA_FLOAT_UNALIGNED, at) + add);
                        }
                    }
                }
                CopyEngine.copyFromSegment(staging.asSlice(0, Math.min(piece, size - off)), x.buffer(), off);
            }
        } catch (RuntimeException | Error e) {
            x.close();
            throw e;
        }
        return x;
    }

    private static Result print(PrintStream out, int workers, Result r) {
        String ratio = r.phase().equals("raw")
                ? ""
                : String.format(
                        Locale.ROOT,
                        " sent=%d %s=%.3f",
                        r.sent(),
                        r.family() == Family.JAVA ? "java_vs_cuda" : "vs_raw",
                        r.ratio());
        out.printf(
                Locale.ROOT,
                "RESULT bench=broadcast workers=%d strategy=%s transport=%s family=%s size=%d "
                        + "phase=%s median_ms=%.3f min_ms=%.3f max_ms=%.3f gbps=%.3f gbps_aggregate=%.3f host_bytes=%d%s "
                        + "checked=%s%n",
                workers,
                r.strategy(),
                r.transport(),
                r.family().wireName(),
                r.size(),
                r.phase(),
                r.medianMs(),
                r.minMs(),
                r.maxMs(),
                r.gbps(),
                r.gbpsAggregate(),
                r.hostBytes(),
                ratio,
                r.checked() ? "ok" : "MISMATCH");
        out.flush();
        return r;
    }

    /**
     * The cuda family's case of {@code size}, {@code strategy} and {@code phase}, if measured: over ipc if the run
     * had it, else over its first transport.
     */
    private static Optional<Result> find(List<Result> results, long size, String strategy, String phase) {
        String transport = results.stream().anyMatch(r -> r.transport().equals("ipc"))
                ? "ipc"
                : results.isEmpty() ? "ipc" : results.getFirst().transport();
        return results.stream()
                .filter(r -> r.size() == size
                        && r.family() == Family.CUDA
                        && r.transport().equals(transport)
                        && r.strategy().equals(strategy)
                        && r.phase().equals(phase))
                .findFirst();
    }

    /** The cuda family's warm broadcast of {@code size} that the java family and the one-worker summary use. */
    private static Result reference(List<Result> results, long size) {
        return find(results, size, "each", "warm")
                .orElseGet(() -> results.stream()
                        .filter(r -> r.size() == size
                                && r.family() == Family.CUDA
                                && r.phase().equals("warm"))
                        .findFirst()
                        .orElseThrow());
    }

    private static String checked(List<Result> results, long size) {
        return results.stream().filter(r -> r.size() == size).allMatch(Result::checked) ? "ok" : "MISMATCH";
    }

    /** One worker: the warm broadcast against the raw copy (target 1.15) and the java family (target 50). */
    private static String singleSummary(List<Result> results, long size) {
        Result warm = reference(results, size);
        Result raw = find(results, size, "none", "raw").orElseThrow();
        double javaWarm = results.stream()
                .filter(r -> r.size() == size
                        && r.family() == Family.JAVA
                        && r.phase().equals("warm"))
                .mapToDouble(Result::medianMs)
                .findFirst()
                .orElse(Double.NaN);
        return String.format(
                Locale.ROOT,
                "RESULT bench=broadcast size=%d summary cuda_%s_warm_ms=%.3f raw_ms=%.3f "
                        + "vs_raw=%.3f within_1.15=%s java_tcp_warm_ms=%.1f java_vs_cuda=%.1f at_least_50=%s checked=%s",
                size,
                warm.transport(),
                warm.medianMs(),
                raw.medianMs(),
                warm.medianMs() / raw.medianMs(),
                warm.medianMs() <= SINGLE_TARGET * raw.medianMs(),
                javaWarm,
                javaWarm / warm.medianMs(),
                Double.isNaN(javaWarm) ? "n/a" : String.valueOf(javaWarm >= JAVA_TARGET * warm.medianMs()),
                checked(results, size));
    }

    /**
     * Several workers, issue 8's targets: the faster pipelined strategy's warm broadcast at most 1.5 x the raw copy
     * (from 1 GiB up; {@code n/a} below, or without chain and tree), every unchanged re-broadcast under 1 ms.
     */
    private static String summary(List<Result> results, int workers, long size) {
        double raw = find(results, size, "none", "raw").orElseThrow().medianMs();
        String each = find(results, size, "each", "warm")
                .map(r -> String.format(Locale.ROOT, "%.3f", r.medianMs() / raw))
                .orElse("n/a");
        Optional<Result> best = results.stream()
                .filter(r -> r.size() == size
                        && r.family() == Family.CUDA
                        && r.phase().equals("warm")
                        && !r.strategy().equals("each"))
                .min(Comparator.comparingDouble(Result::medianMs));
        String within = best.isEmpty() || size < PIPELINED_TARGET_FROM
                ? "n/a"
                : String.valueOf(best.get().medianMs() <= PIPELINED_TARGET * raw);
        double unchanged = results.stream()
                .filter(r -> r.size() == size && r.phase().equals("unchanged"))
                .mapToDouble(Result::medianMs)
                .max()
                .orElseThrow();
        return String.format(
                Locale.ROOT,
                "RESULT bench=broadcast workers=%d size=%d summary raw_ms=%.3f "
                        + "each_vs_raw=%s best_pipelined=%s pipelined_warm_ms=%s pipelined_vs_raw=%s within_1.5=%s "
                        + "unchanged_max_ms=%.3f unchanged_under_1ms=%s checked=%s",
                workers,
                size,
                raw,
                each,
                best.map(Result::strategy).orElse("n/a"),
                best.map(r -> String.format(Locale.ROOT, "%.3f", r.medianMs())).orElse("n/a"),
                best.map(r -> String.format(Locale.ROOT, "%.3f", r.medianMs() / raw))
                        .orElse("n/a"),
                within,
                unchanged,
                unchanged < UNCHANGED_TARGET_MS,
                checked(results, size));
    }

    private static List<Path> write(Path dir, int workers, String where, List<Result> results, List<String> summaries)
            throws IOException {
        Table c = new Table(
                "workers",
                "strategy",
                "transport",
                "family",
                "size",
                "phase",
                "median_ms",
                "min_ms",
                "max_ms",
                "gbps",
                "gbps_aggregate",
                "vs_raw",
                "java_vs_cuda",
                "host_bytes",
                "sent",
                "checked");
        Table t = new Table(
                "size",
                "strategy",
                "transport",
                "family",
                "phase",
                "median ms",
                "min–max ms",
                "GB/s (all workers)",
                "vs raw",
                "bytes through host",
                "checked");
        for (Result r : results) {
            boolean java = r.family() == Family.JAVA;
            boolean raw = r.phase().equals("raw");
            String ratio = raw ? "" : Table.num(r.ratio(), 4);
            c.row(
                    workers,
                    r.strategy(),
                    r.transport(),
                    r.family().wireName(),
                    r.size(),
                    r.phase(),
                    Table.num(r.medianMs(), 4),
                    Table.num(r.minMs(), 4),
                    Table.num(r.maxMs(), 4),
                    Table.num(r.gbps(), 3),
                    Table.num(r.gbpsAggregate(), 3),
                    java ? "" : ratio,
                    java ? ratio : "",
                    r.hostBytes(),
                    r.sent(),
                    r.checked());
            t.row(
                    r.size(),
                    raw ? "(peer copy)" : r.strategy(),
                    r.transport(),
                    r.family().wireName(),
                    r.phase(),
                    Table.num(r.medianMs(), 3),
                    Table.num(r.minMs(), 3) + "–" + Table.num(r.maxMs(), 3),
                    Table.num(r.gbpsAggregate(), 2),
                    raw ? "" : java ? Table.num(r.ratio(), 1) + " (java / cuda)" : Table.num(r.ratio(), 3),
                    r.hostBytes(),
                    r.checked() ? "ok" : "MISMATCH");
        }
        StringBuilder m = new StringBuilder("# Model broadcast, client on device 0 to " + workers + " worker(s) on "
                        + "device(s) " + where + " (" + Devices.platform() + ")\n\n")
                .append(t.markdown());
        m.append("\n## Summary per size\n\n");
        for (String s : summaries) {
            m.append("- `").append(s).append("`\n");
        }
        Path md = Results.record(
                dir,
                "broadcast",
                "`cuwire bench broadcast` on " + Results.machine(),
                Results.now() + ", " + workers + " worker(s)",
                m.toString(),
                c.csv());
        return List.of(md, md.resolveSibling(md.getFileName().toString().replace(".md", ".csv")));
    }

    private static double min(double[] v) {
        return Arrays.stream(v).min().orElseThrow();
    }

    private static double max(double[] v) {
        return Arrays.stream(v).max().orElseThrow();
    }
}
