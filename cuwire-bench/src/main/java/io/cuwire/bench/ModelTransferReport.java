package io.cuwire.bench;

import io.cuwire.bench.harness.Stats;
import java.io.IOException;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * The results of {@link ModelTransferBench}: one run's samples and what it saw ({@link Run}), the CSV of every run's
 * samples, and the Markdown file: an introduction, a summary over all runs in the CSV, and one section per run.
 */
final class ModelTransferReport {
    private static final String CSV_HEADER =
            "run,started,commit,size_bytes,path,kind,round,position,reps," + "ns_per_message,note";
    private static final String RUN_MARKER = "<!-- run ";
    private static final double CEILING_TARGET = 0.9;
    private static final double SMALL_TARGET = 1.5;
    /** The first (cold) transfer of a large model at most this many times a warm one's median. */
    private static final double COLD_TARGET = 1.5;

    private ModelTransferReport() {}

    /** One timed sample (or a failure, with {@code kind} "failed" and the message in {@code note}). */
    record Sample(
            int run,
            String started,
            String commit,
            long size,
            String path,
            String kind,
            int round,
            int position,
            int reps,
            double nsPerMessage,
            String note) {
        String csv() {
            return String.join(
                    ",",
                    String.valueOf(run),
                    started,
                    commit,
                    String.valueOf(size),
                    path,
                    kind,
                    String.valueOf(round),
                    String.valueOf(position),
                    String.valueOf(reps),
                    Double.isNaN(nsPerMessage) ? "" : String.format(Locale.ROOT, "%.1f", nsPerMessage),
                    "\"" + note.replace("\"", "\"\"") + "\"");
        }

        static Sample parse(String line) {
            String[] f = line.split(",", 11);
            if (f.length != 11) {
                throw new IllegalArgumentException("not a model-transfer CSV line: " + line);
            }
            String note = f[10].length() >= 2 && f[10].startsWith("\"") && f[10].endsWith("\"")
                    ? f[10].substring(1, f[10].length() - 1).replace("\"\"", "\"")
                    : f[10];
            return new Sample(
                    Integer.parseInt(f[0]),
                    f[1],
                    f[2],
                    Long.parseLong(f[3]),
                    f[4],
                    f[5],
                    Integer.parseInt(f[6]),
                    Integer.parseInt(f[7]),
                    Integer.parseInt(f[8]),
                    f[9].isEmpty() ? Double.NaN : Double.parseDouble(f[9]),
                    note);
        }
    }

    /** Median, least and most of a path's warm samples, ns per message. */
    record Stat(double median, double min, double max, int samples) {
        static Stat of(List<Sample> warm) {
            double[] v = warm.stream().mapToDouble(Sample::nsPerMessage).toArray();
            return new Stat(
                    Stats.median(v),
                    Arrays.stream(v).min().orElseThrow(),
                    Arrays.stream(v).max().orElseThrow(),
                    v.length);
        }
    }

    /** The samples of one run, by size and path, and what is computed from them. */
    static final class Samples {
        final Map<Long, Map<String, List<Sample>>> warm = new TreeMap<>((a, b) -> Long.compare(b, a));
        final Map<Long, Map<String, Double>> cold = new TreeMap<>((a, b) -> Long.compare(b, a));
        final Map<Long, Map<String, String>> failed = new TreeMap<>((a, b) -> Long.compare(b, a));
        final Set<String> paths = new LinkedHashSet<>();

        Samples(List<Sample> samples) {
            for (TransferPath p : TransferPath.values()) {
                if (samples.stream().anyMatch(s -> s.path().equals(p.label()))) {
                    paths.add(p.label());
                }
            }
            for (Sample s : samples) {
                paths.add(s.path());
                switch (s.kind()) {
                    case "warm" ->
                        warm.computeIfAbsent(s.size(), k -> new LinkedHashMap<>())
                                .computeIfAbsent(s.path(), k -> new ArrayList<>())
                                .add(s);
                    case "cold" ->
                        cold.computeIfAbsent(s.size(), k -> new LinkedHashMap<>())
                                .put(s.path(), s.nsPerMessage());
                    case "failed" ->
                        failed.computeIfAbsent(s.size(), k -> new LinkedHashMap<>())
                                .putIfAbsent(s.path(), s.note());
                    default -> throw new IllegalArgumentException("sample kind '" + s.kind() + "'");
                }
            }
        }

