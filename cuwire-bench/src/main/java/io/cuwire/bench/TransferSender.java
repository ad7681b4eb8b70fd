package io.cuwire.bench;

import com.esotericsoftware.kryo.Kryo;
import com.esotericsoftware.kryo.unsafe.UnsafeOutput;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.Serialized;
import io.cuwire.serialize.TypeRegistry;
import io.cuwire.transport.Connection;
import io.cuwire.transport.DeviceMap;
import io.cuwire.transport.Message;
import io.cuwire.transport.MessageMetrics;
import io.cuwire.transport.ReceivedMessage;
import io.cuwire.transport.TransportConfig;
import io.cuwire.transport.Transports;
import java.io.BufferedOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.ObjectOutputStream;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.apache.fory.Fory;
import org.apache.fory.config.Language;
import org.apache.fory.memory.MemoryBuffer;
import org.apache.fory.serializer.BufferObject;

/**
 * The client side of one {@link TransferPath}: one connection to the worker, over which {@link #transfer} sends a
 * model and returns once the worker's acknowledgement is back. Not thread-safe; {@link #close()} ends the
 * connection (the worker then reports what it verified).
 */
abstract class TransferSender implements AutoCloseable {
    final TransferPath path;

    private TransferSender(TransferPath path) {
        this.path = path;
    }

    /**
     * A sender of {@code path} for models of {@code weightBytes} bytes of weights, connected to the worker at
     * {@code host} ({@code socketPort} for plain sockets, {@code cuwireAddress} for cuwire).
     *
     * @param bigSource a direct buffer of at least {@code weightBytes}, filled once and shared by the senders that
     *     need one: {@code raw-once} writes it, Fory stages its out-of-band buffers in it
     */
    static TransferSender open(
            TransferPath path,
            String host,
            int socketPort,
            String cuwireAddress,
            byte[] secret,
            long weightBytes,
            ByteBuffer bigSource)
            throws IOException {
        if (path.cuwire()) {
            return new Cuwire(path, cuwireAddress, secret);
        }
        if (path == TransferPath.DASK) {
            return new DaskSender(DaskPeer.start(weightBytes));
        }
        SocketChannel channel = SocketChannel.open(new InetSocketAddress(host, socketPort));
        try {
            TransferPath.configure(channel);
            ByteBuffer preamble =
                    ByteBuffer.allocate(9).put(0, (byte) path.ordinal()).putLong(1, weightBytes);
            TransferPath.writeFully(channel, preamble);
            return switch (path) {
                case RAW_ONCE, RAW_64K, RAW_256K, RAW_1M -> new Raw(path, channel, weightBytes, bigSource);
                case JDK -> new Jdk(channel);
                case KRYO -> new KryoSender(channel);
                case FORY -> new ForySender(channel, bigSource);
                default -> throw new IllegalStateException(path.label());
            };
        } catch (IOException | RuntimeException e) {
            channel.close();
            throw e;
        }
    }

    /**
     * Sends {@code model} and waits for the worker's acknowledgement that it has the decoded model (for a raw path:
     * the model's byte count, and the acknowledgement of the last byte).
     */
    abstract void transfer(TransferModel model) throws IOException;

    /**
     * Makes {@code reps} transfers of {@code model} back to back, numbered from {@code firstSeq} (each model's
     * intercept), and returns their time in ns: on this JVM's clock, from before the first until after the last.
     */
    long transfers(TransferModel model, long firstSeq, int reps) throws IOException {
        long t0 = System.nanoTime();
        for (int i = 0; i < reps; i++) {
            model.intercept = firstSeq + i;
            transfer(model);
        }
        return System.nanoTime() - t0;
    }

    /** What received this path's transfers, where not the bench's worker JVM; else {@code null}. */
    String receiver() {
        return null;
    }

    /** The medians of this side's phases of each transfer so far ({@link Phases#medians}), or "" if not timed. */
    String phases() {
        return "";
    }

    @Override
    public abstract void close() throws IOException;

    /**
     * Dask's {@code scatter} ({@link DaskPeer}): the Python client scatters its own array of the model's weight bytes
     * and times the scatters itself (its clock, not the pipe to it); the model's values do not travel.
     */
    private static final class DaskSender extends TransferSender {
        private final DaskPeer peer;

        DaskSender(DaskPeer peer) {
            super(TransferPath.DASK);
            this.peer = peer;
        }

