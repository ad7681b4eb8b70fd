package io.cuwire.bench.transport;

import io.cuwire.bench.harness.BenchChild;
import io.cuwire.bench.harness.Cli;
import io.cuwire.bench.harness.Results;
import io.cuwire.bench.harness.Secrets;
import io.cuwire.bench.harness.Sizes;
import io.cuwire.bench.harness.Stats;
import io.cuwire.bench.harness.Table;
import io.cuwire.memory.Buffer;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.Closeables;
import io.cuwire.memory.CopyDirection;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.DType;
import io.cuwire.memory.Device;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.HostMemoryPool;
import io.cuwire.memory.MemoryKind;
import io.cuwire.memory.MemoryResource;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import io.cuwire.memory.TransferScope;
import io.cuwire.serialize.DecodeTarget;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.FrameDescriptor;
import io.cuwire.serialize.Limits;
import io.cuwire.serialize.Serialized;
import io.cuwire.serialize.TypeRegistry;
import io.cuwire.transport.Connection;
import io.cuwire.transport.DeviceMap;
import io.cuwire.transport.Listener;
import io.cuwire.transport.Message;
import io.cuwire.transport.ReceivedMessage;
import io.cuwire.transport.TlsMode;
import io.cuwire.transport.TransportConfig;
import io.cuwire.transport.TransportException;
import io.cuwire.transport.Transports;
import java.io.IOException;
import java.io.PrintStream;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.CRC32;
import picocli.CommandLine;
import picocli.CommandLine.Option;

/**
 * {@code cuwire bench transfer}: a model moved from one process to another, per transport, family and size.
 *
 * <p>The bench process (the sender, on device 0) starts a receiver JVM (same java, same class path; on device 1 when
 * there are two) that listens on TCP, CUDA IPC and a raw socket. Per case the sender serializes a model-shaped object
 * ({@link Model}: hyper-parameters in the header, a {@code float32} coefficient array of the case's size and a small
 * intercept on the device) with the family, sends it, and the receiver decodes it onto its device and acknowledges
 * at once; the time from serializing to the acknowledgement is one transfer. Each side counts its own copies in a
 * {@link TransferScope} of its own (every thread of its process; in one process, its own thread's:
 * {@link CopyEngine#openThreadScope}), closed before anything else runs; outside the timing and after both scopes the
 * receiver checks the content (a CRC of sampled windows of every array, copied to the host) and reports it with the
 * bytes its side copied between host and device; the sender compares the CRC with its own. A case's copy counts are
 * the most any one of its transfers copied, cold and warm-up ones included. The first transfer is the cold
 * one (for IPC: the allocation is opened then); the median of {@code --repeat} more is reported, against the raw
 * ceiling of the path ({@link Ceiling}): the best of several plain socket transfers between the two processes (tcp,
 * tls, ucx), one round of which runs right before each timed transfer (so that a busy machine slows both alike), or the
 * copy engine's copy device 0 → the receiver's device in the sender's process (ipc; ucx carrying device frames), its
 * {@code --repeat} runs all before the case's timed transfers: interleaved, each timed pull followed a copy in the
 * other process's CUDA context, which on one GPU, whose two processes' contexts take turns, can make it wait on a
 * switch the bench itself caused (on the H200 the interleaved 1 MiB copy itself ran at 5.6-6.9 GB/s, run first at 80-90
 * GB/s; with this and the case warm-up below, changed together, the 1 MiB IPC case went from 0.33-0.86 ms to 0.106 ms;
 * their shares were not measured apart). In-process has no ceiling: it lends frames, and reports its latency. Transport
 * {@code tls} is TCP inside TLS 1.3 ({@link TlsMode#ON} at the sender; the receiver's TCP listener, in {@link
 * TlsMode#AUTO}, takes TLS and plaintext from loopback alike), so that one run can set TLS's cost beside plain TCP's.
 * For IPC, TCP, TLS and UCX a round trip of a 1 KiB device frame is timed too (the median of 2,000,
 * after at least 2,000 and 3 s of them untimed); over TCP and TLS each follows a round trip of the raw socket that
 * echoes 1 KiB (its median is {@code raw_rtt_us}, the ceiling of {@code rtt_vs_raw}). With {@code --arrays N} a
 * transport's cases end with the many-frames case ({@link ManyFrames}). Lines start with {@code RESULT}; a CSV goes to
 * {@code --out}.
 *
 * <p>Warm means warm for the JVM too: before a transport's cases, {@code --warmup} transfers of a 1 KiB model per
 * family run untimed (a JVM runs a method's first few thousand calls in the interpreter or lower compiler tiers; a
 * first measurement with 30 repeats found 1.5 ms per 1 KiB message over IPC, one after 500 found 0.46 ms), and after
 * each case's cold transfer more of the case's size run untimed before the timed ones: at least
 * {@value #CASE_WARMUP} (or {@code --repeat} if fewer) and until {@code --case-warmup} ms have passed. The 1 KiB
 * warm-up goes the push path of small frames; a larger case's frames are pulled, a path the JIT first sees in the
 * case itself (on the H200, 1 MiB over IPC took 0.86 ms as the median of 10 after 3 warm-ups, 0.41 ms as that of
 * 2,000). The 1 KiB warm-up goes through the same transfer path, so it also makes its own cold transfer and case
 * warm-up first.
 */
public final class TransferBench {
    private static final long CRC_WINDOW = 64 << 10;
    /** The check's window of each array of a model's layers (thousands of them in the many-frames case). */
    private static final long LAYER_WINDOW = 256;

    private static final int RTT_WARMUP = 2000;
    /**
     * The round trips' warm-up lasts at least this long too ({@code -Dcuwire.bench.rttWarmupMillis=N}): on the H200
     * host 2,000 round trips (0.2 s) ended before the JIT's top tier had compiled the receive path (a JFR recording
     * saw {@code IpcConnection.readMessage} compiled ~3 s into the run), and the median of 50,000 round trips was
     * 63.7 µs where that of the 2,000 after 2,000 was 87-110 µs.
     */
    private static final long RTT_WARMUP_NANOS = Long.getLong("cuwire.bench.rttWarmupMillis", 3000) * 1_000_000;
    /** Untimed transfers of a case's own size after its cold one. */
    static final int CASE_WARMUP = 3;
    /** Timed 1 KiB round trips; {@code -Dcuwire.bench.rttRounds=N} for more (a profile wants seconds of them). */
    private static final int RTT_ROUNDS = Integer.getInteger("cuwire.bench.rttRounds", 2000);

    private static final long JAVA_MAX_BYTES = 1L << 30;
    /**
     * The emulated platform's property for the bytes of freed large allocations a device keeps (its stand-in for a
     * GPU pool's reuse); the bench sets it to twice its largest size plus 64 MiB unless it is set.
     */
    static final String EMULATED_CACHE_PROPERTY = "cuwire.emulated.maxCachedBytes";
    /** The cache-resident chunks of the raw socket ceiling. */
    private static final long[] RAW_CHUNKS = {64 << 10, 256 << 10, 1 << 20};

    private static final String RAW_CHUNKS_DOC = "64 KiB, 256 KiB or 1 MiB";
    /** The parts of UCX's ring variants ({@code ucx-raw-4m}: the transport's default staging chunk, and beside it). */
    private static final long[] RAW_UCX_RING_CHUNKS = {1 << 20, 4 << 20, 16 << 20};
    /** Untimed 1 KiB transfers per transport and family before its cases, unless {@code --warmup} says. */
    static final int DEFAULT_WARMUP = 500;

    private TransferBench() {}

    /** The model that travels: an estimator's hyper-parameters and fitted arrays. */
    public static final class Model implements Serializable {
        private static final long serialVersionUID = 1L;
        String solver = "lbfgs";
        double tol = 1e-4;
        int nFeatures;
        NdArray coef;
        NdArray intercept;
        /** Further arrays (a list of layers): empty but in the many-frames case. */
        ArrayList<NdArray> layers = new ArrayList<>();
    }

