package io.cuwire.transport.internal;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.Device;
import io.cuwire.memory.DeviceStream;
import io.cuwire.memory.HostBuffer;

/**
 * The slots of a staging ring: pinned bounce buffers of one chunk each, every one with a stream of its own on the
 * device, so that the copies of one slot overlap the I/O of another. Chunk {@code k} of a frame goes through slot
 * {@code k % slots}. How chunks move through the slots is the transport's (a socket's byte stream, UCX's tagged
 * messages); allocating, sizing, quiescing and freeing them is here. Used by one thread; its memory comes from an
 * allocator of its own, closed with it.
 */
public final class PinnedSlots implements AutoCloseable {
    private final BufferAllocator<HostBuffer> allocator;
    private final HostBuffer[] buffers;
    private final DeviceStream[] streams;
    private final int chunk;

    /** Allocates {@code slots} pinned buffers of {@code chunkBytes} on {@code device}, frees them if that fails. */
    public PinnedSlots(Device device, int chunkBytes, int slots, String name) {
        this.chunk = chunkBytes;
        this.allocator = device.newPinnedAllocator(name, (long) chunkBytes * slots);
        this.buffers = new HostBuffer[slots];
        this.streams = new DeviceStream[slots];
        try {
            for (int i = 0; i < slots; i++) {
                buffers[i] = allocator.allocate(chunkBytes);
                streams[i] = device.newStream();
            }
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    /** Bytes of one slot. */
    public int chunk() {
        return chunk;
    }

    /** Number of slots. */
    public int slots() {
        return buffers.length;
    }

    /** The slot of chunk {@code k}. */
    public int slot(long k) {
        return (int) (k % buffers.length);
    }

    /** Slot {@code s}'s pinned buffer. */
    public HostBuffer buffer(int s) {
        return buffers[s];
    }

    /** Slot {@code s}'s stream. */
    public DeviceStream stream(int s) {
        return streams[s];
    }

    /** Bytes of pinned memory the slots hold: {@code chunk() * slots()} while open, 0 once closed. */
    public long allocatedBytes() {
        return allocator.allocatedBytes();
    }

    /** Number of chunks of {@code chunk} bytes in a frame of {@code length} bytes. */
    public static long chunks(long length, int chunk) {
        return (length + chunk - 1) / chunk;
    }

    /** Number of chunks in a frame of {@code length} bytes. */
    public long chunks(long length) {
        return chunks(length, chunk);
    }

    /** Bytes of chunk {@code k} of a frame of {@code length} bytes. */
    public long size(long k, long length) {
        return Math.min(chunk, length - k * chunk);
    }

    /** Waits for every stream's queued copies. */
    public void synchronize() {
        for (DeviceStream stream : streams) {
            stream.synchronize();
        }
    }

    /** Waits for every copy still queued, ignoring their failures: the buffers may then be freed. */
    public void quiesce() {
        for (DeviceStream stream : streams) {
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