        @Override
        void transfer(TransferModel model) throws IOException {
            peer.scatter(1);
        }

        @Override
        long transfers(TransferModel model, long firstSeq, int reps) throws IOException {
            return peer.scatter(reps);
        }

        @Override
        String receiver() {
            return "a Dask worker process of its own (" + peer.versions() + ")";
        }

        @Override
        public void close() {
            peer.close();
        }
    }

    /** A plain-socket sender: the connection and the one-byte acknowledgement it waits for. */
    private abstract static class Socket extends TransferSender {
        final SocketChannel channel;
        private final ByteBuffer ack = ByteBuffer.allocateDirect(1);

        Socket(TransferPath path, SocketChannel channel) {
            super(path);
            this.channel = channel;
        }

        void awaitAck() throws IOException {
            ack.clear();
            if (!TransferPath.readFully(channel, ack)) {
                throw new EOFException("the worker closed the " + path.label() + " connection (its output says why)");
            }
            if (ack.get(0) != TransferPath.ACK) {
                throw new IOException("the worker acknowledged " + path.label() + " with " + ack.get(0));
            }
        }

        @Override
        public void close() throws IOException {
            channel.close();
        }
    }

    /** The ceiling: the bytes alone, from one big buffer or from a cache-resident chunk written again and again. */
    private static final class Raw extends Socket {
        private final long bytes;
        private final ByteBuffer source;

        Raw(TransferPath path, SocketChannel channel, long bytes, ByteBuffer bigSource) {
            super(path, channel);
            this.bytes = bytes;
            if (path.chunkBytes() == 0) {
                source = bigSource.duplicate().clear().limit((int) bytes);
            } else {
                source = ByteBuffer.allocateDirect((int) Math.min(path.chunkBytes(), bytes));
                for (int i = 0; i < source.capacity(); i++) {
                    source.put(i, (byte) i);
                }
            }
        }

        @Override
        void transfer(TransferModel model) throws IOException {
            for (long left = bytes; left > 0; ) {
                int n = (int) Math.min(source.capacity(), left);
                TransferPath.writeFully(channel, source.clear().limit(n));
                left -= n;
            }
            awaitAck();
        }
    }

    /** JDK serialization: an {@link ObjectOutputStream} over the socket's stream, buffered. */
    private static final class Jdk extends Socket {
        private final ObjectOutputStream out;

        Jdk(SocketChannel channel) throws IOException {
            super(TransferPath.JDK, channel);
            out = new ObjectOutputStream(
                    new BufferedOutputStream(Channels.newOutputStream(channel), TransferPath.STREAM_BUFFER_BYTES));
            out.flush();
        }

        @Override
        void transfer(TransferModel model) throws IOException {
            out.reset(); // forget the model sent before, or the stream would send a reference to it
            out.writeObject(model);
            out.flush();
            awaitAck();
        }
    }

    /** Kryo 5 with its unsafe output over the socket's stream; the model's class registered. */
    private static final class KryoSender extends Socket {
        private final Kryo kryo = kryo();
        private final UnsafeOutput out;

        KryoSender(SocketChannel channel) {
            super(TransferPath.KRYO, channel);
            out = new UnsafeOutput(Channels.newOutputStream(channel), TransferPath.STREAM_BUFFER_BYTES);
        }

        @Override
        void transfer(TransferModel model) throws IOException {
            kryo.writeObject(out, model);
            out.flush();
            awaitAck();
        }
    }

    /** The Kryo both sides use. */
    static Kryo kryo() {
        Kryo kryo = new Kryo();
        kryo.register(TransferModel.class);
        kryo.register(float[].class);
        return kryo;
    }

    /**
     * Fory with out-of-band buffers: {@code serialize(model, callback)} keeps the weights out of the serialized bytes
     * (the callback takes each {@link BufferObject} and answers {@code false}: out-of-band); the bytes go first, then
     * each buffer as raw bytes, written by {@link BufferObject#writeTo} into a direct staging buffer and from there to
     * the socket. Wire: {@code [int32 n][n serialized bytes][int32 buffers]} and per buffer
     * {@code [int32 length][bytes]}.
     */
    private static final class ForySender extends Socket {
        private final Fory fory = fory();
        private final ByteBuffer staging;
        private final List<BufferObject> outOfBand = new ArrayList<>();

        ForySender(SocketChannel channel, ByteBuffer bigSource) {
            super(TransferPath.FORY, channel);
            this.staging = bigSource.duplicate().clear();
        }