    /**
     * What to run.
     *
     * @param transports {@code inproc}, {@code tcp}, {@code tls} (TCP inside TLS), {@code ucx}, {@code ipc}
     * @param families {@code cuda}, {@code host}, {@code java}
     * @param sizes bytes of the model's arrays per case
     * @param repeat timed transfers per case after the cold one
     * @param warmup untimed 1 KiB transfers per transport and family before its cases
     * @param out directory for the CSV, or {@code null}
     * @param arrays arrays of the many-frames case per transport ({@code --arrays}; 0: none)
     * @param arrayBytes bytes of each of them ({@code --array-bytes})
     * @param caseWarmupMillis the least time each case's untimed transfers of its size take ({@code --case-warmup})
     */
    public record Options(
            List<String> transports,
            List<Family> families,
            List<Long> sizes,
            int repeat,
            int warmup,
            Path out,
            int arrays,
            long arrayBytes,
            int caseWarmupMillis) {
        /** Parses the options of {@link Args} ({@code cuwire bench transfer --help}). */
        public static Options parse(String... args) {
            return Cli.parse(new Args(), args).options();
        }
    }

    /** The options of {@code cuwire bench transfer}, declared to picocli (the command mixes them in). */
    public static final class Args {
        /** The options at their defaults, for picocli to fill. */
        public Args() {}

        @Option(
                names = "--transports",
                split = ",",
                paramLabel = "T",
                converter = TransportName.class,
                defaultValue = "inproc,tcp,ucx,ipc",
                description = "inproc, tcp, tls (TCP inside TLS), ucx, ipc (default: ${DEFAULT-VALUE})")
        List<String> transports;

        @Option(
                names = "--families",
                split = ",",
                paramLabel = "F",
                converter = Cli.FamilyConverter.class,
                defaultValue = "cuda,host,java",
                description = "serializer families (default: cuda,host,java)")
        List<Family> families;

        @Option(
                names = "--sizes",
                split = ",",
                paramLabel = "SIZE",
                converter = ModelSize.class,
                defaultValue = "1KiB,1MiB,64MiB,1GiB",
                description = "the model's array bytes per case, multiples of 8 (default: ${DEFAULT-VALUE})")
        List<Long> sizes;

        @Option(
                names = "--repeat",
                paramLabel = "N",
                defaultValue = "10",
                description = "timed transfers per case after the cold one (default: ${DEFAULT-VALUE})")
        int repeat;

        @Option(
                names = "--warmup",
                paramLabel = "N",
                defaultValue = "" + DEFAULT_WARMUP,
                description = "untimed 1 KiB transfers per transport and family first (default: ${DEFAULT-VALUE})")
        int warmup;

        @Option(
                names = "--out",
                paramLabel = "DIR",
                defaultValue = "bench/results",
                description = "where the run is recorded, transfer-<machine>.md and .csv (default: ${DEFAULT-VALUE})")
        Path out;

        @Option(
                names = "--arrays",
                paramLabel = "N",
                defaultValue = "0",
                description = "adds the many-frames case per transport: a model of N arrays (default: 0, none)")
        int arrays;

        @Option(
                names = "--array-bytes",
                paramLabel = "SIZE",
                converter = ModelSize.class,
                defaultValue = "100KiB",
                description = "bytes of each array of the many-frames case (default: ${DEFAULT-VALUE})")
        long arrayBytes;

        @Option(
                names = "--case-warmup",
                paramLabel = "MS",
                defaultValue = "1000",
                description = "untimed transfers of each case's size after its cold one: at least " + CASE_WARMUP
                        + " and until MS ms have passed (default: ${DEFAULT-VALUE})")
        int caseWarmupMillis;

        /**
         * The typed options.
         *
         * @throws IllegalArgumentException naming the option whose value is out of range
         */
        public Options options() {
            return new Options(
                    List.copyOf(transports),
                    List.copyOf(families),
                    List.copyOf(sizes),
                    Cli.atLeast("--repeat", repeat, 1),
                    Cli.atLeast("--warmup", warmup, 0),
                    out,
                    Cli.atLeast("--arrays", arrays, 0),
                    arrayBytes,
                    Cli.atLeast("--case-warmup", caseWarmupMillis, 0));
        }
    }

    /** A transport of {@code --transports}. */
    static final class TransportName implements CommandLine.ITypeConverter<String> {
        @Override
        public String convert(String t) {
            if (!List.of("inproc", "tcp", "tls", "ucx", "ipc").contains(t)) {
                throw new CommandLine.TypeConversionException(
                        "unknown transport '" + t + "' (expected: inproc, tcp, tls, ucx, ipc)");
            }
            return t;
        }
    }

    /** A size of {@code --sizes}: {@link #parseSize}. */
    static final class ModelSize implements CommandLine.ITypeConverter<Long> {
        @Override
        public Long convert(String s) {
            try {
                return parseSize(s);
            } catch (IllegalArgumentException e) {
                throw new CommandLine.TypeConversionException(e.getMessage());
            }
        }
    }

    /**
     * The value {@code v} of option {@code flag} as an int of at least {@code min}.
     *
     * @throws IllegalArgumentException naming the flag and the value, if it is not a number or less than {@code min}
     */
    public static int atLeast(String flag, String v, int min) {
        int n;
        try {
            n = Integer.parseInt(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(flag + " " + v + " (expected: a number >= " + min + ")", e);
        }
        if (n < min) {
            throw new IllegalArgumentException(flag + " " + v + " (expected: >= " + min + ")");
        }
        return n;
    }

    /**
     * A model size of {@code --sizes}: {@link Sizes} (e.g. {@code 1KiB}, {@code 64m}, {@code 1GiB}), a multiple of 8
     * bytes.
     *
     * @throws IllegalArgumentException naming {@code s} when it is not a size or not a multiple of 8
     */
    public static long parseSize(String s) {
        long bytes = Sizes.parse(s);
        if (bytes < 8 || bytes % 8 != 0) {
            throw new IllegalArgumentException("size '" + s + "' (expected: a multiple of 8 bytes, at least 8)");
        }
        return bytes;
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("--serve")) {
            serve(Integer.parseInt(args[1]), Long.parseLong(args[2]), args.length > 3 && args[3].equals("ucx"));
            return;
        }
        Options options;
        try {
            options = Options.parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println("cuwire bench transfer: " + e.getMessage());
            System.exit(2);
            return;
        }
        System.exit(run(options, System.out));
    }

    // ---------------------------------------------------------------- the sender

    /**
     * One case's result; {@code ceiling} is {@code null} for the in-process transport, which lends frames instead of
     * moving them and so reports latency, not a ratio.
     */
    record Result(
            String transport,
            Family family,
            long size,
            double medianMs,
            double coldMs,
            Ceiling.Best ceiling,
            long d2hBytes,
            long h2dBytes,
            boolean checked) {
        double gbps() {
            return size / (medianMs * 1e6);
        }

        /** The ceiling's median time over this case's: 1 is as fast as the ceiling. */
        double vsRaw() {
            return ceiling.medianMs() / medianMs;
        }
    }

