package io.cuwire.bench;

import com.esotericsoftware.kryo.Kryo;
import com.esotericsoftware.kryo.unsafe.UnsafeInput;
import io.cuwire.bench.harness.Secrets;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.HostMemory;
import io.cuwire.memory.HostMemoryPool;
import io.cuwire.serialize.DecodeTarget;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.Limits;
import io.cuwire.serialize.Serialized;
import io.cuwire.serialize.TypeRegistry;
import io.cuwire.transport.Connection;
import io.cuwire.transport.ConnectionClosedException;
import io.cuwire.transport.DeviceMap;
import io.cuwire.transport.Listener;
import io.cuwire.transport.Message;
import io.cuwire.transport.PeerClosedException;
import io.cuwire.transport.ReceivedMessage;
import io.cuwire.transport.TransportConfig;
import io.cuwire.transport.Transports;
import java.io.BufferedInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.ObjectInputFilter;
import java.io.ObjectInputStream;
import java.io.PrintStream;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import jdk.jfr.Recording;
import org.apache.fory.Fory;
import org.apache.fory.memory.MemoryBuffer;

/**
 * The worker JVM of {@link ModelTransferBench}: listens on cuwire's TCP transport and on a plain server socket, and
 * serves each connection on a thread of its own, receiving models, decoding each into a fresh {@link TransferModel}
 * and answering each with a one-byte acknowledgement once it has it. After the acknowledgement, outside the client's
 * timing, it checks the model ({@link TransferModel#check}).
 *
 * <p>Protocol with the client, on standard output: {@code READY <cuwire address> <socket port> <max heap bytes>
 * <GCs> <GC ms>} once listening; per connection that ends, {@code DONE <path> <models checked> <GCs> <GC ms>
 * [<phase>=<median ns>...]} (the JVM's collections so far; for cuwire, the medians of {@code receive}: the message's
 * first byte to its last, its frame's allocation included; {@code decode}: {@code deserialize}, which makes the fresh
 * {@code float[]} and copies the frame into it; {@code ack}: sending the acknowledgement), or
 * {@code FAIL <path> <message>} when a model was wrong or the connection broke. The worker exits when its standard
 * input closes.
 */
public final class ModelTransferWorker implements AutoCloseable {
    /** The most receive memory the cuwire pool keeps: one 512 MiB model's frame, with room. */
    private static final long POOL_BYTES = 1L << 30;

    private final PrintStream report;
    private final HostMemoryPool pool = new HostMemoryPool(HostMemory.resource(), POOL_BYTES);
    private final BufferAllocator<HostBuffer> host =
            BufferAllocator.root("model-transfer-worker-host", BufferAllocator.UNLIMITED, pool);
    private final BufferAllocator<DeviceBuffer> device =
            Devices.get(0).newAllocator("model-transfer-worker-device", BufferAllocator.UNLIMITED);
    private final TypeRegistry registry = TransferPath.registry(host);
    private final DecodeTarget target = new DecodeTarget(device, host, Limits.DEFAULT);
    private final Listener cuwire;
    private final ServerSocketChannel sockets;
    private final List<Thread> threads = new ArrayList<>();
    /**
     * The plain-socket paths' receive buffer, pre-touched, grown to the largest transfer asked for. One for all
     * connections: the client moves one model at a time, and a buffer per connection would hold gigabytes.
     */
    private ByteBuffer receiveBuffer = ByteBuffer.allocateDirect(0);

    /** Listens on 127.0.0.1 (free ports); {@code report} gets the {@code DONE} and {@code FAIL} lines. */
    ModelTransferWorker(PrintStream report) throws IOException {
        this.report = report;
        TransportConfig config = TransportConfig.builder()
                .secret(Secrets.fromEnvironment())
                .ioTimeout(Duration.ofSeconds(120))
                .receiveInto(DeviceMap.of(host, device))
                .build();
        cuwire = Transports.tcp().listen("tcp://127.0.0.1:0", config);
        sockets = ServerSocketChannel.open().bind(new InetSocketAddress("127.0.0.1", 0));
    }

    /** The cuwire listener's address. */
    String cuwireAddress() {
        return cuwire.address();
    }

    /** The plain server socket's port. */
    int socketPort() {
        return ((InetSocketAddress) sockets.socket().getLocalSocketAddress()).getPort();
    }