        @Override
        void transfer(TransferModel model) throws IOException {
            outOfBand.clear();
            byte[] inBand = fory.serialize(model, b -> !outOfBand.add(b));
            ByteBuffer head = ByteBuffer.allocate(8).putInt(0, inBand.length).putInt(4, outOfBand.size());
            ByteBuffer[] gather = {head.slice(0, 4), ByteBuffer.wrap(inBand), head.slice(4, 4)};
            TransferPath.writeFully(channel, gather);
            for (BufferObject b : outOfBand) {
                int n = b.totalBytes();
                if (n + 4 > staging.capacity()) {
                    throw new IOException("an out-of-band buffer of " + n + " bytes does not fit the staging buffer"
                            + " of " + staging.capacity());
                }
                staging.clear().putInt(0, n);
                MemoryBuffer target = MemoryBuffer.fromByteBuffer(staging.slice(4, n));
                b.writeTo(target);
                if (target.writerIndex() != n || !target.isOffHeap()) {
                    throw new IOException("Fory wrote " + target.writerIndex() + " of " + n + " bytes"
                            + (target.isOffHeap() ? "" : " and moved the buffer to the heap"));
                }
                TransferPath.writeFully(channel, staging.limit(4 + n));
            }
            awaitAck();
        }
    }

    /**
     * The Fory both sides use: Java mode, class registration required, the model registered, and the decoder's
     * memory bound raised from its 128 MiB default to 4 GiB (Fory refuses a 512 MiB array otherwise).
     */
    static Fory fory() {
        Fory fory = Fory.builder()
                .withLanguage(Language.JAVA)
                .requireClassRegistration(true)
                .withMaxGraphMemoryBytes(4L << 30)
                .build();
        fory.register(TransferModel.class);
        return fory;
    }

    /**
     * cuwire over its TCP transport: {@code serialize(model, chain)} (the weights become one host frame),
     * {@code Message.of}, {@code send}; the worker's acknowledgement is a header-only cuwire message. Phases timed:
     * {@code serialize} (to the message), {@code send} (the send's own metrics: from {@code send} until the bytes
     * were handed to the socket, heap staging included), {@code after_send} (from then to the acknowledgement).
     */
    private static final class Cuwire extends TransferSender {
        private final BufferAllocator<HostBuffer> host;
        private final BufferAllocator<DeviceBuffer> device;
        private final TypeRegistry registry;
        private final Connection connection;
        private final Family[] chain;
        private final Phases phases = new Phases();

        Cuwire(TransferPath path, String address, byte[] secret) {
            super(path);
            host = BufferAllocator.host("model-transfer-client-host", BufferAllocator.UNLIMITED);
            device = Devices.get(0).newAllocator("model-transfer-client-device", BufferAllocator.UNLIMITED);
            try {
                registry = TransferPath.registry(host);
                TransportConfig config = TransportConfig.builder()
                        .secret(secret)
                        .families(path.chain())
                        .ioTimeout(Duration.ofSeconds(120))
                        .receiveInto(DeviceMap.of(host, device))
                        .build();
                connection = Transports.tcp().connect(address, config);
                chain = connection.families().toArray(Family[]::new);
            } catch (RuntimeException e) {
                device.close();
                host.close();
                throw e;
            }
        }

        @Override
        void transfer(TransferModel model) throws IOException {
            long t0 = System.nanoTime();
            CompletableFuture<MessageMetrics> sent;
            try (Serialized s = registry.serialize(model, chain)) {
                Message message = Message.of(s);
                long t1 = System.nanoTime();
                sent = connection.send(message);
                try (ReceivedMessage ack = connection.receive()) {
                    if (!ack.value().frames().isEmpty()
                            || !Long.valueOf(TransferPath.ACK)
                                    .equals(ack.value().root())) {
                        throw new IOException("the worker acknowledged with " + ack.value());
                    }
                }
                long t2 = System.nanoTime();
                long send = sent.join().nanos();
                phases.add("serialize", t1 - t0);
                phases.add("send", send);
                phases.add("after_send", t2 - t1 - send);
            }
        }

        @Override
        String phases() {
            return phases.medians();
        }

        @Override
        public void close() {
            try {
                connection.close();
            } finally {
                try {
                    device.close();
                } finally {
                    host.close();
                }
            }
        }
    }
}