        Set<Long> sizes() {
            Set<Long> sizes = new LinkedHashSet<>(warm.keySet());
            sizes.addAll(cold.keySet());
            sizes.addAll(failed.keySet());
            return sizes;
        }

        /** The path's statistics, or {@code null} when it has no warm sample or failed. */
        Stat stat(long size, String path) {
            if (failure(size, path) != null) {
                return null;
            }
            List<Sample> w = warm.getOrDefault(size, Map.of()).get(path);
            return w == null || w.isEmpty() ? null : Stat.of(w);
        }

        String failure(long size, String path) {
            return failed.getOrDefault(size, Map.of()).get(path);
        }

        /** The raw variant with the lowest median at {@code size}, or {@code null}. */
        String ceiling(long size) {
            String best = null;
            double bestMedian = Double.MAX_VALUE;
            for (TransferPath p : TransferPath.values()) {
                Stat s = p.raw() ? stat(size, p.label()) : null;
                if (s != null && s.median() < bestMedian) {
                    best = p.label();
                    bestMedian = s.median();
                }
            }
            return best;
        }

        /** Ceiling median over the path's median: the path's throughput as a fraction of the ceiling's. */
        double vsCeiling(long size, String path) {
            String c = ceiling(size);
            Stat s = stat(size, path);
            return c == null || s == null ? Double.NaN : stat(size, c).median() / s.median();
        }
    }

    /** What one run measured and saw. */
    static final class Run {
        final String started;
        final String commit;
        final ModelTransferBench.Options options;
        final double loadAtStart;
        double loadAtEnd = -1;
        long workerMaxHeap = -1;
        int number = 1;
        private final List<Sample> samples = new ArrayList<>();
        private final Map<Long, Map<String, String>> workerReports = new TreeMap<>((a, b) -> Long.compare(b, a));
        private final Map<Long, String> gcs = new TreeMap<>();
        private final Map<Long, Map<String, String>> phases = new TreeMap<>();

        Run(String started, String commit, ModelTransferBench.Options options, double loadAtStart) {
            this.started = started;
            this.commit = commit;
            this.options = options;
            this.loadAtStart = loadAtStart;
        }

        void sample(long size, TransferPath path, String kind, int round, int position, int reps, double ns) {
            samples.add(new Sample(number, started, commit, size, path.label(), kind, round, position, reps, ns, ""));
        }

        void fail(long size, TransferPath path, String message) {
            samples.add(new Sample(
                    number,
                    started,
                    commit,
                    size,
                    path.label(),
                    "failed",
                    0,
                    0,
                    0,
                    Double.NaN,
                    message.replace('\n', ' ')));
        }

        boolean failed(long size, TransferPath path) {
            return samples.stream()
                    .anyMatch(s -> s.size() == size
                            && s.path().equals(path.label())
                            && s.kind().equals("failed"));
        }

        boolean anyFailed(long size) {
            return samples.stream().anyMatch(s -> s.size() == size && s.kind().equals("failed"));
        }

        void gc(long size, long clientCount, long clientMs, long workerCount, long workerMs) {
            gcs.put(
                    size,
                    String.format(
                            Locale.ROOT,
                            "client %d collections, %d ms; worker %d collections, %d ms",
                            clientCount,
                            clientMs,
                            workerCount,
                            workerMs));
        }

        /** The medians of {@code side}'s phases of {@code path}'s transfers at {@code size}, in ms. */
        void phases(long size, TransferPath path, String side, Map<String, Double> millis) {
            List<String> warm = new ArrayList<>();
            List<String> cold = new ArrayList<>();
            millis.forEach((phase, ms) -> {
                if (phase.endsWith(Phases.COLD)) {
                    cold.add(phase.substring(0, phase.length() - Phases.COLD.length()) + " " + num(ms));
                } else {
                    warm.add(phase + " " + num(ms));
                }
            });
            phases.computeIfAbsent(size, k -> new LinkedHashMap<>())
                    .merge(
                            path.label(),
                            side + ": " + String.join(", ", warm)
                                    + (cold.isEmpty() ? "" : " (cold: " + String.join(", ", cold) + ")"),
                            (a, b) -> a + "; " + b);
        }

