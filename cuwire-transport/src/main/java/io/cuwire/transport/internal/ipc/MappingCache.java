package io.cuwire.transport.internal.ipc;

import io.cuwire.memory.AllocationLimitException;
import io.cuwire.memory.Closeables;
import io.cuwire.memory.Device;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.IpcHandle;
import io.cuwire.memory.Registration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.function.BiFunction;
import java.util.function.BooleanSupplier;

/**
 * A receiver's opened IPC mappings of a peer's allocations, keyed by the allocation's handle
 * ({@link io.cuwire.memory.Device#exportAllocation}): each allocation is opened once and every later frame in it is
 * reached by offset, because opening costs milliseconds (2 ms same GPU, 11.6 ms other GPU on H200) where the copy of
 * a small frame costs microseconds.
 *
 * <h2>Bounds and eviction</h2>
 * At most {@code maxMappings} mappings of at most {@code maxBytes} bytes together stay open; past either bound the
 * least recently used mapping that no copy holds is closed. A mapping held by a copy ({@link Lease}) is never
 * closed under it: when the bounds can only be kept by closing held mappings, the cache runs over its bounds until
 * their leases come back, and closes them then; a receiver whose copies hold the bounds' worth of mappings waits for
 * them and releases its leases before it acquires more ({@link #heldAtBound}). When the platform refuses to open
 * one more mapping for a bound of its own ({@link AllocationLimitException}: the emulated device keeps at most so
 * many files mapped per process), the cache closes every mapping no copy holds and tries once more. A mapping
 * keeps the exporter's memory alive (on CUDA the allocation is not freed while mapped), which is what the byte bound
 * limits.
 *
 * <p>The cache is a {@link io.cuwire.memory.MemoryHolder} of each device it opened mappings through, from the first
 * mapping until it is closed: a failed allocation's report on that device names its mappings and their bytes (on one
 * GPU, the peer's memory is the same device's).
 *
 * <h2>Close policy</h2>
 * {@link #close()} closes every mapping no lease holds and makes the rest close when their leases are released;
 * {@link #acquire} then refuses. Closing twice is harmless. Thread-safe; opening happens under the cache's lock
 * (one connection's receiver is its only user, so nothing waits on it but that receiver).
 */
public final class MappingCache implements AutoCloseable {
    /**
     * The cache's counters.
     *
     * @param opens mappings opened
     * @param closes mappings closed
     * @param hits acquisitions served by an open mapping
     * @param evictions mappings closed to keep the bounds
     * @param mapped mappings open now
     * @param mappedBytes bytes of the mappings open now
     * @param peakMapped the most mappings open at once
     */
    public record Stats(
            long opens, long closes, long hits, long evictions, int mapped, long mappedBytes, int peakMapped) {}

    /** One copy's hold on a mapping: {@link #buffer()} is the frame's bytes in it. Release once, by closing. */
    public final class Lease implements AutoCloseable {
        private final Mapping mapping;
        private final DeviceBuffer buffer;
        private boolean released;

        private Lease(Mapping mapping, DeviceBuffer buffer) {
            this.mapping = mapping;
            this.buffer = buffer;
        }

        /** The leased bytes: a slice of the mapping, valid until {@link #close()}. */
        public DeviceBuffer buffer() {
            return buffer;
        }

        @Override
        public void close() {
            release(this);
        }
    }

    private static final class Mapping {
        final IpcHandle key;
        final DeviceBuffer buffer;
        final Device via;
        int leases;
        boolean removed;

        Mapping(IpcHandle key, DeviceBuffer buffer, Device via) {
            this.key = key;
            this.buffer = buffer;
            this.via = via;
        }
    }

    private final String name;
    private final BiFunction<Device, IpcHandle, DeviceBuffer> opener;
    /** This cache's registration as a holder of each device it opened mappings through. */
    private final Map<Device, Registration> holding = new HashMap<>();

    private final int maxMappings;
    private final long maxBytes;
    private final LinkedHashMap<IpcHandle, Mapping> mappings = new LinkedHashMap<>(16, 0.75f, true);
    private final List<Mapping> retired = new ArrayList<>();
    private long mappedBytes;
    /** Mappings some lease holds, and their bytes. */
    private int heldMappings;

    private long heldBytes;
    private long opens;
    private long closes;
    private long hits;
    private long evictions;
    private int peakMapped;
    private boolean closed;

    /**
     * A cache named {@code name} (for the memory report, e.g. {@code IPC mappings of ipc-3-server's peer
     * 10.0.0.1:4000}) that opens allocations with {@code opener} (usually {@code Device::openHandle}, called on the
     * device the copies go to) and keeps at most {@code maxMappings} of at most {@code maxBytes} bytes together.
     */
    public MappingCache(
            String name, BiFunction<Device, IpcHandle, DeviceBuffer> opener, int maxMappings, long maxBytes) {
        if (maxMappings < 1 || maxBytes < 1) {
            throw new IllegalArgumentException(
                    "maxMappings: " + maxMappings + ", maxBytes: " + maxBytes + " (expected: >= 1 each)");
        }
        this.name = Objects.requireNonNull(name, "name");
        this.opener = Objects.requireNonNull(opener, "opener");
        this.maxMappings = maxMappings;
        this.maxBytes = maxBytes;
    }

