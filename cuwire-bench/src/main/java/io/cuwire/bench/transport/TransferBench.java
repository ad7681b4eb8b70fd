package io.cuwire.bench.transport;

import io.cuwire.bench.harness.ChildJvm;
import io.cuwire.bench.harness.Secrets;
import io.cuwire.bench.harness.Sizes;
import io.cuwire.bench.harness.Stats;
import io.cuwire.bench.harness.Table;
import io.cuwire.memory.Buffer;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyDirection;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.DType;
import io.cuwire.memory.Device;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.HostMemoryPool;
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
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.zip.CRC32;

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
 * ceiling of the path measured in the same run: a peer copy device 0 → 1 in one process (ipc), a plain socket
 * transfer between the two processes (tcp, tls, ucx), a memory copy (inproc). Transport {@code tls} is TCP inside
 * TLS 1.3 ({@link TlsMode#ON} at the sender; the receiver's TCP listener, in {@link TlsMode#AUTO}, takes TLS and
 * plaintext from loopback alike), so that one run can set TLS's cost beside plain TCP's. For IPC, TCP and TLS a round
 * trip of a 1 KiB device frame is timed too. Lines start with {@code RESULT}; a CSV goes to {@code --out}.
 *
 * <p>Warm means warm for the JVM too: before a transport's cases, {@code --warmup} transfers of a 1 KiB model per
 * family run untimed (a JVM runs a method's first few thousand calls in the interpreter or lower compiler tiers; a
 * first measurement with 30 repeats found 1.5 ms per 1 KiB message over IPC, one after 500 found 0.46 ms), and after
 * each case's cold transfer up to {@value #CASE_WARMUP} more of the case's size (at most {@code --repeat}) run untimed
 * before the timed ones. The warm-up goes through the same transfer path, so it also makes its own cold transfer and
 * case warm-up first.
 */
public final class TransferBench {
    private static final long CRC_WINDOW = 64 << 10;
    private static final int RTT_WARMUP = 2000;
    /** Untimed transfers of a case's own size after its cold one. */
    static final int CASE_WARMUP = 3;
    private static final int RTT_ROUNDS = 2000;
    private static final long JAVA_MAX_BYTES = 1L << 30;
    /** Untimed 1 KiB transfers per transport and family before its cases, unless {@code --warmup} says. */
    static final int DEFAULT_WARMUP = 500;

    private TransferBench() {
    }

    /** The model that travels: an estimator's hyper-parameters and fitted arrays. */
    public static final class Model implements Serializable {
        private static final long serialVersionUID = 1L;
        String solver = "lbfgs";
        double tol = 1e-4;
        int nFeatures;
        NdArray coef;
        NdArray intercept;
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
     */
    public record Options(List<String> transports, List<Family> families, List<Long> sizes, int repeat, int warmup,
            Path out) {
        /**
         * Parses {@code --transports a,b --families a,b --sizes 1KiB,1MiB --repeat N --warmup N --out DIR}.
         */
        public static Options parse(String... args) {
            List<String> transports = List.of("inproc", "tcp", "ucx", "ipc");
            List<Family> families = List.of(Family.CUDA, Family.HOST, Family.JAVA);
            List<Long> sizes = List.of(1L << 10, 1L << 20, 64L << 20, 1L << 30);
            int repeat = 10;
            int warmup = DEFAULT_WARMUP;
            Path out = Path.of("bench", "results");
            for (int i = 0; i < args.length; i++) {
                String flag = args[i];
                if (i + 1 >= args.length) {
                    throw new IllegalArgumentException(flag + " needs a value");
                }
                String v = args[++i];
                switch (flag) {
                    case "--transports" -> {
                        transports = List.of(v.split(","));
                        for (String t : transports) {
                            if (!List.of("inproc", "tcp", "tls", "ucx", "ipc").contains(t)) {
                                throw new IllegalArgumentException("unknown transport '" + t
                                        + "' (expected: inproc, tcp, tls, ucx, ipc)");
                            }
                        }
                    }
                    case "--families" -> {
                        List<Family> fs = new ArrayList<>();
                        for (String f : v.split(",")) {
                            fs.add(switch (f) {
                                case "cuda" -> Family.CUDA;
                                case "host" -> Family.HOST;
                                case "java" -> Family.JAVA;
                                default -> throw new IllegalArgumentException("unknown family '" + f
                                        + "' (expected: cuda, host, java)");
                            });
                        }
                        families = fs;
                    }
                    case "--sizes" -> {
                        List<Long> ss = new ArrayList<>();
                        for (String s : v.split(",")) {
                            ss.add(parseSize(s));
                        }
                        sizes = ss;
                    }
                    case "--repeat" -> repeat = atLeast(flag, v, 1);
                    case "--warmup" -> warmup = atLeast(flag, v, 0);
                    case "--out" -> out = Path.of(v);
                    default -> throw new IllegalArgumentException("unknown option " + flag);
                }
            }
            return new Options(transports, families, sizes, repeat, warmup, out);
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
            serve(Integer.parseInt(args[1]), Long.parseLong(args[2]));
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

    /** One case's result. */
    record Result(String transport, Family family, long size, double medianMs, double coldMs, double rawMs,
            long d2hBytes, long h2dBytes, boolean checked) {
        double gbps() {
            return size / (medianMs * 1e6);
        }

        double vsRaw() {
            return rawMs / medianMs;
        }
    }

    /** Runs the benchmark, printing to {@code out}; the exit code (1 if a content check failed). */
    public static int run(Options options, PrintStream out) throws Exception {
        List<Device> devices = Devices.all();
        Device sender = devices.getFirst();
        int receiverOrdinal = devices.size() >= 2 ? 1 : 0;
        long maxSize = options.sizes().stream().mapToLong(Long::longValue).max().orElse(1024);
        out.printf(Locale.ROOT, "cuwire bench transfer: platform %s, sender on device %d (%s), receiver on device %d,"
                + " sizes %s, repeat %d%n", Devices.platform(), sender.ordinal(), sender.name(), receiverOrdinal,
                options.sizes(), options.repeat());
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
                            inprocListener = Transports.inProcess().listen("inproc://transfer-bench-"
                                    + ProcessHandle.current().pid(), side.config);
                            Listener l = inprocListener;
                            CompletableFuture<Connection> accepted = new CompletableFuture<>();
                            inproc = Thread.ofPlatform().name("transfer-bench-receiver").start(() -> {
                                try (Side receiver = new Side(devices.get(receiverOrdinal), maxSize, secret, true);
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
                                child = Child.start(receiverOrdinal, maxSize, secret);
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
                                c = Transports.forAddress(address).connect(address, transport.equals("tls")
                                        ? side.config.toBuilder().tls(TlsMode.ON).build() : side.config);
                            } catch (TransportException e) {
                                out.println("SKIP transport=" + transport + " reason=\"" + e.getMessage() + "\"");
                                continue;
                            }
                        }
                    }
                    try (Connection conn = c) {
                        for (Family family : options.families()) {
                            if (options.warmup() > 0) {
                                allChecked &= transfer(conn, transport, family, 1024, options.warmup(), side, 1)
                                        .checked();
                            }
                        }
                        for (long size : options.sizes()) {
                            double rawMs = raw(transport, size, side, child, devices, receiverOrdinal,
                                    options.repeat());
                            for (Family family : options.families()) {
                                if (family == Family.JAVA && size > JAVA_MAX_BYTES) {
                                    out.println("SKIP transport=" + transport + " family=java size=" + size
                                            + " reason=\"JDK serialization holds the model in one byte[] (< 2 GiB)\"");
                                    continue;
                                }
                                Result r = transfer(conn, transport, family, size, options.repeat(), side, rawMs);
                                results.add(r);
                                allChecked &= r.checked();
                                out.printf(Locale.ROOT, "RESULT transport=%s family=%s size=%d median_ms=%.4f "
                                        + "gbps=%.3f d2h_bytes=%d h2d_bytes=%d vs_raw=%.3f cold_ms=%.3f "
                                        + "raw_gbps=%.3f checked=%s%n", transport, family.wireName(), size,
                                        r.medianMs(), r.gbps(), r.d2hBytes(), r.h2dBytes(), r.vsRaw(), r.coldMs(),
                                        size / (rawMs * 1e6), r.checked() ? "ok" : "MISMATCH");
                            }
                        }
                        if (List.of("ipc", "tcp", "tls").contains(transport)) {
                            double rttUs = roundTrip(conn, side);
                            String line = String.format(Locale.ROOT, "RESULT transport=%s family=cuda size=1024 "
                                    + "rtt_us=%.1f", transport, rttUs);
                            out.println(line);
                            extra.add(transport + ",cuda,1024,rtt_us," + String.format(Locale.ROOT, "%.1f", rttUs));
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

    private static Result transfer(Connection c, String transport, Family family, long size, int repeat, Side side,
            double rawMs) {
        double[] ms = new double[repeat];
        double coldMs = 0;
        long d2h = 0;
        long h2d = 0;
        boolean checked = true;
        int warm = Math.min(CASE_WARMUP, repeat);
        boolean oneProcess = transport.equals("inproc");
        try (ModelOnDevice model = new ModelOnDevice(side.model(size))) {
            long expected = crc(model.model());
            for (int i = 0; i <= warm + repeat; i++) {
                CompletableFuture<?> sent;
                long t0;
                long t1;
                long sendD2h;
                long sendH2d;
                Serialized s;
                // Each side counts its own copies: in one process the receiver is another thread, so the sender
                // counts its thread's only; across processes this process's copies are the sender's (its writer
                // thread stages device frames).
                try (TransferScope scope = oneProcess ? CopyEngine.openThreadScope("bench send")
                        : CopyEngine.openScope("bench send")) {
                    t0 = System.nanoTime();
                    s = side.registry.serialize(model.model(), family);
                    sent = c.send(Message.of(s));
                    try (ReceivedMessage ack = c.receive()) {
                        expectRoot(ack, "ack");
                    }
                    t1 = System.nanoTime();
                    sent.join();
                    sendD2h = scope.bytes(CopyDirection.D2H);
                    sendH2d = scope.bytes(CopyDirection.H2D);
                }
                s.close();
                String[] report;
                try (ReceivedMessage crc = c.receive()) {
                    report = ((String) crc.value().root()).split(" ");
                }
                if (!report[0].equals("crc") || Long.parseLong(report[1]) != expected) {
                    checked = false;
                }
                // The most one transfer of the case copied, cold and warm-up ones included.
                d2h = Math.max(d2h, sendD2h + Long.parseLong(report[3]));
                h2d = Math.max(h2d, sendH2d + Long.parseLong(report[2]));
                if (i == 0) {
                    coldMs = (t1 - t0) / 1e6;
                } else if (i > warm) {
                    ms[i - warm - 1] = (t1 - t0) / 1e6;
                }
            }
        }
        return new Result(transport, family, size, Stats.median(ms), coldMs, rawMs, d2h, h2d, checked);
    }

    private static double roundTrip(Connection c, Side side) {
        try (DeviceBuffer frame = side.device.allocate(1024)) {
            Message ping = control("rtt", List.of(frame));
            double[] us = new double[RTT_ROUNDS];
            for (int i = 0; i < RTT_WARMUP + RTT_ROUNDS; i++) {
                long t0 = System.nanoTime();
                CompletableFuture<?> sent = c.send(ping);
                try (ReceivedMessage pong = c.receive()) {
                    expectRoot(pong, "rtt");
                }
                long t1 = System.nanoTime();
                sent.join();
                if (i >= RTT_WARMUP) {
                    us[i - RTT_WARMUP] = (t1 - t0) / 1e3;
                }
            }
            return Stats.median(us);
        }
    }

    /** The raw ceiling of {@code transport}'s path for {@code size} bytes, in ms (median). */
    private static double raw(String transport, long size, Side side, Child child, List<Device> devices,
            int receiverOrdinal, int repeat) throws IOException {
        double[] ms = new double[repeat];
        switch (transport) {
            case "tcp", "tls", "ucx" -> {
                for (int i = 0; i <= repeat; i++) {
                    double t = child.rawTransfer(side.rawSource, size);
                    if (i > 0) {
                        ms[i - 1] = t;
                    }
                }
            }
            case "ipc", "inproc" -> {
                return Stats.median(copyMs(side.device, devices.get(transport.equals("ipc") ? receiverOrdinal : 0),
                        size, repeat));
            }
            default -> throw new IllegalArgumentException(transport);
        }
        return Stats.median(ms);
    }

    /**
     * The raw ceiling of a device-to-device path: the times, in ms, of {@code repeat} copies of {@code size} bytes
     * by the copy engine from {@code from}'s memory to a buffer on {@code to} (a peer copy between two GPUs, with
     * peer access as the platform sets it up), after one untimed copy.
     */
    public static double[] copyMs(BufferAllocator<DeviceBuffer> from, Device to, long size, int repeat) {
        double[] ms = new double[repeat];
        try (BufferAllocator<DeviceBuffer> target = to.newAllocator("bench-raw", BufferAllocator.UNLIMITED);
                DeviceBuffer src = from.allocate(size); DeviceBuffer dst = target.allocate(size)) {
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
            throw new IllegalStateException("expected a '" + root + "' message, got " + m.value().root());
        }
    }

    private static Path writeCsv(Path dir, List<Result> results, List<String> extra) throws IOException {
        Files.createDirectories(dir);
        Path csv = dir.resolve("transfer-" + LocalDateTime.now().format(DateTimeFormatter.ofPattern(
                "yyyyMMdd-HHmmss")) + ".csv");
        Table t = new Table("transport", "family", "size", "median_ms", "gbps", "d2h_bytes", "h2d_bytes", "vs_raw",
                "cold_ms", "raw_ms", "checked");
        for (Result r : results) {
            t.row(r.transport(), r.family().wireName(), r.size(), Table.num(r.medianMs(), 4), Table.num(r.gbps(), 3),
                    r.d2hBytes(), r.h2dBytes(), Table.num(r.vsRaw(), 3), Table.num(r.coldMs(), 3),
                    Table.num(r.rawMs(), 4), r.checked());
        }
        StringBuilder b = new StringBuilder(t.csv());
        for (String e : extra) {
            b.append("# ").append(e).append('\n');
        }
        Files.writeString(csv, b.toString(), StandardCharsets.UTF_8);
        return csv;
    }

    // ---------------------------------------------------------------- both sides

    /** A CRC of sampled windows (start, middle, end) of every array of {@code m}, read through the copy engine. */
    static long crc(Model m) {
        CRC32 crc = new CRC32();
        for (NdArray a : new NdArray[] {m.coef, m.intercept}) {
            long n = a.byteSize();
            long w = Math.min(CRC_WINDOW, n);
            byte[] window = new byte[(int) w];
            for (long off : new long[] {0, (n - w) / 2 / 8 * 8, n - w}) {
                CopyEngine.copyToSegment(a.buffer(), a.byteOffset() + off, MemorySegment.ofArray(window));
                crc.update(window);
            }
        }
        crc.update(m.solver.getBytes(StandardCharsets.UTF_8));
        crc.update(m.nFeatures);
        return crc.getValue();
    }

    private static Message control(String root, List<? extends Buffer> frames) {
        List<FrameDescriptor> descriptors = new ArrayList<>();
        for (Buffer b : frames) {
            descriptors.add(new FrameDescriptor(b.kind(), b.deviceOrdinal(), b.byteSize()));
        }
        return Message.of(new Serialized.Header(Serialized.FORMAT_VERSION, Set.of(), root, descriptors).encode(),
                frames);
    }

    /** A model on a device, closed with its arrays. */
    private record ModelOnDevice(Model model) implements AutoCloseable {
        @Override
        public void close() {
            model.coef.close();
            model.intercept.close();
        }
    }

    /** One side's memory, registry and configuration. */
    private static final class Side implements AutoCloseable {
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
            device = d.newAllocator("bench-device-" + d.ordinal(), BufferAllocator.UNLIMITED);
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
                    ? TransportConfig.builder().allowUnauthenticated(true) : TransportConfig.builder().secret(secret);
            config = keyed.ioTimeout(Duration.ofSeconds(120))
                    .handshakeTimeout(Duration.ofSeconds(30))
                    .families(Family.CUDA, Family.HOST, Family.JAVA)
                    .receiveInto(DeviceMap.of(host, device).withPinned(host)).build();
            target = new DecodeTarget(device, host, Limits.DEFAULT);
            rawSource = arena.allocate(Math.max(maxSize, 8), 64);
            rawSource.fill((byte) 3);
            reply = device.allocate(1024);
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
                    pattern.set(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, i, i * 0x9E3779B97F4A7C15L);
                }
                for (long off = 0; off < bytes; off += chunk) {
                    long n = Math.min(chunk, bytes - off);
                    CopyEngine.copyFromSegment(pattern.asSlice(0, n), m.coef.buffer(), off);
                }
            }
            return m;
        }

        /** The receiver's loop on one connection, until the sender says bye or goes. */
        void serveConnection(Connection c) {
            Message ack = control("ack", List.of());
            Message pong = control("rtt", List.of(reply));
            while (true) {
                ReceivedMessage m;
                try {
                    m = c.receive();
                } catch (TransportException e) {
                    return;
                }
                Object root = m.value().root();
                if ("bye".equals(root)) {
                    m.close();
                    return;
                }
                if ("rtt".equals(root)) {
                    m.close();
                    c.send(pong).join();
                    continue;
                }
                Model model;
                long h2d;
                long d2h;
                try (TransferScope scope = openScope("bench receive"); m) {
                    model = registry.deserialize(m.value(), Model.class, target);
                    c.send(ack).join();
                    h2d = scope.bytes(CopyDirection.H2D) + m.metrics().hostToDeviceBytes();
                    d2h = scope.bytes(CopyDirection.D2H) + m.metrics().deviceToHostBytes();
                }
                long crc;
                try (ModelOnDevice owned = new ModelOnDevice(model)) {
                    crc = crc(owned.model());
                }
                c.send(control("crc " + crc + " " + h2d + " " + d2h, List.of())).join();
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
        final ChildJvm jvm;
        final String tcpAddress;
        final String ipcAddress;
        final String ucxAddress;
        final SocketChannel raw;

        private Child(ChildJvm jvm, String tcpAddress, String ipcAddress, String ucxAddress, SocketChannel raw) {
            this.jvm = jvm;
            this.tcpAddress = tcpAddress;
            this.ipcAddress = ipcAddress;
            this.ucxAddress = ucxAddress;
            this.raw = raw;
        }

        static Child start(int ordinal, long maxSize, byte[] secret) throws IOException {
            ChildJvm jvm = ChildJvm.start(TransferBench.class, List.of(), secret, "--serve", Integer.toString(ordinal),
                    Long.toString(maxSize));
            try {
                List<String> parts = jvm.ready();
                SocketChannel raw = SocketChannel.open(new InetSocketAddress("127.0.0.1",
                        Integer.parseInt(parts.get(2))));
                raw.setOption(StandardSocketOptions.TCP_NODELAY, true);
                return new Child(jvm, parts.get(0), parts.get(1),
                        parts.size() > 3 && !parts.get(3).equals("-") ? parts.get(3) : null, raw);
            } catch (IOException | RuntimeException e) {
                jvm.process().destroyForcibly();
                throw e;
            }
        }

        /** Sends {@code bytes} of {@code source} over the raw socket and waits for the one-byte reply; ms. */
        double rawTransfer(MemorySegment source, long bytes) throws IOException {
            long t0 = System.nanoTime();
            ByteBuffer length = ByteBuffer.allocate(8).putLong(0, bytes);
            while (length.hasRemaining()) {
                raw.write(length);
            }
            for (long off = 0; off < bytes; off += 1L << 30) {
                ByteBuffer bb = source.asSlice(off, Math.min(1L << 30, bytes - off)).asByteBuffer();
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

        @Override
        public void close() throws IOException {
            raw.close();
            jvm.close();
        }
    }

    /** The receiver JVM: listens on TCP, IPC and a raw socket, serves each connection on a thread of its own. */
    private static void serve(int ordinal, long maxSize) throws Exception {
        Device d = Devices.get(ordinal);
        try (Side side = new Side(d, maxSize, Secrets.fromEnvironment(), false);
                ServerSocketChannel rawServer = ServerSocketChannel.open().bind(new InetSocketAddress("127.0.0.1", 0));
                Arena arena = Arena.ofShared()) {
            Listener tcp = Transports.tcp().listen("tcp://127.0.0.1:0", side.config);
            Listener ipc = Transports.ipc().listen("ipc://127.0.0.1:0", side.config);
            Listener ucx = null;
            try {
                ucx = Transports.ucx().listen("ucx://127.0.0.1:0", side.config);
            } catch (TransportException e) {
                System.err.println("transfer bench receiver: no ucx: " + e.getMessage());
            }
            MemorySegment rawTarget = arena.allocate(Math.max(maxSize, 8), 64);
            rawTarget.fill((byte) 0);
            System.out.println("READY " + tcp.address() + " " + ipc.address() + " "
                    + ((InetSocketAddress) rawServer.getLocalAddress()).getPort() + " "
                    + (ucx == null ? "-" : ucx.address()));
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
                    for (long off = 0; off < bytes; off += 1L << 30) {
                        ByteBuffer bb = rawTarget.asSlice(off, Math.min(1L << 30, bytes - off)).asByteBuffer();
                        while (bb.hasRemaining()) {
                            if (raw.read(bb) < 0) {
                                throw new UncheckedIOException(new IOException("sender closed mid-transfer"));
                            }
                        }
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
}
