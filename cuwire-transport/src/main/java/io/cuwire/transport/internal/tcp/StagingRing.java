package io.cuwire.transport.internal.tcp;

import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.Device;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.transport.internal.PinnedSlots;
import io.cuwire.transport.internal.socket.SocketIo;
import java.nio.ByteBuffer;

/**
 * Pinned bounce buffers ({@link PinnedSlots}) through which device frames cross a byte stream, so that copies and
 * socket I/O overlap: a sender copies chunk {@code k + slots} device-to-host while the socket carries chunk
 * {@code k}; a receiver reads chunk {@code k + 1} from the socket while chunk {@code k} goes host-to-device. A slot
 * is reused only after its stream has finished with it. Used by one thread; its memory is freed when it is closed.
 */
final class StagingRing implements AutoCloseable {
    private final PinnedSlots slots;
    private final ByteBuffer[] views;

    StagingRing(Device device, int chunkBytes, int slots, String name) {
        this.slots = new PinnedSlots(device, chunkBytes, slots, name);
        this.views = new ByteBuffer[slots];
        for (int i = 0; i < slots; i++) {
            views[i] = this.slots.buffer(i).segment().asByteBuffer();
        }
    }

    /** Sends all of {@code src} over {@code io}, staged. */
    void send(DeviceBuffer src, SocketIo io, long stallNanos) {
        long length = src.byteSize();
        long chunks = slots.chunks(length);
        int n = slots.slots();
        boolean done = false;
        try {
            for (long k = 0; k < Math.min(n, chunks); k++) {
                stage(src, k, length);
            }
            for (long k = 0; k < chunks; k++) {
                int s = slots.slot(k);
                slots.stream(s).synchronize();
                ByteBuffer view = views[s].clear().limit((int) slots.size(k, length));
                io.write(view, stallNanos, SocketIo.NO_DEADLINE);
                if (k + n < chunks) {
                    stage(src, k + n, length);
                }
            }
            done = true;
        } finally {
            if (!done) {
                slots.quiesce();
            }
        }
    }

    private void stage(DeviceBuffer src, long k, long length) {
        int s = slots.slot(k);
        CopyEngine.copyAsync(src, k * slots.chunk(), slots.buffer(s), 0, slots.size(k, length), slots.stream(s));
    }

    /** Receives all of {@code dst} from {@code io}, staged. */
    void receive(SocketIo io, DeviceBuffer dst, long stallNanos) {
        long length = dst.byteSize();
        long chunks = slots.chunks(length);
        boolean done = false;
        try {
            for (long k = 0; k < chunks; k++) {
                int s = slots.slot(k);
                slots.stream(s).synchronize();
                long n = slots.size(k, length);
                io.readFully(views[s].clear().limit((int) n), stallNanos, SocketIo.NO_DEADLINE);
                CopyEngine.copyAsync(slots.buffer(s), 0, dst, k * slots.chunk(), n, slots.stream(s));
            }
            slots.synchronize();
            done = true;
        } finally {
            if (!done) {
                slots.quiesce();
            }
        }
    }

    @Override
    public void close() {
        slots.close();
    }
}