    /**
     * Leases {@code length} bytes at {@code offset} of the allocation {@code allocation} names, opening it through
     * {@code via} if it is not open yet.
     *
     * @throws IndexOutOfBoundsException if the range lies outside the allocation
     * @throws IllegalStateException if the cache is closed
     */
    public synchronized Lease acquire(IpcHandle allocation, long offset, long length, Device via) {
        if (closed) {
            throw new IllegalStateException("the IPC mapping cache is closed");
        }
        if (offset < 0 || length < 0 || offset > allocation.length() - length) {
            throw new IndexOutOfBoundsException("offset: " + offset + ", length: " + length + " (expected: within the "
                    + allocation.length() + " bytes of " + allocation + ")");
        }
        Mapping m = mappings.get(allocation);
        if (m != null) {
            hits++;
        } else {
            DeviceBuffer opened;
            try {
                opened = opener.apply(via, allocation);
            } catch (AllocationLimitException e) {
                // the platform's own bound on mappings (the emulated device's mapped files): make room and retry once
                if (closeIdle() == 0) {
                    throw e;
                }
                opened = opener.apply(via, allocation);
            }
            opens++;
            if (opened.byteSize() < allocation.length()) {
                closeMapping(opened);
                throw new IllegalStateException("opening " + allocation + " mapped " + opened.byteSize() + " bytes");
            }
            m = new Mapping(allocation, opened, via);
            mappings.put(allocation, m);
            mappedBytes += allocation.length();
            holding.computeIfAbsent(via, d -> d.addMemoryHolder(() -> describeHolding(d)));
        }
        if (m.leases++ == 0) {
            heldMappings++;
            heldBytes += allocation.length();
        }
        Lease lease = new Lease(m, m.buffer.slice(offset, length));
        evict();
        peakMapped = Math.max(peakMapped, mappings.size() + retired.size());
        return lease;
    }

    /**
     * Whether the mappings that leases hold reach the cache's bounds already ({@code maxMappings} of them, or
     * {@code maxBytes} together), so that opening one more would run over them: a receiver then waits for its copies
     * and releases its leases before it acquires the next.
     */
    public synchronized boolean heldAtBound() {
        return heldMappings >= maxMappings || heldBytes >= maxBytes;
    }

    private synchronized void release(Lease lease) {
        if (lease.released) {
            throw new IllegalStateException("lease of " + lease.mapping.key + " released twice");
        }
        lease.released = true;
        Mapping m = lease.mapping;
        m.leases--;
        if (m.leases == 0) {
            heldMappings--;
            heldBytes -= m.key.length();
        }
        if (m.leases == 0 && m.removed) {
            retired.remove(m);
            closeMapping(m.buffer);
            if (closed) {
                dropHoldings();
            }
        } else if (m.leases == 0) {
            evict();
        }
    }

    /** Closes every mapping no lease holds; returns how many. The caller holds the lock. */
    private int closeIdle() {
        return closeIdleWhile(() -> true);
    }

    /** Closes least recently used idle mappings while over a bound; the caller holds the lock. */
    private void evict() {
        closeIdleWhile(() -> mappings.size() > maxMappings || mappedBytes > maxBytes);
    }

    /**
     * Closes idle mappings, least recently used first, while {@code more} holds; returns how many. The caller holds
     * the lock.
     */
    private int closeIdleWhile(BooleanSupplier more) {
        int closed = 0;
        Iterator<Map.Entry<IpcHandle, Mapping>> it = mappings.entrySet().iterator();
        while (more.getAsBoolean() && it.hasNext()) {
            Mapping m = it.next().getValue();
            if (m.leases > 0) {
                continue;
            }
            it.remove();
            mappedBytes -= m.key.length();
            evictions++;
            closeMapping(m.buffer);
            closed++;
        }
        return closed;
    }

    private void closeMapping(DeviceBuffer buffer) {
        closes++;
        buffer.close();
    }

    /** This cache's line in {@code device}'s memory report; {@code null} when it has nothing mapped through it. */
    private synchronized String describeHolding(Device device) {
        int count = 0;
        long bytes = 0;
        int held = 0;
        List<Mapping> all = new ArrayList<>(mappings.values());
        all.addAll(retired);
        for (Mapping m : all) {
            if (m.via == device) {
                count++;
                bytes += m.key.length();
                held += m.leases > 0 ? 1 : 0;
            }
        }
        if (count == 0) {
            return null;
        }
        return name + ": " + count + " mapping(s) of the peer's allocations, " + bytes + " bytes (kept from being "
                + "freed while mapped; " + held + " held by copies, the rest closed as the cache's bounds require)";
    }

    /** The counters now. */
    public synchronized Stats stats() {
        long retiredBytes = 0;
        for (Mapping m : retired) {
            retiredBytes += m.key.length();
        }
        return new Stats(
                opens,
                closes,
                hits,
                evictions,
                mappings.size() + retired.size(),
                mappedBytes + retiredBytes,
                peakMapped);
    }

    /** Closes the mappings as described above. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        List<DeviceBuffer> idle = new ArrayList<>();
        for (Mapping m : mappings.values()) {
            m.removed = true;
            if (m.leases > 0) {
                retired.add(m);
            } else {
                idle.add(m.buffer);
            }
        }
        mappings.clear();
        mappedBytes = 0;
        closes += idle.size();
        try {
            Closeables.closeAll(idle);
        } finally {
            dropHoldings();
        }
    }

    /** Once closed: leaves the reports of the devices through which no retired mapping is still open. */
    private void dropHoldings() {
        Iterator<Map.Entry<Device, Registration>> it = holding.entrySet().iterator();
        while (it.hasNext()) {
            Map.Entry<Device, Registration> e = it.next();
            if (retired.stream().noneMatch(m -> m.via == e.getKey())) {
                e.getValue().close();
                it.remove();
            }
        }
    }

    @Override
    public synchronized String toString() {
        return "MappingCache[" + mappings.size() + " of at most " + maxMappings + " mappings, " + mappedBytes
                + " of at most " + maxBytes + " bytes]";
    }
}
