package io.cuwire.bench.cuda;

import io.cuwire.bench.harness.Cli;
import io.cuwire.bench.harness.Stats;
import io.cuwire.bench.harness.Table;
import io.cuwire.cuda.Cuda;
import io.cuwire.cuda.CudaEvent;
import io.cuwire.memory.Buffer;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.Device;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.DeviceStream;
import io.cuwire.memory.HostBuffer;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import picocli.CommandLine.Option;

/**
 * Copy bandwidth of the CUDA platform as users get it: every copy goes through {@link CopyEngine#copyAsync} on a
 * stream of GPU 0 and is timed with CUDA events recorded around it on that stream, after warm-up copies. Cases:
 * host-to-device and device-to-host from pinned and from pageable (plain native) memory, device-to-device on GPU 0
 * (bytes counted once) and, with two GPUs or more, GPU 0 to GPU 1 first without peer access (the driver stages the
 * copy) and then with it. GB/s are 10<sup>9</sup> bytes per second.
 *
 * <p>Run by {@code cuwire bench copy [--size SIZE] [--repeat N] [--out FILE.csv]} ({@link Args}; {@code SIZE} in the
 * {@link io.cuwire.bench.harness.Sizes} grammar) and the bundle's {@code bin/bench-copy}. Prints one line per case:
 * {@code COPY case=h2d_pinned size=1073741824 median_gbps=55.1 min_gbps=54.9 max_gbps=55.3 repeats=20}.
 * Peer access is enabled once per process and never disabled, so the case without it runs only if no copy between
 * the two GPUs happened before in this process.
 */
public final class CopyBenchmark {
    /** Default copy size: 1 GiB. */
    public static final long DEFAULT_SIZE = 1L << 30;
    /** Default timed repetitions per case. */
    public static final int DEFAULT_REPEAT = 20;
    /** Untimed copies before each case. */
    static final int WARMUP = 3;

    private static final long UNLIMITED = BufferAllocator.UNLIMITED;

    static final String[] CSV_COLUMNS = {"case", "size", "median_gbps", "min_gbps", "max_gbps", "repeats"};

    private CopyBenchmark() {}

    /**
     * What to run.
     *
     * @param size bytes per copy
     * @param repeat timed copies per case
     * @param out CSV file to write, or {@code null}
     */
    public record Options(long size, int repeat, Path out) {
        public Options {
            if (size <= 0) {
                throw new IllegalArgumentException("--size: " + size + " (expected: > 0)");
            }
            if (repeat <= 0) {
                throw new IllegalArgumentException("--repeat: " + repeat + " (expected: > 0)");
            }
        }

        /** Parses the options of {@link Args} ({@code cuwire bench copy --help}). */
        public static Options parse(String... args) {
            return Cli.parse(new Args(), args).options();
        }
    }

    /** The options of {@code cuwire bench copy} ({@code bin/bench-copy}), declared to picocli. */
    public static final class Args {
        /** The options at their defaults, for picocli to fill. */
        public Args() {}

        @Option(
                names = "--size",
                paramLabel = "SIZE",
                converter = Cli.SizeConverter.class,
                defaultValue = "1GiB",
                description = "bytes per copy (e.g. 1g, 1GiB, 64m; default: ${DEFAULT-VALUE})")
        long size;

        @Option(
                names = "--repeat",
                paramLabel = "N",
                defaultValue = "" + DEFAULT_REPEAT,
                description = "timed copies per case (default: ${DEFAULT-VALUE})")
        int repeat;

        @Option(names = "--out", paramLabel = "FILE.csv", description = "a CSV of the results")
        Path out;

        /**
         * The typed options.
         *
         * @throws IllegalArgumentException naming the option whose value is out of range
         */
        public Options options() {
            return new Options(size, repeat, out);
        }
    }

    /**
     * One case's bandwidth over its repetitions.
     *
     * @param name the case, e.g. {@code h2d_pinned}
     * @param size bytes per copy
     * @param medianGbps median bandwidth in GB/s
     * @param minGbps slowest repetition
     * @param maxGbps fastest repetition
     * @param repeats timed repetitions
     */
    public record Result(String name, long size, double medianGbps, double minGbps, double maxGbps, int repeats) {
        /** The result from per-repetition bandwidths. */
        static Result of(String name, long size, double[] gbps) {
            Stats s = Stats.of(gbps);
            return new Result(name, size, s.median(), s.min(), s.max(), s.count());
        }

        /** The printed line. */
        public String line() {
            return String.format(
                    Locale.ROOT,
                    "COPY case=%s size=%d median_gbps=%.2f min_gbps=%.2f max_gbps=%.2f" + " repeats=%d",
                    name,
                    size,
                    medianGbps,
                    minGbps,
                    maxGbps,
                    repeats);
        }

        /** The CSV row ({@link #CSV_COLUMNS}). */
        public String csv() {
            return String.join(",", cells());
        }