    /** Runs the benchmark, printing to {@code out}; the exit code (1 if a content check failed). */
    public static int run(Options options, PrintStream out) throws Exception {
        // the largest model's arrays: a case's size, or the many-frames case's arrays together
        long maxSize = Math.max(
                options.sizes().stream().mapToLong(Long::longValue).max().orElse(1024),
                (long) options.arrays() * options.arrayBytes());
        if (System.getProperty(EMULATED_CACHE_PROPERTY) == null) {
            // The emulated device keeps freed large files for reuse, as a GPU's memory pool keeps freed blocks; set
            // before the platform starts here, and passed on to the receiver JVM with the other cuwire.* properties.
            System.setProperty(EMULATED_CACHE_PROPERTY, Long.toString(2 * maxSize + (64 << 20)));
        }
        List<Device> devices = Devices.all();
        Device sender = devices.getFirst();
        int receiverOrdinal = devices.size() >= 2 ? 1 : 0;
        out.printf(
                Locale.ROOT,
                "cuwire bench transfer: platform %s, sender on device %d (%s), receiver on device %d,"
                        + " sizes %s, repeat %d; receive pools touched ahead (%s=%s on the emulated device)%n",
                Devices.platform(),
                sender.ordinal(),
                sender.name(),
                receiverOrdinal,
                options.sizes(),
                options.repeat(),
                EMULATED_CACHE_PROPERTY,
                System.getProperty(EMULATED_CACHE_PROPERTY));
        List<Result> results = new ArrayList<>();
        List<String> extra = new ArrayList<>();
        boolean allChecked = true;
        byte[] secret = Secrets.generate();
        try (Side side = new Side(sender, maxSize, secret, false)) {
            Child child = null;
            try {
                for (String transport : options.transports()) {
                    Connection c;
                    Thread inproc = null;
                    Listener inprocListener = null;
                    switch (transport) {
                        case "inproc" -> {
                            inprocListener = Transports.inProcess()
                                    .listen(
                                            "inproc://transfer-bench-"
                                                    + ProcessHandle.current().pid(),
                                            side.config);
                            Listener l = inprocListener;
                            CompletableFuture<Connection> accepted = new CompletableFuture<>();
                            inproc = Thread.ofPlatform()
                                    .name("transfer-bench-receiver")
                                    .start(() -> {
                                        try (Side receiver =
                                                        new Side(devices.get(receiverOrdinal), maxSize, secret, true);
                                                Connection rc = l.accept()) {
                                            accepted.complete(rc);
                                            receiver.serveConnection(rc);
                                        } catch (RuntimeException e) {
                                            accepted.completeExceptionally(e);
                                        }
                                    });
                            c = Transports.inProcess().connect(inprocListener.address(), side.config);
                            accepted.get();
                        }
                        default -> {
                            if (child == null) {
                                child = Child.start(
                                        receiverOrdinal,
                                        maxSize,
                                        secret,
                                        options.transports().contains("ucx"));
                            }
                            String address = switch (transport) {
                                case "tcp", "tls" -> child.tcpAddress;
                                case "ipc" -> child.ipcAddress;
                                default -> child.ucxAddress;
                            };
                            if (address == null) {
                                out.println("SKIP transport=" + transport + " reason=\"the receiver could not "
                                        + "listen on " + transport + " (its stderr says why)\"");
                                continue;
                            }
                            try {
                                c = Transports.forAddress(address)
                                        .connect(
                                                address,
                                                transport.equals("tls")
                                                        ? side.config.toBuilder()
                                                                .tls(TlsMode.ON)
                                                                .build()
                                                        : side.config);
                            } catch (TransportException e) {
                                out.println("SKIP transport=" + transport + " reason=\"" + e.getMessage() + "\"");
                                continue;
                            }
                        }
                    }
                    try (Connection conn = c) {
                        for (Family family : options.families()) {
                            if (options.warmup() > 0) {
                                allChecked &= transfer(conn, transport, family, 1024, options.warmup(), 0, side, null)
                                        .checked();
                            }
                        }
                        for (long size : options.sizes()) {
                            for (Family family : options.families()) {
                                if (family == Family.JAVA && size > JAVA_MAX_BYTES) {
                                    out.println("SKIP transport=" + transport + " family=java size=" + size
                                            + " reason=\"JDK serialization holds the model in one byte[] (< 2 GiB)\"");
                                    continue;
                                }
                                boolean ucxDirect = transport.equals("ucx")
                                        && family == Family.CUDA
                                        && conn.peer().ucxCarriesCuda()
                                        && devices.getFirst().platform().equals("cuda");
                                Ceiling ceiling = Ceiling.of(
                                        transport,
                                        size,
                                        options.repeat(),
                                        side,
                                        child,
                                        devices,
                                        receiverOrdinal,
                                        ucxDirect);
                                Result r;
                                try {
                                    r = transfer(
                                            conn,
                                            transport,
                                            family,
                                            size,
                                            options.repeat(),
                                            options.caseWarmupMillis(),
                                            side,
                                            ceiling);
                                } finally {
                                    if (ceiling != null) {
                                        ceiling.close();
                                    }
                                }
                                results.add(r);
                                allChecked &= r.checked();
                                out.println(resultLine(r));
                            }
                        }
                        if (options.arrays() > 0) {
                            ManyFrames mf = manyFrames(
                                    conn,
                                    transport,
                                    options.arrays(),
                                    options.arrayBytes(),
                                    options.repeat(),
                                    side,
                                    transport.equals("ipc") ? devices.get(receiverOrdinal) : null);
                            allChecked &= mf.checked();
                            out.println(mf.line());
                            extra.add(mf.line());
                        }
                        if (List.of("ipc", "tcp", "tls", "ucx").contains(transport)) {
                            // over a socket (tcp, tls) its ceiling is the raw socket's 1 KiB echo, interleaved
                            boolean socket = transport.equals("tcp") || transport.equals("tls");
                            double[] rtt = roundTrip(conn, side, socket ? child : null);
                            String line = String.format(
                                            Locale.ROOT,
                                            "RESULT transport=%s family=cuda size=1024 " + "rtt_us=%.1f",
                                            transport,
                                            rtt[0])
                                    + (socket
                                            ? String.format(
                                                    Locale.ROOT,
                                                    " raw_rtt_us=%.1f rtt_vs_raw=%.2f",
                                                    rtt[1],
                                                    rtt[0] / rtt[1])
                                            : "");
                            out.println(line);
                            extra.add(line); // as printed: bench/README.md's generator reads RESULT lines
                        }
                        conn.send(control("bye", List.of())).join();
                    } finally {
                        if (inproc != null) {
                            inproc.join(Duration.ofSeconds(30));
                            inprocListener.close();
                        }
                    }
                }
            } finally {
                if (child != null) {
                    child.close();
                }
            }
        }
        if (options.out() != null) {
            Path csv = writeCsv(options.out(), results, extra);
            out.println("wrote " + csv);
        }
        return allChecked ? 0 : 1;
    }

    /**
     * One case: a cold transfer, untimed ones (at least {@value #CASE_WARMUP} or {@code repeat} if fewer, until
     * {@code warmupMillis} have passed), then {@code ceiling}'s runs if they go first ({@link Ceiling#interleaved}),
     * then {@code repeat} timed ones, each right after a round of an interleaved ceiling's runs; {@code ceiling}
     * {@code null}: none.
     */
    private static Result transfer(
            Connection c,
            String transport,
            Family family,
            long size,
            int repeat,
            int warmupMillis,
            Side side,
            Ceiling ceiling) {
        double[] ms = new double[repeat];
        double coldMs = 0;
        long d2h = 0;
        long h2d = 0;
        boolean checked = true;
        int least = Math.min(CASE_WARMUP, repeat);
        boolean oneProcess = transport.equals("inproc");
        try (ModelOnDevice model = new ModelOnDevice(side.model(size))) {
            long expected = crc(model.model());
            long warmUntil = 0;
            int warm = 0;
            int timed = -1; // the untimed ones (the cold one first) until the warm-up is over
            while (timed < repeat) {
                if (timed < 0 && warm > least && System.nanoTime() >= warmUntil) {
                    if (ceiling != null && !ceiling.interleaved()) {
                        for (int r = 0; r < repeat; r++) {
                            ceiling.round(r);
                        }
                    }
                    timed = 0;
                }
                if (timed >= 0 && ceiling != null && ceiling.interleaved()) {
                    ceiling.round(timed);
                }
                One one = one(c, oneProcess, family, model.model(), expected, side);
                checked &= one.checked();
                // The most one transfer of the case copied, cold and warm-up ones included.
                d2h = Math.max(d2h, one.d2h());
                h2d = Math.max(h2d, one.h2d());
                if (timed >= 0) {
                    ms[timed++] = one.ms();
                } else {
                    if (warm == 0) {
                        coldMs = one.ms();
                        warmUntil = System.nanoTime() + warmupMillis * 1_000_000L;
                    }
                    warm++;
                }
            }
        }
        return new Result(
                transport,
                family,
                size,
                Stats.median(ms),
                coldMs,
                ceiling == null ? null : ceiling.best(),
                d2h,
                h2d,
                checked);
    }

    /**
     * One transfer's figures: its time, both sides' copies between host and device, whether the receiver's content
     * check matched, the frames the receiver allocated, both sides' read and write system calls and the sender's
     * allocations the receiver opened (mapped) for it (IPC; 0 elsewhere).
     */
    record One(
            double ms,
            long d2h,
            long h2d,
            boolean checked,
            long receiverAllocations,
            long receiverSyscalls,
            long senderSyscalls,
            long receiverOpens,
            long senderCpuNanos,
            long receiverCpuNanos) {}

