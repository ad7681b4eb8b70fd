package io.cuwire.transport.internal.tcp;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.Device;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.Stream;
import java.nio.ByteBuffer;

/**
 * Pinned bounce buffers through which device frames cross a byte stream, each with its own stream so that copies
 * and socket I/O overlap: a sender copies chunk {@code k + slots} device-to-host while the socket carries chunk
 * {@code k}; a receiver reads chunk {@code k + 1} from the socket while chunk {@code k} goes host-to-device. A slot
 * is reused only after its stream has finished with it. Used by one thread; its memory comes from an allocator of
 * its own, closed with it.
 */
final class StagingRing implements AutoCloseable {
    private final BufferAllocator<HostBuffer> allocator;
    private final HostBuffer[] buffers;
    private final ByteBuffer[] views;
    private final Stream[] streams;
    private final int chunk;

    StagingRing(Device device, int chunkBytes, int slots, String name) {
        this.chunk = chunkBytes;
        this.allocator = device.newPinnedAllocator(name, (long) chunkBytes * slots);
        this.buffers = new HostBuffer[slots];
        this.views = new ByteBuffer[slots];
        this.streams = new Stream[slots];
        try {
            for (int i = 0; i < slots; i++) {
                buffers[i] = allocator.allocate(chunkBytes);
                views[i] = buffers[i].segment().asByteBuffer();
                streams[i] = device.newStream();
            }
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    /** Sends all of {@code src} over {@code io}, staged. */
    void send(DeviceBuffer src, SocketIo io, long stallNanos) {
        long length = src.byteSize();
        long chunks = (length + chunk - 1) / chunk;
        int slots = buffers.length;
        boolean done = false;
        try {
            for (long k = 0; k < Math.min(slots, chunks); k++) {
                stage(src, k, length);
            }
            for (long k = 0; k < chunks; k++) {
                int s = (int) (k % slots);
                streams[s].synchronize();
                ByteBuffer view = views[s].clear().limit((int) size(k, length));
                io.write(view, stallNanos, SocketIo.NO_DEADLINE);
                if (k + slots < chunks) {
                    stage(src, k + slots, length);
                }
            }
            done = true;
        } finally {
            if (!done) {
                quiesce();
            }
        }
    }

    private void stage(DeviceBuffer src, long k, long length) {
        int s = (int) (k % buffers.length);
        CopyEngine.copyAsync(src, k * chunk, buffers[s], 0, size(k, length), streams[s]);
    }

    /** Receives all of {@code dst} from {@code io}, staged. */
    void receive(SocketIo io, DeviceBuffer dst, long stallNanos) {
        long length = dst.byteSize();
        long chunks = (length + chunk - 1) / chunk;
        int slots = buffers.length;
        boolean done = false;
        try {
            for (long k = 0; k < chunks; k++) {
                int s = (int) (k % slots);
                streams[s].synchronize();
                long n = size(k, length);
                io.readFully(views[s].clear().limit((int) n), stallNanos, SocketIo.NO_DEADLINE);
                CopyEngine.copyAsync(buffers[s], 0, dst, k * chunk, n, streams[s]);
            }
            for (Stream stream : streams) {
                stream.synchronize();
            }
            done = true;
        } finally {
            if (!done) {
                quiesce();
            }
        }
    }

    private long size(long k, long length) {
        return Math.min(chunk, length - k * chunk);
    }

    /** Waits for every copy still queued, ignoring their failures: the buffers may then be freed. */
    private void quiesce() {
        for (Stream stream : streams) {
            if (stream != null) {
                try {
                    stream.synchronize();
                } catch (RuntimeException ignored) {
                    // failing already; the copy's target is about to be freed
                }
            }
        }
    }

    @Override
    public void close() {
        RuntimeException failure = null;
        for (int i = 0; i < buffers.length; i++) {
            try {
                if (streams[i] != null) {
                    streams[i].close();
                }
            } catch (RuntimeException e) {
                failure = failure == null ? e : failure;
            }
            if (buffers[i] != null) {
                buffers[i].close();
            }
        }
        allocator.close();
        if (failure != null) {
            throw failure;
        }
    }
}