        void workerReport(long size, TransferPath path, String line) {
            workerReports.computeIfAbsent(size, k -> new LinkedHashMap<>()).put(path.label(), line);
        }

        List<Sample> samples() {
            List<Sample> out = new ArrayList<>();
            for (Sample s : samples) {
                out.add(new Sample(
                        number,
                        s.started(),
                        s.commit(),
                        s.size(),
                        s.path(),
                        s.kind(),
                        s.round(),
                        s.position(),
                        s.reps(),
                        s.nsPerMessage(),
                        s.note()));
            }
            return out;
        }

        /** Machine, JDK, flags and heap sizes, one item a line. */
        String environment() {
            Runtime rt = Runtime.getRuntime();
            long memory =
                    ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os
                            ? os.getTotalMemorySize()
                            : -1;
            List<String> gcs = new ArrayList<>();
            for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
                gcs.add(gc.getName());
            }
            return String.format(
                            Locale.ROOT,
                            "machine: %d cores (%s), %.1f GiB memory, %s %s; load average %.2f at " + "the start%s%n",
                            rt.availableProcessors(),
                            cpuModel(),
                            memory / (double) (1L << 30),
                            System.getProperty("os.name"),
                            System.getProperty("os.version"),
                            loadAtStart,
                            loadAtEnd < 0 ? "" : String.format(Locale.ROOT, ", %.2f at the end", loadAtEnd))
                    + "JDK: " + System.getProperty("java.vm.vendor") + " " + System.getProperty("java.vm.name") + " "
                    + System.getProperty("java.runtime.version") + "; GC: " + String.join(", ", gcs) + "\n"
                    + jvmFlags() + (options.jfr() == null ? "" : " (and a flight recording in each)") + "\n"
                    + String.format(
                            Locale.ROOT,
                            "max heap: client %s, worker %s%n",
                            size(rt.maxMemory()),
                            workerMaxHeap < 0 ? "-" : size(workerMaxHeap))
                    + "commit: " + commit;
        }

        private String jvmFlags() {
            List<String> client = ModelTransferBench.ownJvmArgs();
            String worker = "`" + String.join(" ", options.workerJvmArgs()) + "`";
            return client.equals(options.workerJvmArgs())
                    ? "JVM flags, client and worker alike: " + worker
                    : "JVM flags: client `" + String.join(" ", client) + "`, worker " + worker;
        }

        /** This run's section of the Markdown file. */
        String markdown() {
            Samples s = new Samples(samples());
            StringBuilder b = new StringBuilder();
            b.append(RUN_MARKER).append(number).append(" -->\n");
            b.append("## Run ")
                    .append(number)
                    .append(": ")
                    .append(started)
                    .append(", commit ")
                    .append(commit)
                    .append("\n\n");
            for (String line : environment().split("\n")) {
                b.append("- ").append(line).append('\n');
            }
            b.append(String.format(
                    Locale.ROOT,
                    "- options: `--rounds %d --warmup %d --reps %d --small-warmup %d`%n",
                    options.rounds(),
                    options.warmup(),
                    options.reps(),
                    options.smallWarmup()));
            if (options.leftOut() != null) {
                b.append("- ").append(options.leftOut()).append('\n');
            }
            if (options.rounds() < 5) {
                b.append("- **fewer than 5 rounds: not a result to quote**\n");
            }
            b.append('\n');
            for (long size : s.sizes()) {
                boolean single = size >= ModelTransferBench.SINGLE_TRANSFER_BYTES;
                int reps = single ? 1 : options.reps();
                b.append("### ").append(size(size)).append("\n\n");
                b.append(
                        single
                                ? String.format(
                                        Locale.ROOT,
                                        "One transfer per sample; the cold transfer, %d warm-up rounds, "
                                                + "%d timed rounds.%n%n",
                                        options.warmup(),
                                        options.rounds())
                                : String.format(
                                        Locale.ROOT,
                                        "%d transfers per sample, reported per message; the cold "
                                                + "transfer, %d warm-up transfers per path, %d timed rounds.%n%n",
                                        reps,
                                        options.smallWarmup(),
                                        options.rounds()));
                table(b, s, size, single);
                Map<String, String> reports = workerReports.getOrDefault(size, Map.of());
                if (!reports.isEmpty()) {
                    b.append("\nWorker: ");
                    List<String> parts = new ArrayList<>();
                    reports.forEach((path, line) -> parts.add(workerLine(path, line)));
                    b.append(String.join("; ", parts)).append(".\n");
                }
                Map<String, String> timed = phases.getOrDefault(size, Map.of());
                if (!timed.isEmpty()) {
                    b.append("\nPhases of every transfer on the connection, medians in ")
                            .append("ms")
                            .append(" (client: serialize, send until the bytes were handed to the socket, then the "
                                    + "wait for the acknowledgement; worker: receive from the first byte to the last, "
                                    + "decode into the fresh float[], ack):\n\n");
                    timed.forEach((path, line) -> b.append("- ")
                            .append(path)
                            .append(": ")
                            .append(line)
                            .append('\n'));
                }
                if (gcs.containsKey(size)) {
                    b.append("\nGC over these transfers (as the JVMs count it): ")
                            .append(gcs.get(size))
                            .append(".\n");
                }
                b.append('\n');
            }
            List<String> targets = targets(s);
            if (!targets.isEmpty()) {
                b.append("### Targets\n\n");
                targets.forEach(t -> b.append("- ").append(t).append('\n'));
                b.append('\n');
            }
            return b.toString();
        }

