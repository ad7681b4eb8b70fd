package io.cuwire.bench;

import io.cuwire.bench.harness.Results;
import io.cuwire.memory.Devices;
import java.io.IOException;
import java.io.PrintStream;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.RunnerException;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;

/**
 * Runs {@link SerializationBenchmark} with settings for a small machine and writes the summary: a table per array
 * size with each method's time and its ratio to the {@code cuda} family, the two targets checked, and a CSV plus a
 * Markdown file {@code serialization-<date>-<machine>} in the output directory.
 *
 * <p>Arguments: {@code [--quick] [--out DIR]} (default {@code bench/results}). Small arrays (1 KiB) run every method
 * in average-time mode (fork 1, warm-up 3 × 1 s, measurement 5 × 1 s; {@code --quick}: 1 and 2); at 1 GiB the
 * {@code cuda} family runs the same way and the others single-shot (1 warm-up, 3 measured; {@code --quick}: 0 and
 * 1), each in its own fork with a 10 GiB heap.
 */
public final class SerializationBench {
    static final long SMALL = 1024;
    static final long LARGE = 1L << 30;
    static final List<String> METHODS =
            List.of("cudaFamily", "hostFamily", "jdkSerialization", "kryo", "fory", "deviceAllocation");

    private record Row(
            long arraySize, String method, String mode, double micros, double error, long samples, Properties notes) {}

    private SerializationBench() {}