        String[] cells() {
            return new String[] {
                name,
                Long.toString(size),
                Table.num(medianGbps, 3),
                Table.num(minGbps, 3),
                Table.num(maxGbps, 3),
                Integer.toString(repeats)
            };
        }
    }

    /** Runs every case that the visible GPUs allow, printing a line for each; writes the CSV if asked. */
    public static List<Result> run(Options options, PrintStream out) {
        if (!Cuda.isAvailable()) {
            throw new IllegalStateException("CopyBenchmark needs a CUDA device: " + Cuda.unavailableReason());
        }
        List<Device> devices = Cuda.devices();
        long size = options.size();
        int repeat = options.repeat();
        out.println("# cuwire copy benchmark: CUDA " + Cuda.driverVersion() + ", " + devices.size() + " GPU(s) ("
                + deviceList(devices) + "); size " + size + " bytes, " + repeat + " repeats, " + WARMUP
                + " warm-up copies per case");
        List<Result> results = new ArrayList<>();
        Device gpu0 = devices.getFirst();
        try (BufferAllocator<DeviceBuffer> dev0 = gpu0.newAllocator("bench/gpu0", UNLIMITED);
                BufferAllocator<HostBuffer> pinned = gpu0.newPinnedAllocator("bench/pinned", UNLIMITED);
                BufferAllocator<HostBuffer> pageable = BufferAllocator.host("bench/pageable", UNLIMITED);
                DeviceStream stream = gpu0.newStream();
                CudaEvent start = CudaEvent.create(gpu0);
                CudaEvent end = CudaEvent.create(gpu0);
                DeviceBuffer a = dev0.allocate(size);
                DeviceBuffer b = dev0.allocate(size);
                HostBuffer pin = pinned.allocate(size);
                HostBuffer page = pageable.allocate(size)) {
            Timer timer = new Timer(stream, start, end, size, repeat);
            record(results, out, timer.measure("h2d_pinned", pin, a));
            record(results, out, timer.measure("d2h_pinned", a, pin));
            record(results, out, timer.measure("h2d_pageable", page, a));
            record(results, out, timer.measure("d2h_pageable", a, page));
            record(results, out, timer.measure("d2d", a, b));
            if (devices.size() >= 2) {
                Device gpu1 = devices.get(1);
                try (BufferAllocator<DeviceBuffer> dev1 = gpu1.newAllocator("bench/gpu1", UNLIMITED);
                        DeviceBuffer remote = dev1.allocate(size)) {
                    if (Cuda.peerAccessEnabled(gpu0, gpu1)) {
                        out.println("# skipped case=peer_no_access: peer access between " + gpu0 + " and " + gpu1
                                + " was enabled before the benchmark ran");
                    } else {
                        Cuda.setAutoPeerAccess(false);
                        try {
                            record(results, out, timer.measure("peer_no_access", a, remote));
                        } finally {
                            Cuda.setAutoPeerAccess(true);
                        }
                    }
                    record(results, out, timer.measure("peer", a, remote));
                    if (!Cuda.peerAccessEnabled(gpu0, gpu1)) {
                        out.println("# note: " + gpu0 + " and " + gpu1 + " cannot reach each other; case=peer was"
                                + " staged by the driver");
                    }
                }
            }
        }
        if (options.out() != null) {
            writeCsv(options.out(), results);
            out.println("# wrote " + options.out());
        }
        return results;
    }

    private static void record(List<Result> results, PrintStream out, Result result) {
        results.add(result);
        out.println(result.line());
        out.flush();
    }

    static void writeCsv(Path file, List<Result> results) {
        Table t = new Table(CSV_COLUMNS);
        for (Result r : results) {
            t.row((Object[]) r.cells());
        }
        Table.write(file, t.csv());
    }

    /** Times copies on one stream with a pair of events. */
    private record Timer(DeviceStream stream, CudaEvent start, CudaEvent end, long size, int repeat) {
        Result measure(String name, Buffer src, Buffer dst) {
            for (int i = 0; i < WARMUP; i++) {
                CopyEngine.copyAsync(src, 0, dst, 0, size, stream);
            }
            stream.synchronize();
            double[] gbps = new double[repeat];
            for (int i = 0; i < repeat; i++) {
                start.record(stream);
                CopyEngine.copyAsync(src, 0, dst, 0, size, stream);
                end.record(stream);
                end.synchronize();
                double seconds = CudaEvent.elapsedMillis(start, end) / 1e3;
                gbps[i] = size / seconds / 1e9;
            }
            return Result.of(name, size, gbps);
        }
    }

    static String deviceList(List<? extends Device> devices) {
        StringBuilder sb = new StringBuilder();
        for (Device d : devices) {
            sb.append(sb.isEmpty() ? "" : ", ").append(d).append(' ').append(d.name());
        }
        return sb.toString();
    }
}
