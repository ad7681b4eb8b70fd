package io.cuwire.serialize;

import io.cuwire.memory.Buffer;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.NdArray;
import java.lang.reflect.Array;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.Deque;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.LinkedList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Rebuilds one value graph from a {@link Serialized}; one decoder per {@link TypeRegistry#deserialize} call. Header
 * nodes are untrusted: every shape is checked, type names resolve only through the registry, and any failure is a
 * {@link SerializationException}. On failure the frames it took, and the memory its serializers made, are released.
 *
 * <p>Work is charged to the message's budget ({@link Limits#maxDecodeWork}) before it is done: one unit per node,
 * and, before an element goes into a hash or tree collection, its <em>span</em> (the nodes hashing or comparing it
 * reaches: a value shared by {@code ref} counts at every place it is reached) times the hashes and comparisons the
 * insertion makes. Spans are summed as nodes complete, so a header of a few kilobytes whose references describe
 * 2^60 paths is refused before anything hashes it. Messages and paths never print a decoded value that is not a
 * scalar (printing walks it as hashing does).
 */
final class Decoder {
    private static final Object PENDING = new Object();
    /** Longest decoded string printed in a path or message; longer ones are cut. */
    private static final int PRINTED_CHARS = 40;

    private final TypeRegistry registry;
    private final Serialized serialized;
    private final DecodeTarget target;
    private final List<Object> ids = new ArrayList<>();
    private final List<Object> primitiveArrays = new ArrayList<>();
    private final Deque<String> path = new ArrayDeque<>();
    /** What this decode took or made that the value will own: released if the decode fails. */
    private final List<AutoCloseable> owned = new ArrayList<>();
    /** Indices of the frames taken so far, in order. */
    private final List<Integer> takenIndices = new ArrayList<>();
    /** Decode work spent so far, in {@link Limits#maxDecodeWork}'s units. */
    private long work;
    /**
     * {@code childSpans[d]}: the spans of the completed children of the node open at depth {@code d} (the root is at
     * depth 1; index 0 collects the root's own span).
     */
    private long[] childSpans = new long[16];
    /** The span of each {@code ids} entry, once complete. */
    private long[] idSpans = new long[16];
    /** The span of the node {@link #node} returned last. */
    private long lastSpan;

    Decoder(TypeRegistry registry, Serialized serialized, DecodeTarget target) {
        this.registry = registry;
        this.serialized = serialized;
        this.target = target;
    }

    Object decode() {
        try {
            try {
                return node(serialized.root(), "root");
            } catch (StackOverflowError e) {
                // A serializer or a JDK stream nested deeper than this thread's stack: the frames are gone, the stack
                // is back, and the message is refused like any other that costs too much.
                throw new DecodeBudgetExceededException("decoding ran out of thread stack (StackOverflowError): the "
                        + "value nests too deeply for this thread");
            }
        } catch (RuntimeException | Error e) {
            for (AutoCloseable resource : owned) {
                boolean open = switch (resource) {
                    case Buffer b -> b.isOpen();
                    case NdArray a -> a.isOpen();
                    default -> true;
                };
                if (open) {
                    try {
                        resource.close();
                    } catch (Exception suppressed) {
                        e.addSuppressed(suppressed);
                    }
                }
            }
            throw e; // node() made every other failure a SerializationException that says where
        }
    }

    DecodeTarget target() {
        return target;
    }

    /** The format version of the header being decoded. */
    int formatVersion() {
        return serialized.formatVersion();
    }

    String path() {
        return Paths.of(path);
    }

    Frame takeFrame(int index) {
        Frame f = serialized.take(index);
        takenIndices.add(index);
        if (f.owned()) {
            owned.add(f.buffer());
        }
        return f;
    }

    /** Memory a serializer made for the value (a frame rebuilt on the device, an array JDK serialization read). */
    void own(AutoCloseable resource) {
        owned.add(resource);
    }

    private MalformedHeaderException malformed(String what) {
        return new MalformedHeaderException(what, path());
    }

    /**
     * Charges {@code units} of work to the message's budget before they are spent; {@code what} says what they pay
     * for, for the refusal's message.
     *
     * @throws DecodeBudgetExceededException if the budget does not cover them
     */
    void charge(long units, String what) {
        long max = target.limits().maxDecodeWork();
        if (units > max - work) {
            throw new DecodeBudgetExceededException(
                    "decode work exceeds the budget of " + max + " units " + "(Limits.maxDecodeWork): " + work
                            + " spent, " + what + " would cost " + units,
                    path());
        }
        work += units;
    }

    /** Spans saturate: only how they compare with a budget matters. */
    private static long add(long a, long b) {
        long r = a + b;
        return ((a ^ r) & (b ^ r)) < 0 ? Long.MAX_VALUE : r;
    }

    private static long times(long span, long count) {
        return count != 0 && span > Long.MAX_VALUE / count ? Long.MAX_VALUE : span * count;
    }

    Object node(Object node, String name) {
        path.push(name);
        int depth = path.size();
        try {
            if (depth > target.limits().maxDepth()) {
                throw new LimitExceededException(
                        "value nests deeper than " + target.limits().maxDepth(), path());
            }
            if (!spend(1)) {
                charge(1, "a node");
            }
            if (depth >= childSpans.length) {
                childSpans = Arrays.copyOf(childSpans, Math.max(depth + 1, 2 * childSpans.length));
            }
            childSpans[depth] = 0;
            Object value = nodeOf(node);
            long span = add(1, childSpans[depth]);
            childSpans[depth - 1] = add(childSpans[depth - 1], span);
            lastSpan = span;
            return value;
        } catch (SerializationException e) {
            throw e.locate(path()); // the innermost node a failure passes is where it happened
        } catch (RuntimeException e) {
            throw new MalformedHeaderException("cannot decode: " + e, path(), e);
        } finally {
            path.pop();
        }
    }

    private Object nodeOf(Object node) {
        switch (node) {
            case null -> {
                return null;
            }
            case Boolean b -> {
                return b;
            }
            case Long l -> {
                return l;
            }
            case Double d -> {
                return d;
            }
            case String s -> {
                return s;
            }
            case byte[] b -> {
                return b;
            }
            case Map<?, ?> m -> {
                if (!(m.get("t") instanceof String tag)) {
                    throw malformed("value node without a type tag");
                }
                return tagged(tag, m);
            }
            default -> throw malformed("unexpected " + node.getClass().getSimpleName() + " as a value node");
        }
    }

    private long longOf(Map<?, ?> m, String key) {
        if (m.get(key) instanceof Long l) {
            return l;
        }
        throw malformed("'" + key + "' is not an integer");
    }

    private List<?> listOf(Map<?, ?> m, String key) {
        if (m.get(key) instanceof List<?> l) {
            return l;
        }
        throw malformed("'" + key + "' is not an array");
    }

    private long ranged(Map<?, ?> m, long min, long max) {
        long v = longOf(m, "v");
        if (v < min || v > max) {
            throw malformed(v + " is out of range [" + min + ", " + max + "]");
        }
        return v;
    }

    private Object tagged(String tag, Map<?, ?> m) {
        switch (tag) {
            case "i32":
                return (int) ranged(m, Integer.MIN_VALUE, Integer.MAX_VALUE);
            case "i16":
                return (short) ranged(m, Short.MIN_VALUE, Short.MAX_VALUE);
            case "i8":
                return (byte) ranged(m, Byte.MIN_VALUE, Byte.MAX_VALUE);
            case "char":
                return (char) ranged(m, Character.MIN_VALUE, Character.MAX_VALUE);
            case "f32":
                if (m.get("v") instanceof Double d) {
                    return d.floatValue();
                }
                throw malformed("'v' is not a float");
            case "enum":
                return enumValue(m);
            case "opt":
                return m.containsKey("v") ? Optional.of(requireNonNull(node(m.get("v"), "value"))) : Optional.empty();
            case "ref": {
                long id = longOf(m, "id");
                if (id < 0 || id >= ids.size() || ids.get((int) id) == PENDING) {
                    throw malformed("reference to " + id + ", which is not an earlier complete value");
                }
                childSpans[path.size()] = idSpans[(int) id] - 1; // reached through here, it spans what it names
                return ids.get((int) id);
            }
            case "pref": {
                long id = longOf(m, "id");
                if (id < 0 || id >= primitiveArrays.size()) {
                    throw malformed("reference to primitive array " + id + ", which is not an earlier one");
                }
                return primitiveArrays.get((int) id);
            }
            case NdArrayRuns.TAG:
                throw malformed(
                        serialized.formatVersion() < NdArrayRuns.FORMAT_VERSION
                                ? "an array run ('" + NdArrayRuns.TAG + "') in a header of format version "
                                        + serialized.formatVersion() + ", which has none"
                                : "an array run ('" + NdArrayRuns.TAG + "') outside a list or object array");
            case "list":
                return collection(CollectionKind.Node.LIST, m);
            case "set":
                return collection(CollectionKind.Node.SET, m);
            case "arr":
                return array(m);
            case "map":
                return collection(CollectionKind.Node.MAP, m);
            default:
                PrimitiveArrays.Kind kind = PrimitiveArrays.kindOf(tag);
                if (kind != null) {
                    Object array = primitiveArray(kind, m);
                    primitiveArrays.add(array);
                    return array;
                }
                return object(tag, m);
        }
    }

    /** A {@code list}, {@code set} or {@code map} node, rebuilt as the kind its {@code "k"} names. */
    private Object collection(CollectionKind.Node node, Map<?, ?> m) {
        CollectionKind kind;
        if (!m.containsKey("k")) {
            kind = CollectionKind.of(node, null);
        } else if (m.get("k") instanceof String name) {
            kind = CollectionKind.of(node, name);
            if (kind == null) {
                throw malformed("unknown " + node.tag() + " kind '"
                        + (name.length() > 40 ? name.substring(0, 40) + "…" : name) + "'");
            }
        } else {
            throw malformed(node.tag() + " kind is not a name");
        }
        List<?> items = listOf(m, "v");
        if (node == CollectionKind.Node.MAP && items.size() % 2 != 0) {
            throw malformed("map with an odd number of keys and values");
        }
        int id = reserve();
        Object value = switch (node) {
            case LIST -> list(kind, items);
            case SET -> set(kind, m, items);
            case MAP -> map(kind, m, items);
        };
        complete(id, value);
        return value;
    }

    private Object list(CollectionKind kind, List<?> items) {
        List<Object> out = elements(items);
        return switch (kind) {
            case ARRAY_LIST -> out;
            case LINKED_LIST -> new LinkedList<>(out);
            case ARRAY_DEQUE -> {
                if (out.contains(null)) {
                    throw malformed("ArrayDeque holding nil");
                }
                yield new ArrayDeque<>(out);
            }
            case FIXED_LIST -> Arrays.asList(out.toArray());
            case IMMUTABLE_LIST -> out.contains(null) ? Collections.unmodifiableList(out) : List.copyOf(out);
            case UNMODIFIABLE_LIST -> Collections.unmodifiableList(out);
            default -> throw new IllegalStateException(kind + " is not a list kind");
        };
    }

    /**
     * The elements of a list or object array node, in order: each node's value, and each array of a run of arrays
     * ({@link NdArrayRuns}, in a header of format version 3).
     */
    private List<Object> elements(List<?> items) {
        List<Object> out = new ArrayList<>(items.size());
        for (Object item : items) {
            if (item instanceof Map<?, ?> m
                    && NdArrayRuns.TAG.equals(m.get("t"))
                    && serialized.formatVersion() >= NdArrayRuns.FORMAT_VERSION) {
                arrayRun(m, out);
            } else {
                out.add(node(item, "[" + out.size() + "]"));
            }
        }
        return out;
    }

    /**
     * Decodes a run of arrays into {@code out}: what its arrays' {@code cuwire.ndarray} nodes would decode to, each
     * charged and numbered for {@code ref} as one node, each failure located at its element.
     */
    private void arrayRun(Map<?, ?> m, List<Object> out) {
        int at = out.size();
        NdArrayRuns.Run run;
        try {
            run = NdArrayRuns.read(m, serialized.frames().size());
        } catch (SerializationException e) {
            throw e.locate(pathWith("[" + at + "]"));
        }
        if (path.size() + 1 > target.limits().maxDepth()) {
            throw new LimitExceededException(
                    "value nests deeper than " + target.limits().maxDepth(), pathWith("[" + at + "]"));
        }
        if (!serialized.families().contains(run.family())) {
            throw new MalformedHeaderException(
                    "an array run in family " + run.family().wireName() + ", which the " + "header's family list "
                            + Serialized.familyNames(serialized.families()) + " does not name",
                    pathWith("[" + at + "]"));
        }
        if (!BuiltinSerializers.isArraySerializer(registry.serializerFor(NdArray.class, run.family()))) {
            throw new UnknownTypeException(
                    "an array run in family " + run.family().wireName() + ", whose " + NdArrayRuns.REGISTERED_NAME
                            + " serializer here is not the built-in one",
                    pathWith("[" + at + "]"));
        }
        if (!spend(run.count())) {
            charge(run.count(), "an array run of " + run.count() + " arrays");
        }
        for (int k = 0; k < run.count(); k++) {
            try {
                int id = reserve();
                Frame frame = takeFrame(run.first() + k);
                if (frame.arrayType() != null) {
                    throw new MalformedHeaderException("array run's frame " + (run.first() + k) + " is a "
                            + frame.arrayType().tag() + " array's frame, not a frame of bytes");
                }
                NdArray array =
                        BuiltinSerializers.array(this, frame, run.dtype(), run.order(), run.shape(k), run.mem());
                ids.set(id, array);
                idSpans[id] = 1;
                out.add(array);
            } catch (SerializationException e) {
                throw e.locate(pathWith("[" + (at + k) + "]"));
            } catch (RuntimeException e) {
                throw new MalformedHeaderException("cannot decode: " + e, pathWith("[" + (at + k) + "]"), e);
            }
        }
        childSpans[path.size()] = add(childSpans[path.size()], run.count());
    }

    /** The current path with {@code name} after it: a path for a node not pushed (an array of a run). */
    private String pathWith(String name) {
        path.push(name);
        try {
            return path();
        } finally {
            path.pop();
        }
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private Object set(CollectionKind kind, Map<?, ?> m, List<?> items) {
        Class<?> enumType = kind == CollectionKind.ENUM_SET ? enumType(m) : null;
        Set<Object> out = switch (kind) {
            case LINKED_HASH_SET, IMMUTABLE_SET, UNMODIFIABLE_SET -> new LinkedHashSet<>();
            case HASH_SET -> new HashSet<>();
            case TREE_SET -> new TreeSet<>(comparator(m));
            case ENUM_SET -> EnumSet.noneOf((Class) enumType);
            default -> throw new IllegalStateException(kind + " is not a set kind");
        };
        Map<Integer, Integer> hashes =
                kind == CollectionKind.TREE_SET || kind == CollectionKind.ENUM_SET ? null : new HashMap<>();
        for (int i = 0; i < items.size(); i++) {
            Object element = node(items.get(i), "[" + i + "]");
            if (enumType != null && !enumType.isInstance(element)) {
                throw malformed("element " + i + " of an EnumSet of " + enumType.getName() + " is "
                        + (element == null ? "nil" : "a " + element.getClass().getName()));
            }
            chargeInsertion(
                    element,
                    lastSpan,
                    kind == CollectionKind.IMMUTABLE_SET ? 2 : 1,
                    hashes,
                    kind != CollectionKind.IMMUTABLE_SET,
                    i,
                    "set element");
            boolean added;
            try {
                added = out.add(element);
            } catch (ClassCastException | NullPointerException e) {
                throw malformed("element " + i + " cannot be ordered in a TreeSet: " + e.getMessage());
            }
            if (!added) {
                throw malformed("set with duplicate elements");
            }
        }
        return switch (kind) {
            case IMMUTABLE_SET -> {
                if (out.contains(null)) {
                    throw malformed("immutable set (Set.of) holding nil");
                }
                yield Set.copyOf(out);
            }
            case UNMODIFIABLE_SET -> Collections.unmodifiableSet(out);
            default -> out;
        };
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private Object map(CollectionKind kind, Map<?, ?> m, List<?> kv) {
        Class<?> enumType = kind == CollectionKind.ENUM_MAP ? enumType(m) : null;
        Map<Object, Object> out = switch (kind) {
            case LINKED_HASH_MAP, IMMUTABLE_MAP, UNMODIFIABLE_MAP -> new LinkedHashMap<>();
            case HASH_MAP -> new HashMap<>();
            case TREE_MAP -> new TreeMap<>(comparator(m));
            case CONCURRENT_HASH_MAP -> new ConcurrentHashMap<>();
            case ENUM_MAP -> new EnumMap(enumType);
            default -> throw new IllegalStateException(kind + " is not a map kind");
        };
        Map<Integer, Integer> hashes =
                kind == CollectionKind.TREE_MAP || kind == CollectionKind.ENUM_MAP ? null : new HashMap<>();
        for (int i = 0; i < kv.size(); i += 2) {
            Object key = node(kv.get(i), "[key " + i / 2 + "]");
            if (enumType != null && !enumType.isInstance(key)) {
                throw malformed("key " + i / 2 + " of an EnumMap of " + enumType.getName() + " is "
                        + (key == null ? "nil" : "a " + key.getClass().getName()));
            }
            if (kind == CollectionKind.CONCURRENT_HASH_MAP && key == null) {
                throw malformed("ConcurrentHashMap with a nil key");
            }
            // containsKey, then put; Map.copyOf hashes once more
            chargeInsertion(
                    key,
                    lastSpan,
                    kind == CollectionKind.IMMUTABLE_MAP ? 3 : 2,
                    hashes,
                    kind != CollectionKind.IMMUTABLE_MAP,
                    i / 2,
                    "map key");
            boolean duplicate;
            try {
                duplicate = out.containsKey(key);
            } catch (ClassCastException | NullPointerException e) {
                throw malformed("key " + i / 2 + " cannot be ordered in a TreeMap: " + e.getMessage());
            }
            if (duplicate) {
                throw malformed("map with duplicate key " + printed(key, i / 2));
            }
            Object value = node(kv.get(i + 1), "[" + printed(key, i / 2) + "]");
            if (kind == CollectionKind.CONCURRENT_HASH_MAP && value == null) {
                throw malformed("ConcurrentHashMap with a nil value under " + key);
            }
            out.put(key, value);
        }
        return switch (kind) {
            case IMMUTABLE_MAP -> {
                if (out.containsKey(null) || out.containsValue(null)) {
                    throw malformed("immutable map (Map.of) holding nil");
                }
                yield Map.copyOf(out);
            }
            case UNMODIFIABLE_MAP -> Collections.unmodifiableMap(out);
            default -> out;
        };
    }

    /**
     * Charges what inserting {@code element} (of span {@code span}, the {@code index}th) into a hash or tree
     * collection costs, before it is done: for a hash collection ({@code hashes} not {@code null}: the hash codes met
     * so far, and how often), the span once per hash the collection computes ({@code hashOps}) and, unless the
     * collection {@code treeifies} colliding scalars (a JDK string, boxed value or enum, which {@code HashMap} and
     * {@code ConcurrentHashMap} order in a bin by {@code compareTo}), once more to compute its hash code here and once
     * per earlier element with the same hash code (each an {@code equals}); for a tree ({@code hashes} {@code null}),
     * once per comparison of a binary search among {@code index} elements.
     */
    private void chargeInsertion(
            Object element,
            long span,
            int hashOps,
            Map<Integer, Integer> hashes,
            boolean treeifies,
            int index,
            String what) {
        if (hashes == null) {
            int comparisons = 1 + (32 - Integer.numberOfLeadingZeros(index));
            if (!spend(times(span, comparisons))) {
                charge(times(span, comparisons), "ordering a " + what + " spanning " + span + " nodes");
            }
            return;
        }
        if (treeifies && isScalar(element)) {
            if (!spend(times(span, hashOps))) {
                charge(times(span, hashOps), "hashing a " + what + " spanning " + span + " nodes");
            }
            return;
        }
        if (!spend(times(span, 1 + hashOps))) {
            charge(times(span, 1 + hashOps), "hashing a " + what + " spanning " + span + " nodes");
        }
        int collisions = hashes.merge(element == null ? 0 : element.hashCode(), 1, Integer::sum) - 1;
        if (collisions > 0 && !spend(times(span, collisions))) {
            charge(
                    times(span, collisions),
                    "comparing a " + what + " spanning " + span + " nodes with " + collisions
                            + " others of its hash code");
        }
    }

    /** Spends {@code units} if the budget has them; else spends nothing. */
    private boolean spend(long units) {
        if (units > target.limits().maxDecodeWork() - work) {
            return false;
        }
        work += units;
        return true;
    }

    private static boolean isScalar(Object o) {
        return o instanceof String
                || o instanceof Long
                || o instanceof Integer
                || o instanceof Short
                || o instanceof Byte
                || o instanceof Double
                || o instanceof Float
                || o instanceof Character
                || o instanceof Boolean
                || o instanceof Enum<?>;
    }

    /**
     * A decoded map key for a path or message: a scalar as it is (a string cut at {@value #PRINTED_CHARS}
     * characters), anything else by its position ({@code <key 3>}), since printing it would walk it.
     */
    private static String printed(Object key, int index) {
        return switch (key) {
            case null -> "nil";
            case String s -> s.length() > PRINTED_CHARS ? s.substring(0, PRINTED_CHARS) + "…" : s;
            case Long _, Integer _, Short _, Byte _, Double _, Float _, Boolean _ -> key.toString();
            case Character c -> "'" + c + "'";
            case Enum<?> e -> e.name();
            default -> "<key " + index + ">";
        };
    }

    /** The enum an {@code EnumSet} or {@code EnumMap} node names ({@code "n"}); resolved through the registry. */
    private Class<?> enumType(Map<?, ?> m) {
        if (!(m.get("n") instanceof String name)) {
            throw malformed("enum collection without an element type name");
        }
        Class<?> type = registry.classForName(name, path());
        if (!type.isEnum()) {
            throw malformed("'" + name + "' is not an enum");
        }
        return type;
    }

    /** A tree's comparator ({@code "cmp"}, a nested value), or {@code null} for the natural order. */
    private Comparator<Object> comparator(Map<?, ?> m) {
        if (!m.containsKey("cmp")) {
            return null;
        }
        Object value = node(m.get("cmp"), "comparator");
        if (!(value instanceof Comparator<?> c)) {
            throw malformed("comparator is "
                    + (value == null ? "nil" : "a " + value.getClass().getName()));
        }
        @SuppressWarnings("unchecked")
        Comparator<Object> comparator = (Comparator<Object>) c;
        return comparator;
    }

    /** An object array, of the element type the header names ({@code "c"}), else of {@code Object}. */
    private Object[] array(Map<?, ?> m) {
        List<?> items = listOf(m, "v");
        Class<?> component = Object.class;
        if (m.containsKey("c")) {
            if (!(m.get("c") instanceof String name)) {
                throw malformed("array element type is not a name");
            }
            component = registry.componentType(name, path());
        }
        int id = reserve();
        List<Object> elements = elements(items);
        Object[] out = (Object[]) Array.newInstance(component, elements.size());
        for (int i = 0; i < out.length; i++) {
            Object element = elements.get(i);
            if (element != null && !component.isInstance(element)) {
                throw malformed("element " + i + " of an array of " + component.getTypeName() + " is a "
                        + element.getClass().getName());
            }
            out[i] = element;
        }
        complete(id, out);
        return out;
    }

    private Object requireNonNull(Object o) {
        if (o == null) {
            throw malformed("present optional holding nil");
        }
        return o;
    }

    private int reserve() {
        ids.add(PENDING);
        if (ids.size() > idSpans.length) {
            idSpans = Arrays.copyOf(idSpans, 2 * idSpans.length);
        }
        return ids.size() - 1;
    }

    /** Records the value of {@code id}, which the node open at the current depth made, and its span. */
    private void complete(int id, Object value) {
        ids.set(id, value);
        idSpans[id] = add(1, childSpans[path.size()]);
    }

    private Object enumValue(Map<?, ?> m) {
        if (!(m.get("n") instanceof String name) || !(m.get("v") instanceof String constant)) {
            throw malformed("enum node without a name and a constant");
        }
        Class<?> type = registry.classForName(name, path());
        if (!type.isEnum()) {
            throw malformed("'" + name + "' is not an enum");
        }
        for (Object c : type.getEnumConstants()) {
            if (((Enum<?>) c).name().equals(constant)) {
                return c;
            }
        }
        throw malformed("enum " + name + " has no constant '" + constant + "'");
    }

    private Object primitiveArray(PrimitiveArrays.Kind kind, Map<?, ?> m) {
        if (m.get("b") instanceof byte[] bytes) {
            if (bytes.length % kind.elementSize() != 0) {
                throw malformed(kind.tag() + " of " + bytes.length + " bytes");
            }
            return PrimitiveArrays.fromBytes(kind, bytes);
        }
        long n = longOf(m, "n");
        long index = longOf(m, "fr");
        if (n < 0 || n > Integer.MAX_VALUE - 8 || index < 0 || index > Integer.MAX_VALUE) {
            throw malformed(kind.tag() + " of " + n + " elements in frame " + index);
        }
        Frame frame = takeFrame((int) index);
        if (frame.length() != n * kind.elementSize()) {
            throw malformed(kind.tag() + " of " + n + " elements in a frame of " + frame.length() + " bytes");
        }
        if (frame.owned() && frame.arrayType() != null && frame.arrayType() == kind.frameType()) {
            // A fresh array the transport received the bytes into, of this type and length, held by nobody else.
            Object array = ((HostBuffer) frame.buffer()).segment().heapBase().orElseThrow();
            frame.buffer().close();
            return array;
        }
        Object array = PrimitiveArrays.newArray(kind, (int) n);
        CopyEngine.copyToSegment(frame.buffer(), 0, PrimitiveArrays.segment(array));
        if (frame.owned()) {
            frame.buffer().close();
        }
        return PrimitiveArrays.finish(kind, array);
    }

    private Object object(String name, Map<?, ?> m) {
        Class<?> type = registry.typeOf(name); // the path (a string built per node) only for the refusal
        if (type == null) {
            type = registry.classForName(name, path());
        }
        if (!(m.get("f") instanceof String familyName)) {
            throw malformed("'" + name + "' without a family");
        }
        Family family = family(familyName);
        if (serialized.formatVersion() >= 2 && !serialized.families().contains(family)) {
            // The list is what a receiver checked the message against: a node outside it would slip past that check.
            throw malformed("'" + name + "' in family " + familyName + ", which the header's family list "
                    + Serialized.familyNames(serialized.families()) + " does not name");
        }
        int version = 0;
        if (m.containsKey("tv")) {
            long v = longOf(m, "tv");
            if (v < 0 || v > Integer.MAX_VALUE) {
                throw malformed("type version " + v);
            }
            version = (int) v;
        }
        int known = registry.versionOf(type);
        if (version > known) {
            throw new IncompatibleVersionException(
                    "'" + name + "' version " + version + " is newer than this " + "reader's " + known, path());
        }
        Serializer<Object> serializer = registry.serializerFor(type, family);
        if (serializer == null) {
            throw new UnknownTypeException("'" + name + "' has no " + familyName + " serializer here", path());
        }
        if (!(m.get("d") instanceof Map<?, ?> data)) {
            throw malformed("'" + name + "' without data");
        }
        Map<String, Object> fields = new LinkedHashMap<>();
        for (Map.Entry<?, ?> e : data.entrySet()) {
            fields.put((String) e.getKey(), e.getValue());
        }
        long[] range = m.containsKey("frames") ? frameRange(m.get("frames")) : null;
        int id = reserve();
        int takenBefore = takenIndices.size();
        Object value = serializer.read(new ReadContext(this, type, family, version, fields));
        if (value == null) {
            throw malformed("serializer of '" + name + "' returned null");
        }
        if (range != null) {
            // A reader may leave frames unused (a field an evolved type dropped), never use another value's.
            for (int index : takenIndices.subList(takenBefore, takenIndices.size())) {
                if (index < range[0] || index >= range[0] + range[1]) {
                    throw malformed("'" + name + "' used frame " + index + ", outside its frames [" + range[0] + ", "
                            + (range[0] + range[1]) + ")");
                }
            }
        }
        complete(id, value);
        return value;
    }

    /** {@link Family#fromWireName}, its refusal saying where. */
    private Family family(String wireName) {
        try {
            return Family.fromWireName(wireName);
        } catch (MalformedHeaderException e) {
            throw malformed(e.getMessage());
        }
    }

    /** A sub-header's {@code [first, count]} frames, checked against the frames there are. */
    private long[] frameRange(Object node) {
        if (!(node instanceof List<?> r)
                || r.size() != 2
                || !(r.get(0) instanceof Long first)
                || !(r.get(1) instanceof Long count)
                || first < 0
                || count < 1
                || first > serialized.frames().size() - count) {
            throw malformed("frame range " + node + " (expected: [first, count] within "
                    + serialized.frames().size() + " frames)");
        }
        return new long[] {first, count};
    }
}
