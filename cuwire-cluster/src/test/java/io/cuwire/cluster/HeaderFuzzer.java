package io.cuwire.cluster;

import io.cuwire.memory.MemoryKind;
import io.cuwire.serialize.FrameDescriptor;
import io.cuwire.serialize.Limits;
import io.cuwire.serialize.SerializationException;
import io.cuwire.serialize.Serialized;
import io.cuwire.serialize.msgpack.MsgpackWriter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.zip.CRC32C;

/**
 * A structure-aware fuzzer of message headers (format version 3, {@code docs/wire-format.md} sections 1–4): it takes
 * a valid header apart into its msgpack tree, changes one to three things in it the way a hostile peer would (a
 * node's type, a size or count, a collection's elements, a tag, a back-reference, a family, a frame descriptor or a
 * frame index, a nesting depth, a doubling of shared references), writes it back and, for most mutants, seals the
 * CRC32C again so that the decoder is reached; the rest get a mutation of the bytes themselves, the checksum or the
 * prefix. Deterministic for a given {@link SplittableRandom}.
 *
 * <p>Declared frame bytes are kept small: a receiver allocates every frame a header declares as soon as the header
 * checks out (issue 15, finding 4: not yet bounded by what arrived), so a mutant declaring gigabytes would cost the
 * machine running the suite that much memory. Mutants whose header would pass the receiver's checks with more than
 * {@link #MAX_DECLARED_BYTES} declared are drawn again; lengths beyond the limits (refused before any allocation)
 * are drawn freely.
 */
final class HeaderFuzzer {
    /** The most frame bytes a mutant the receiver accepts may declare. */
    static final long MAX_DECLARED_BYTES = 8L << 20;
    /** Request ids of attackers: far above the client's, so that no answer sent to the client can be taken for one. */
    static final long ATTACKER_IDS = 1L << 42;

    /** Tags a value node can carry (section 3), and names that are none. */
    static final List<String> TAGS = List.of(
            "i32",
            "i16",
            "i8",
            "char",
            "f32",
            "enum",
            "opt",
            "list",
            "set",
            "map",
            "arr",
            "ref",
            "pref",
            "i8[]",
            "i16[]",
            "u16[]",
            "i32[]",
            "i64[]",
            "f32[]",
            "f64[]",
            "bool[]",
            "cuwire.ndarray",
            "cuwire.csr",
            "cuwire.csc",
            "cuwire.coo",
            "cuwire.blob",
            "cuwire.cluster.Request",
            "cuwire.cluster.Reply",
            "cuwire.worker.Put",
            "cuwire.worker.Call",
            "cuwire.worker.Get",
            "cuwire.worker.Ping",
            "cuwire.worker.BroadcastBegin",
            "cuwire.worker.Subtree",
            "cuwire.rpc.Ok",
            "cuwire.rpc.Failed",
            "cuwire.cluster.WorkerStats",
            "cuwire.cluster.ObjectRef",
            "io.cuwire.cluster.ObjectRef",
            "io.cuwire.cluster.ModelHandle",
            "str",
            "bool",
            "i64",
            "f64",
            "obj",
            "[obj",
            "[[[[[[[[i32",
            "java.lang.Runtime",
            "java.util.HashMap",
            "javax.management.BadAttributeValueExpException",
            "",
            "t",
            "\u0000",
            "cuwire.ndarray\u0000");
    /** Other strings a header holds: collection kinds, families, dtypes, orders, memory kinds, ops, field names. */
    static final List<String> WORDS = List.of(
            "linked",
            "deque",
            "fixed",
            "imm",
            "unmod",
            "hash",
            "tree",
            "concurrent",
            "enum",
            "cuda",
            "host",
            "java",
            "CUDA",
            "float32",
            "float64",
            "int32",
            "int64",
            "uint8",
            "bool",
            "complex128",
            "C",
            "F",
            "HOST",
            "PINNED",
            "DEVICE",
            "ping",
            "stats",
            "call",
            "get",
            "put",
            "run",
            "shutdown",
            "bcast-begin",
            "frobnicate",
            "test.drop",
            "test.scale",
            "ml.shape",
            "ml.predict",
            "id",
            "op",
            "name",
            "args",
            "value",
            "task",
            "ref",
            "objects",
            "model",
            "version",
            "header",
            "children",
            "worker",
            "v",
            "d",
            "f",
            "tv",
            "frames",
            "fr",
            "n",
            "k",
            "c",
            "b",
            "cmp",
            "shape",
            "dtype",
            "order",
            "mem");
    /** Keys a map node may gain. */
    private static final List<String> KEYS =
            List.of("t", "v", "id", "fr", "frames", "d", "k", "cmp", "n", "c", "b", "tv", "f", "x", "root", "fam");