        private static String workerLine(String path, String line) {
            if (!TransferPath.parse(path).getFirst().toWorker()) {
                return path + " went to " + line;
            }
            String[] p = line.split(" ");
            if (line.startsWith("DONE ") && p.length >= 5) {
                return path
                        + (TransferPath.parse(path).getFirst().raw()
                                ? " received " + p[2] + " transfers"
                                : " checked " + p[2] + " decoded models");
            }
            return path + ": " + line;
        }
    }

    private static void table(StringBuilder b, Samples s, long size, boolean single) {
        String unit = single ? "ms" : "µs";
        double scale = single ? 1e6 : 1e3;
        String ceiling = s.ceiling(size);
        b.append("| path | cold ")
                .append(unit)
                .append(" | median ")
                .append(unit)
                .append(" | min | max | GB/s | " + "× ceiling throughput | time ÷ ceiling |\n");
        b.append("|---|---:|---:|---:|---:|---:|---:|---:|\n");
        for (String path : s.paths) {
            Double cold = s.cold.getOrDefault(size, Map.of()).get(path);
            Stat st = s.stat(size, path);
            String failure = s.failure(size, path);
            if (st == null && cold == null && failure == null) {
                continue;
            }
            b.append("| ")
                    .append(path.equals(ceiling) ? "**" + path + "** (ceiling)" : path)
                    .append(" | ")
                    .append(cold == null ? "-" : num(cold / scale))
                    .append(" | ");
            if (st == null) {
                b.append(failure != null ? "failed" : "-").append(" | - | - | - | - | - |\n");
                continue;
            }
            double vs = s.vsCeiling(size, path);
            b.append(num(st.median() / scale))
                    .append(" | ")
                    .append(num(st.min() / scale))
                    .append(" | ")
                    .append(num(st.max() / scale))
                    .append(" | ")
                    .append(num(size / st.median()))
                    .append(" | ")
                    .append(Double.isNaN(vs) ? "-" : String.format(Locale.ROOT, "%.3f", vs))
                    .append(" | ")
                    .append(Double.isNaN(vs) ? "-" : String.format(Locale.ROOT, "%.2f", 1 / vs))
                    .append(" |\n");
        }
        for (String path : s.paths) {
            String failure = s.failure(size, path);
            if (failure != null) {
                b.append("\n").append(path).append(" failed: ").append(failure).append('\n');
            }
        }
        for (String path : s.paths) {
            double vs = s.vsCeiling(size, path);
            if (!TransferPath.parse(path).getFirst().raw() && vs > 1) {
                b.append("\n**WARNING: ")
                        .append(path)
                        .append(" is faster than the ceiling (")
                        .append(String.format(Locale.ROOT, "%.3f", vs))
                        .append("×): the ceiling is wrong.**\n");
            }
        }
    }

    /** The targets of the issue, each MET or NOT MET with the figures. */
    static List<String> targets(Samples s) {
        List<String> out = new ArrayList<>();
        for (long size : s.sizes()) {
            String ceiling = s.ceiling(size);
            Stat fory = s.stat(size, TransferPath.FORY.label());
            Stat dask = s.stat(size, TransferPath.DASK.label());
            for (TransferPath p : List.of(TransferPath.CUWIRE_CUDA_HOST, TransferPath.CUWIRE_HOST)) {
                if (!s.paths.contains(p.label()) || ceiling == null) {
                    continue;
                }
                Stat st = s.stat(size, p.label());
                String failure = s.failure(size, p.label());
                String prefix = p.label() + " at " + size(size) + ": ";
                if (st == null) {
                    out.add(prefix + "NOT MET (" + (failure == null ? "no result" : "failed: " + failure) + ")");
                    continue;
                }
                double vs = s.vsCeiling(size, p.label());
                if (size >= ModelTransferBench.SINGLE_TRANSFER_BYTES) {
                    out.add(String.format(
                            Locale.ROOT,
                            "%s≥ %.1f × the raw ceiling: %s (%.3f ×, %s)",
                            prefix,
                            CEILING_TARGET,
                            vs >= CEILING_TARGET ? "MET" : "NOT MET",
                            vs,
                            ceiling));
                    if (fory != null) {
                        out.add(String.format(
                                Locale.ROOT,
                                "%sahead of Fory out-of-band: %s (%s vs %s ms)",
                                prefix,
                                st.median() < fory.median() ? "MET" : "NOT MET",
                                num(st.median() / 1e6),
                                num(fory.median() / 1e6)));
                    }
                    if (dask != null) {
                        out.add(String.format(
                                Locale.ROOT,
                                "%sahead of Dask scatter: %s (%s vs %s ms)",
                                prefix,
                                st.median() < dask.median() ? "MET" : "NOT MET",
                                num(st.median() / 1e6),
                                num(dask.median() / 1e6)));
                    }
                    Double cold = s.cold.getOrDefault(size, Map.of()).get(p.label());
                    if (cold != null) {
                        out.add(String.format(
                                Locale.ROOT,
                                "%sthe cold transfer ≤ %.1f × a warm one: %s (%.2f ×: %s vs %s ms)",
                                prefix,
                                COLD_TARGET,
                                cold / st.median() <= COLD_TARGET ? "MET" : "NOT MET",
                                cold / st.median(),
                                num(cold / 1e6),
                                num(st.median() / 1e6)));
                    }
                } else {
                    out.add(String.format(
                            Locale.ROOT,
                            "%s≤ %.1f × the raw socket's time: %s (%.2f ×: %s vs %s µs)",
                            prefix,
                            SMALL_TARGET,
                            1 / vs <= SMALL_TARGET ? "MET" : "NOT MET",
                            1 / vs,
                            num(st.median() / 1e3),
                            num(s.stat(size, ceiling).median() / 1e3)));
                }
            }
        }
        return out;
    }

    /**
     * Adds {@code run} to {@code <dir>/<name>.csv} and {@code .md} (or starts them afresh), numbering it after the
     * runs already there; returns the two files.
     */
    static List<Path> write(Path dir, String name, Run run, boolean fresh) throws IOException {
        Files.createDirectories(dir);
        Path csv = dir.resolve(name + ".csv");
        Path md = dir.resolve(name + ".md");
        List<Sample> all = new ArrayList<>();
        String sections = "";
        if (!fresh && Files.exists(csv) && Files.exists(md)) {
            for (String line : Files.readAllLines(csv, StandardCharsets.UTF_8)) {
                if (!line.isBlank() && !line.equals(CSV_HEADER)) {
                    all.add(Sample.parse(line));
                }
            }
            String old = Files.readString(md, StandardCharsets.UTF_8);
            int at = old.indexOf(RUN_MARKER);
            sections = at < 0 ? "" : old.substring(at);
        }
        run.number = all.stream().mapToInt(Sample::run).max().orElse(0) + 1;
        all.addAll(run.samples());
        StringBuilder c = new StringBuilder(CSV_HEADER).append('\n');
        all.forEach(s -> c.append(s.csv()).append('\n'));
        Files.writeString(csv, c.toString(), StandardCharsets.UTF_8);
        Files.writeString(md, introduction(name) + summary(all) + sections + run.markdown(), StandardCharsets.UTF_8);
        return List.of(md, csv);
    }

    private static String introduction(String name) {
        return "# Model transfer: a plain Java model between two JVMs over loopback TCP\n\n"
                + "`" + name + "`. Reproduce with `./cuwire bench model-transfer` (a run adds itself to this file "
                + "and its CSV; `--fresh` starts them afresh).\n\n"
                + "The model is a plain Java class, `TransferModel`: `float[] weights` plus `int rows, cols; double "
                + "intercept; String name`. The client JVM starts the worker JVM (same java, same flags) and moves "
                + "the model to it over 127.0.0.1. One transfer is timed on the client, from the start of "
                + "serializing until the worker's acknowledgement, which the worker sends once it holds the decoded "
                + "model (a fresh `float[]`); after that, outside the timing, the worker checks 65 weights, the "
                + "shape, the name and a sequence number of every model it decoded, and reports the count.\n\n"
                + "- `cuwire-cuda-host`, `cuwire-host`: `TypeRegistry.serialize(model, chain)` (the model "
                + "registered with `registerGeneric(TransferModel.class, CUDA, HOST)` and `register`; the weights "
                + "are one host frame in both chains), `Message.of`, `Connection.send` over cuwire's TCP "
                + "transport; the worker `receive()`s into frames of a `HostMemoryPool` (kept between messages), "
                + "`deserialize`s and acknowledges with a header-only cuwire message on the same connection.\n"
                + "- `jdk`: `ObjectOutputStream` over the socket's stream through a 64 KiB `BufferedOutputStream` "
                + "(`reset()` before each model), `ObjectInputStream` with a filter allowing only the model.\n"
                + "- `kryo`: Kryo 5.6.2, `UnsafeOutput` / `UnsafeInput` over the socket's streams (64 KiB "
                + "buffers), the model's class and `float[]` registered.\n"
                + "- `fory-oob`: Fory 1.6.0, `serialize(model, callback)` with the callback keeping each "
                + "`BufferObject` out of band; the serialized bytes go first, then each buffer's bytes, written by "
                + "`BufferObject.writeTo` into a reused direct buffer and from there to the socket; the worker "
                + "reads them into a reused, pre-touched direct buffer and calls `deserialize(bytes, buffers)`.\n"
                + "- `raw-once`, `raw-64k`, `raw-256k`, `raw-1m`: the ceiling: the same number of bytes, no "
                + "serialization, from one pre-touched direct buffer written at once, or from a direct buffer of "
                + "64 KiB / 256 KiB / 1 MiB written again and again; the worker reads into a pre-touched buffer "
                + "of the transfer's size and answers one byte. The ceiling of a size is the variant with the "
                + "lowest median.\n"
                + "- `dask-scatter` (where the machine's Python imports Dask's `distributed`): a peer outside the "
                + "JVM, `dask_peer.py`: a Python client and one Dask worker process (one thread, TCP on "
                + "127.0.0.1) of a `LocalCluster`; one transfer is `client.scatter(array, direct=True, "
                + "workers=[w], hash=False)` of a float32 NumPy array of the same bytes until its future is done, "
                + "timed by the Python process itself (`perf_counter_ns`, so the pipe the bench drives it over "
                + "is not counted); after each, outside the timing, the future is released and the bench waits "
                + "until the worker dropped the array. Its rounds are interleaved with the others' like any "
                + "path's.\n\n"
                + "Every path has its own connection per size; every round runs each path once, in an order "
                + "rotated by one path per round and reversed every other round (so that no path always follows "
                + "the same one). Medians, minima and maxima are over the rounds; `× ceiling "
                + "throughput` is the ceiling's median time over the path's (1 = as fast as the raw socket); "
                + "GB/s is 10^9 bytes of weights per second. The cold transfer is each path's first on its new "
                + "connection, the paths in table order: what a process keeps (JIT-compiled code, the worker's "
                + "receive pool and heap) the first path of a kind pays for and the later ones find ready; the "
                + "first cuwire path's cold transfer includes the pool's first 512 MiB block. The machine is "
                + "shared: the load averages say how busy it was.\n\n"
                + "For comparison, the issue's reference figures (one window on a 2-core machine like this one, "
                + "2026-12-01): at 512 MiB the raw socket 3.1-3.7 GB/s, Fory out-of-band 2.5, Kryo (unsafe) 2.0, "
                + "JDK serialization 1.5; at 1 MiB the raw socket 0.2-0.33 ms, Fory 0.48 ms. Targets for cuwire: at "
                + "512 MiB at least 0.9 × the raw ceiling, ahead of Fory and of Dask, the cold transfer at most "
                + "1.5 × a warm one; at 1 MiB at most 1.5 × the raw "
                + "socket's time.\n\n";
    }

    /** Per size, each path's median in every run, and the targets per run. */
    private static String summary(List<Sample> all) {
        Map<Integer, List<Sample>> byRun = new TreeMap<>();
        for (Sample s : all) {
            byRun.computeIfAbsent(s.run(), k -> new ArrayList<>()).add(s);
        }
        Map<Integer, Samples> runs = new TreeMap<>();
        byRun.forEach((n, list) -> runs.put(n, new Samples(list)));
        Samples everything = new Samples(all);
        StringBuilder b = new StringBuilder("## Summary over ")
                .append(runs.size())
                .append(runs.size() == 1 ? " run" : " runs")
                .append("\n\n");
        for (long size : everything.sizes()) {
            boolean single = size >= ModelTransferBench.SINGLE_TRANSFER_BYTES;
            b.append("### ")
                    .append(size(size))
                    .append(": median ")
                    .append(single ? "ms" : "µs per message")
                    .append(" (× ceiling throughput)\n\n| path |");
            runs.forEach((n, s) -> b.append(" run ").append(n).append(" |"));
            b.append("\n|---|");
            runs.forEach((n, s) -> b.append("---:|"));
            b.append('\n');
            for (String path : everything.paths) {
                b.append("| ").append(path).append(" |");
                runs.forEach((n, s) -> {
                    Stat st = s.stat(size, path);
                    double vs = s.vsCeiling(size, path);
                    b.append(' ')
                            .append(
                                    st == null
                                            ? (s.failure(size, path) != null ? "failed" : "-")
                                            : num(st.median() / (single ? 1e6 : 1e3))
                                                    + (Double.isNaN(vs)
                                                            ? ""
                                                            : String.format(Locale.ROOT, " (%.3f)", vs)))
                            .append(" |");
                });
                b.append('\n');
            }
            b.append("| ceiling |");
            runs.forEach((n, s) -> b.append(' ')
                    .append(s.ceiling(size) == null ? "-" : s.ceiling(size))
                    .append(" |"));
            b.append("\n\n");
        }
        b.append("### Targets\n\n");
        runs.forEach((n, s) -> targets(s)
                .forEach(
                        t -> b.append("- run ").append(n).append(": ").append(t).append('\n')));
        b.append('\n');
        return b.toString();
    }

    /** {@code 512 MiB}, {@code 1 MiB}, {@code 4 KiB}, {@code 12 B}. */
    static String size(long bytes) {
        if (bytes >= 1L << 30 && bytes % (1L << 30) == 0) {
            return (bytes >> 30) + " GiB";
        }
        if (bytes >= 1L << 20 && bytes % (1L << 20) == 0) {
            return (bytes >> 20) + " MiB";
        }
        if (bytes >= 1024 && bytes % 1024 == 0) {
            return (bytes >> 10) + " KiB";
        }
        return bytes + " B";
    }

    static String num(double v) {
        return v >= 100
                ? String.format(Locale.ROOT, "%,.0f", v)
                : v >= 10 ? String.format(Locale.ROOT, "%.1f", v) : String.format(Locale.ROOT, "%.3f", v);
    }

    private static String cpuModel() {
        try (Stream<String> lines = Files.lines(Path.of("/proc/cpuinfo"))) {
            return lines.filter(l -> l.startsWith("model name"))
                    .map(l -> l.substring(l.indexOf(':') + 1).trim())
                    .findFirst()
                    .orElse("unknown CPU");
        } catch (IOException | RuntimeException e) {
            return "unknown CPU";
        }
    }
}
