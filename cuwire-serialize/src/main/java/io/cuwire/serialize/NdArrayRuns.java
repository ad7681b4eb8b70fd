package io.cuwire.serialize;

import io.cuwire.memory.Buffer;
import io.cuwire.memory.DType;
import io.cuwire.memory.MemoryKind;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Runs of {@link NdArray}s in a list or an object array (format version 3): consecutive elements that are arrays
 * alike in dtype, order, rank and memory kind, written as one node instead of one {@code cuwire.ndarray} node each,
 * so that a model held as 10,000 arrays (a list of layers) costs a few bytes of header and a few hundred nanoseconds
 * per array to write and to read, not a 95-byte node and descriptor with a dozen objects made on each side:
 * <pre>
 *   {"t": "ndrun", "f": family, "frames": [first, count], "dtype": "float32", "order": "C", "mem": "DEVICE",
 *    "rank": r, "shapes": binary: count × r dimensions, int64 little-endian}
 * </pre>
 * Array {@code k} of the run is frame {@code first + k} and has dimensions {@code shapes[k·r] … shapes[k·r + r − 1]};
 * each is what a {@code cuwire.ndarray} node of the same family, dtype, order, shape and memory kind over that frame
 * would decode to, and is numbered for {@code ref} as such a node is (one id per array, in order). A run is at least
 * {@value #MIN_RUN} arrays long, of arrays not met before in the value and each met once; anything else goes node by
 * node, as in version 2. Written only where the send's family for {@code NdArray} uses the built-in serializer at
 * type version 0, and read only where the receiver's does (another serializer could read other data).
 */
final class NdArrayRuns {
    /** The node's tag (reserved: no registered type may have it as its name). */
    static final String TAG = "ndrun";
    /** The registered name of {@link NdArray}, whose built-in serializer's data a run batches. */
    static final String REGISTERED_NAME = "cuwire.ndarray";
    /** The first header format version with runs. */
    static final int FORMAT_VERSION = 3;
    /** The fewest consecutive arrays written as a run. */
    static final int MIN_RUN = 8;
    /** The entries of a run node. */
    private static final int ENTRIES = 8;

    private static final VarHandle LONG_LE =
            MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

    private NdArrayRuns() {}

    /** Whether {@code a} can join a run that {@code head} begins: open, and alike in dtype, order, rank and kind. */
    static boolean alike(NdArray a, NdArray head) {
        return a.isOpen()
                && a.dtype() == head.dtype()
                && a.order() == head.order()
                && a.rank() == head.rank()
                && a.kind() == head.kind();
    }

    /**
     * The node of a run of {@code count} arrays from {@code items[from]}, each handed over as its frame in
     * {@code family} (its own buffer, or in {@code host} a host copy of device memory), frames {@code first} on.
     */
    static Map<String, Object> write(WriteContext out, Object[] items, int from, int count, int first) {
        NdArray head = (NdArray) items[from];
        int rank = head.rank();
        byte[] shapes = new byte[Math.multiplyExact(Math.multiplyExact(count, rank), Long.BYTES)];
        for (int k = 0; k < count; k++) {
            NdArray a = (NdArray) items[from + k];
            for (int d = 0; d < rank; d++) {
                LONG_LE.set(shapes, (k * rank + d) * Long.BYTES, a.dim(d));
            }
            Buffer buffer = a.buffer();
            if (out.family() == Family.HOST && buffer.kind() == MemoryKind.DEVICE) {
                out.hostCopyFrame(buffer);
            } else {
                out.frame(buffer);
            }
        }
        Map<String, Object> m = new LinkedHashMap<>(16);
        m.put("t", TAG);
        m.put("f", out.family().wireName());
        m.put("frames", List.of((long) first, (long) count));
        m.put("dtype", head.dtype().wireName());
        m.put("order", head.order().name());
        m.put("mem", head.kind().name());
        m.put("rank", (long) rank);
        m.put("shapes", shapes);
        return m;
    }

    /**
     * A run node as read from a header (untrusted: every entry checked, the shapes against the rank and count, the
     * frames against the message's {@code frames}).
     *
     * @param family the family it was written in
     * @param first its first frame
     * @param count its arrays
     * @param shapes {@code count × rank} dimensions, each {@code >= 0}
     */
    record Run(Family family, int first, int count, DType dtype, Order order, MemoryKind mem, int rank, long[] shapes) {
        /** The shape of array {@code k}. */
        long[] shape(int k) {
            long[] shape = new long[rank];
            System.arraycopy(shapes, k * rank, shape, 0, rank);
            return shape;
        }
    }

    /**
     * Reads a run node of a message of {@code frames} frames.
     *
     * @throws MalformedHeaderException (without a path: the decoder adds it) if any entry is missing, of the wrong
     *     type or out of range, or the node has entries of its own
     */
    static Run read(Map<?, ?> m, int frames) {
        if (m.size() != ENTRIES) {
            throw new MalformedHeaderException("array run with " + m.size()
                    + " entries (expected: t, f, frames, dtype, order, mem, rank, shapes)");
        }
        if (!(m.get("f") instanceof String familyName)) {
            throw new MalformedHeaderException("array run without a family");
        }
        Family family = Family.fromWireName(familyName);
        if (!(m.get("frames") instanceof List<?> r)
                || r.size() != 2
                || !(r.get(0) instanceof Long first)
                || !(r.get(1) instanceof Long count)
                || first < 0
                || count < MIN_RUN
                || first > frames - count) {
            throw new MalformedHeaderException("array run's frames " + m.get("frames") + " (expected: [first, count], "
                    + "count >= " + MIN_RUN + ", within " + frames + " frames)");
        }
        DType dtype;
        Order order;
        MemoryKind mem;
        try {
            dtype = DType.byName(string(m, "dtype"));
            order = Order.valueOf(string(m, "order"));
            mem = MemoryKind.valueOf(string(m, "mem"));
        } catch (IllegalArgumentException e) {
            throw new MalformedHeaderException("bad array run description: " + e.getMessage());
        }
        if (!(m.get("rank") instanceof Long rank) || rank < 0 || rank > NdArray.MAX_RANK) {
            throw new MalformedHeaderException(
                    "array run's rank " + m.get("rank") + " (expected: 0 to " + NdArray.MAX_RANK + ")");
        }
        if (!(m.get("shapes") instanceof byte[] bytes) || bytes.length != count * rank * Long.BYTES) {
            throw new MalformedHeaderException("array run's shapes are not " + count * rank + " int64 dimensions");
        }
        long[] shapes = new long[bytes.length / Long.BYTES];
        for (int i = 0; i < shapes.length; i++) {
            shapes[i] = (long) LONG_LE.get(bytes, i * Long.BYTES);
            if (shapes[i] < 0) {
                throw new MalformedHeaderException("negative dimension " + shapes[i] + " in an array run");
            }
        }
        return new Run(family, first.intValue(), count.intValue(), dtype, order, mem, rank.intValue(), shapes);
    }

    private static String string(Map<?, ?> m, String key) {
        if (m.get(key) instanceof String s) {
            return s;
        }
        throw new MalformedHeaderException("array run's '" + key + "' is not a string");
    }
}
