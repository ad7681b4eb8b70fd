package io.cuwire.bench.transport;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
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
 * receive, sends the bytes and waits for both; the receiver answers once it has them all. Each side progresses its
 * worker from one thread. Two shapes of the same bytes:
 * <ul>
 *   <li>{@link #transfer}: one tagged message from the sender's pre-touched source of the whole size into the
 *       receiver's pre-touched buffer of the largest size ({@code ucx-raw});
 *   <li>{@link #transferRing}: parts of {@code chunk} bytes through a ring of {@code slots} parts on each side, at
 *       most {@code slots} in flight, part {@code k} from and to slot {@code k % slots} ({@code ucx-raw-4m}, ...) —
 *       what the transport's staged path does between its pinned rings, without the device copies on either end, so
 *       the ring stays in the caches as the transport's does. A small control message (bytes, chunk, slots) goes
 *       first, so that the receiver posts its parts' receives.
 * </ul>
 *
 * <p>The receiver's worker address travels in its {@code READY} line (hex); the sender's goes to the receiver as the
 * first tagged message, so that the receiver can answer.
 */
final class RawUcx implements AutoCloseable {
    private static final long ADDRESS_TAG = 1;
    private static final long DATA_TAG = 2;
    private static final long ACK_TAG = 3;
    private static final long CONTROL_TAG = 4;
    private static final long PART_TAG = 5;
    private static final int CONTROL_BYTES = 24;
    private static final int MAX_ADDRESS = 64 << 10;

    private final UcpContext context;
    private final UcpWorker worker;
    private final UcpRequestParams host =
            new UcpRequestParams().setMemoryType(UcsConstants.MEMORY_TYPE.UCS_MEMORY_TYPE_HOST);
    private final Arena arena = Arena.ofShared();
    private final MemorySegment ack = arena.allocate(1);
    private final MemorySegment control = arena.allocate(CONTROL_BYTES, 8);
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
     * As the sender: {@code bytes} in parts of {@code chunk} through a ring of {@code slots} parts of {@code source}
     * (its first {@code chunk × slots} bytes), at most {@code slots} in flight, and the one-byte answer back; ms.
     *
     * @throws IllegalArgumentException if the ring is larger than {@code source}
     * @throws IllegalStateException naming UCX's status when UCX fails either
     */
    double transferRing(MemorySegment source, long bytes, long chunk, int slots) {
        if (chunk * slots > source.byteSize()) {
            throw new IllegalArgumentException("raw UCX: a ring of " + slots + " x " + chunk + " bytes is larger than "
                    + "the source's " + source.byteSize());
        }
        long t0 = System.nanoTime();
        UcpRequest answer = worker.recvTaggedNonBlocking(ack.address(), 1, ACK_TAG, -1L, null, host);
        control.set(ValueLayout.JAVA_LONG, 0, bytes);
        control.set(ValueLayout.JAVA_LONG, 8, chunk);
        control.set(ValueLayout.JAVA_LONG, 16, slots);
        UcpRequest head = peer.sendTaggedNonBlocking(control.address(), CONTROL_BYTES, CONTROL_TAG, null, host);
        throughRing(
                bytes,
                chunk,
                slots,
                (offset, n) -> peer.sendTaggedNonBlocking(source.address() + offset, n, PART_TAG, null, host));
        await(head);
        await(answer);
        return (System.nanoTime() - t0) / 1e6;
    }

    /**
     * As the receiver: waits for the sender's address, then takes each message into {@code target} (a whole message at
     * its start, or a control message and the parts it announces through a ring at its start) and answers it with one
     * byte, until the worker fails (the sender gone) or the thread is interrupted. Runs on its own thread.
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
                // DATA_TAG (2) and CONTROL_TAG (4) both match tag 0 under mask ~6: whichever comes first
                UcpRequest first =
                        worker.recvTaggedNonBlocking(target.address(), target.byteSize(), 0, ~6L, null, host);
                await(first);
                if (first.getSenderTag() == CONTROL_TAG) {
                    receiveRing(target, first.getRecvSize());
                }
                await(peer.sendTaggedNonBlocking(ack.address(), 1, ACK_TAG, null, host));
            }
        } catch (RuntimeException e) {
            System.err.println("transfer bench receiver: raw UCX ended: " + e.getMessage());
        }
    }

    /** The parts a control message (at the start of {@code target}, {@code size} bytes) announces, into the ring. */
    private void receiveRing(MemorySegment target, long size) {
        if (size != CONTROL_BYTES) {
            throw new IllegalStateException("raw UCX: a control message of " + size + " bytes");
        }
        long bytes = target.get(ValueLayout.JAVA_LONG, 0);
        long chunk = target.get(ValueLayout.JAVA_LONG, 8);
        int slots = (int) target.get(ValueLayout.JAVA_LONG, 16);
        if (chunk <= 0 || slots <= 0 || chunk * slots > target.byteSize()) {
            throw new IllegalStateException("raw UCX: a ring of " + slots + " x " + chunk + " bytes does not fit");
        }
        throughRing(
                bytes,
                chunk,
                slots,
                (offset, n) -> worker.recvTaggedNonBlocking(target.address() + offset, n, PART_TAG, -1L, null, host));
    }

    /** Posts one part's send or receive: {@code n} bytes at {@code offset} of the ring. */
    private interface PartPost {
        UcpRequest post(long offset, long n);
    }

    /**
     * {@code bytes} in parts of {@code chunk}, part {@code k} posted at slot {@code k % slots} of the ring once that
     * slot's previous part completed; returns when every part has.
     */
    private void throughRing(long bytes, long chunk, int slots, PartPost post) {
        long parts = (bytes + chunk - 1) / chunk;
        UcpRequest[] inFlight = new UcpRequest[slots];
        for (long k = 0; k < parts; k++) {
            int slot = (int) (k % slots);
            if (inFlight[slot] != null) {
                await(inFlight[slot]);
            }
            inFlight[slot] = post.post(slot * chunk, Math.min(chunk, bytes - k * chunk));
        }
        for (UcpRequest r : inFlight) {
            if (r != null) {
                await(r);
            }
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
