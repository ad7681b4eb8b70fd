package io.cuwire.bench;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.HostBuffer;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.Limits;
import io.cuwire.serialize.TypeRegistry;
import java.io.EOFException;
import java.io.IOException;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;

/**
 * The ways {@link ModelTransferBench} moves a {@link TransferModel} from the client JVM to the worker JVM, and what
 * both sides share about them. The raw paths are the ceiling: the same number of bytes over a plain socket with no
 * serialization, written once from one buffer ({@code raw-once}) or in cache-resident chunks from a small direct
 * buffer. Every other path sends the model and waits for the worker's acknowledgement that it decoded it.
 *
 * <p>Plain-socket paths (raw, JDK, Kryo, Fory) open a connection to the worker's socket port and write a preamble:
 * the path's code (one byte) and the weights' byte size (int64). cuwire paths connect to the worker's cuwire TCP
 * listener; the worker tells them apart by the family chain of the connection. {@code dask-scatter} is a peer outside
 * the JVM: Dask's {@code scatter} of an array of the same bytes from a Python client to a Dask worker process of its
 * own ({@code dask_peer.py}, driven by the bench, which times it itself).
 */
enum TransferPath {
    RAW_ONCE("raw-once", 0),
    RAW_64K("raw-64k", 64 << 10),
    RAW_256K("raw-256k", 256 << 10),
    RAW_1M("raw-1m", 1 << 20),
    CUWIRE_CUDA_HOST("cuwire-cuda-host", -1),
    CUWIRE_HOST("cuwire-host", -1),
    JDK("jdk", -1),
    KRYO("kryo", -1),
    FORY("fory-oob", -1),
    DASK("dask-scatter", -1);

    /** The one byte a worker answers a decoded model (or a raw transfer's last byte) with. */
    static final byte ACK = 0x2a;
    /** The buffer size of the JDK and Kryo streams over the socket. */
    static final int STREAM_BUFFER_BYTES = 64 << 10;

    private final String label;
    private final int chunkBytes;

    TransferPath(String label, int chunkBytes) {
        this.label = label;
        this.chunkBytes = chunkBytes;
    }

    /** The name in options, tables and the CSV. */
    String label() {
        return label;
    }

    /** Whether this is a ceiling path: bytes only, nothing serialized or decoded. */
    boolean raw() {
        return chunkBytes >= 0;
    }

    /** For a raw path, the bytes written per write call (0: the whole transfer in one buffer). */
    int chunkBytes() {
        return chunkBytes;
    }

    /**
     * Whether the bench's worker JVM receives this path's transfers (and reports what it checked); {@code
     * dask-scatter} goes to a Dask worker process of its own instead.
     */
    boolean toWorker() {
        return this != DASK;
    }

    /** Whether this path goes through cuwire's TCP transport. */
    boolean cuwire() {
        return this == CUWIRE_CUDA_HOST || this == CUWIRE_HOST;
    }

    /** The family chain of a cuwire path. */
    Family[] chain() {
        return switch (this) {
            case CUWIRE_CUDA_HOST -> new Family[] {Family.CUDA, Family.HOST};
            case CUWIRE_HOST -> new Family[] {Family.HOST};
            default -> throw new IllegalStateException(label + " is not a cuwire path");
        };
    }

    /** The cuwire path whose chain is {@code families}, or {@code null}. */
    static TransferPath ofChain(List<Family> families) {
        for (TransferPath p : values()) {
            if (p.cuwire() && List.of(p.chain()).equals(families)) {
                return p;
            }
        }
        return null;
    }

    /**
     * The paths named in {@code list} (comma-separated labels), in this enum's order.
     *
     * @throws IllegalArgumentException naming an unknown label
     */
    static List<TransferPath> parse(String list) {
        List<String> names = List.of(list.split(","));
        List<String> known = new ArrayList<>();
        for (TransferPath p : values()) {
            known.add(p.label);
        }
        for (String n : names) {
            if (!known.contains(n)) {
                throw new IllegalArgumentException(
                        "unknown path '" + n + "' (expected: " + String.join(", ", known) + ")");
            }
        }
        List<TransferPath> out = new ArrayList<>();
        for (TransferPath p : values()) {
            if (names.contains(p.label)) {
                out.add(p);
            }
        }
        return out;
    }

    /** The registry both sides use: the model registered with the generic serializer for {@code cuda, host}. */
    static TypeRegistry registry(BufferAllocator<HostBuffer> host) {
        return new TypeRegistry(Limits.DEFAULT, 64 << 10, host)
                .registerGeneric(TransferModel.class, Family.CUDA, Family.HOST)
                .register(TransferModel.class);
    }

    // ---- plain-socket helpers shared by both sides

    static void configure(SocketChannel channel) throws IOException {
        channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
    }

    static void writeFully(SocketChannel channel, ByteBuffer buffer) throws IOException {
        while (buffer.hasRemaining()) {
            channel.write(buffer);
        }
    }

    static void writeFully(SocketChannel channel, ByteBuffer[] buffers) throws IOException {
        long left = 0;
        for (ByteBuffer b : buffers) {
            left += b.remaining();
        }
        while (left > 0) {
            left -= channel.write(buffers);
        }
    }

    /**
     * Fills {@code buffer} from {@code channel}.
     *
     * @return {@code false} if the stream ended before the first byte
     * @throws EOFException if it ended after the first byte
     */
    static boolean readFully(SocketChannel channel, ByteBuffer buffer) throws IOException {
        boolean began = false;
        while (buffer.hasRemaining()) {
            int n = channel.read(buffer);
            if (n < 0) {
                if (!began) {
                    return false;
                }
                throw new EOFException("the peer closed the connection with " + buffer.remaining() + " of "
                        + buffer.limit() + " bytes still to come");
            }
            began |= n > 0;
        }
        return true;
    }
}