    /**
     * Sends {@code model} once with {@code family} and waits for the acknowledgement (the timed part), then for the
     * receiver's report. Each side counts its own copies (see the class comment) and system calls.
     */
    private static One one(Connection c, boolean oneProcess, Family family, Model model, long expected, Side side) {
        CompletableFuture<?> sent;
        long t0;
        long t1;
        long sendD2h;
        long sendH2d;
        long syscalls;
        long cpu0;
        long cpu;
        Serialized s;
        // Each side counts its own copies: in one process the receiver is another thread, so the sender counts its
        // thread's only; across processes this process's copies are the sender's (its writer thread stages device
        // frames).
        try (TransferScope scope =
                oneProcess ? CopyEngine.openThreadScope("bench send") : CopyEngine.openScope("bench send")) {
            long calls0 = Syscalls.now();
            cpu0 = Cpu.now();
            t0 = System.nanoTime();
            s = side.registry.serialize(model, family);
            sent = c.send(Message.of(s));
            try (ReceivedMessage ack = c.receive()) {
                expectRoot(ack, "ack");
            }
            t1 = System.nanoTime();
            cpu = Cpu.now() - cpu0;
            syscalls = Syscalls.since(calls0);
            sent.join();
            sendD2h = scope.bytes(CopyDirection.D2H);
            sendH2d = scope.bytes(CopyDirection.H2D);
        }
        s.close();
        String[] report;
        try (ReceivedMessage crc = c.receive()) {
            report = ((String) crc.value().root()).split(" ");
        }
        boolean checked = report[0].equals("crc") && Long.parseLong(report[1]) == expected;
        return new One(
                (t1 - t0) / 1e6,
                sendD2h + Long.parseLong(report[3]),
                sendH2d + Long.parseLong(report[2]),
                checked,
                Long.parseLong(report[4]),
                Long.parseLong(report[5]),
                syscalls,
                Long.parseLong(report[6]),
                cpu,
                Long.parseLong(report[7]));
    }

    /**
     * The many-frames case: a model of {@code arrays} arrays of {@code arrayBytes} each against one of a single
     * array of the same total bytes, {@code repeat} timed rounds of each, alternating (after a cold and an untimed
     * transfer of each), with the {@code cuda} family.
     */
    record ManyFrames(
            String transport,
            int arrays,
            long arrayBytes,
            double manyMs,
            double oneMs,
            double manyAllocations,
            double oneAllocations,
            double manyReceiverSyscalls,
            double manySenderSyscalls,
            double oneReceiverSyscalls,
            double oneSenderSyscalls,
            long hostBytes,
            double copyPerFrameUs,
            double manyOpens,
            double oneOpens,
            long coldManyOpens,
            long coldOneOpens,
            double senderCpuPerFrameUs,
            double receiverCpuPerFrameUs,
            boolean checked) {
        /** (many − one) / arrays, in µs. */
        double perFrameUs() {
            return (manyMs - oneMs) * 1e3 / arrays;
        }

        String line() {
            return String.format(
                            Locale.ROOT,
                            "RESULT transport=%s family=cuda many_frames arrays=%d array_bytes=%d "
                                    + "many_ms=%.3f one_ms=%.3f per_frame_us=%.3f receiver_allocations=%.0f/%.0f "
                                    + "receiver_syscalls=%.0f/%.0f sender_syscalls=%.0f/%.0f receiver_opens=%.0f/%.0f "
                                    + "cold_opens=%d/%d sender_cpu_per_frame_us=%.3f receiver_cpu_per_frame_us=%.3f "
                                    + "host_bytes=%d checked=%s",
                            transport,
                            arrays,
                            arrayBytes,
                            manyMs,
                            oneMs,
                            perFrameUs(),
                            manyAllocations,
                            oneAllocations,
                            manyReceiverSyscalls,
                            oneReceiverSyscalls,
                            manySenderSyscalls,
                            oneSenderSyscalls,
                            manyOpens,
                            oneOpens,
                            coldManyOpens,
                            coldOneOpens,
                            senderCpuPerFrameUs,
                            receiverCpuPerFrameUs,
                            hostBytes,
                            checked ? "ok" : "MISMATCH")
                    + (Double.isNaN(copyPerFrameUs)
                            ? ""
                            : String.format(Locale.ROOT, " copy_per_frame_us=%.3f", copyPerFrameUs));
        }
    }

    /**
     * The many-frames case over {@code c}; with {@code copyTarget} (IPC: the receiver's device) also the per-frame cost
     * of the copies alone ({@link #copyPerFrameUs}), measured before the transfers.
     */
    private static ManyFrames manyFrames(
            Connection c, String transport, int arrays, long arrayBytes, int repeat, Side side, Device copyTarget) {
        boolean oneProcess = transport.equals("inproc");
        long[][] counts = new long[12][repeat];
        long[] coldOpens = new long[2];
        double[] manyMs = new double[repeat];
        double[] oneMs = new double[repeat];
        boolean checked = true;
        long hostBytes = 0;
        double copyPerFrameUs;
        try (ModelOnDevice many = new ModelOnDevice(side.layered(arrays, arrayBytes));
                ModelOnDevice single = new ModelOnDevice(side.layered(1, arrays * arrayBytes))) {
            long manyCrc = crc(many.model());
            long singleCrc = crc(single.model());
            copyPerFrameUs = copyTarget == null
                    ? Double.NaN
                    : copyPerFrameUs(many.model().layers, single.model().layers.getFirst(), copyTarget, repeat);
            for (int i = -2; i < repeat; i++) {
                One m = one(c, oneProcess, Family.CUDA, many.model(), manyCrc, side);
                One o = one(c, oneProcess, Family.CUDA, single.model(), singleCrc, side);
                checked &= m.checked() && o.checked();
                hostBytes = Math.max(hostBytes, Math.max(m.d2h() + m.h2d(), o.d2h() + o.h2d()));
                if (i == -2) {
                    coldOpens[0] = m.receiverOpens();
                    coldOpens[1] = o.receiverOpens();
                }
                if (i >= 0) {
                    manyMs[i] = m.ms();
                    oneMs[i] = o.ms();
                    counts[0][i] = m.receiverAllocations();
                    counts[1][i] = o.receiverAllocations();
                    counts[2][i] = m.receiverSyscalls();
                    counts[3][i] = m.senderSyscalls();
                    counts[4][i] = o.receiverSyscalls();
                    counts[5][i] = o.senderSyscalls();
                    counts[6][i] = m.receiverOpens();
                    counts[7][i] = o.receiverOpens();
                    counts[8][i] = m.senderCpuNanos();
                    counts[9][i] = o.senderCpuNanos();
                    counts[10][i] = m.receiverCpuNanos();
                    counts[11][i] = o.receiverCpuNanos();
                }
            }
        }
        double[] med = new double[counts.length];
        for (int k = 0; k < counts.length; k++) {
            med[k] = Stats.median(Arrays.stream(counts[k]).asDoubleStream().toArray());
        }
        return new ManyFrames(
                transport,
                arrays,
                arrayBytes,
                Stats.median(manyMs),
                Stats.median(oneMs),
                med[0],
                med[1],
                med[2],
                med[3],
                med[4],
                med[5],
                hostBytes,
                copyPerFrameUs,
                med[6],
                med[7],
                coldOpens[0],
                coldOpens[1],
                (med[8] - med[9]) / 1e3 / arrays,
                (med[10] - med[11]) / 1e3 / arrays,
                checked);
    }

    /**
     * What copying alone costs per frame, the floor under IPC's per-frame cost on this machine: the copy engine's
     * copies of each of {@code layers} into its place in one buffer of {@code target} (as the receiver's run blocks
     * take them) against one copy of {@code single}, their bytes together, into the same buffer; the medians of
     * {@code repeat} rounds (after one untimed), (many − one) / layers in µs. On the emulated device a copy of 100 KiB
     * ran at ~10 GB/s where one of 4 MiB or more ran at ~14 GB/s (plain {@code MemorySegment.copy} on the 2-core VM,
     * 2026-12-07), so 10,000 copies of 100 KiB cost microseconds each more than one of 1 GB, whatever moves them.
     */
    private static double copyPerFrameUs(List<NdArray> layers, NdArray single, Device target, int repeat) {
        double[] manyMs = new double[repeat];
        double[] oneMs = new double[repeat];
        try (BufferAllocator<DeviceBuffer> alloc = target.newAllocator("bench-copy-floor", BufferAllocator.UNLIMITED);
                DeviceBuffer dst = alloc.allocate(single.byteSize())) {
            for (int i = -1; i < repeat; i++) {
                long t0 = System.nanoTime();
                long offset = 0;
                for (NdArray a : layers) {
                    CopyEngine.copy(a.buffer(), 0, dst, offset, a.byteSize());
                    offset += a.byteSize();
                }
                long t1 = System.nanoTime();
                CopyEngine.copy(single.buffer(), dst);
                long t2 = System.nanoTime();
                if (i >= 0) {
                    manyMs[i] = (t1 - t0) / 1e6;
                    oneMs[i] = (t2 - t1) / 1e6;
                }
            }
        }
        return (Stats.median(manyMs) - Stats.median(oneMs)) * 1e3 / layers.size();
    }

