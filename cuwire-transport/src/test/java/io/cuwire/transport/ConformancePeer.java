package io.cuwire.transport;

import io.cuwire.memory.Buffer;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.Closeables;
import io.cuwire.memory.CopyDirection;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.NdArray;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.Limits;
import io.cuwire.serialize.Serialized;
import io.cuwire.serialize.TypeRegistry;
import io.cuwire.transport.internal.Handshake;
import io.cuwire.transport.internal.SessionKeys;
import io.cuwire.transport.internal.UncheckedSend;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.locks.LockSupport;

/**
 * The other side of the transport conformance suite: run in a child JVM ({@link #main}) for transports between
 * processes, or on a thread of the test's JVM for the in-process transport. Arguments: {@code mode address secret}
 * ({@code secret} in hex, {@code -} for none) and the mode's own. Exit code 0 means the peer saw what it expected.
 *
 * <table>
 *   <caption>Modes</caption>
 *   <tr><td>{@code echo [ioTimeoutSeconds]}</td><td>sends every message back as it arrived, until the test closes
 *       (with an I/O timeout of its own: a receiver allocating gigabytes of fresh memory stalls a sender)</td></tr>
 *   <tr><td>{@code sink delayMs}</td><td>receives slowly, prints {@code received N}</td></tr>
 *   <tr><td>{@code stall}</td><td>connects and never reads</td></tr>
 *   <tr><td>{@code connect}</td><td>only connects; prints {@code refused <exception>} if the handshake fails</td></tr>
 *   <tr><td>{@code send bytes}</td><td>sends one message with a host frame of {@code bytes}</td></tr>
 *   <tr><td>{@code refuse maxHeaderBytes}</td><td>receives with that header limit; prints
 *       {@code refused <exception>} for the refusal it expects</td></tr>
 *   <tr><td>{@code send-refused headerBytes}</td><td>sends one message with a header of about {@code headerBytes}
 *       and a 1 MiB host frame, which the test refuses; then receives, waits for the send and sends again: each
 *       must end in {@link MessageRefusedException} (the first send may have completed instead); prints each
 *       outcome and {@code reason <the receiver's reason>}</td></tr>
 *   <tr><td>{@code resend bytes times}</td><td>sends one device buffer {@code times} times, refilled each time
 *       (a pattern seeded by the message's number)</td></tr>
 *   <tr><td>{@code send-frames count bytes}</td><td>sends one message of {@code count} device frames of
 *       {@code bytes} each, each in an allocation of its own (frame {@code i} a pattern seeded by {@code i}), and
 *       waits for the close</td></tr>
 *   <tr><td>{@code send-and-die bytes}</td><td>sends a device frame of {@code bytes}, dies half way</td></tr>
 *   <tr><td>{@code send-timed-and-die bytes}</td><td>sends a device frame of {@code bytes} twice, timing the second
 *       send (the receiver's pool is warm by then; printed); sends it a third time and dies half that time after
 *       starting: half way by the clock, for a path that copies nothing through host memory, where
 *       {@code send-and-die}'s count of device-to-host bytes stays 0</td></tr>
 *   <tr><td>{@code receive-and-die bytes}</td><td>receives, dies after {@code bytes} reached its device (on a
 *       thread: closes at once)</td></tr>
 *   <tr><td>{@code receive-timed-and-die}</td><td>receives two messages, timing the second from the first's hand-over
 *       (printed); receives a third and dies half that time after the second's hand-over: half way by the clock,
 *       for a path that copies into the device uncounted, where {@code receive-and-die}'s count stays 0; exit 5 if
 *       the third arrived whole first</td></tr>
 *   <tr><td>{@code send-unagreed-family}</td><td>sends a {@code cuda}-family message (a device array) on a connection
 *       that agreed {@code host} alone: expects its own send to refuse it, prints {@code sender refused}, then sends
 *       it below that check ({@link UncheckedSend}), as a peer that does not check would, and waits for the
 *       close</td></tr>
 * </table>
 */