    /** Starts the two accepting threads. */
    void start() {
        threads.add(Thread.ofPlatform().name("worker-cuwire-accept").daemon().start(() -> {
            while (true) {
                Connection c;
                try {
                    c = cuwire.accept();
                } catch (ConnectionClosedException e) {
                    return;
                }
                Thread.ofPlatform().name("worker-cuwire").daemon().start(() -> serveCuwire(c));
            }
        }));
        threads.add(Thread.ofPlatform().name("worker-socket-accept").daemon().start(() -> {
            while (true) {
                SocketChannel c;
                try {
                    c = sockets.accept();
                } catch (IOException e) {
                    return;
                }
                Thread.ofPlatform().name("worker-socket").daemon().start(() -> serveSocket(c));
            }
        }));
    }

    public static void main(String[] args) throws Exception {
        String jfr = System.getProperty(ModelTransferBench.JFR_PROPERTY);
        Recording recording = jfr == null ? null : ModelTransferBench.startRecording(Path.of(jfr));
        try (ModelTransferWorker worker = new ModelTransferWorker(System.out)) {
            worker.start();
            System.out.println("READY " + worker.cuwireAddress() + " " + worker.socketPort() + " "
                    + Runtime.getRuntime().maxMemory() + " " + gc());
            System.out.flush();
            while (System.in.read() >= 0) {
                // the client holds our standard input open while it needs us
            }
        } finally {
            if (recording != null) {
                recording.close();
            }
        }
        System.exit(0);
    }