    /** A valid message to start from: its parsed top map and, per frame, its kind (the suite supplies the bytes). */
    record Seed(String name, Map<String, Object> top) {}

    /**
     * A mutant's header bytes; {@code frames}, the descriptors the receiver will read frames by, or {@code null}
     * when the receiver refuses the header before any frame (the sender then sends none).
     */
    record Mutant(String what, byte[] header, List<FrameDescriptor> frames) {}

    private final SplittableRandom random;

    HeaderFuzzer(SplittableRandom random) {
        this.random = random;
    }

    /** A seed of a valid header (checked here as the receiver checks it). */
    static Seed seed(String name, byte[] header) {
        Serialized.Header h = Serialized.parseHeader(header, Limits.DEFAULT);
        Map<String, Object> top = new LinkedHashMap<>();
        List<Object> fam = new ArrayList<>();
        for (io.cuwire.serialize.Family f : h.families()) {
            fam.add(f.wireName());
        }
        top.put("fam", fam);
        top.put("root", copy(h.root()));
        List<Object> frames = new ArrayList<>();
        for (FrameDescriptor d : h.frames()) {
            frames.add(new ArrayList<>(List.of((long) d.kind().ordinal(), (long) d.deviceOrdinal(), d.length())));
        }
        top.put("frames", frames);
        return new Seed(name, top);
    }

    /** One mutant of {@code seed}. */
    Mutant mutate(Seed seed) {
        for (int attempt = 0; ; attempt++) {
            Map<String, Object> top = copyMap(seed.top());
            StringBuilder what = new StringBuilder(seed.name()).append(':');
            int n = 1 + random.nextInt(3);
            for (int i = 0; i < n; i++) {
                top = copyMap(top); // what the last mutation put in may be immutable
                what.append(' ').append(mutateTree(top));
            }
            byte[] header;
            try {
                header = encode(top);
            } catch (IllegalArgumentException notAHeaderValue) {
                continue; // a map key that is no string cannot be written: draw again
            }
            int bytes = random.nextInt(100);
            if (bytes < 8) {
                what.append(" bytes:").append(mutateBytes(header));
                seal(header);
            } else if (bytes < 11) {
                what.append(" unsealed");
                header[2 + random.nextInt(4)] ^= (byte) (1 + random.nextInt(255));
            } else if (bytes < 12) {
                what.append(" version");
                header[1] = (byte) random.nextInt(256);
            } else if (bytes < 13) {
                what.append(" unprefixed");
                header = Arrays.copyOfRange(header, 6, header.length);
            }
            List<FrameDescriptor> frames = accepted(header);
            if (frames != null && total(frames) > MAX_DECLARED_BYTES && attempt < 20) {
                continue;
            }
            if (frames != null && total(frames) > MAX_DECLARED_BYTES) {
                return new Mutant(seed.name() + ": unmutated", encode(seed.top()), accepted(encode(seed.top())));
            }
            return new Mutant(what.toString(), header, frames);
        }
    }

    /** The descriptors the receiver reads frames by, or {@code null} if it refuses the header (as Frames checks). */
    static List<FrameDescriptor> accepted(byte[] header) {
        try {
            Serialized.Header h = Serialized.parseHeader(header, Limits.DEFAULT);
            return h.version() == Serialized.FORMAT_VERSION ? h.frames() : null;
        } catch (SerializationException e) {
            return null;
        }
    }

