package io.cuwire.spark.internal;

import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.MemoryKind;
import io.cuwire.memory.MemoryResource;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A device memory resource that keeps small freed buffers for reuse, by exact size: the memory transforms score
 * their blocks of rows in, where every block allocates the same few arrays (an allocation of the emulated device
 * creates and maps a file; one of a GPU costs a driver call); a block's features, larger, mostly go to the device as
 * they are. A buffer handed out is a loan of a pooled buffer; closing it returns the
 * buffer to the pool, or frees it when the pool holds {@code maxRetained} bytes already. Larger requests go to the
 * device as they are. {@link #trim()} frees what the pool holds.
 *
 * <p>Thread-safe.
 */
final class PooledMemory implements MemoryResource<DeviceBuffer> {
    private final MemoryResource<DeviceBuffer> device;
    private final long maxPooled;
    private final long maxRetained;
    private final Map<Long, ArrayDeque<DeviceBuffer>> free = new HashMap<>();
    private long retained;

    /**
     * A pool over {@code device} of buffers up to {@code maxPooled} bytes each, holding at most {@code maxRetained}
     * bytes of free ones.
     */
    PooledMemory(MemoryResource<DeviceBuffer> device, long maxPooled, long maxRetained) {
        this.device = device;
        this.maxPooled = maxPooled;
        this.maxRetained = maxRetained;
    }

    @Override
    public MemoryKind kind() {
        return device.kind();
    }

    @Override
    public int deviceOrdinal() {
        return device.deviceOrdinal();
    }

    @Override
    public DeviceBuffer allocate(long bytes) {
        if (bytes == 0 || bytes > maxPooled) {
            return device.allocate(bytes);
        }
        DeviceBuffer root;
        synchronized (this) {
            ArrayDeque<DeviceBuffer> q = free.get(bytes);
            root = q == null ? null : q.poll();
            if (root != null) {
                retained -= bytes;
            }
        }
        DeviceBuffer r = root != null ? root : device.allocate(bytes);
        return r.lend(() -> giveBack(r));
    }

    private void giveBack(DeviceBuffer root) {
        long bytes = root.byteSize();
        synchronized (this) {
            if (retained + bytes <= maxRetained) {
                free.computeIfAbsent(bytes, b -> new ArrayDeque<>()).push(root);
                retained += bytes;
                return;
            }
        }
        root.close();
    }

    /** The bytes of the free buffers the pool holds. */
    synchronized long retainedBytes() {
        return retained;
    }

    /** Frees every buffer the pool holds. */
    void trim() {
        List<DeviceBuffer> all = new ArrayList<>();
        synchronized (this) {
            for (ArrayDeque<DeviceBuffer> q : free.values()) {
                all.addAll(q);
            }
            free.clear();
            retained = 0;
        }
        for (DeviceBuffer b : all) {
            b.close();
        }
    }

    @Override
    public String describe() {
        return "pooled " + device.describe();
    }
}