    @Override
    public void close() throws IOException {
        cuwire.close();
        sockets.close();
        for (Thread t : threads) {
            try {
                t.join(Duration.ofSeconds(10));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        device.close();
        host.close();
        pool.close();
    }

    // ---- cuwire

    private void serveCuwire(Connection c) {
        TransferPath path = TransferPath.ofChain(c.families());
        String label = path == null ? "cuwire" + c.families() : path.label();
        Message ack;
        try (Serialized a = registry.serialize((long) TransferPath.ACK, Family.HOST)) {
            ack = Message.of(a);
        }
        Tally tally = new Tally(label);
        try (c) {
            while (true) {
                ReceivedMessage m;
                try {
                    m = c.receive();
                } catch (PeerClosedException e) {
                    break;
                }
                long t0 = System.nanoTime();
                TransferModel model;
                try (m) {
                    model = registry.deserialize(m.value(), TransferModel.class, target);
                }
                long t1 = System.nanoTime();
                c.send(ack).join();
                tally.phases.add("receive", m.metrics().nanos());
                tally.phases.add("decode", t1 - t0);
                tally.phases.add("ack", System.nanoTime() - t1);
                tally.check(model);
            }
            tally.done();
        } catch (RuntimeException e) {
            tally.fail(e);
        }
    }

    // ---- plain sockets

    private void serveSocket(SocketChannel channel) {
        String label = "socket";
        try (channel) {
            TransferPath.configure(channel);
            ByteBuffer preamble = ByteBuffer.allocate(9);
            if (!TransferPath.readFully(channel, preamble)) {
                return;
            }
            int code = preamble.get(0);
            if (code < 0 || code >= TransferPath.values().length || TransferPath.values()[code].cuwire()) {
                throw new IOException("path code " + code + " is not a plain-socket path");
            }
            TransferPath path = TransferPath.values()[code];
            label = path.label();
            long bytes = preamble.getLong(1);
            Tally tally = new Tally(label);
            ByteBuffer ack = ByteBuffer.allocateDirect(1).put(0, TransferPath.ACK);
            switch (path) {
                case RAW_ONCE, RAW_64K, RAW_256K, RAW_1M -> serveRaw(channel, bytes, ack, tally);
                case JDK -> serveJdk(channel, ack, tally);
                case KRYO -> serveKryo(channel, ack, tally);
                case FORY -> serveFory(channel, bytes, ack, tally);
                default -> throw new IllegalStateException(label);
            }
            tally.done();
        } catch (IOException | RuntimeException e) {
            new Tally(label).fail(e);
        }
    }

    /** A pre-touched direct buffer of {@code bytes}, shared by the plain-socket connections (see the field). */
    private synchronized ByteBuffer receiveBuffer(long bytes) {
        if (bytes > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException(
                    "a transfer of " + bytes + " bytes (at most " + (Integer.MAX_VALUE - 8) + " over plain sockets)");
        }
        if (receiveBuffer.capacity() < bytes) {
            receiveBuffer = touched((int) bytes);
        }
        return receiveBuffer.duplicate().clear().limit((int) bytes).slice();
    }

    /** Reads each transfer's bytes into the pre-touched receive buffer. */
    private void serveRaw(SocketChannel channel, long bytes, ByteBuffer ack, Tally tally) throws IOException {
        ByteBuffer into = receiveBuffer(bytes);
        while (TransferPath.readFully(channel, into.clear())) {
            TransferPath.writeFully(channel, ack.clear());
            tally.count();
        }
    }

    private static void serveJdk(SocketChannel channel, ByteBuffer ack, Tally tally) throws IOException {
        ObjectInputStream in = null;
        while (true) {
            TransferModel model;
            try {
                if (in == null) {
                    in = new ObjectInputStream(new BufferedInputStream(
                            Channels.newInputStream(channel), TransferPath.STREAM_BUFFER_BYTES));
                    in.setObjectInputFilter(
                            ObjectInputFilter.Config.createFilter(TransferModel.class.getName() + ";!*"));
                }
                model = (TransferModel) in.readObject();
            } catch (EOFException e) {
                return;
            } catch (ClassNotFoundException e) {
                throw new IOException(e);
            }
            TransferPath.writeFully(channel, ack.clear());
            tally.check(model);
        }
    }

    private static void serveKryo(SocketChannel channel, ByteBuffer ack, Tally tally) throws IOException {
        Kryo kryo = TransferSender.kryo();
        UnsafeInput in = new UnsafeInput(Channels.newInputStream(channel), TransferPath.STREAM_BUFFER_BYTES);
        while (!in.end()) {
            TransferModel model = kryo.readObject(in, TransferModel.class);
            TransferPath.writeFully(channel, ack.clear());
            tally.check(model);
        }
    }

    /** Reads Fory's serialized bytes, then each out-of-band buffer into a pre-touched direct buffer it reuses. */
    private void serveFory(SocketChannel channel, long bytes, ByteBuffer ack, Tally tally) throws IOException {
        Fory fory = TransferSender.fory();
        ByteBuffer length = ByteBuffer.allocate(4);
        ByteBuffer into = receiveBuffer(bytes);
        List<MemoryBuffer> buffers = new ArrayList<>();
        while (TransferPath.readFully(channel, length.clear())) {
            byte[] inBand = new byte[length.getInt(0)];
            readOrFail(channel, ByteBuffer.wrap(inBand));
            readOrFail(channel, length.clear());
            int count = length.getInt(0);
            buffers.clear();
            into.clear();
            for (int i = 0; i < count; i++) {
                readOrFail(channel, length.clear());
                int n = length.getInt(0);
                if (n > into.remaining()) {
                    throw new IOException("an out-of-band buffer of " + n + " bytes; " + into.remaining()
                            + " left to receive it into");
                }
                ByteBuffer slice = into.slice(into.position(), n);
                readOrFail(channel, slice);
                into.position(into.position() + n);
                buffers.add(MemoryBuffer.fromByteBuffer(slice.flip()));
            }
            TransferModel model = (TransferModel) fory.deserialize(inBand, buffers);
            TransferPath.writeFully(channel, ack.clear());
            tally.check(model);
        }
    }

    private static void readOrFail(SocketChannel channel, ByteBuffer buffer) throws IOException {
        if (!TransferPath.readFully(channel, buffer)) {
            throw new EOFException("the client closed the connection in the middle of a model");
        }
    }

    /** A direct buffer of {@code bytes} whose pages are written once, so that receiving into it faults nothing. */
    static ByteBuffer touched(int bytes) {
        ByteBuffer b = ByteBuffer.allocateDirect(Math.max(bytes, 1));
        for (int i = 0; i < b.capacity(); i += 4096) {
            b.put(i, (byte) 1);
        }
        return b;
    }

    /** What one connection saw: the models it checked (or, for a raw path, the transfers it received). */
    private final class Tally {
        final Phases phases = new Phases();
        private final String label;
        private long models;

        Tally(String label) {
            this.label = label;
        }

        void count() {
            models++;
        }

        void check(TransferModel model) {
            model.check(models);
            models++;
        }

        void done() {
            report.printf(Locale.ROOT, "DONE %s %d %s %s%n", label, models, gc(), phases.medians());
            report.flush();
        }

        void fail(Exception e) {
            report.println("FAIL " + label + " after " + models + " models: "
                    + String.valueOf(e).replace('\n', ' '));
            report.flush();
        }
    }

    /** This JVM's collections so far and their time in ms (as the JVM counts them), as {@code <count> <ms>}. */
    static String gc() {
        long count = 0;
        long ms = 0;
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            count += Math.max(0, gc.getCollectionCount());
            ms += Math.max(0, gc.getCollectionTime());
        }
        return count + " " + ms;
    }
}