    private static long total(List<FrameDescriptor> frames) {
        long t = 0;
        for (FrameDescriptor d : frames) {
            t += d.length();
        }
        return t;
    }

    /** The header of {@code top}: prefix, the current format version, the CRC32C of the map. */
    static byte[] encode(Map<String, Object> top) {
        byte[] bytes = new MsgpackWriter(256).raw(new byte[6]).value(top).toByteArray();
        return seal(bytes);
    }

    /**
     * Fills in the prefix byte, the current format version and the CRC32C of the bytes after them; returns
     * {@code bytes}.
     */
    static byte[] seal(byte[] bytes) {
        bytes[0] = (byte) 0xC1;
        bytes[1] = (byte) Serialized.FORMAT_VERSION;
        CRC32C crc = new CRC32C();
        crc.update(bytes, 6, bytes.length - 6);
        int c = (int) crc.getValue();
        bytes[2] = (byte) (c >>> 24);
        bytes[3] = (byte) (c >>> 16);
        bytes[4] = (byte) (c >>> 8);
        bytes[5] = (byte) c;
        return bytes;
    }

    // ---------------------------------------------------------------- the tree

    /** A place in the tree: a map's entry or a list's element. */
    private record Slot(Object container, Object key) {
        Object get() {
            return container instanceof Map<?, ?> m ? m.get(key) : ((List<?>) container).get((Integer) key);
        }

        @SuppressWarnings("unchecked")
        void set(Object value) {
            if (container instanceof Map<?, ?> m) {
                ((Map<String, Object>) m).put((String) key, value);
            } else {
                ((List<Object>) container).set((Integer) key, value);
            }
        }
    }

    private static void slots(Object container, List<Slot> out, int depth) {
        if (depth > 80) {
            return;
        }
        if (container instanceof Map<?, ?> m) {
            for (Object k : m.keySet()) {
                Slot s = new Slot(m, k);
                out.add(s);
                slots(s.get(), out, depth + 1);
            }
        } else if (container instanceof List<?> l) {
            for (int i = 0; i < l.size(); i++) {
                Slot s = new Slot(l, i);
                out.add(s);
                slots(s.get(), out, depth + 1);
            }
        }
    }

    private Slot pick(List<Slot> slots, java.util.function.Predicate<Object> kind) {
        List<Slot> fit = new ArrayList<>();
        for (Slot s : slots) {
            if (kind.test(s.get())) {
                fit.add(s);
            }
        }
        return fit.isEmpty() ? null : fit.get(random.nextInt(fit.size()));
    }

