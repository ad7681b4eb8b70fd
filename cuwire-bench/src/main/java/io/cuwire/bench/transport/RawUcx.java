package io.cuwire.bench.transport;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.HexFormat;
import org.openucx.jucx.ucp.UcpContext;
import org.openucx.jucx.ucp.UcpEndpoint;
import org.openucx.jucx.ucp.UcpEndpointParams;
import org.openucx.jucx.ucp.UcpParams;
import org.openucx.jucx.ucp.UcpRequest;
import org.openucx.jucx.ucp.UcpRequestParams;
import org.openucx.jucx.ucp.UcpWorker;
import org.openucx.jucx.ucp.UcpWorkerParams;
import org.openucx.jucx.ucs.UcsConstants;

/**
 * UCX's own tag transfer between the bench's two processes, with no serialization: the ceiling of the UCX path that
 * stages device frames through host memory ({@code ucx-raw}), where UCX's shared-memory transports beat the loopback
 * socket. Each side has a UCP context and worker of its own, made with the settings cuwire's UCX transport uses
 * ({@code cuwire.ucx.netDevices}, default {@code lo}; {@code cuwire.ucx.transports}, default {@code ^sysv}, or UCX's
 * own {@code UCX_TLS} when set), host memory declared as such. The sender posts the one-byte acknowledgement's
 * receive, sends the bytes as one tagged message from its pre-touched source and waits for both; the receiver takes
 * it into a pre-touched buffer of the largest size and answers. Each side progresses its worker from one thread.
 *
 * <p>The receiver's worker address travels in its {@code READY} line (hex); the sender's goes to the receiver as the
 * first tagged message, so that the receiver can answer.
 */
final class RawUcx implements AutoCloseable {
    private static final long ADDRESS_TAG = 1;
    private static final long DATA_TAG = 2;
    private static final long ACK_TAG = 3;
    private static final int MAX_ADDRESS = 64 << 10;

    private final UcpContext context;
    private final UcpWorker worker;
    private final UcpRequestParams host =
            new UcpRequestParams().setMemoryType(UcsConstants.MEMORY_TYPE.UCS_MEMORY_TYPE_HOST);
    private final Arena arena = Arena.ofShared();
    private final MemorySegment ack = arena.allocate(1);
    private UcpEndpoint peer;

    private RawUcx() {
        UcpParams params = new UcpParams()
                .requestTagFeature()
                .setConfig("NET_DEVICES", System.getProperty("cuwire.ucx.netDevices", "lo"));
        String tls = System.getProperty("cuwire.ucx.transports");
        if (tls != null && !tls.isBlank()) {
            params.setConfig("TLS", tls.strip());
        } else if (System.getenv("UCX_TLS") == null) {
            params.setConfig("TLS", "^sysv");
        }
        this.context = new UcpContext(params);
        this.worker = context.newWorker(new UcpWorkerParams());
    }

    /**
     * This process's side, or {@code null} when UCX cannot be loaded here (JUCX or the system UCX missing: the
     * reason goes to standard error once).
     */
    static RawUcx openOrNull() {
        try {
            return new RawUcx();
        } catch (LinkageError | RuntimeException e) {
            System.err.println("transfer bench: no raw UCX ceiling: " + e);
            return null;
        }
    }

    /** This worker's address, as hex (for the {@code READY} line). */
    String address() {
        ByteBuffer a = worker.getAddress();
        byte[] bytes = new byte[a.remaining()];
        a.get(bytes);
        return HexFormat.of().formatHex(bytes);
    }

    /** As the sender: connects to the receiver at {@code hexAddress} and tells it this worker's address. */
    void connect(String hexAddress) {
        byte[] theirs = HexFormat.of().parseHex(hexAddress);
        MemorySegment address = arena.allocate(theirs.length);
        address.copyFrom(MemorySegment.ofArray(theirs));
        peer = worker.newEndpoint(new UcpEndpointParams().setUcpAddress(address.asByteBuffer()));
        MemorySegment mine = arena.allocate(worker.getAddress().remaining());
        mine.asByteBuffer().put(worker.getAddress());
        await(peer.sendTaggedNonBlocking(mine.address(), mine.byteSize(), ADDRESS_TAG, null, host));
    }

    /**
     * As the sender: {@code bytes} of {@code source} to the receiver and its one-byte answer back; ms.
     *
     * @throws IllegalStateException naming UCX's status when UCX fails either
     */
    double transfer(MemorySegment source, long bytes) {
        long t0 = System.nanoTime();
        UcpRequest answer = worker.recvTaggedNonBlocking(ack.address(), 1, ACK_TAG, -1L, null, host);
        UcpRequest data = peer.sendTaggedNonBlocking(source.address(), bytes, DATA_TAG, null, host);
        await(data);
        await(answer);
        return (System.nanoTime() - t0) / 1e6;
    }

    /**
     * As the receiver: waits for the sender's address, then takes each message into {@code target} and answers it
     * with one byte, until the worker fails (the sender gone) or the thread is interrupted. Runs on its own thread.
     */
    void serve(MemorySegment target) {
        try {
            MemorySegment theirs = arena.allocate(MAX_ADDRESS);
            UcpRequest address =
                    worker.recvTaggedNonBlocking(theirs.address(), MAX_ADDRESS, ADDRESS_TAG, -1L, null, host);
            await(address);
            peer = worker.newEndpoint(new UcpEndpointParams()
                    .setUcpAddress(theirs.asSlice(0, address.getRecvSize()).asByteBuffer()));
            while (!Thread.currentThread().isInterrupted()) {
                await(worker.recvTaggedNonBlocking(target.address(), target.byteSize(), DATA_TAG, -1L, null, host));
                await(peer.sendTaggedNonBlocking(ack.address(), 1, ACK_TAG, null, host));
            }
        } catch (RuntimeException e) {
            System.err.println("transfer bench receiver: raw UCX ended: " + e.getMessage());
        }
    }

    private void await(UcpRequest request) {
        try {
            while (!request.isCompleted()) {
                worker.progress();
            }
        } catch (Exception e) {
            throw new IllegalStateException("raw UCX: progress failed: " + e.getMessage(), e);
        }
        if (request.getStatus() != UcsConstants.STATUS.UCS_OK) {
            throw new IllegalStateException("raw UCX: a request ended with UCX status " + request.getStatus());
        }
    }

    @Override
    public void close() {
        if (peer != null) {
            peer.close();
        }
        worker.close();
        context.close();
        arena.close();
    }
}
