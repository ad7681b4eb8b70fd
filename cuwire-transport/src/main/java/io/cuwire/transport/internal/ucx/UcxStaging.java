package io.cuwire.transport.internal.ucx;

import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.Device;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.transport.internal.PinnedSlots;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Pinned bounce buffers ({@link PinnedSlots}) through which a device frame crosses UCX when UCX cannot carry device
 * memory: chunk {@code k} of the frame is UCX message {@code firstTag + k}. A sender copies chunk {@code k + 1}
 * device-to-host while UCX sends chunk {@code k} (and up to {@code slots - 1} before it); a receiver keeps
 * {@code slots} receives posted and copies each arrived chunk host-to-device on the slot's own stream. A slot is
 * reused only after both its UCX request and its copy are done. Used by one thread; its memory is freed when it is
 * closed.
 */
final class UcxStaging implements AutoCloseable {
    /** Waits for a UCX request of the connection (bounded by its I/O timeout; throws its failure). */
    interface Waiter {
        void await(CompletableFuture<Void> request);
    }

    private final PinnedSlots slots;

    UcxStaging(Device device, int chunkBytes, int slots, String name) {
        this.slots = new PinnedSlots(device, chunkBytes, slots, name);
    }

    int chunk() {
        return slots.chunk();
    }

    /** Sends all of {@code src}, staged, as messages {@code firstTag, firstTag + 1, …}. */
    void send(DeviceBuffer src, UcxAgent agent, long firstTag, Waiter waiter) {
        long length = src.byteSize();
        long chunks = slots.chunks(length);
        List<CompletableFuture<Void>> sending = new ArrayList<>(Collections.nCopies(slots.slots(), null));
        boolean done = false;
        try {
            if (chunks > 0) {
                CopyEngine.copyAsync(src, 0, slots.buffer(0), 0, slots.size(0, length), slots.stream(0));
            }
            for (long k = 0; k < chunks; k++) {
                int s = slots.slot(k);
                slots.stream(s).synchronize();
                sending.set(
                        s,
                        agent.send(
                                slots.buffer(s).segment().address(),
                                slots.size(k, length),
                                firstTag + k,
                                UcxAgent.HOST));
                if (k + 1 < chunks) {
                    int next = slots.slot(k + 1);
                    if (sending.get(next) != null) {
                        waiter.await(sending.set(next, null));
                    }
                    CopyEngine.copyAsync(
                            src,
                            (k + 1) * slots.chunk(),
                            slots.buffer(next),
                            0,
                            slots.size(k + 1, length),
                            slots.stream(next));
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
                slots.quiesce();
            }
        }
    }

    /** Receives all of {@code dst}, staged, from messages {@code firstTag, firstTag + 1, …}. */
    void receive(DeviceBuffer dst, UcxAgent agent, long firstTag, Waiter waiter) {
        long length = dst.byteSize();
        long chunks = slots.chunks(length);
        int n = slots.slots();
        List<CompletableFuture<Void>> receiving = new ArrayList<>(Collections.nCopies(n, null));
        boolean done = false;
        try {
            for (long k = 0; k < Math.min(n, chunks); k++) {
                receiving.set((int) k, post(agent, k, length, firstTag));
            }
            for (long k = 0; k < chunks; k++) {
                int s = slots.slot(k);
                waiter.await(receiving.get(s));
                CopyEngine.copyAsync(
                        slots.buffer(s), 0, dst, k * slots.chunk(), slots.size(k, length), slots.stream(s));
                if (k + n < chunks) {
                    slots.stream(s).synchronize();
                    receiving.set(s, post(agent, k + n, length, firstTag));
                }
            }
            slots.synchronize();
            done = true;
        } finally {
            if (!done) {
                slots.quiesce();
            }
        }
    }

    private CompletableFuture<Void> post(UcxAgent agent, long k, long length, long firstTag) {
        int s = slots.slot(k);
        return agent.receive(slots.buffer(s).segment().address(), slots.size(k, length), firstTag + k, UcxAgent.HOST);
    }

    /** Frees the ring; the caller makes sure no UCX request still uses it (its worker is destroyed or idle). */
    @Override
    public void close() {
        slots.close();
    }
}