    /** Applies one mutation to {@code top}; what it did. */
    @SuppressWarnings("unchecked")
    private String mutateTree(Map<String, Object> top) {
        List<Slot> all = new ArrayList<>();
        slots(top, all, 0);
        int kind = random.nextInt(13);
        switch (kind) {
            case 0 -> {
                Slot s = all.get(random.nextInt(all.size()));
                s.set(randomValue(3));
                return "type@" + s.key();
            }
            case 1 -> {
                Slot s = pick(all, v -> v instanceof Long);
                if (s != null) {
                    long old = (Long) s.get();
                    if (isRequestId(top, s)) {
                        s.set(ATTACKER_IDS + random.nextLong(1L << 40)); // see ATTACKER_IDS
                    } else {
                        s.set(boundary(old));
                    }
                    return "int@" + s.key();
                }
            }
            case 2 -> {
                Slot s = pick(all, v -> v instanceof String);
                if (s != null) {
                    s.set(random.nextBoolean() ? WORDS.get(random.nextInt(WORDS.size())) : randomString());
                    return "string@" + s.key();
                }
            }
            case 3 -> {
                Slot s = pick(all, v -> v instanceof List<?>);
                if (s != null) {
                    List<Object> l = (List<Object>) s.get();
                    return "count@" + s.key() + ":" + mutateList(l);
                }
            }
            case 4 -> {
                Slot s = pick(all, v -> v instanceof Map<?, ?>);
                if (s != null) {
                    Map<String, Object> m = (Map<String, Object>) s.get();
                    if (!m.isEmpty() && random.nextBoolean()) {
                        List<String> keys = new ArrayList<>(m.keySet());
                        String k = keys.get(random.nextInt(keys.size()));
                        m.remove(k);
                        return "drop-key " + k;
                    }
                    String k = KEYS.get(random.nextInt(KEYS.size()));
                    m.put(k, randomValue(2));
                    return "add-key " + k;
                }
            }
            case 5 -> {
                Slot s = pick(all, v -> v instanceof Map<?, ?> m && m.containsKey("t"));
                if (s != null) {
                    ((Map<String, Object>) s.get()).put("t", TAGS.get(random.nextInt(TAGS.size())));
                    return "tag";
                }
            }
            case 6 -> {
                Slot s = pick(all, v -> true);
                long id = random.nextInt(-2, 40);
                s.set(node(random.nextInt(3) == 0 ? "pref" : "ref", "id", id));
                return "ref " + id;
            }
            case 7 -> {
                Slot s = pick(all, v -> v instanceof Map<?, ?> m && m.get("t") instanceof String);
                if (s != null) {
                    int levels = 20 + random.nextInt(44);
                    s.set(doubling(levels, random.nextBoolean()));
                    return "doubling " + levels;
                }
            }
            case 8 -> {
                List<Object> fam = top.get("fam") instanceof List<?> l ? (List<Object>) l : new ArrayList<>();
                top.put("fam", fam);
                return "fam:" + mutateFamilies(fam);
            }
            case 9 -> {
                Slot s = pick(all, v -> v instanceof Map<?, ?> m && m.containsKey("f"));
                if (s != null) {
                    ((Map<String, Object>) s.get())
                            .put(
                                    "f",
                                    List.of("cuda", "host", "java", "CUDA", "", "jav")
                                            .get(random.nextInt(6)));
                    return "family";
                }
            }
            case 10 -> {
                return "descriptors:" + mutateDescriptors(top);
            }
            case 11 -> {
                Slot s = pick(all, v -> v instanceof Map<?, ?> m && (m.containsKey("fr") || m.containsKey("frames")));
                if (s != null) {
                    Map<String, Object> m = (Map<String, Object>) s.get();
                    if (m.containsKey("fr")) {
                        m.put("fr", (long) random.nextInt(-2, 6));
                        return "fr";
                    }
                    m.put("frames", List.of((long) random.nextInt(-1, 4), (long) random.nextInt(-1, 4)));
                    return "frames-run";
                }
            }
            case 12 -> {
                Slot s = pick(all, v -> true);
                int depth = 60 + random.nextInt(10);
                Object deep = 1L;
                for (int i = 0; i < depth; i++) {
                    deep = random.nextBoolean() ? node("opt", "v", deep) : node("list", "v", List.of(deep));
                }
                s.set(deep);
                return "depth " + depth;
            }
            default -> throw new AssertionError(kind);
        }
        Slot s = all.get(random.nextInt(all.size()));
        s.set(randomValue(1));
        return "type@" + s.key();
    }

    /** Whether {@code s} is the id of the request at the root ({@code root.d.id}). */
    private static boolean isRequestId(Map<String, Object> top, Slot s) {
        return top.get("root") instanceof Map<?, ?> root && root.get("d") == s.container() && "id".equals(s.key());
    }

    @SuppressWarnings("unchecked")
    private String mutateList(List<Object> l) {
        int op = random.nextInt(6);
        switch (op) {
            case 0 -> {
                if (!l.isEmpty()) {
                    l.remove(random.nextInt(l.size()));
                    return "remove";
                }
            }
            case 1 -> {
                if (!l.isEmpty()) {
                    Object e = l.get(random.nextInt(l.size()));
                    l.add(
                            random.nextInt(l.size() + 1),
                            e instanceof Map<?, ?> m ? copyMap((Map<String, Object>) m) : copy(e));
                    return "duplicate";
                }
            }
            case 2 -> {
                l.add(random.nextInt(l.size() + 1), randomValue(2));
                return "insert";
            }
            case 3 -> {
                l.clear();
                return "clear";
            }
            case 4 -> {
                java.util.Collections.reverse(l);
                return "reverse";
            }
            case 5 -> {
                int n = 1 + random.nextInt(2000);
                Object e = l.isEmpty() ? (Object) 0L : l.getFirst();
                for (int i = 0; i < n; i++) {
                    l.add(e instanceof Map<?, ?> ? node("ref", "id", 1L) : copy(e));
                }
                return "grow " + n;
            }
            default -> throw new AssertionError(op);
        }
        l.add(randomValue(1));
        return "insert";
    }