    /**
     * The median 1 KiB round trip over {@code c} in µs and, with {@code raw} (the receiver's raw socket), that of the
     * raw socket echoing 1 KiB, one of which runs right before each of {@code c}'s (-1 without).
     */
    private static double[] roundTrip(Connection c, Side side, Child raw) throws IOException {
        try (DeviceBuffer frame = side.device.allocate(1024)) {
            Message ping = control("rtt", List.of(frame));
            double[] us = new double[RTT_ROUNDS];
            double[] rawUs = new double[RTT_ROUNDS];
            long warmUntil = System.nanoTime() + RTT_WARMUP_NANOS;
            // untimed until RTT_WARMUP round trips and RTT_WARMUP_NANOS have passed, then RTT_ROUNDS timed ones
            for (int i = 0, timed = -1; timed < RTT_ROUNDS; i++) {
                if (timed < 0 && i >= RTT_WARMUP && System.nanoTime() >= warmUntil) {
                    timed = 0;
                }
                if (raw != null) {
                    double r = raw.rawEcho(side.rawSource, 1024);
                    if (timed >= 0) {
                        rawUs[timed] = r;
                    }
                }
                long t0 = System.nanoTime();
                CompletableFuture<?> sent = c.send(ping);
                try (ReceivedMessage pong = c.receive()) {
                    expectRoot(pong, "rtt");
                }
                long t1 = System.nanoTime();
                sent.join();
                if (timed >= 0) {
                    us[timed++] = (t1 - t0) / 1e3;
                }
            }
            return new double[] {Stats.median(us), raw == null ? -1 : Stats.median(rawUs)};
        }
    }

    private static String resultLine(Result r) {
        String head = String.format(
                Locale.ROOT,
                "RESULT transport=%s family=%s size=%d median_ms=%.4f gbps=%.3f " + "d2h_bytes=%d h2d_bytes=%d ",
                r.transport(),
                r.family().wireName(),
                r.size(),
                r.medianMs(),
                r.gbps(),
                r.d2hBytes(),
                r.h2dBytes());
        String tail =
                String.format(Locale.ROOT, "cold_ms=%.3f checked=%s", r.coldMs(), r.checked() ? "ok" : "MISMATCH");
        if (r.ceiling() == null) {
            return head + String.format(Locale.ROOT, "latency_us=%.1f ", r.medianMs() * 1e3) + tail;
        }
        return head
                + String.format(
                        Locale.ROOT,
                        "vs_raw=%.3f ceiling=%s raw_gbps=%.3f ",
                        r.vsRaw(),
                        r.ceiling().name(),
                        r.size() / (r.ceiling().medianMs() * 1e6))
                + tail;
    }

    /**
     * The raw ceiling of a path, run with a case's timed transfers: over a socket (tcp, tls, ucx staging device frames;
     * interleaved with them) the same bytes with no serialization, as one big pre-touched buffer ({@code raw-once},
     * cold in the caches at large sizes) and as a cache-resident chunk of {@value #RAW_CHUNKS_DOC} written again and
     * again ({@code raw-64k}, ...; chunks smaller than the size only), the receiver reading into a pre-touched buffer
     * of the whole size and answering one byte; for ucx staging through host memory also UCX's own tag transfer of the
     * same bytes ({@code ucx-raw}, {@link RawUcx}: between two processes of one host UCX's shared memory passes the
     * socket), as one message and in parts of 1, 4 or 16 MiB through a ring of the transport's staging slots on each
     * side ({@code ucx-raw-4m}, ...: the staged path's own shape, its ring resident in the caches); for ipc, and for
     * ucx's cuda family when the peer's UCX carries CUDA (device frames go direct), the copy engine's copy device 0 →
     * the receiver's device (a peer copy between two GPUs, the device's own copy on one; all of its runs before the
     * timed transfers). The best variant by median is the
     * ceiling. In-process has none.
     */
    static final class Ceiling implements AutoCloseable {
        /** A variant's name and median ms. */
        record Best(String name, double medianMs) {}

        private final List<String> names = new ArrayList<>();
        private final List<RawRun> runs = new ArrayList<>();
        private final double[][] ms;
        private final List<AutoCloseable> held = new ArrayList<>();
        private final boolean interleaved;

        /** One run of a variant, in ms. */
        private interface RawRun {
            double run() throws IOException;
        }

        private Ceiling(List<String> names, List<RawRun> runs, int repeat, boolean interleaved) {
            this.interleaved = interleaved;
            this.names.addAll(names);
            this.runs.addAll(runs);
            this.ms = new double[names.size()][repeat];
        }

        /** {@code transport}'s ceiling for {@code size} bytes; {@code null} for inproc. */
        static Ceiling of(
                String transport,
                long size,
                int repeat,
                Side side,
                Child child,
                List<Device> devices,
                int receiverOrdinal,
                boolean ucxDirect) {
            List<String> names = new ArrayList<>();
            List<RawRun> runs = new ArrayList<>();
            boolean deviceCopy = transport.equals("ipc") || ucxDirect;
            switch (transport) {
                case "inproc" -> {
                    return null;
                }
                case "ucx" -> {
                    if (ucxDirect) {
                        names.add(receiverOrdinal == devices.getFirst().ordinal() ? "device-copy" : "peer-copy");
                    } else {
                        socketCeilings(names, runs, side, child, size);
                        if (child.rawUcx != null) {
                            names.add("ucx-raw");
                            runs.add(() -> child.rawUcx.transfer(side.rawSource, size));
                            int slots = side.config.stagingSlots();
                            for (long chunk : RAW_UCX_RING_CHUNKS) {
                                if (chunk < size && chunk * slots <= side.rawSource.byteSize()) {
                                    names.add("ucx-raw-" + (chunk >> 20) + "m");
                                    runs.add(() -> child.rawUcx.transferRing(side.rawSource, size, chunk, slots));
                                }
                            }
                        }
                    }
                }
                case "tcp", "tls" -> socketCeilings(names, runs, side, child, size);
                case "ipc" -> {
                    names.add(receiverOrdinal == devices.getFirst().ordinal() ? "device-copy" : "peer-copy");
                }
                default -> throw new IllegalArgumentException(transport);
            }
            Ceiling c = new Ceiling(names, runs, repeat, !deviceCopy);
            if (deviceCopy) {
                BufferAllocator<DeviceBuffer> target =
                        devices.get(receiverOrdinal).newAllocator("bench-raw", BufferAllocator.UNLIMITED);
                c.held.add(target);
                DeviceBuffer src = side.device.allocate(size);
                c.held.add(src);
                DeviceBuffer dst = target.allocate(size);
                c.held.add(dst);
                c.runs.add(() -> {
                    long t0 = System.nanoTime();
                    CopyEngine.copy(src, dst);
                    return (System.nanoTime() - t0) / 1e6;
                });
            }
            c.round(-1); // untimed: the first of each variant
            return c;
        }

        /** The raw socket's variants: one big buffer, and each cache-resident chunk smaller than {@code size}. */
        private static void socketCeilings(List<String> names, List<RawRun> runs, Side side, Child child, long size) {
            names.add("raw-once");
            runs.add(() -> child.rawTransfer(side.rawSource, size, 0));
            for (long chunk : RAW_CHUNKS) {
                if (chunk < size) {
                    names.add("raw-" + (chunk >= 1 << 20 ? (chunk >> 20) + "m" : (chunk >> 10) + "k"));
                    runs.add(() -> child.rawTransfer(side.rawSource, size, chunk));
                }
            }
        }

        /** Frees what the variants hold (the copy's buffers). */
        @Override
        public void close() {
            Closeables.closeAll(held.reversed());
        }

