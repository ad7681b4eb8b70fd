package io.cuwire.transport.internal.tcp;

import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.Device;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.transport.internal.PinnedSlots;
import io.cuwire.transport.internal.socket.SocketIo;
import java.nio.ByteBuffer;
import java.util.List;

/**
 * Pinned bounce buffers ({@link PinnedSlots}) through which device frames cross a byte stream, so that copies and
 * socket I/O overlap: a sender copies chunk {@code k + slots} device-to-host while the socket carries chunk
 * {@code k}; a receiver reads chunk {@code k + 1} from the socket while chunk {@code k} goes host-to-device. A slot
 * is reused only after its stream has finished with it.
 *
 * <p>Many frames cost per chunk, not per frame. A sender stages a run of consecutive device frames as one stream of
 * bytes: a chunk holds the end of one frame and the starts of the next ones, so a message of 10,000 small arrays
 * makes one socket write and one wait per chunk. A receiver takes a run of small frames as the one block they are
 * loans of (a chunk per slot, one copy to the device per chunk), goes on through the slots from frame to frame and
 * waits for its copies once per message ({@link #awaitCopies}), besides waiting for a slot's last copy before reusing
 * it.
 * Used by one thread; its memory is freed when it is closed.
 */
final class StagingRing implements AutoCloseable {
    private final PinnedSlots slots;
    private final ByteBuffer[] views;
    /** Chunks this ring has carried: the next chunk's slot is {@code slot(next)}. */
    private long next;

    StagingRing(Device device, int chunkBytes, int slots, String name) {
        this.slots = new PinnedSlots(device, chunkBytes, slots, name);
        this.views = new ByteBuffer[slots];
        for (int i = 0; i < slots; i++) {
            views[i] = this.slots.buffer(i).segment().asByteBuffer();
        }
    }

    /** Sends all of {@code run}, device frames of this ring's device, one after the other over {@code io}, staged. */
    void send(List<DeviceBuffer> run, SocketIo io, long stallNanos) {
        long length = 0;
        for (DeviceBuffer d : run) {
            length += d.byteSize();
        }
        long chunks = slots.chunks(length);
        int n = slots.slots();
        long base = next;
        Cursor staged = new Cursor(run);
        boolean done = false;
        try {
            for (long k = 0; k < Math.min(n, chunks); k++) {
                stage(staged, base + k, slots.size(k, length));
            }
            for (long k = 0; k < chunks; k++) {
                int s = slots.slot(base + k);
                slots.stream(s).synchronize();
                ByteBuffer view = views[s].clear().limit((int) slots.size(k, length));
                io.write(view, stallNanos, SocketIo.NO_DEADLINE);
                if (k + n < chunks) {
                    stage(staged, base + k + n, slots.size(k + n, length));
                }
            }
            next = base + chunks;
            done = true;
        } finally {
            if (!done) {
                slots.quiesce();
            }
        }
    }

    /**
     * Copies all of {@code run}, device frames of this ring's device of at most one chunk together, into the next slot
     * and waits for the copies: the slot's bytes, for the caller to write (with other buffers, in one gathering write)
     * before this ring's next use. A small run costs one copy wait and no write of its own.
     *
     * @throws IllegalArgumentException if the run is longer than a chunk
     */
    ByteBuffer stageWhole(List<DeviceBuffer> run) {
        long length = 0;
        for (DeviceBuffer d : run) {
            length += d.byteSize();
        }
        if (length > slots.chunk()) {
            throw new IllegalArgumentException(
                    "a run of " + length + " bytes does not fit one chunk of " + slots.chunk() + " bytes");
        }
        int s = slots.slot(next);
        boolean done = false;
        try {
            slots.stream(s).synchronize();
            stage(new Cursor(run), next, length);
            slots.stream(s).synchronize();
            next++;
            done = true;
            return views[s].duplicate().clear().limit((int) length);
        } finally {
            if (!done) {
                slots.quiesce();
            }
        }
    }

    /** Enqueues the copies that fill ring chunk {@code k}'s slot with the run's next {@code bytes} bytes. */
    private void stage(Cursor from, long k, long bytes) {
        int s = slots.slot(k);
        long filled = 0;
        while (filled < bytes) {
            DeviceBuffer frame = from.run.get(from.frame);
            long n = Math.min(frame.byteSize() - from.offset, bytes - filled);
            if (n > 0) {
                CopyEngine.copyAsync(frame, from.offset, slots.buffer(s), filled, n, slots.stream(s));
                from.offset += n;
                filled += n;
            }
            if (from.offset == frame.byteSize()) {
                from.frame++;
                from.offset = 0;
            }
        }
    }

    /** Where staging is in a run: the frame and the byte in it. */
    private static final class Cursor {
        final List<DeviceBuffer> run;
        int frame;
        long offset;

        Cursor(List<DeviceBuffer> run) {
            this.run = run;
        }
    }

    /**
     * Receives all of {@code dst} from {@code io}, staged; the last copies into it may still be running when this
     * returns: {@link #awaitCopies} waits for them.
     */
    void receive(SocketIo io, DeviceBuffer dst, long stallNanos) {
        long length = dst.byteSize();
        long chunks = slots.chunks(length);
        boolean done = false;
        try {
            for (long k = 0; k < chunks; k++) {
                int s = slots.slot(next);
                slots.stream(s).synchronize();
                long n = slots.size(k, length);
                io.readFully(views[s].clear().limit((int) n), stallNanos, SocketIo.NO_DEADLINE);
                CopyEngine.copyAsync(slots.buffer(s), 0, dst, k * slots.chunk(), n, slots.stream(s));
                next++;
            }
            done = true;
        } finally {
            if (!done) {
                slots.quiesce();
            }
        }
    }

    /** Waits for every copy of {@link #receive} so far: the frames received are then filled. */
    void awaitCopies() {
        boolean done = false;
        try {
            slots.synchronize();
            done = true;
        } finally {
            if (!done) {
                slots.quiesce();
            }
        }
    }

    /** Waits for every copy still queued, ignoring their failures: a failed message's frames may then be freed. */
    void quiesce() {
        slots.quiesce();
    }

    /** Bytes of pinned memory the ring holds: its slots' while open, 0 once closed. */
    long pinnedBytes() {
        return slots.allocatedBytes();
    }

    @Override
    public void close() {
        slots.close();
    }
}
