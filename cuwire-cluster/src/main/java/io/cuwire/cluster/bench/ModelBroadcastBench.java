package io.cuwire.cluster.bench;

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
import io.cuwire.transport.bench.TransferBench;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * {@code cuwire bench broadcast}: one model broadcast from the client (device 0) to one worker on the other device
 * (device 1 when there are two), measured against the raw peer copy of the same bytes in the same run.
 *
 * <p>The model is a {@link NearestNeighbors} whose training rows ({@code float32}, 64 columns) hold {@code --size}
 * bytes on the client's device. Over IPC with the {@code cuda} family: the first broadcast (cold: the worker opens
 * the client's allocation), then {@code --repeat} warm ones, each of a new model version (the model is refitted, so
 * the worker's cache cannot short-circuit it), and {@code --repeat} re-broadcasts of the unchanged model (only its
 * identity travels). Then the same model over TCP with the {@code java} family (JDK serialization, the pickle
 * baseline): cold and {@code min(repeat, 3)} warm. A broadcast's time runs from the call to the worker's
 * acknowledgement (the model decoded on its device and cached). The raw ceiling is the median copy engine copy of
 * the same bytes device 0 → worker's device ({@link TransferBench#copyMs}). Outside the timing, the worker's copy is
 * checked: each of a few rows of the model, as a query, finds itself as its nearest row there.
 *
 * <p>Before anything is timed, {@code --warmup} broadcasts of a small model (16 KiB, new and unchanged versions
 * alternating; default {@value #DEFAULT_WARMUP}) run untimed over the same cluster, so that "warm" means
 * JIT-compiled too: a JVM runs a method's first thousands of calls in the interpreter or lower compiler tiers (the
 * transfer benchmark measured 1.5 ms per 1 KiB IPC message after 30 messages, 0.2 ms after 500).
 *
 * <p>Lines start with {@code RESULT}; {@code vs_raw} is the broadcast's time over the raw copy's (the target: at
 * most 1.15), {@code java_vs_cuda} the java family's warm time over the cuda family's (the target: at least 50). A
 * CSV and a markdown table go to {@code --out}.
 */
public final class ModelBroadcastBench {
    private static final int COLS = 64;
    private static final int JAVA_MAX_REPEAT = 3;
    private static final int CHECK_ROWS = 4;
    /** Untimed small broadcasts before the timed ones, unless {@code --warmup} says. */
    static final int DEFAULT_WARMUP = 5000;
    private static final long WARMUP_BYTES = 16 << 10;

    private ModelBroadcastBench() {
    }

    /**
     * What to run.
     *
     * @param size bytes of the model's array (a multiple of 256)
     * @param repeat warm broadcasts per case (and raw copies)
     * @param out directory for the CSV and markdown, or {@code null}
     * @param java whether to run the {@code java} family over TCP
     * @param warmup untimed broadcasts of a small model before the timed ones
     */
    public record Options(long size, int repeat, Path out, boolean java, int warmup) {
        /** Parses {@code --size 1GiB --repeat N --out DIR --java true|false --warmup N}. */
        public static Options parse(String... args) {
            long size = 1L << 30;
            int repeat = 5;
            int warmup = DEFAULT_WARMUP;
            Path out = Path.of("bench", "results");
            boolean java = true;
            for (int i = 0; i < args.length; i++) {
                String flag = args[i];
                if (i + 1 >= args.length) {
                    throw new IllegalArgumentException(flag + " needs a value");
                }
                String v = args[++i];
                switch (flag) {
                    case "--size" -> {
                        size = TransferBench.parseSize(v);
                        if (size % (COLS * 4) != 0) {
                            throw new IllegalArgumentException("--size " + v + " (expected: a multiple of "
                                    + COLS * 4 + " bytes, whole rows of " + COLS + " float32)");
                        }
                    }
                    case "--repeat" -> {
                        repeat = Integer.parseInt(v);
                        if (repeat < 1) {
                            throw new IllegalArgumentException("--repeat " + v + " (expected: >= 1)");
                        }
                    }
                    case "--out" -> out = Path.of(v);
                    case "--java" -> java = Boolean.parseBoolean(v);
                    case "--warmup" -> {
                        warmup = Integer.parseInt(v);
                        if (warmup < 0) {
                            throw new IllegalArgumentException("--warmup " + v + " (expected: >= 0)");
                        }
                    }
                    default -> throw new IllegalArgumentException("unknown option " + flag);
                }
            }
            return new Options(size, repeat, out, java, warmup);
        }
    }

    /**
     * One measured case.
     *
     * @param transport {@code ipc} or {@code tcp}
     * @param family the serializer family
     * @param phase {@code raw}, {@code cold}, {@code warm} or {@code unchanged}
     * @param medianMs the median (the one time for {@code cold})
     * @param minMs the fastest
     * @param maxMs the slowest
     * @param hostBytes bytes the client's and the worker's copy engines moved device to host and back in the last
     *     broadcast of the case
     * @param checked whether the worker's copy checked out
     */
    public record Result(String transport, Family family, String phase, double medianMs, double minMs, double maxMs,
            long hostBytes, boolean checked) {
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
        int workerDevice = Devices.all().size() >= 2 ? 1 : 0;
        long size = options.size();
        out.printf(Locale.ROOT, "cuwire bench broadcast: platform %s, client on device 0 (%s), worker on device %d, "
                + "size %d, repeat %d; vs_raw = broadcast time / raw peer copy time (target <= 1.15), java_vs_cuda = "
                + "java warm / cuda warm (target >= 50)%n", Devices.platform(), Devices.get(0).name(), workerDevice,
                size, options.repeat());
        List<Result> results = new ArrayList<>();
        boolean ok = true;
        LocalCluster.Builder ipc = LocalCluster.builder().workers(1).devices(workerDevice).transport("ipc");
        try (LocalCluster cluster = ipc.start()) {
            Client client = cluster.client();
            warmUp(client, options.warmup());
            try (NdArray x = rows(client, size); NearestNeighbors model = new NearestNeighbors().fit(x)) {
                double[] copies = TransferBench.copyMs(client.memory(), Devices.get(workerDevice), size,
                        options.repeat());
                double raw = TransferBench.median(copies);
                results.add(print(out, size, new Result("ipc", Family.CUDA, "raw", raw, min(copies), max(copies), 0,
                        true), raw));
                BroadcastOptions cuda = BroadcastOptions.DEFAULT.family(Family.CUDA);
                results.addAll(broadcasts(out, client, model, x, cuda, "ipc", options.repeat(), size, raw));
            }
        }
        double cudaWarm = results.stream().filter(r -> r.phase().equals("warm")).findFirst().orElseThrow().medianMs();
        if (options.java()) {
            long heap = Runtime.getRuntime().maxMemory();
            if (heap < 5 * size) {
                out.printf(Locale.ROOT, "SKIP bench=broadcast transport=tcp family=java size=%d reason=\"JDK "
                        + "serialization needs about 5 x the model on the client's heap; this JVM has %d MiB: set "
                        + "CUWIRE_JAVA_OPTS=-Xmx%dg\"%n", size, heap >> 20, Math.max(2, (6 * size >> 30) + 1));
            } else {
                long workerHeap = Math.max(2, (4 * size >> 30) + 1);
                try (LocalCluster cluster = LocalCluster.builder().workers(1).devices(workerDevice).transport("tcp")
                        .jvmOptions(List.of("-Xmx" + workerHeap + "g")).start()) {
                    Client client = cluster.client();
                    try (NdArray x = rows(client, size); NearestNeighbors model = new NearestNeighbors().fit(x)) {
                        BroadcastOptions java = BroadcastOptions.DEFAULT.family(Family.JAVA);
                        results.addAll(broadcasts(out, client, model, x, java, "tcp",
                                Math.min(options.repeat(), JAVA_MAX_REPEAT), size, cudaWarm));
                    }
                }
            }
        }
        for (Result r : results) {
            ok &= r.checked();
        }
        Result warm = results.stream().filter(r -> r.phase().equals("warm")).findFirst().orElseThrow();
        Result rawResult = results.getFirst();
        double javaWarm = results.stream().filter(r -> r.family() == Family.JAVA && r.phase().equals("warm"))
                .mapToDouble(Result::medianMs).findFirst().orElse(Double.NaN);
        out.printf(Locale.ROOT, "RESULT bench=broadcast size=%d summary cuda_ipc_warm_ms=%.3f raw_ms=%.3f vs_raw=%.3f "
                + "within_1.15=%s java_tcp_warm_ms=%.1f java_vs_cuda=%.1f at_least_50=%s checked=%s%n", size,
                warm.medianMs(), rawResult.medianMs(), warm.medianMs() / rawResult.medianMs(),
                warm.medianMs() <= 1.15 * rawResult.medianMs(), javaWarm, javaWarm / warm.medianMs(),
                Double.isNaN(javaWarm) ? "n/a" : String.valueOf(javaWarm >= 50 * warm.medianMs()), ok ? "ok"
                        : "MISMATCH");
        if (options.out() != null) {
            for (Path p : write(options.out(), size, results)) {
                out.println("wrote " + p);
            }
        }
        return ok ? 0 : 1;
    }

    /** Cold, warm (new versions) and, for the cuda family, unchanged broadcasts of {@code model}. */
    private static List<Result> broadcasts(PrintStream out, Client client, NearestNeighbors model, NdArray x,
            BroadcastOptions options, String transport, int repeat, long size, double against) {
        List<Result> results = new ArrayList<>();
        Measured cold = measure(client, model, options);
        boolean checked = check(client, cold.result(), x);
        results.add(print(out, size, new Result(transport, options.family(), "cold", cold.ms(), cold.ms(), cold.ms(),
                cold.hostBytes(), checked), against));
        double[] warm = new double[repeat];
        Measured last = cold;
        for (int i = 0; i < repeat; i++) {
            model.fit(x);  // a new version: new fitted buffers
            last = measure(client, model, options);
            warm[i] = last.ms();
        }
        checked = check(client, last.result(), x);
        results.add(print(out, size, new Result(transport, options.family(), "warm", TransferBench.median(warm),
                min(warm), max(warm), last.hostBytes(), checked), against));
        if (options.family() == Family.CUDA) {
            double[] same = new double[repeat];
            for (int i = 0; i < repeat; i++) {
                last = measure(client, model, options);
                same[i] = last.ms();
                if (last.result().sent() != 0) {
                    throw new IllegalStateException("an unchanged model was sent again: " + last.result());
                }
            }
            results.add(print(out, size, new Result(transport, options.family(), "unchanged",
                    TransferBench.median(same), min(same), max(same), last.hostBytes(), true), against));
        }
        return results;
    }

    private record Measured(BroadcastResult result, double ms, long hostBytes) {
    }

    private static Measured measure(Client client, NearestNeighbors model, BroadcastOptions options) {
        TransferStats before = CopyEngine.totals();
        WorkerStats workerBefore = client.workerStats().getFirst();
        BroadcastResult r = client.broadcast(model, options);
        TransferStats after = CopyEngine.totals();
        WorkerStats workerAfter = client.workerStats().getFirst();
        long host = after.bytes(CopyDirection.D2H) - before.bytes(CopyDirection.D2H)
                + after.bytes(CopyDirection.H2D) - before.bytes(CopyDirection.H2D)
                + workerAfter.deviceToHostBytes() - workerBefore.deviceToHostBytes()
                + workerAfter.hostToDeviceBytes() - workerBefore.hostToDeviceBytes();
        return new Measured(r, r.nanos() / 1e6, host);
    }

    /** Each of a few rows of {@code x}, as a query on the worker's copy, finds itself nearest. */
    private static boolean check(Client client, BroadcastResult r, NdArray x) {
        long rows = x.dim(0);
        long[] picked = new long[CHECK_ROWS];
        float[] q = new float[CHECK_ROWS * COLS];
        for (int i = 0; i < CHECK_ROWS; i++) {
            picked[i] = (rows - 1) * i / Math.max(1, CHECK_ROWS - 1);
            x.copyStorageTo(picked[i] * COLS, q, i * COLS, COLS);
        }
        try (NdArray queries = NdArray.fromArray(client.memory(), q, CHECK_ROWS, COLS);
                Neighbors n = client.call(0, MlTasks.NEIGHBORS_PARTIAL, r.handle(), queries, 1L, 0L).join()) {
            long[] ids = n.ids().toLongArray();
            for (int i = 0; i < CHECK_ROWS; i++) {
                if (ids[i] != picked[i]) {
                    return false;
                }
            }
            return true;
        }
    }

    /** {@code count} untimed broadcasts of a small model, new and unchanged versions alternating. */
    private static void warmUp(Client client, int count) {
        try (NdArray x = rows(client, WARMUP_BYTES); NearestNeighbors model = new NearestNeighbors().fit(x)) {
            for (int i = 0; i < count; i++) {
                if (i % 2 == 0) {
                    model.fit(x);
                }
                client.broadcast(model, BroadcastOptions.DEFAULT.family(Family.CUDA));
            }
        }
    }

    /** {@code size} bytes of random float32 rows (64 columns) on the client's device, filled in 16 MiB pieces. */
    private static NdArray rows(Client client, long size) {
        NdArray x = NdArray.empty(client.memory(), DType.FLOAT32, Order.C, size / (COLS * 4), COLS);
        SplittableRandom random = new SplittableRandom(42);
        long piece = Math.min(size, 16L << 20);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment staging = arena.allocate(piece, 64);
            for (long off = 0; off < size; off += piece) {
                long n = Math.min(piece, size - off);
                for (long i = 0; i < n; i += 4) {
                    staging.set(ValueLayout.JAVA_FLOAT_UNALIGNED, i, (float) random.nextDouble());
                }
                CopyEngine.copyFromSegment(staging.asSlice(0, n), x.buffer(), off);
            }
        } catch (RuntimeException | Error e) {
            x.close();
            throw e;
        }
        return x;
    }

    private static Result print(PrintStream out, long size, Result r, double against) {
        String ratio = r.phase().equals("raw") ? "" : r.family() == Family.JAVA
                ? String.format(Locale.ROOT, " java_vs_cuda=%.1f", r.medianMs() / against)
                : String.format(Locale.ROOT, " vs_raw=%.3f", r.medianMs() / against);
        out.printf(Locale.ROOT, "RESULT bench=broadcast transport=%s family=%s size=%d phase=%s median_ms=%.3f "
                + "min_ms=%.3f max_ms=%.3f gbps=%.3f host_bytes=%d%s checked=%s%n", r.transport(),
                r.family().wireName(), size, r.phase(), r.medianMs(), r.minMs(), r.maxMs(),
                size / (r.medianMs() * 1e6), r.hostBytes(), ratio, r.checked() ? "ok" : "MISMATCH");
        out.flush();
        return r;
    }

    private static List<Path> write(Path dir, long size, List<Result> results) throws IOException {
        Files.createDirectories(dir);
        String stamp = LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss"));
        Path csv = dir.resolve("broadcast-" + stamp + ".csv");
        Path md = dir.resolve("broadcast-" + stamp + ".md");
        StringBuilder c = new StringBuilder("transport,family,size,phase,median_ms,min_ms,max_ms,gbps,host_bytes,"
                + "checked\n");
        StringBuilder m = new StringBuilder("# Model broadcast, client on device 0 to one worker (" + Devices.platform()
                + ", " + size + " bytes)\n\n| transport | family | phase | median ms | min–max ms | GB/s | bytes "
                + "through host | checked |\n|---|---|---|---|---|---|---|---|\n");
        for (Result r : results) {
            double gbps = size / (r.medianMs() * 1e6);
            c.append(String.format(Locale.ROOT, "%s,%s,%d,%s,%.4f,%.4f,%.4f,%.3f,%d,%s%n", r.transport(),
                    r.family().wireName(), size, r.phase(), r.medianMs(), r.minMs(), r.maxMs(), gbps, r.hostBytes(),
                    r.checked()));
            m.append(String.format(Locale.ROOT, "| %s | %s | %s | %.3f | %.3f–%.3f | %.2f | %d | %s |%n",
                    r.transport(), r.phase().equals("raw") ? "(peer copy)" : r.family().wireName(), r.phase(),
                    r.medianMs(), r.minMs(), r.maxMs(), gbps, r.hostBytes(), r.checked() ? "ok" : "MISMATCH"));
        }
        Files.writeString(csv, c.toString(), StandardCharsets.UTF_8);
        Files.writeString(md, m.toString(), StandardCharsets.UTF_8);
        return List.of(csv, md);
    }

    private static double min(double[] v) {
        double m = Double.POSITIVE_INFINITY;
        for (double d : v) {
            m = Math.min(m, d);
        }
        return m;
    }

    private static double max(double[] v) {
        double m = Double.NEGATIVE_INFINITY;
        for (double d : v) {
            m = Math.max(m, d);
        }
        return m;
    }
}