        /**
         * Whether a round runs right before each timed transfer (a socket's variants) or all rounds before the first
         * (a device copy, in the sender's CUDA context: see the class's comment).
         */
        boolean interleaved() {
            return interleaved;
        }

        /** Runs every variant once, as timed round {@code i} ({@code -1}: untimed). */
        void round(int i) {
            for (int v = 0; v < runs.size(); v++) {
                double t;
                try {
                    t = runs.get(v).run();
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
                if (i >= 0) {
                    ms[v][i] = t;
                }
            }
        }

        /** The variant of the lowest median. */
        Best best() {
            Best best = null;
            for (int v = 0; v < names.size(); v++) {
                double median = Stats.median(ms[v]);
                if (best == null || median < best.medianMs()) {
                    best = new Best(names.get(v), median);
                }
            }
            return best;
        }
    }

    /**
     * The raw ceiling of a device-to-device path: the times, in ms, of {@code repeat} copies of {@code size} bytes
     * by the copy engine from {@code from}'s memory to a buffer on {@code to} (a peer copy between two GPUs, with
     * peer access as the platform sets it up), after one untimed copy.
     */
    public static double[] copyMs(BufferAllocator<DeviceBuffer> from, Device to, long size, int repeat) {
        double[] ms = new double[repeat];
        try (BufferAllocator<DeviceBuffer> target = to.newAllocator("bench-raw", BufferAllocator.UNLIMITED);
                DeviceBuffer src = from.allocate(size);
                DeviceBuffer dst = target.allocate(size)) {
            for (int i = 0; i <= repeat; i++) {
                long t0 = System.nanoTime();
                CopyEngine.copy(src, dst);
                long t1 = System.nanoTime();
                if (i > 0) {
                    ms[i - 1] = (t1 - t0) / 1e6;
                }
            }
        }
        return ms;
    }

    private static void expectRoot(ReceivedMessage m, String root) {
        if (!root.equals(m.value().root())) {
            throw new IllegalStateException(
                    "expected a '" + root + "' message, got " + m.value().root());
        }
    }

    private static Path writeCsv(Path dir, List<Result> results, List<String> extra) throws IOException {
        Table t = new Table(
                "transport",
                "family",
                "size",
                "median_ms",
                "gbps",
                "d2h_bytes",
                "h2d_bytes",
                "vs_raw",
                "ceiling",
                "raw_ms",
                "cold_ms",
                "checked");
        for (Result r : results) {
            boolean none = r.ceiling() == null;
            t.row(
                    r.transport(),
                    r.family().wireName(),
                    r.size(),
                    Table.num(r.medianMs(), 4),
                    Table.num(r.gbps(), 3),
                    r.d2hBytes(),
                    r.h2dBytes(),
                    none ? "" : Table.num(r.vsRaw(), 3),
                    none ? "" : r.ceiling().name(),
                    none ? "" : Table.num(r.ceiling().medianMs(), 4),
                    Table.num(r.coldMs(), 3),
                    r.checked());
        }
        StringBuilder b = new StringBuilder(t.csv());
        StringBuilder m = new StringBuilder(t.markdown());
        for (String e : extra) {
            b.append("# ").append(e).append('\n');
            m.append("\n- `").append(e).append('`');
        }
        return Results.record(
                dir,
                "transfer",
                "`cuwire bench transfer` on " + Results.machine(),
                Results.now(),
                m.toString(),
                b.toString());
    }

    // ---------------------------------------------------------------- both sides

    /** A CRC of sampled windows (start, middle, end) of every array of {@code m}, read through the copy engine. */
    static long crc(Model m) {
        CRC32 crc = new CRC32();
        for (NdArray a : new NdArray[] {m.coef, m.intercept}) {
            window(crc, a, CRC_WINDOW);
        }
        for (NdArray a : m.layers) {
            window(crc, a, LAYER_WINDOW);
        }
        crc.update(m.solver.getBytes(StandardCharsets.UTF_8));
        crc.update(m.nFeatures);
        crc.update(m.layers.size());
        return crc.getValue();
    }

    /** Adds to {@code crc} three windows of {@code a} (start, middle, end) of at most {@code bytes}. */
    private static void window(CRC32 crc, NdArray a, long bytes) {
        long n = a.byteSize();
        long w = Math.min(bytes, n);
        byte[] window = new byte[(int) w];
        for (long off : new long[] {0, (n - w) / 2 / 8 * 8, n - w}) {
            CopyEngine.copyToSegment(a.buffer(), a.byteOffset() + off, MemorySegment.ofArray(window));
            crc.update(window);
        }
    }

    private static Message control(String root, List<? extends Buffer> frames) {
        List<FrameDescriptor> descriptors = new ArrayList<>();
        for (Buffer b : frames) {
            descriptors.add(new FrameDescriptor(b.kind(), b.deviceOrdinal(), b.byteSize()));
        }
        return Message.of(
                new Serialized.Header(Serialized.FORMAT_VERSION, Set.of(), root, descriptors).encode(), frames);
    }

    /** A model on a device, closed with its arrays. */
    private record ModelOnDevice(Model model) implements AutoCloseable {
        @Override
        public void close() {
            model.coef.close();
            model.intercept.close();
            Closeables.closeAll(model.layers);
        }
    }

    /** One side's memory, registry and configuration. */
    private static final class Side implements AutoCloseable {
        final CountingMemory deviceMemory;
        final BufferAllocator<DeviceBuffer> device;
        final HostMemoryPool hostPool;
        final BufferAllocator<HostBuffer> host;
        final TypeRegistry registry;
        final TransportConfig config;
        final DecodeTarget target;
        final MemorySegment rawSource;
        final Arena arena = Arena.ofShared();
        final DeviceBuffer reply;
        /** Whether the other side of this side's transfers runs in this process (the in-process receiver). */
        final boolean sharesProcess;

        Side(Device d, long maxSize, byte[] secret, boolean sharesProcess) {
            this.sharesProcess = sharesProcess;
            deviceMemory = new CountingMemory(d.memory());
            device = BufferAllocator.root("bench-device-" + d.ordinal(), BufferAllocator.UNLIMITED, deviceMemory);
            hostPool = new HostMemoryPool(d.pinnedMemory(), 4 * maxSize + (64 << 20));
            host = BufferAllocator.root("bench-host", BufferAllocator.UNLIMITED, hostPool);
            registry = new TypeRegistry(Limits.DEFAULT, 64 << 10, host)
                    .registerGeneric(Model.class, Family.CUDA, Family.HOST)
                    .register(Model.class, "bench.Model")
                    .allowJava(Model.class);
            // Every family the bench measures, java included: a connection carries only the families it agreed.
            // A first TLS handshake between two fresh JVMs on a busy machine can take seconds: the bench waits.
            // -Dcuwire.bench.noSecret=true (passed to the receiver too): no secret, so no handshake proof and no
            // message tags, to measure what they cost
            TransportConfig.Builder keyed = Boolean.getBoolean("cuwire.bench.noSecret")
                    ? TransportConfig.builder().allowUnauthenticated(true)
                    : TransportConfig.builder().secret(secret);
            // -Dcuwire.bench.stagingChunkBytes=N, -Dcuwire.bench.stagingSlots=N (passed on too): the staging ring's
            // shape, to measure it
            keyed.staging(
                    Integer.getInteger("cuwire.bench.stagingChunkBytes", 4 << 20),
                    Integer.getInteger("cuwire.bench.stagingSlots", 3));
            config = keyed.ioTimeout(Duration.ofSeconds(120))
                    .handshakeTimeout(Duration.ofSeconds(30))
                    .families(Family.CUDA, Family.HOST, Family.JAVA)
                    .receiveInto(DeviceMap.of(host, device).withPinned(host))
                    .build();
            target = new DecodeTarget(device, host, Limits.DEFAULT);
            rawSource = arena.allocate(Math.max(maxSize, 8), 64);
            rawSource.fill((byte) 3);
            reply = device.allocate(1024);
            // A receiver that expects models of up to maxSize touches its pools ahead: the host pool keeps the block
            // and the device pool (a GPU's, or the emulated device's kept files) the memory, so that not even the
            // first message's frames fault their pages in.
            host.allocate(maxSize).close();
            device.allocate(maxSize).close();
        }