public final class ConformancePeer {
    private ConformancePeer() {}

    public static void main(String[] args) {
        int code;
        try {
            code = run(args, System.out, true);
        } catch (Throwable t) {
            t.printStackTrace(System.out);
            code = 9;
        }
        System.out.flush();
        System.exit(code);
    }

    /** Runs the peer; {@code ownProcess} says whether it may kill its process. */
    public static int run(String[] args, PrintStream out, boolean ownProcess) throws Exception {
        String mode = args[0];
        String address = args[1];
        byte[] secret = args[2].equals("-") ? null : HexFormat.of().parseHex(args[2]);
        BufferAllocator<HostBuffer> host = BufferAllocator.host("peer-host", BufferAllocator.UNLIMITED);
        BufferAllocator<DeviceBuffer> dev = Devices.get(0).newAllocator("peer-device", BufferAllocator.UNLIMITED);
        BufferAllocator<HostBuffer> pinned =
                Devices.get(0).newPinnedAllocator("peer-pinned", BufferAllocator.UNLIMITED);
        long ioTimeoutSeconds = mode.equals("echo") && args.length > 3 ? Long.parseLong(args[3]) : 20;
        TransportConfig.Builder cb = TransportConfig.builder()
                .receiveInto(DeviceMap.of(host, dev).withPinned(pinned))
                .ioTimeout(Duration.ofSeconds(ioTimeoutSeconds));
        if (secret == null) {
            cb.allowUnauthenticated(true);
        } else {
            cb.secret(secret);
        }
        if (mode.equals("refuse")) {
            cb.limits(new Limits(Integer.parseInt(args[3]), 16, 16, 16 << 20, 16 << 20, 1024));
        }
        TransportConfig config = cb.build();
        Transport transport = Transports.forAddress(address);
        int code;
        if (mode.equals("send-and-die") && address.startsWith(Transports.IPC + "://")) {
            return sendHeaderAndDie(address, config, dev, Long.parseLong(args[3]), ownProcess);
        }
        if (mode.equals("connect")) {
            try (Connection c = transport.connect(address, config)) {
                out.println("connected, families " + c.families());
                code = 0;
            } catch (TransportException e) {
                out.println("refused " + e.getClass().getSimpleName() + ": " + e.getMessage());
                code = 0;
            }
        } else {
            try (Connection c = transport.connect(address, config)) {
                code = switch (mode) {
                    case "echo" -> echo(c);
                    case "sink" -> sink(c, Long.parseLong(args[3]), out);
                    case "stall" -> stall(c);
                    case "send" -> send(c, host, Long.parseLong(args[3]));
                    case "exchange" -> exchange(c, host, Integer.parseInt(args[3]), Integer.parseInt(args[4]), out);
                    case "refuse" -> refuse(c, out);
                    case "send-refused" -> sendRefused(c, host, Integer.parseInt(args[3]), out);
                    case "resend" -> resend(c, dev, Long.parseLong(args[3]), Integer.parseInt(args[4]));
                    case "send-frames" -> sendFrames(c, dev, Integer.parseInt(args[3]), Integer.parseInt(args[4]));
                    case "send-and-die" -> sendAndDie(c, dev, Long.parseLong(args[3]), ownProcess);
                    case "send-timed-and-die" -> sendTimedAndDie(c, dev, Long.parseLong(args[3]), ownProcess, out);
                    case "receive-and-die" -> receiveAndDie(c, Long.parseLong(args[3]), ownProcess);
                    case "receive-timed-and-die" -> receiveTimedAndDie(c, ownProcess, out);
                    case "send-unagreed-family" -> sendUnagreedFamily(c, dev, out);
                    default -> throw new IllegalArgumentException("unknown mode " + mode);
                };
            }
        }
        try {
            host.close();
            pinned.close();
            dev.close();
        } catch (RuntimeException e) {
            out.println("leak: " + e.getMessage());
            return 3;
        }
        return code;
    }

