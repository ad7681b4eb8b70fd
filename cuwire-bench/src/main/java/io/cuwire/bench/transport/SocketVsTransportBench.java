package io.cuwire.bench.transport;

import io.cuwire.bench.harness.BenchChild;
import io.cuwire.bench.harness.Secrets;
import io.cuwire.bench.harness.Stats;
import io.cuwire.memory.Buffer;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.HostMemory;
import io.cuwire.memory.HostMemoryPool;
import io.cuwire.memory.MemoryKind;
import io.cuwire.serialize.FrameDescriptor;
import io.cuwire.serialize.Serialized;
import io.cuwire.transport.Connection;
import io.cuwire.transport.DeviceMap;
import io.cuwire.transport.Listener;
import io.cuwire.transport.Message;
import io.cuwire.transport.MessageMetrics;
import io.cuwire.transport.ReceivedMessage;
import io.cuwire.transport.TransportConfig;
import io.cuwire.transport.Transports;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * Loopback throughput between two processes: a raw blocking socket (write a buffer, read it into a touched buffer,
 * acknowledge one byte) against a transport, TCP or UCX (one message of one host frame, received into pooled, touched
 * memory, acknowledged by an empty message). Each transfer is timed from the start of the send to the arrival of
 * the acknowledgement; the median of the repeats after one warm-up each is reported. With {@code heap}, the
 * transport's frame is a {@code long[]}'s own memory ({@link HostBuffer#wrap}, as the generic serializer hands
 * primitive arrays over), which the transport stages chunk by chunk, against the raw socket writing native memory.
 * UCX keeps to its default network devices here ({@code cuwire.ucx.netDevices}, default {@code lo}); between two
 * processes of one host it picks its shared-memory transports for the bytes. The receiver is a {@link BenchChild}; the
 * run's secret is new each run ({@link Secrets}).
 *
 * <p>{@link TransferBench} measures a transport against the raw socket too (its {@code vs_raw}, per family and size);
 * this one keeps the case of a heap frame (a {@code long[]}'s own memory), which that bench's model does not send.
 *
 * <pre>
 * java -cp "cuwire-bench/target/cuwire-bench.jar:cuwire-bench/target/lib/*" \
 *     io.cuwire.bench.transport.SocketVsTransportBench tcp|ucx [bytes=536870912] [repeats=5] [native|heap]
 * </pre>
 */
public final class SocketVsTransportBench {
    /** The transports compared, with the labels of their output lines. */
    private enum Kind {
        TCP(Transports.TCP, "transport", "TCP"),
        UCX(Transports.UCX, "ucx", "UCX");

        final String scheme;
        final String runLabel;
        final String summaryLabel;

        Kind(String scheme, String runLabel, String summaryLabel) {
            this.scheme = scheme;
            this.runLabel = runLabel;
            this.summaryLabel = summaryLabel;
        }

        static Kind of(String scheme) {
            for (Kind k : values()) {
                if (k.scheme.equals(scheme)) {
                    return k;
                }
            }
            throw new IllegalArgumentException("transport must be tcp or ucx, not " + scheme);
        }
    }

    private SocketVsTransportBench() {}

    /** Runs the comparison, or (with {@code receiver}) its receiver: see the class's usage. */
    public static void main(String[] args) throws Exception {
        if (args.length == 0) {
            throw new IllegalArgumentException("usage: SocketVsTransportBench tcp|ucx [bytes] [repeats] [native|heap]");
        }
        Kind kind = Kind.of(args[0]);
        if (args.length > 1 && args[1].equals("receiver")) {
            receiver(kind, Long.parseLong(args[2]));
            return;
        }
        long bytes = args.length > 1 ? Long.parseLong(args[1]) : 512L << 20;
        int repeats = args.length > 2 ? Integer.parseInt(args[2]) : 5;
        boolean heap = args.length > 3 && args[3].equals("heap");
        if (args.length > 3 && !heap && !args[3].equals("native")) {
            throw new IllegalArgumentException("frame memory must be native or heap, not " + args[3]);
        }
        if (heap && bytes % Long.BYTES != 0) {
            throw new IllegalArgumentException("a heap frame is a long[]: bytes must be a multiple of 8, not " + bytes);
        }
        byte[] secret = Secrets.generate();
        try (BenchChild child = BenchChild.start(
                SocketVsTransportBench.class, List.of(), secret, kind.scheme, "receiver", Long.toString(bytes))) {
            int rawPort = Integer.parseInt(child.ready().get(0));
            String transportAddress = child.ready().get(1);
            send(kind, bytes, repeats, heap, secret, rawPort, transportAddress);
        }
    }

    private static void send(
            Kind kind, long bytes, int repeats, boolean heap, byte[] secret, int rawPort, String transportAddress)
            throws IOException {
        BufferAllocator<HostBuffer> host = BufferAllocator.host("bench-send", BufferAllocator.UNLIMITED);
        BufferAllocator<DeviceBuffer> device = Devices.get(0).newAllocator("bench-device", BufferAllocator.UNLIMITED);
        HostBuffer frame = host.allocate(bytes);
        frame.segment().fill((byte) 7);
        HostBuffer sent =
                heap ? HostBuffer.wrap(MemorySegment.ofArray(new long[Math.toIntExact(bytes / Long.BYTES)])) : frame;
        if (heap) {
            sent.segment().fill((byte) 7);
        }
        List<Double> raw = new ArrayList<>();
        List<Double> transport = new ArrayList<>();
        MessageMetrics last = null;
        TransportConfig config = TransportConfig.builder()
                .secret(secret)
                .receiveInto(DeviceMap.of(host, device))
                .build();
        try (SocketChannel rawChannel = SocketChannel.open(new InetSocketAddress("127.0.0.1", rawPort));
                Connection c = Transports.forAddress(transportAddress).connect(transportAddress, config)) {
            rawChannel.setOption(StandardSocketOptions.TCP_NODELAY, true);
            ByteBuffer ack = ByteBuffer.allocate(1);
            Message message = Message.of(header(sent.byteSize()), List.of(sent));
            for (int i = 0; i <= repeats; i++) {
                long t0 = System.nanoTime();
                MemorySegment s = frame.segment();
                for (long off = 0; off < bytes; off += 1L << 30) {
                    ByteBuffer bb =
                            s.asSlice(off, Math.min(1L << 30, bytes - off)).asByteBuffer();
                    while (bb.hasRemaining()) {
                        rawChannel.write(bb);
                    }
                }
                ack.clear();
                while (ack.hasRemaining()) {
                    if (rawChannel.read(ack) < 0) {
                        throw new IOException("receiver closed");
                    }
                }
                long t1 = System.nanoTime();
                last = c.send(message).join();
                try (ReceivedMessage done = c.receive()) {
                    if (!"ack".equals(done.value().root())) {
                        throw new IllegalStateException(
                                "unexpected " + done.value().root());
                    }
                }
                long t2 = System.nanoTime();
                if (i > 0) {
                    raw.add(bytes / (double) (t1 - t0));
                    transport.add(bytes / (double) (t2 - t1));
                }
                System.out.printf(
                        Locale.ROOT,
                        "%s raw %.3f GB/s, %s %.3f GB/s%n",
                        i == 0 ? "warm-up" : "run " + i,
                        bytes / (double) (t1 - t0),
                        kind.runLabel,
                        bytes / (double) (t2 - t1));
            }
        }
        frame.close();
        host.close();
        device.close();
        double r = Stats.median(raw.stream().mapToDouble(Double::doubleValue).toArray());
        double t =
                Stats.median(transport.stream().mapToDouble(Double::doubleValue).toArray());
        System.out.printf(
                Locale.ROOT,
                "%d bytes, %d repeats: raw socket median %.3f GB/s, %s transport "
                        + "median %.3f GB/s (%s frame), ratio %.2f%n",
                bytes,
                repeats,
                r,
                kind.summaryLabel,
                t,
                heap ? "heap" : "native",
                t / r);
        System.out.println("last send metrics: " + last);
    }

    private static byte[] header(long frameBytes) {
        return new Serialized.Header(
                        Serialized.FORMAT_VERSION,
                        Set.of(),
                        "payload",
                        List.of(new FrameDescriptor(MemoryKind.HOST, Buffer.HOST_ORDINAL, frameBytes)))
                .encode();
    }

    private static void receiver(Kind kind, long bytes) throws Exception {
        HostMemoryPool pool = new HostMemoryPool(HostMemory.resource(), 2 * bytes);
        BufferAllocator<HostBuffer> host = BufferAllocator.root("bench-recv", BufferAllocator.UNLIMITED, pool);
        BufferAllocator<DeviceBuffer> device =
                Devices.get(0).newAllocator("bench-recv-device", BufferAllocator.UNLIMITED);
        TransportConfig config = TransportConfig.builder()
                .secret(Secrets.fromEnvironment())
                .receiveInto(DeviceMap.of(host, device))
                .build();
        try (Arena arena = Arena.ofShared();
                ServerSocketChannel rawServer = ServerSocketChannel.open().bind(new InetSocketAddress("127.0.0.1", 0));
                Listener listener = Transports.forAddress(kind.scheme + "://127.0.0.1:0")
                        .listen(kind.scheme + "://127.0.0.1:0", config)) {
            MemorySegment rawTarget = arena.allocate(bytes, 64);
            rawTarget.fill((byte) 0);
            System.out.println(
                    "READY " + ((InetSocketAddress) rawServer.getLocalAddress()).getPort() + " " + listener.address());
            System.out.flush();
            try (SocketChannel raw = rawServer.accept();
                    Connection c = listener.accept()) {
                raw.setOption(StandardSocketOptions.TCP_NODELAY, true);
                ByteBuffer ack = ByteBuffer.allocate(1);
                Message ackMessage = Message.of(ackHeader(), List.of());
                while (true) {
                    long got = 0;
                    for (long off = 0; off < bytes; off += 1L << 30) {
                        ByteBuffer bb = rawTarget
                                .asSlice(off, Math.min(1L << 30, bytes - off))
                                .asByteBuffer();
                        while (bb.hasRemaining()) {
                            int n = raw.read(bb);
                            if (n < 0) {
                                return;
                            }
                            got += n;
                        }
                    }
                    ack.clear();
                    raw.write(ack);
                    try (ReceivedMessage m = c.receive()) {
                        if (m.value().frames().get(0).length() != got) {
                            throw new IllegalStateException("short message");
                        }
                    }
                    c.send(ackMessage).join();
                }
            }
        } finally {
            pool.close();
        }
    }

    private static byte[] ackHeader() {
        return new Serialized.Header(Serialized.FORMAT_VERSION, Set.of(), "ack", List.of()).encode();
    }
}
