package io.cuwire.transport.internal.ipc;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DeviceBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The accepting side's push arena: one device allocation of its own, exported once to the dialling peer, into which
 * the peer copies the small device frames it sends (its own CUDA context does the copy), so that receiving them needs
 * no GPU work in this process's context. On one GPU shared by two processes each context's GPU work waits for a
 * context switch (~145 µs on an H200): receiving by pulling costs one per message, receiving from the arena none.
 *
 * <p>Each frame pushed into the arena is received as a loan of its bytes ({@link DeviceBuffer#lend}); while it is
 * out, those bytes are held, and a push that overlaps held bytes is the peer's protocol error. Returning the loan
 * queues the range for the peer ({@link #drainReturned}), which may then push into it again. The arena is freed when
 * the connection has ended and every loan came back.
 *
 * <p>Bytes of the arena stay writable by the peer that pushed them (it maps the whole arena): a frame received here
 * is that peer's data for as long as it is held, as a frame the receiver pulled is not. A receiver that keeps data of
 * a peer it does not trust copies it, or turns the arena off ({@code TransportConfig.ipcPushArenaBytes(0)}).
 */
final class ReceiveArena {
    private final DeviceBuffer arena;
    private final BufferAllocator<DeviceBuffer> owner;
    private final BufferAllocator<DeviceBuffer> lentFor;
    private final Runnable onReturn;
    /** The ranges lent out: offset to length. */
    private final TreeMap<Long, Long> held = new TreeMap<>();

    private final List<long[]> returned = new ArrayList<>();
    private boolean ended;

    /**
     * An arena over {@code arena}, which {@code owner} allocated for it alone (both closed when the arena ended and
     * every loan came back); {@code onReturn} runs after each loan came back. Loans report {@code lentFor} (the
     * allocator the receiver's frames of that device come from, or {@code null}) as their allocator, so that code
     * taking more memory where a received array's came from works as with a frame that was pulled.
     */
    ReceiveArena(
            DeviceBuffer arena,
            BufferAllocator<DeviceBuffer> owner,
            BufferAllocator<DeviceBuffer> lentFor,
            Runnable onReturn) {
        this.arena = arena;
        this.owner = owner;
        this.lentFor = lentFor;
        this.onReturn = onReturn;
    }

    DeviceBuffer buffer() {
        return arena;
    }

    /**
     * Lends the {@code length} bytes the peer pushed at {@code offset}.
     *
     * @throws IllegalArgumentException naming the range if it is outside the arena or overlaps bytes still lent out
     */
    synchronized DeviceBuffer lend(long offset, long length) {
        if (ended) {
            throw new IllegalStateException("the push arena has ended");
        }
        if (offset < 0 || length <= 0 || offset > arena.byteSize() - length) {
            throw new IllegalArgumentException("bytes [" + offset + ", " + offset + " + " + length + ") are not"
                    + " within the push arena of " + arena.byteSize() + " bytes");
        }
        Map.Entry<Long, Long> before = held.floorEntry(offset);
        Map.Entry<Long, Long> after = held.ceilingEntry(offset);
        if (before != null && before.getKey() + before.getValue() > offset
                || after != null && after.getKey() < offset + length) {
            Map.Entry<Long, Long> hit = before != null && before.getKey() + before.getValue() > offset ? before : after;
            throw new IllegalArgumentException("bytes [" + offset + ", " + (offset + length) + ") of the push arena"
                    + " overlap bytes [" + hit.getKey() + ", " + (hit.getKey() + hit.getValue()) + ") still held by"
                    + " an earlier message");
        }
        held.put(offset, length);
        DeviceBuffer bytes = arena.slice(offset, length);
        return lentFor == null
                ? bytes.lend(() -> returned(offset, length))
                : bytes.lend(() -> returned(offset, length), lentFor);
    }

    private void returned(long offset, long length) {
        boolean free;
        synchronized (this) {
            held.remove(offset);
            free = ended && held.isEmpty();
            if (!ended) {
                returned.add(new long[] {offset, length});
            }
        }
        if (free) {
            free();
        } else {
            onReturn.run();
        }
    }

    /** The ranges returned since the last call, to tell the peer; empty if none. */
    synchronized List<long[]> drainReturned() {
        if (returned.isEmpty()) {
            return List.of();
        }
        List<long[]> out = new ArrayList<>(returned);
        returned.clear();
        return out;
    }

    synchronized boolean hasReturned() {
        return !returned.isEmpty();
    }

    /** Ends the arena with its connection: it is freed now, or when the last loan comes back. */
    void end() {
        boolean free;
        synchronized (this) {
            if (ended) {
                return;
            }
            ended = true;
            returned.clear();
            free = held.isEmpty();
        }
        if (free) {
            free();
        }
    }

    private void free() {
        try {
            arena.close();
        } finally {
            owner.close();
        }
    }

    @Override
    public synchronized String toString() {
        return "push arena of " + arena.byteSize() + " bytes, " + held.size() + " ranges lent";
    }
}