    private static int echo(Connection c) {
        while (true) {
            try (ReceivedMessage m = c.receive()) {
                c.send(Message.of(m.value())).join();
            } catch (PeerClosedException | ConnectionClosedException e) {
                return 0;
            }
        }
    }

    private static int sink(Connection c, long delayMs, PrintStream out) throws InterruptedException {
        int n = 0;
        while (true) {
            try (ReceivedMessage m = c.receive()) {
                if (!m.value().root().equals("m" + n)) {
                    out.println("out of order: got " + m.value().root() + ", expected m" + n);
                    return 4;
                }
                n++;
            } catch (PeerClosedException e) {
                out.println("received " + n);
                return 0;
            }
            Thread.sleep(delayMs);
        }
    }

    /**
     * Sends {@code count} messages of one host frame of {@code bytes} each before receiving any, then receives as
     * many from the other side and checks them ({@link #exchangeFrame}): both sides doing so at once must not wait
     * for each other. Returns 0 when every message arrived whole and every send completed.
     */
    static int exchange(Connection c, BufferAllocator<HostBuffer> host, int count, int bytes, PrintStream out) {
        List<HostBuffer> frames = new ArrayList<>();
        List<CompletableFuture<MessageMetrics>> sent = new ArrayList<>();
        try {
            for (int i = 0; i < count; i++) {
                HostBuffer frame = host.allocate(bytes);
                frames.add(frame);
                TestMessages.fill(frame, exchangeFrame(i, bytes));
                sent.add(c.send(TestMessages.message("x" + i, List.of(frame))));
            }
            for (int i = 0; i < count; i++) {
                try (ReceivedMessage m = c.receive()) {
                    byte[] got =
                            TestMessages.contents(m.value().frames().getFirst().buffer());
                    if (!m.value().root().equals("x" + i) || !Arrays.equals(exchangeFrame(i, bytes), got)) {
                        out.println(
                                "message " + i + " arrived wrong: " + m.value().root());
                        return 4;
                    }
                }
            }
            for (CompletableFuture<MessageMetrics> f : sent) {
                f.join();
            }
            out.println("exchanged " + count);
            return 0;
        } finally {
            for (HostBuffer f : frames) {
                f.close();
            }
        }
    }

    /** The bytes of message {@code i} of an exchange. */
    static byte[] exchangeFrame(int i, int bytes) {
        return TestMessages.pattern(bytes, i);
    }

    private static int stall(Connection c) throws InterruptedException {
        long end = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (c.isOpen() && System.nanoTime() < end) {
            Thread.sleep(20);
        }
        return 0;
    }

    private static int send(Connection c, BufferAllocator<HostBuffer> host, long bytes) {
        try (HostBuffer frame = host.allocate(bytes)) {
            try {
                c.send(TestMessages.message("big", List.of(frame))).join();
            } catch (CompletionException e) {
                return 0;
            }
            awaitClose(c);
        }
        return 0;
    }

    private static int refuse(Connection c, PrintStream out) {
        try {
            c.receive().close();
            out.println("received a message it should have refused");
            return 6;
        } catch (ProtocolViolationException e) {
            out.println("refused " + e);
            return 0;
        }
    }

    private static int sendRefused(Connection c, BufferAllocator<HostBuffer> host, int headerBytes, PrintStream out) {
        try (HostBuffer frame = host.allocate(1 << 20)) {
            CompletableFuture<MessageMetrics> sent =
                    c.send(TestMessages.message("h".repeat(headerBytes), List.of(frame)));
            Throwable received = outcome(() -> c.receive().close());
            Throwable pending = outcome(sent::join);
            Throwable next = outcome(
                    () -> c.send(TestMessages.message("after", List.of())).join());
            out.println("receive: " + received);
            out.println("pending send: " + (pending == null ? "completed" : pending));
            out.println("next send: " + next);
            if (received instanceof MessageRefusedException r) {
                out.println("reason " + r.reason());
            }
            boolean refused = received instanceof MessageRefusedException
                    && next instanceof MessageRefusedException
                    && (pending == null || pending instanceof MessageRefusedException);
            return refused ? 0 : 6;
        }
    }