    public static void main(String[] args) throws Exception {
        boolean quick = false;
        Path out = Path.of("bench", "results");
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--quick" -> quick = true;
                case "--out" -> out = Path.of(args[++i]);
                default -> {
                    System.err.println("usage: SerializationBench [--quick] [--out DIR]");
                    System.exit(2);
                }
            }
        }
        System.exit(run(quick, out, System.out));
    }

    /** Runs the benchmarks, prints the summary, writes the files; returns an exit code. */
    static int run(boolean quick, Path outDir, PrintStream out) throws IOException, RunnerException {
        Path notes = Files.createTempDirectory("cuwire-bench-notes");
        Map<String, Row> rows = new LinkedHashMap<>();
        int warm = quick ? 1 : 3;
        int measure = quick ? 2 : 5;
        collect(
                rows,
                notes,
                options(notes, METHODS, SMALL, "2g")
                        .mode(Mode.AverageTime)
                        .warmupIterations(warm)
                        .measurementIterations(measure));
        collect(
                rows,
                notes,
                options(notes, List.of("cudaFamily"), LARGE, "2g")
                        .mode(Mode.AverageTime)
                        .warmupIterations(warm)
                        .measurementIterations(measure));
        collect(
                rows,
                notes,
                options(notes, METHODS.subList(1, 5), LARGE, "10g")
                        .mode(Mode.SingleShotTime)
                        .warmupIterations(quick ? 0 : 1)
                        .measurementIterations(quick ? 1 : 3));
        String date = LocalDate.now().toString();
        String machine = Results.machine();
        Summary summary = new Summary(date, machine, quick, rows);
        summary.print(out);
        Path md = Results.record(
                outDir,
                "serialization",
                "Serialization (JMH) on " + machine,
                Results.now() + (quick ? ", --quick" : ""),
                summary.markdown(),
                summary.csv());
        out.println("wrote " + md + " and its .csv");
        return OK;
    }

    private static final int OK = 0;

    private static ChainedOptionsBuilder options(Path notes, List<String> methods, long arraySize, String heap) {
        List<String> jvm = new ArrayList<>(List.of(
                "--enable-native-access=ALL-UNNAMED",
                // Small heaps are touched up front: first touches of fresh memory are slow on these VMs and would
                // otherwise land in the measured iterations.
                // Kryo and Fory use sun.misc.Unsafe; JDK 25 warns on first use without this.
                "--sun-misc-unsafe-memory-access=allow",
                "-Xms" + heap,
                "-Xmx" + heap,
                "-D" + SerializationBenchmark.NOTES_PROPERTY + "=" + notes));
        if (heap.equals("2g")) {
            jvm.add("-XX:+AlwaysPreTouch");
        }
        System.getProperties().stringPropertyNames().stream()
                .filter(k -> k.startsWith("cuwire.") && !k.equals(SerializationBenchmark.NOTES_PROPERTY))
                .forEach(k -> jvm.add("-D" + k + "=" + System.getProperty(k)));
        return new OptionsBuilder()
                .include(SerializationBenchmark.class.getName() + "\\.(" + String.join("|", methods) + ")$")
                .param("arraySize", String.valueOf(arraySize))
                .timeUnit(TimeUnit.MICROSECONDS)
                .warmupTime(TimeValue.seconds(1))
                .measurementTime(TimeValue.seconds(1))
                .forks(1)
                .shouldFailOnError(false)
                .jvmArgsAppend(jvm.toArray(String[]::new));
    }

    private static void collect(Map<String, Row> rows, Path notes, ChainedOptionsBuilder options)
            throws RunnerException, IOException {
        Collection<RunResult> results = new Runner(options.build()).run();
        for (RunResult r : results) {
            String benchmark = r.getParams().getBenchmark();
            String method = benchmark.substring(benchmark.lastIndexOf('.') + 1);
            long size = Long.parseLong(r.getParams().getParam("arraySize"));
            var primary = r.getPrimaryResult();
            double error = primary.getScoreError();
            rows.put(
                    key(size, method),
                    new Row(
                            size,
                            method,
                            r.getParams().getMode().shortLabel(),
                            primary.getScore(),
                            Double.isNaN(error) ? 0 : error,
                            primary.getSampleCount(),
                            readNotes(notes, method, size)));
        }
        // Methods whose set-up refused (the library cannot do it) have notes but no result.
        try (var files = Files.list(notes)) {
            for (Path f : (Iterable<Path>) files::iterator) {
                String name = f.getFileName().toString().replace(".properties", "");
                int dash = name.lastIndexOf('-');
                String method = name.substring(0, dash);
                long size = Long.parseLong(name.substring(dash + 1));
                rows.putIfAbsent(
                        key(size, method),
                        new Row(size, method, "-", Double.NaN, Double.NaN, 0, readNotes(notes, method, size)));
            }
        }
    }

    static String key(long size, String method) {
        return size + "/" + method;
    }

    private static Properties readNotes(Path dir, String method, long size) throws IOException {
        Properties p = new Properties();
        Path f = dir.resolve(method + "-" + size + ".properties");
        if (Files.exists(f)) {
            try (Reader r = Files.newBufferedReader(f)) {
                p.load(r);
            }
        } else {
            p.setProperty("status", "no result (see the JMH output above)");
        }
        return p;
    }

    /** The table, the targets and the files' text. */
    private record Summary(String date, String machine, boolean quick, Map<String, Row> rows) {
        Row row(long size, String method) {
            return rows.get(key(size, method));
        }

        static String size(long bytes) {
            return bytes >= 1L << 30
                    ? (bytes >> 30) + " GiB"
                    : bytes >= 1 << 20 ? (bytes >> 20) + " MiB" : bytes >= 1024 ? (bytes >> 10) + " KiB" : bytes + " B";
        }

        static String num(double v) {
            if (Double.isNaN(v)) {
                return "-";
            }
            return v >= 100 ? String.format(Locale.ROOT, "%,.0f", v) : String.format(Locale.ROOT, "%.2f", v);
        }

        String ratio(Row r, Row cuda) {
            if (r == null || cuda == null || Double.isNaN(r.micros()) || Double.isNaN(cuda.micros())) {
                return "-";
            }
            double x = r.micros() / cuda.micros();
            return (x >= 100 ? String.format(Locale.ROOT, "%,.0f", x) : String.format(Locale.ROOT, "%.1f", x)) + "×";
        }

        List<String> targets() {
            List<String> lines = new ArrayList<>();
            Row small = row(SMALL, "cudaFamily");
            Row large = row(LARGE, "cudaFamily");
            if (small != null && !Double.isNaN(small.micros())) {
                lines.add(String.format(
                        Locale.ROOT,
                        "cuda family, 1 KiB arrays, under 20 µs: %s (%.2f ± %.2f µs)",
                        small.micros() < 20 ? "MET" : "NOT MET",
                        small.micros(),
                        small.error()));
            }
            if (small != null && large != null && !Double.isNaN(small.micros()) && !Double.isNaN(large.micros())) {
                double growth = large.micros() / small.micros();
                lines.add(String.format(
                        Locale.ROOT,
                        "cuda family does not grow from 1 KiB to 1 GiB arrays: %s "
                                + "(%.2f → %.2f µs, ×%.2f; criterion: within ×1.25 or within the error bars)",
                        growth <= 1.25 || large.micros() - large.error() <= small.micros() + small.error()
                                ? "MET"
                                : "NOT MET",
                        small.micros(),
                        large.micros(),
                        growth));
            }
            return lines;
        }

        void print(PrintStream out) {
            out.println();
            out.println("cuwire serialization benchmark, " + date + ", " + machine + (quick ? " (quick)" : ""));
            for (long size : new long[] {SMALL, LARGE}) {
                out.println();
                out.println("two float32 arrays of " + size(size) + " each, ten fields:");
                out.printf(
                        Locale.ROOT,
                        "  %-17s %5s %14s %12s %11s %15s %15s%n",
                        "method",
                        "mode",
                        "µs/op",
                        "± µs",
                        "vs cuda",
                        "host bytes",
                        "wire bytes");
                Row cuda = row(size, "cudaFamily");
                for (String m : METHODS) {
                    Row r = row(size, m);
                    if (r == null) {
                        continue;
                    }
                    if (Double.isNaN(r.micros())) {
                        out.printf(Locale.ROOT, "  %-17s %s%n", m, r.notes().getProperty("status"));
                        continue;
                    }
                    out.printf(
                            Locale.ROOT,
                            "  %-17s %5s %14s %12s %11s %15s %15s%n",
                            m,
                            r.mode(),
                            num(r.micros()),
                            num(r.error()),
                            m.equals("cudaFamily") ? "1×" : ratio(r, cuda),
                            hostBytes(r),
                            r.notes().getProperty("wireBytes", "-"));
                }
            }
            out.println();
            targets().forEach(t -> out.println("target: " + t));
        }

        static String hostBytes(Row r) {
            String d2h = r.notes().getProperty("d2h");
            String h2d = r.notes().getProperty("h2d");
            return d2h == null ? "-" : String.valueOf(Long.parseLong(d2h) + Long.parseLong(h2d));
        }

        String csv() {
            StringBuilder sb = new StringBuilder("date,machine,array_bytes,method,mode,us_per_op,error_us,samples,"
                    + "ratio_vs_cuda,d2h_bytes,h2d_bytes,wire_bytes,status\n");
            for (long size : new long[] {SMALL, LARGE}) {
                Row cuda = row(size, "cudaFamily");
                for (String m : METHODS) {
                    Row r = row(size, m);
                    if (r == null) {
                        continue;
                    }
                    String ratio = m.equals("cudaFamily")
                            ? "1"
                            : ratio(r, cuda).replace("×", "").replace(",", "");
                    sb.append(String.join(
                                    ",",
                                    date,
                                    machine,
                                    String.valueOf(size),
                                    m,
                                    r.mode(),
                                    Double.isNaN(r.micros()) ? "" : String.format(Locale.ROOT, "%.3f", r.micros()),
                                    Double.isNaN(r.error()) ? "" : String.format(Locale.ROOT, "%.3f", r.error()),
                                    String.valueOf(r.samples()),
                                    ratio.equals("-") ? "" : ratio,
                                    r.notes().getProperty("d2h", ""),
                                    r.notes().getProperty("h2d", ""),
                                    r.notes().getProperty("wireBytes", ""),
                                    "\"" + r.notes().getProperty("status", "").replace("\"", "'") + "\""))
                            .append('\n');
                }
            }
            return sb.toString();
        }

        String markdown() {
            StringBuilder sb = new StringBuilder();
            sb.append("# Serialization benchmark, ")
                    .append(date)
                    .append(", ")
                    .append(machine)
                    .append("\n\n");
            sb.append("Encode + decode of one estimator with ten fields (two ints, a double, a long, a string, an ")
                    .append("enum, a flag, a list of four strings, and two float32 arrays `coef` and `centers` in ")
                    .append("device memory). Machine: ")
                    .append(Runtime.getRuntime().availableProcessors())
                    .append(" cores, JDK ")
                    .append(System.getProperty("java.version"))
                    .append(", device platform `")
                    .append(Devices.platform())
                    .append("` (")
                    .append(Devices.get(0).name())
                    .append("). JMH 1.37, ")
                    .append("one fork per group; 1 KiB: average time, warm-up ")
                    .append(quick ? "1" : "3")
                    .append(" × 1 s, measurement ")
                    .append(quick ? "2" : "5")
                    .append(" × 1 s; 1 GiB: the cuda family likewise, the others single-shot (")
                    .append(quick ? "0 warm-up, 1 measured" : "1 warm-up, 3 measured")
                    .append(").\n\n");
            sb.append("- `cudaFamily`: `serialize(model, CUDA)`, `encodeHeader`, `parseHeader`, decode over the ")
                    .append("sender's own device frames (borrowed, not moved): the header work alone.\n")
                    .append("- `hostFamily`: the same with `HOST`: device arrays copied to host frames (D2H) and ")
                    .append("rebuilt on the device (H2D); no transport.\n")
                    .append("- `jdkSerialization`, `kryo`, `fory`: the whole model through the library's stream ")
                    .append("into an in-memory chunked byte stream and back; arrays copied to the heap inside the ")
                    .append("stream (NdArray's JDK serial form; a user's Kryo 5.6.2 / Fory 1.6.0 serializer) and ")
                    .append("rebuilt on the device.\n")
                    .append("- `deviceAllocation`: a reference, not a serializer: allocating and freeing two arrays ")
                    .append("of the model's size on the receiving device, which every method but `cudaFamily` ")
                    .append("pays to rebuild the model (on the emulated device, a new shared-memory file per ")
                    .append("array, whose pages are touched afresh by the copy; CUDA would take them from a pool)")
                    .append(".\n")
                    .append("- host bytes: D2H + H2D bytes the copy engine counted in one round trip; wire bytes: ")
                    .append("header + frames, or the stream's length.\n\n");
            for (long size : new long[] {SMALL, LARGE}) {
                sb.append("## Two arrays of ").append(size(size)).append(" each\n\n");
                sb.append("| method | mode | µs/op | ± µs | vs cuda | host bytes | wire bytes | note |\n");
                sb.append("|---|---|---:|---:|---:|---:|---:|---|\n");
                Row cuda = row(size, "cudaFamily");
                for (String m : METHODS) {
                    Row r = row(size, m);
                    if (r == null) {
                        continue;
                    }
                    boolean ok = !Double.isNaN(r.micros());
                    sb.append("| `")
                            .append(m)
                            .append("` | ")
                            .append(r.mode())
                            .append(" | ")
                            .append(num(r.micros()))
                            .append(" | ")
                            .append(num(r.error()))
                            .append(" | ")
                            .append(m.equals("cudaFamily") && ok ? "1×" : ratio(r, cuda))
                            .append(" | ")
                            .append(hostBytes(r))
                            .append(" | ")
                            .append(r.notes().getProperty("wireBytes", "-"))
                            .append(" | ")
                            .append(ok ? "" : r.notes().getProperty("status"))
                            .append(" |\n");
                }
                sb.append('\n');
            }
            sb.append("## Targets\n\n");
            targets().forEach(t -> sb.append("- ").append(t).append('\n'));
            sb.append("\nReproduce: `./cuwire bench serialization")
                    .append(quick ? " --quick" : "")
                    .append("`.\n");
            return sb.toString();
        }
    }
}
