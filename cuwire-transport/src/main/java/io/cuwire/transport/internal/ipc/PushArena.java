package io.cuwire.transport.internal.ipc;

import io.cuwire.memory.Device;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.DeviceStream;
import io.cuwire.transport.ProtocolViolationException;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;

/**
 * The dialling side's view of its peer's push arena ({@link ReceiveArena}): the arena mapped once on one device of
 * this process, the ranges of it this side may push into, and the stream that does the pushes. Ranges are reserved by
 * the sender (under the connection's send lock) and come back when the peer says it returned them.
 */
final class PushArena implements AutoCloseable {
    /** Pushed frames start on this alignment, as allocators' blocks do. */
    static final long ALIGNMENT = 256;

    private final MappingCache.Lease mapping;
    private final Device device;
    private final DeviceStream stream;
    /** Free ranges: offset to length, coalesced. */
    private final TreeMap<Long, Long> free = new TreeMap<>();
    /** Ranges pushed into and not yet returned: offset to length. */
    private final Map<Long, Long> reserved = new HashMap<>();

    /** The arena mapped by {@code mapping} (exactly its bytes) through {@code device}, which pushes into it. */
    PushArena(MappingCache.Lease mapping, Device device) {
        this.mapping = mapping;
        this.device = device;
        this.stream = device.newStream();
        free.put(0L, mapping.buffer().byteSize());
    }

    /** The device of this process that maps the arena: only frames on it are pushed. */
    Device device() {
        return device;
    }

    DeviceStream stream() {
        return stream;
    }

    /** The arena's bytes at {@code offset}, mapped. */
    DeviceBuffer target(long offset, long length) {
        return mapping.buffer().slice(offset, length);
    }

    /** Reserves {@code length} bytes (first fit, aligned); {@code -1} if no free range is large enough. */
    synchronized long reserve(long length) {
        long rounded = (length + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT;
        for (Map.Entry<Long, Long> e : free.entrySet()) {
            if (e.getValue() >= rounded) {
                long offset = e.getKey();
                free.remove(offset);
                if (e.getValue() > rounded) {
                    free.put(offset + rounded, e.getValue() - rounded);
                }
                reserved.put(offset, rounded);
                return offset;
            }
        }
        return -1;
    }

    /**
     * Gives back the range at {@code offset}: reserved by this side, returned by the peer (or never pushed).
     *
     * @throws ProtocolViolationException if no range was reserved there with {@code length} bytes
     */
    synchronized void release(long offset, long length, String peer) {
        Long rounded = reserved.get(offset);
        if (rounded == null || length <= 0 || length > rounded) {
            throw new ProtocolViolationException("peer " + peer + " returned bytes [" + offset + ", " + offset
                    + " + " + length
                    + ") of its push arena, which this side had not pushed into");
        }
        reserved.remove(offset);
        long start = offset;
        long size = rounded;
        Map.Entry<Long, Long> before = free.floorEntry(start);
        if (before != null && before.getKey() + before.getValue() == start) {
            free.remove(before.getKey());
            start = before.getKey();
            size += before.getValue();
        }
        Long next = free.get(start + size);
        if (next != null) {
            free.remove(start + size);
            size += next;
        }
        free.put(start, size);
    }

    @Override
    public synchronized String toString() {
        return "push arena of " + mapping.buffer().byteSize() + " bytes, " + reserved.size() + " ranges pushed";
    }

    @Override
    public void close() {
        try {
            stream.close();
        } finally {
            mapping.close();
        }
    }
}