    /** What {@code action} threw (unwrapped from a {@link CompletionException}), or {@code null}. */
    private static Throwable outcome(Runnable action) {
        try {
            action.run();
            return null;
        } catch (CompletionException e) {
            return e.getCause();
        } catch (RuntimeException e) {
            return e;
        }
    }

    private static int resend(Connection c, BufferAllocator<DeviceBuffer> dev, long bytes, int times) {
        try (DeviceBuffer frame = dev.allocate(bytes)) {
            for (int i = 0; i < times; i++) {
                TestMessages.fill(frame, TestMessages.pattern((int) bytes, i));
                c.send(TestMessages.message("r" + i, List.<Buffer>of(frame.slice(0, bytes))))
                        .join();
            }
            awaitClose(c);
        }
        return 0;
    }

    private static int sendFrames(Connection c, BufferAllocator<DeviceBuffer> dev, int count, int bytes) {
        List<Buffer> frames = new ArrayList<>();
        try {
            for (int i = 0; i < count; i++) {
                DeviceBuffer frame = dev.allocate(bytes);
                frames.add(frame);
                TestMessages.fill(frame, TestMessages.pattern(bytes, i));
            }
            c.send(TestMessages.message("frames", frames)).join();
            awaitClose(c);
        } finally {
            Closeables.closeAll(frames);
        }
        return 0;
    }

    private static int sendAndDie(Connection c, BufferAllocator<DeviceBuffer> dev, long bytes, boolean ownProcess) {
        if (!ownProcess) {
            throw new IllegalArgumentException("send-and-die needs a process of its own");
        }
        try (DeviceBuffer frame = dev.allocate(bytes)) {
            long start = CopyEngine.totals().bytes(CopyDirection.D2H);
            dieWhen(() -> CopyEngine.totals().bytes(CopyDirection.D2H) - start >= bytes / 2);
            c.send(TestMessages.message("doomed", List.<Buffer>of(frame))).join();
        }
        return 5;
    }

    private static int sendTimedAndDie(
            Connection c, BufferAllocator<DeviceBuffer> dev, long bytes, boolean ownProcess, PrintStream out) {
        if (!ownProcess) {
            throw new IllegalArgumentException("send-timed-and-die needs a process of its own");
        }
        try (DeviceBuffer frame = dev.allocate(bytes)) {
            c.send(TestMessages.message("warm", List.<Buffer>of(frame))).join();
            long start = System.nanoTime();
            c.send(TestMessages.message("timed", List.<Buffer>of(frame))).join();
            long took = System.nanoTime() - start;
            out.println("sent " + bytes + " bytes in " + took / 1000 + " us; dying " + took / 2000
                    + " us into the next send");
            out.flush();
            long second = System.nanoTime();
            dieWhen(() -> System.nanoTime() - second >= took / 2);
            c.send(TestMessages.message("doomed", List.<Buffer>of(frame))).join();
        }
        return 5;
    }

    private static int sendUnagreedFamily(Connection c, BufferAllocator<DeviceBuffer> dev, PrintStream out) {
        if (!c.families().equals(List.of(Family.HOST))) {
            out.println("the connection agreed " + c.families() + ", expected [HOST]");
            return 6;
        }
        try (NdArray array = NdArray.fromArray(dev, new float[1024], 1024);
                Serialized value = new TypeRegistry().serialize(array, Family.CUDA)) {
            Message message = Message.of(value);
            try {
                c.send(message);
                out.println("sent: the sender did not check the family");
                return 7;
            } catch (FamilyRefusedException e) {
                out.println("sender refused " + e.getClass().getSimpleName() + ": " + e.getMessage());
            }
            try {
                ((UncheckedSend) c).sendUnchecked(message).join();
            } catch (CompletionException | TransportException e) {
                // the receiver refused the message and broke the connection
            }
            awaitClose(c);
        }
        return 0;
    }