    private String mutateFamilies(List<Object> fam) {
        int op = random.nextInt(5);
        switch (op) {
            case 0 -> {
                if (!fam.isEmpty()) {
                    fam.remove(random.nextInt(fam.size()));
                    return "remove";
                }
                fam.add("cuda");
                return "add";
            }
            case 1 -> {
                if (!fam.isEmpty()) {
                    fam.add(fam.getFirst());
                    return "twice";
                }
                fam.add("host");
                return "add";
            }
            case 2 -> {
                fam.add(List.of("ucx", "pickle", "", "CUDA").get(random.nextInt(4)));
                return "unknown";
            }
            case 3 -> {
                fam.add(random.nextBoolean() ? (Object) 7L : null);
                return "not-a-name";
            }
            case 4 -> {
                fam.clear();
                return "empty";
            }
            default -> throw new AssertionError(op);
        }
    }

    @SuppressWarnings("unchecked")
    private String mutateDescriptors(Map<String, Object> top) {
        if (!(top.get("frames") instanceof List<?> raw)) {
            top.put("frames", new ArrayList<>());
            return "list";
        }
        List<Object> frames = (List<Object>) raw;
        int op = random.nextInt(6);
        if (op == 0 || frames.isEmpty()) {
            frames.add(new ArrayList<>(List.of(
                    (long) random.nextInt(3), (long) random.nextInt(-1, 2), (long) random.nextInt(1, 1 << 16))));
            return "add";
        }
        int i = random.nextInt(frames.size());
        switch (op) {
            case 1 -> {
                frames.remove(i);
                return "remove";
            }
            case 2 -> {
                frames.set(i, randomValue(1));
                return "shape";
            }
            default -> {
                if (!(frames.get(i) instanceof List<?> d) || d.size() != 3) {
                    frames.set(i, new ArrayList<>(List.of(0L, -1L, 16L)));
                    return "reshape";
                }
                List<Object> desc = new ArrayList<>(d);
                int field = random.nextInt(3);
                long old = desc.get(field) instanceof Long v ? v : 0;
                long value = switch (field) {
                    case 0 -> random.nextInt(-1, 5); // kind: host, pinned, device, and none
                    case 1 ->
                        List.of(-2L, -1L, 0L, 1L, 2L, 65_536L, 65_537L, Long.MIN_VALUE)
                                .get(random.nextInt(8));
                    default ->
                        List.of(
                                        0L,
                                        1L,
                                        old - 1,
                                        old + 1,
                                        old * 2,
                                        4096L,
                                        1L << 20,
                                        (256L << 30) + 1,
                                        Long.MAX_VALUE,
                                        -1L)
                                .get(random.nextInt(10));
                };
                desc.set(field, value);
                frames.set(i, desc);
                return "field " + field + "=" + value;
            }
        }
    }

    /** Flips, drops or inserts bytes of the msgpack after the prefix, or changes a length prefix; what it did. */
    private String mutateBytes(byte[] header) {
        if (header.length <= 7) {
            return "none";
        }
        int at = 6 + random.nextInt(header.length - 6);
        int op = random.nextInt(3);
        switch (op) {
            case 0 -> header[at] ^= (byte) (1 << random.nextInt(8));
            case 1 ->
                header[at] = (byte) List.of(
                                0xc0, 0xc1, 0xc2, 0xc4, 0xc5, 0xc6, 0xd9, 0xda, 0xdb, 0xdc, 0xdd, 0xde, 0xdf, 0xd4,
                                0xc7, 0xcf, 0xd3, 0xca, 0xff)
                        .get(random.nextInt(19))
                        .intValue();
            case 2 -> header[at] = (byte) random.nextInt(256);
            default -> throw new AssertionError(op);
        }
        return op + "@" + at;
    }

