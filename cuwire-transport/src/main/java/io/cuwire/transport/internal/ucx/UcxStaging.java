package io.cuwire.transport.internal.ucx;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.Device;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.Stream;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Pinned bounce buffers through which a device frame crosses UCX when UCX cannot carry device memory: chunk
 * {@code k} of the frame is UCX message {@code firstTag + k}. A sender copies chunk {@code k + 1} device-to-host
 * while UCX sends chunk {@code k} (and up to {@code slots - 1} before it); a receiver keeps {@code slots} receives
 * posted and copies each arrived chunk host-to-device on the slot's own stream. A slot is reused only after both its
 * UCX request and its copy are done. Used by one thread; its memory comes from an allocator of its own, closed with
 * it.
 */
final class UcxStaging implements AutoCloseable {
    /** Waits for a UCX request of the connection (bounded by its I/O timeout; throws its failure). */
    interface Waiter {
        void await(CompletableFuture<Void> request);
    }

    private final BufferAllocator<HostBuffer> allocator;
    private final HostBuffer[] buffers;
    private final Stream[] streams;
    private final int chunk;

    UcxStaging(Device device, int chunkBytes, int slots, String name) {
        this.chunk = chunkBytes;
        this.allocator = device.newPinnedAllocator(name, (long) chunkBytes * slots);
        this.buffers = new HostBuffer[slots];
        this.streams = new Stream[slots];
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

    int chunk() {
        return chunk;
    }

    /** Number of chunks of a frame of {@code length} bytes. */
    static long chunks(long length, int chunk) {
        return (length + chunk - 1) / chunk;
    }

    /** Sends all of {@code src}, staged, as messages {@code firstTag, firstTag + 1, …}. */
    void send(DeviceBuffer src, UcxAgent agent, long firstTag, Waiter waiter) {
        long length = src.byteSize();
        long chunks = chunks(length, chunk);
        int slots = buffers.length;
        List<CompletableFuture<Void>> sending = new ArrayList<>(Collections.nCopies(slots, null));
        boolean done = false;
        try {
            if (chunks > 0) {
                CopyEngine.copyAsync(src, 0, buffers[0], 0, size(0, length), streams[0]);
            }
            for (long k = 0; k < chunks; k++) {
                int s = (int) (k % slots);
                streams[s].synchronize();
                sending.set(s, agent.send(buffers[s].segment().address(), size(k, length), firstTag + k,
                        UcxAgent.HOST));
                if (k + 1 < chunks) {
                    int next = (int) ((k + 1) % slots);
                    if (sending.get(next) != null) {
                        waiter.await(sending.set(next, null));
                    }
                    CopyEngine.copyAsync(src, (k + 1) * chunk, buffers[next], 0, size(k + 1, length), streams[next]);
                }
            }
            for (CompletableFuture<Void> f : sending) {
                if (f != null) {
                    waiter.await(f);
                }
            }
            done = true;
        } finally {
            if (!done) {
                quiesce();
            }
        }
    }

    /** Receives all of {@code dst}, staged, from messages {@code firstTag, firstTag + 1, …}. */
    void receive(DeviceBuffer dst, UcxAgent agent, long firstTag, Waiter waiter) {
        long length = dst.byteSize();
        long chunks = chunks(length, chunk);
        int slots = buffers.length;
        List<CompletableFuture<Void>> receiving = new ArrayList<>(Collections.nCopies(slots, null));
        boolean done = false;
        try {
            for (long k = 0; k < Math.min(slots, chunks); k++) {
                receiving.set((int) k, post(agent, k, length, firstTag));
            }
            for (long k = 0; k < chunks; k++) {
                int s = (int) (k % slots);
                long n = size(k, length);
                waiter.await(receiving.get(s));
                CopyEngine.copyAsync(buffers[s], 0, dst, k * chunk, n, streams[s]);
                if (k + slots < chunks) {
                    streams[s].synchronize();
                    receiving.set(s, post(agent, k + slots, length, firstTag));
                }
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

    private CompletableFuture<Void> post(UcxAgent agent, long k, long length, long firstTag) {
        int s = (int) (k % buffers.length);
        return agent.receive(buffers[s].segment().address(), size(k, length), firstTag + k, UcxAgent.HOST);
    }

    private long size(long k, long length) {
        return Math.min(chunk, length - k * chunk);
    }

    /** Waits for every copy still queued, ignoring their failures. */
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

    /** Frees the ring; the caller makes sure no UCX request still uses it (its worker is destroyed or idle). */
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