    private static int receiveAndDie(Connection c, long bytes, boolean ownProcess) {
        if (!ownProcess) {
            c.close();
            return 0;
        }
        long start = deviceBound();
        dieWhen(() -> deviceBound() - start >= bytes);
        c.receive().close();
        return 5;
    }

    private static int receiveTimedAndDie(Connection c, boolean ownProcess, PrintStream out) {
        if (!ownProcess) {
            throw new IllegalArgumentException("receive-timed-and-die needs a process of its own");
        }
        c.receive().close();
        long first = System.nanoTime();
        c.receive().close();
        long second = System.nanoTime();
        long took = second - first;
        out.println("received the second message " + took / 1000 + " us after the first; dying " + took / 2000
                + " us into the next");
        out.flush();
        dieWhen(() -> System.nanoTime() - second >= took / 2);
        c.receive().close();
        return 5;
    }

    /** Bytes copied into device memory so far: staged from the host (TCP) or device to device (IPC). */
    private static long deviceBound() {
        var totals = CopyEngine.totals();
        return totals.bytes(CopyDirection.H2D) + totals.bytes(CopyDirection.D2D) + totals.bytes(CopyDirection.PEER);
    }

    /**
     * Over CUDA IPC a sender's part of a message is one small record, so "dies in the middle of a message" means
     * dying after the record's header: this speaks the wire by hand (handshake, message type, header) and halts.
     */
    private static int sendHeaderAndDie(
            String address, TransportConfig config, BufferAllocator<DeviceBuffer> dev, long bytes, boolean ownProcess)
            throws java.io.IOException {
        if (!ownProcess) {
            throw new IllegalArgumentException("send-and-die needs a process of its own");
        }
        String hostPort = address.substring((Transports.IPC + "://").length());
        int colon = hostPort.lastIndexOf(':');
        try (DeviceBuffer frame = dev.allocate(bytes);
                java.net.Socket socket = new java.net.Socket(
                        hostPort.substring(0, colon), Integer.parseInt(hostPort.substring(colon + 1)))) {
            java.io.DataOutputStream out = new java.io.DataOutputStream(socket.getOutputStream());
            java.io.DataInputStream in = new java.io.DataInputStream(socket.getInputStream());
            Handshake.Result handshake = Handshake.client(socket, config, Capabilities.local(config.families()));
            byte[] header =
                    TestMessages.message("doomed", List.<Buffer>of(frame)).header();
            ByteBuffer prefix = ByteBuffer.allocate(5).put(0, (byte) 1).putInt(1, header.length);
            out.write(prefix.array());
            // with session keys (a secret on both sides), each part is followed by its tag
            SessionKeys.Direction seal =
                    handshake.keys() == null ? null : handshake.keys().sending(address);
            if (seal != null) {
                out.write(seal.seal(prefix));
            }
            out.write(header);
            if (seal != null) {
                out.write(seal.seal(ByteBuffer.wrap(header)));
            }
            out.flush();
            Runtime.getRuntime().halt(77);
        }
        return 5;
    }

    private static void dieWhen(java.util.function.BooleanSupplier condition) {
        Thread.ofPlatform().daemon().start(() -> {
            while (!condition.getAsBoolean()) {
                LockSupport.parkNanos(50_000);
            }
            Runtime.getRuntime().halt(77);
        });
    }

    private static void awaitClose(Connection c) {
        try {
            c.receive().close();
        } catch (TransportException expected) {
            // the test closed
        }
    }
}