    // ---------------------------------------------------------------- values

    private long boundary(long old) {
        return switch (random.nextInt(12)) {
            case 0 -> 0;
            case 1 -> -1;
            case 2 -> old + 1;
            case 3 -> old - 1;
            case 4 -> Long.MAX_VALUE;
            case 5 -> Long.MIN_VALUE;
            case 6 -> Integer.MAX_VALUE + 1L;
            case 7 -> 1L << 32;
            case 8 -> -old;
            case 9 -> old * 2;
            case 10 -> 65_536;
            default -> random.nextLong();
        };
    }

    private String randomString() {
        int n = random.nextInt(4) == 0 ? 5000 : random.nextInt(12);
        StringBuilder b = new StringBuilder(n);
        for (int i = 0; i < n; i++) {
            b.append((char) (random.nextBoolean() ? 'a' + random.nextInt(26) : random.nextInt(0x3000)));
        }
        return b.toString();
    }

    /** A random header-model value nesting at most {@code depth} deep. */
    private Object randomValue(int depth) {
        int k = random.nextInt(depth > 0 ? 10 : 7);
        return switch (k) {
            case 0 -> null;
            case 1 -> random.nextBoolean();
            case 2 -> boundary(random.nextInt(100));
            case 3 ->
                List.of(0.0, -0.0, Double.NaN, Double.POSITIVE_INFINITY, 1e308, 4.9e-324)
                        .get(random.nextInt(6));
            case 4 -> randomString();
            case 5 -> {
                byte[] b = new byte[random.nextInt(4) == 0 ? 70_000 : random.nextInt(40)];
                random.nextBytes(b);
                yield b;
            }
            case 6 -> TAGS.get(random.nextInt(TAGS.size()));
            case 7 -> {
                List<Object> l = new ArrayList<>();
                for (int i = random.nextInt(4); i > 0; i--) {
                    l.add(randomValue(depth - 1));
                }
                yield l;
            }
            case 8 -> node(TAGS.get(random.nextInt(TAGS.size())), "v", randomValue(depth - 1));
            default -> {
                Map<String, Object> m = new LinkedHashMap<>();
                for (int i = random.nextInt(4); i > 0; i--) {
                    m.put(KEYS.get(random.nextInt(KEYS.size())), randomValue(depth - 1));
                }
                yield m;
            }
        };
    }

    static Map<String, Object> node(String tag, Object... entries) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("t", tag);
        for (int i = 0; i < entries.length; i += 2) {
            m.put((String) entries[i], entries[i + 1]);
        }
        return m;
    }

    /**
     * A list whose element {@code i + 1} holds two references to element {@code i}: 2^levels paths; its last element
     * optionally a set holding the last level (hashing it would walk them all).
     */
    static Map<String, Object> doubling(int levels, boolean set) {
        List<Object> elements = new ArrayList<>();
        elements.add(node("list", "v", List.of(1L)));
        for (int i = 1; i <= levels; i++) {
            elements.add(node("list", "v", List.of(node("ref", "id", (long) i), node("ref", "id", (long) i))));
        }
        if (set) {
            elements.add(node("set", "v", List.of(node("ref", "id", (long) levels + 1))));
        }
        return node("list", "v", elements);
    }

    private static Object copy(Object v) {
        if (v instanceof Map<?, ?> m) {
            Map<String, Object> c = new LinkedHashMap<>();
            for (Map.Entry<?, ?> e : m.entrySet()) {
                c.put((String) e.getKey(), copy(e.getValue()));
            }
            return c;
        }
        if (v instanceof List<?> l) {
            List<Object> c = new ArrayList<>(l.size());
            for (Object o : l) {
                c.add(copy(o));
            }
            return c;
        }
        return v instanceof byte[] b ? b.clone() : v;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> copyMap(Map<String, Object> m) {
        return (Map<String, Object>) copy(m);
    }

    /** The kind of memory a descriptor names, as a receiver allocates it. */
    static boolean isDevice(FrameDescriptor d) {
        return d.kind() == MemoryKind.DEVICE;
    }
}