        /**
         * A scope counting this side's copies: the calling thread's when the other side shares the process (an
         * in-process connection copies nothing of its own), else every thread's of this process.
         */
        TransferScope openScope(String name) {
            return sharesProcess ? CopyEngine.openThreadScope(name) : CopyEngine.openScope(name);
        }

        /** A model whose coefficient array holds {@code bytes} of a repeatable pattern. */
        Model model(long bytes) {
            Model m = new Model();
            m.nFeatures = (int) Math.min(Integer.MAX_VALUE, bytes / 4);
            m.coef = NdArray.empty(device, DType.FLOAT32, Order.C, bytes / 4);
            m.intercept = NdArray.fromArray(device, new double[] {0.25});
            long chunk = Math.min(bytes, 16L << 20);
            try (Arena a = Arena.ofConfined()) {
                MemorySegment pattern = a.allocate(chunk, 64);
                for (long i = 0; i < chunk; i += 8) {
                    pattern.set(ValueLayout.JAVA_LONG_UNALIGNED, i, i * 0x9E3779B97F4A7C15L);
                }
                for (long off = 0; off < bytes; off += chunk) {
                    long n = Math.min(chunk, bytes - off);
                    CopyEngine.copyFromSegment(pattern.asSlice(0, n), m.coef.buffer(), off);
                }
            }
            return m;
        }

        /** A model of {@code arrays} arrays of {@code arrayBytes} each in its layers, and an 8-byte coefficient. */
        Model layered(int arrays, long arrayBytes) {
            Model m = model(8);
            try (Arena a = Arena.ofConfined()) {
                long chunk = Math.min(arrayBytes, 16L << 20);
                MemorySegment pattern = a.allocate(chunk, 64);
                for (int i = 0; i < arrays; i++) {
                    NdArray layer = NdArray.empty(device, DType.FLOAT32, Order.C, arrayBytes / 4);
                    m.layers.add(layer);
                    for (long k = 0; k < chunk; k += 8) {
                        pattern.set(ValueLayout.JAVA_LONG_UNALIGNED, k, (i + k) * 0x9E3779B97F4A7C15L);
                    }
                    for (long off = 0; off < arrayBytes; off += chunk) {
                        CopyEngine.copyFromSegment(
                                pattern.asSlice(0, Math.min(chunk, arrayBytes - off)), layer.buffer(), off);
                    }
                }
            }
            return m;
        }

        /** The receiver's loop on one connection, until the sender says bye or goes. */
        void serveConnection(Connection c) {
            Message ack = control("ack", List.of());
            Message pong = control("rtt", List.of(reply));
            // The last pong's send: it completes when the sender has copied the reply's device frame out, which it
            // says with its next ping; joined before the next pong, not at once, so that this thread is back in
            // receive (spinning) when that ping comes instead of parked in a join (as the cluster's worker does not
            // wait for its replies either)
            CompletableFuture<?> pongSent = CompletableFuture.completedFuture(null);
            while (true) {
                ReceivedMessage m;
                long calls0 = Syscalls.now();
                long cpu0 = Cpu.now();
                long allocations0 = deviceMemory.allocations.get();
                try {
                    m = c.receive();
                } catch (TransportException e) {
                    return;
                }
                Object root = m.value().root();
                if ("bye".equals(root)) {
                    m.close();
                    pongSent.exceptionally(e -> null).join(); // the sender is going: its copy may not be told
                    return;
                }
                if ("rtt".equals(root)) {
                    m.close();
                    pongSent.join();
                    pongSent = c.send(pong);
                    continue;
                }
                pongSent.join();
                Model model;
                long h2d;
                long d2h;
                long allocations;
                long syscalls;
                long opens = m.metrics().mappingsOpened();
                long cpu;
                try (TransferScope scope = openScope("bench receive");
                        m) {
                    model = registry.deserialize(m.value(), Model.class, target);
                    c.send(ack).join();
                    cpu = Cpu.now() - cpu0;
                    syscalls = Syscalls.since(calls0);
                    allocations = deviceMemory.allocations.get() - allocations0;
                    h2d = scope.bytes(CopyDirection.H2D) + m.metrics().hostToDeviceBytes();
                    d2h = scope.bytes(CopyDirection.D2H) + m.metrics().deviceToHostBytes();
                }
                long crc;
                try (ModelOnDevice owned = new ModelOnDevice(model)) {
                    crc = crc(owned.model());
                }
                c.send(control(
                                "crc " + crc + " " + h2d + " " + d2h + " " + allocations + " " + syscalls + " " + opens
                                        + " " + cpu,
                                List.of()))
                        .join();
            }
        }

        @Override
        public void close() {
            reply.close();
            arena.close();
            device.close();
            host.close();
            hostPool.close();
        }
    }

    // ---------------------------------------------------------------- the receiver process

    /** The receiver JVM and its raw socket. */
    private static final class Child implements AutoCloseable {
        final BenchChild jvm;
        final String tcpAddress;
        final String ipcAddress;
        final String ucxAddress;
        final SocketChannel raw;
        /** This side of the raw UCX ceiling, connected to the receiver's; {@code null} where either has no UCX. */
        final RawUcx rawUcx;

        private Child(
                BenchChild jvm,
                String tcpAddress,
                String ipcAddress,
                String ucxAddress,
                SocketChannel raw,
                RawUcx rawUcx) {
            this.jvm = jvm;
            this.tcpAddress = tcpAddress;
            this.ipcAddress = ipcAddress;
            this.ucxAddress = ucxAddress;
            this.raw = raw;
            this.rawUcx = rawUcx;
        }

        /**
         * Starts the receiver JVM; it listens on UCX and serves the raw UCX ceiling only with {@code ucx} (a run that
         * measures UCX): the ceiling's receiving thread polls its UCX worker without pause, which on a 2-core machine
         * took a core from every other case (8,597 of the receiver's 16,700 samples in a TCP run, 2026-12-07).
         */
        static Child start(int ordinal, long maxSize, byte[] secret, boolean ucx) throws IOException {
            BenchChild jvm = BenchChild.start(
                    TransferBench.class,
                    List.of(),
                    secret,
                    "--serve",
                    Integer.toString(ordinal),
                    Long.toString(maxSize),
                    ucx ? "ucx" : "no-ucx");
            try {
                List<String> parts = jvm.ready();
                SocketChannel raw =
                        SocketChannel.open(new InetSocketAddress("127.0.0.1", Integer.parseInt(parts.get(2))));
                raw.setOption(StandardSocketOptions.TCP_NODELAY, true);
                RawUcx rawUcx = parts.size() > 4 && !parts.get(4).equals("-") ? RawUcx.openOrNull() : null;
                if (rawUcx != null) {
                    rawUcx.connect(parts.get(4));
                }
                return new Child(
                        jvm,
                        parts.get(0),
                        parts.get(1),
                        parts.size() > 3 && !parts.get(3).equals("-") ? parts.get(3) : null,
                        raw,
                        rawUcx);
            } catch (IOException | RuntimeException e) {
                jvm.process().destroyForcibly();
                throw e;
            }
        }

        /**
         * Sends {@code bytes} over the raw socket and waits for the one-byte reply; ms. {@code chunk} 0: all of
         * {@code source}'s first {@code bytes} as they are; else its first {@code chunk} bytes again and again.
         */
        double rawTransfer(MemorySegment source, long bytes, long chunk) throws IOException {
            long t0 = System.nanoTime();
            ByteBuffer length = ByteBuffer.allocate(8).putLong(0, bytes);
            while (length.hasRemaining()) {
                raw.write(length);
            }
            long step = chunk == 0 ? 1L << 30 : chunk;
            ByteBuffer again = chunk == 0 ? null : source.asSlice(0, chunk).asByteBuffer();
            for (long off = 0; off < bytes; off += step) {
                int n = (int) Math.min(step, bytes - off);
                ByteBuffer bb = again != null
                        ? again.clear().limit(n)
                        : source.asSlice(off, n).asByteBuffer();
                while (bb.hasRemaining()) {
                    raw.write(bb);
                }
            }
            ByteBuffer ack = ByteBuffer.allocate(1);
            while (ack.hasRemaining()) {
                if (raw.read(ack) < 0) {
                    throw new IOException("the receiver closed its raw socket");
                }
            }
            return (System.nanoTime() - t0) / 1e6;
        }

        /**
         * Sends the first {@code bytes} of {@code source} over the raw socket (a negative length: echo them) and
         * reads them back; µs.
         */
        double rawEcho(MemorySegment source, int bytes) throws IOException {
            long t0 = System.nanoTime();
            ByteBuffer out = ByteBuffer.allocate(8 + bytes)
                    .putLong(-bytes)
                    .put(source.asSlice(0, bytes).asByteBuffer());
            out.flip();
            while (out.hasRemaining()) {
                raw.write(out);
            }
            ByteBuffer back = ByteBuffer.allocate(bytes);
            while (back.hasRemaining()) {
                if (raw.read(back) < 0) {
                    throw new IOException("the receiver closed its raw socket");
                }
            }
            return (System.nanoTime() - t0) / 1e3;
        }

        @Override
        public void close() throws IOException {
            raw.close();
            jvm.close();
            if (rawUcx != null) {
                rawUcx.close();
            }
        }
    }

    /**
     * The receiver JVM: listens on TCP, IPC, a raw socket and, with {@code ucxToo}, UCX (and serves the raw UCX
     * ceiling); serves each connection on a thread of its own.
     */
    private static void serve(int ordinal, long maxSize, boolean ucxToo) throws Exception {
        Device d = Devices.get(ordinal);
        try (Side side = new Side(d, maxSize, Secrets.fromEnvironment(), false);
                ServerSocketChannel rawServer = ServerSocketChannel.open().bind(new InetSocketAddress("127.0.0.1", 0));
                Arena arena = Arena.ofShared()) {
            Listener tcp = Transports.tcp().listen("tcp://127.0.0.1:0", side.config);
            Listener ipc = Transports.ipc().listen("ipc://127.0.0.1:0", side.config);
            Listener ucx = null;
            try {
                ucx = ucxToo ? Transports.ucx().listen("ucx://127.0.0.1:0", side.config) : null;
            } catch (TransportException e) {
                System.err.println("transfer bench receiver: no ucx: " + e.getMessage());
            }
            MemorySegment rawTarget = arena.allocate(Math.max(maxSize, 8), 64);
            rawTarget.fill((byte) 0);
            RawUcx rawUcx = ucx == null ? null : RawUcx.openOrNull();
            String rawUcxAddress = rawUcx == null ? "-" : rawUcx.address();
            if (rawUcx != null) {
                // the raw ceilings run one at a time, so the socket's and UCX's share the one target
                Thread.ofPlatform().daemon().name("raw-ucx").start(() -> rawUcx.serve(rawTarget));
            }
            System.out.println("READY " + tcp.address() + " " + ipc.address() + " "
                    + ((InetSocketAddress) rawServer.getLocalAddress()).getPort() + " "
                    + (ucx == null ? "-" : ucx.address()) + " "
                    + rawUcxAddress);
            System.out.flush();
            List<Thread> threads = new ArrayList<>();
            List<Listener> listeners = new ArrayList<>(List.of(tcp, ipc));
            if (ucx != null) {
                listeners.add(ucx);
            }
            for (Listener l : listeners) {
                threads.add(Thread.ofPlatform().daemon().start(() -> {
                    while (true) {
                        try (Connection c = l.accept()) {
                            side.serveConnection(c);
                        } catch (TransportException e) {
                            if (!e.getClass().getSimpleName().equals("ConnectionClosedException")) {
                                System.err.println("transfer bench receiver: " + e.getMessage());
                            }
                            return;
                        }
                    }
                }));
            }
            try (SocketChannel raw = rawServer.accept()) {
                raw.setOption(StandardSocketOptions.TCP_NODELAY, true);
                ByteBuffer length = ByteBuffer.allocate(8);
                ByteBuffer ack = ByteBuffer.allocate(1);
                while (true) {
                    length.clear();
                    while (length.hasRemaining()) {
                        if (raw.read(length) < 0) {
                            return;
                        }
                    }
                    long bytes = length.getLong(0);
                    boolean echo = bytes < 0; // the round trip's ceiling: the bytes come back, no ack
                    bytes = Math.abs(bytes);
                    for (long off = 0; off < bytes; off += 1L << 30) {
                        ByteBuffer bb = rawTarget
                                .asSlice(off, Math.min(1L << 30, bytes - off))
                                .asByteBuffer();
                        while (bb.hasRemaining()) {
                            if (raw.read(bb) < 0) {
                                throw new UncheckedIOException(new IOException("sender closed mid-transfer"));
                            }
                        }
                    }
                    if (echo) {
                        ByteBuffer back = rawTarget.asSlice(0, bytes).asByteBuffer();
                        while (back.hasRemaining()) {
                            raw.write(back);
                        }
                        continue;
                    }
                    ack.clear();
                    raw.write(ack);
                }
            } finally {
                for (Listener l : listeners) {
                    l.close();
                }
                for (Thread t : threads) {
                    t.join(Duration.ofSeconds(10));
                }
            }
        }
    }

    /** Device memory that counts the allocations made of it: the receiver's allocator calls per message. */
    static final class CountingMemory implements MemoryResource<DeviceBuffer> {
        private final MemoryResource<DeviceBuffer> memory;
        final AtomicLong allocations = new AtomicLong();

        CountingMemory(MemoryResource<DeviceBuffer> memory) {
            this.memory = memory;
        }

        @Override
        public MemoryKind kind() {
            return memory.kind();
        }

        @Override
        public int deviceOrdinal() {
            return memory.deviceOrdinal();
        }

        @Override
        public DeviceBuffer allocate(long bytes) {
            allocations.incrementAndGet();
            return memory.allocate(bytes);
        }

        @Override
        public String describe() {
            return memory.describe() + " (counted)";
        }
    }

    /**
     * The CPU time of this process's Java threads so far, in ns (each live thread's, as the JVM reports it: user and
     * system time, at the clock's resolution, not the process's 10 ms ticks), not the JVM's own threads (GC, JIT):
     * what a message cost each side in CPU, which a busy machine (other processes on its cores) delays but does not
     * add to, where its wall time grows with the machine's load. A thread that ended meanwhile is not counted.
     */
    static final class Cpu {
        private static final com.sun.management.ThreadMXBean THREADS =
                (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();

        private Cpu() {}

        static long now() {
            long total = 0;
            for (long t : THREADS.getThreadCpuTime(THREADS.getAllThreadIds())) {
                total += Math.max(t, 0);
            }
            return total;
        }
    }

    /**
     * This process's read and write system calls so far ({@code syscr + syscw} of {@code /proc/self/io}: every
     * read, readv, write and writev of every thread, sockets included; selects and the like are not among them), or
     * -1 where there is no such file. Reading it costs a call of its own, taken off by {@link #since}.
     */
    static final class Syscalls {
        // opened once and read from offset 0 each time: one pread (~5 us) instead of an open, reads and a close
        // through a decoding reader (20-50 us on the 2-core VM), since the receiver reads it between messages
        private static final FileChannel IO = open();
        private static final ByteBuffer BUFFER = ByteBuffer.allocate(1024);
        private static final long OWN = own();

        private Syscalls() {}

        private static FileChannel open() {
            try {
                return FileChannel.open(Path.of("/proc/self/io"), StandardOpenOption.READ);
            } catch (IOException | RuntimeException e) {
                return null; // not Linux, or no /proc: the counts are reported as unknown
            }
        }

        static synchronized long now() {
            if (IO == null) {
                return -1;
            }
            try {
                BUFFER.clear();
                int n = IO.read(BUFFER, 0);
                long calls = 0;
                int found = 0;
                String text = new String(BUFFER.array(), 0, Math.max(n, 0), StandardCharsets.ISO_8859_1);
                for (String line : text.split("\n")) {
                    if (line.startsWith("syscr:") || line.startsWith("syscw:")) {
                        calls += Long.parseLong(line.substring(6).strip());
                        found++;
                    }
                }
                return found == 2 ? calls : -1;
            } catch (IOException | RuntimeException e) {
                return -1;
            }
        }

        /** The calls since {@code before} (a {@link #now()}), not counting this reading's own; -1 if unknown. */
        static long since(long before) {
            long n = now();
            return n < 0 || before < 0 ? -1 : n - before - OWN;
        }

        private static long own() {
            long a = now();
            long b = now();
            long c = now();
            return a < 0 ? 0 : Math.min(b - a, c - b);
        }
    }
}
