package io.cuwire.serialize;

import io.cuwire.memory.Buffer;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.NdArray;
import io.cuwire.serialize.internal.JdkSerialization;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.Deque;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/** Writes one value graph into header nodes and frames; one encoder per {@link TypeRegistry#serialize} call. */
final class Encoder {
    private final TypeRegistry registry;
    private final List<Family> chain;
    private final List<Frame> frames = new ArrayList<>();
    private final IdentityHashMap<Object, Long> ids = new IdentityHashMap<>();
    private final IdentityHashMap<Object, Boolean> onPath = new IdentityHashMap<>();
    private final IdentityHashMap<Object, Long> primitiveIds = new IdentityHashMap<>();
    private final Deque<String> path = new ArrayDeque<>();
    /** The families of the registered-type nodes written: the header's family list. */
    private final Set<Family> families = EnumSet.noneOf(Family.class);

    private long nextId;
    /** The family arrays of a list go in as runs ({@link NdArrayRuns}), or {@code null} for none; once known. */
    private Family runFamily;

    private boolean runFamilyKnown;

    Encoder(TypeRegistry registry, List<Family> chain) {
        this.registry = registry;
        this.chain = chain;
    }

    Serialized encode(Object value) {
        try {
            Object root = node(value, value == null ? "null" : value.getClass().getSimpleName());
            return new Serialized(root, frames, Serialized.FORMAT_VERSION, families);
        } catch (RuntimeException | Error e) {
            for (Frame f : frames) {
                if (f.owned() && f.buffer().isOpen()) {
                    f.buffer().close();
                }
            }
            throw e;
        }
    }

    BufferAllocator<HostBuffer> hostAllocator() {
        return registry.hostAllocator();
    }

    long addFrame(Buffer buffer, boolean owned) {
        return addFrame(buffer, owned, null);
    }

    private long addFrame(Buffer buffer, boolean owned, PrimitiveArrayType arrayType) {
        buffer.checkOpen();
        frames.add(new Frame(buffer, owned, arrayType));
        return frames.size() - 1;
    }

    int maxDepth() {
        return registry.limits().maxDepth();
    }

    String path() {
        return Paths.of(path);
    }

    Object node(Object value, String name) {
        path.push(name);
        try {
            if (path.size() > registry.limits().maxDepth()) {
                throw new UnserializableException(
                        "value nests deeper than " + registry.limits().maxDepth(), path());
            }
            return nodeOf(value);
        } finally {
            path.pop();
        }
    }

    private static Map<String, Object> tagged(String tag, Object v) {
        Map<String, Object> m = new LinkedHashMap<>(4);
        m.put("t", tag);
        m.put("v", v);
        return m;
    }

    private Object nodeOf(Object value) {
        switch (value) {
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
            case Integer i -> {
                return tagged("i32", (long) i);
            }
            case Short s -> {
                return tagged("i16", (long) s);
            }
            case Byte b -> {
                return tagged("i8", (long) b);
            }
            case Character c -> {
                return tagged("char", (long) c);
            }
            case Float f -> {
                return tagged("f32", (double) f);
            }
            case Enum<?> e -> {
                String enumName = registry.nameOf(e.getDeclaringClass());
                if (enumName == null) {
                    throw new UnserializableException(
                            "enum " + e.getDeclaringClass().getName() + " is not registered", path());
                }
                Map<String, Object> m = tagged("enum", e.name());
                m.put("n", enumName);
                return m;
            }
            case Optional<?> o -> {
                Map<String, Object> m = new LinkedHashMap<>(4);
                m.put("t", "opt");
                if (o.isPresent()) {
                    m.put("v", node(o.get(), "value"));
                }
                return m;
            }
            default -> {
                if (value.getClass().isArray()
                        && value.getClass().getComponentType().isPrimitive()) {
                    // Numbered apart from the other shared values: headers written before primitive arrays were
                    // shared keep their reference numbers.
                    Long seen = primitiveIds.get(value);
                    if (seen != null) {
                        Map<String, Object> ref = new LinkedHashMap<>(4);
                        ref.put("t", "pref");
                        ref.put("id", seen);
                        return ref;
                    }
                    primitiveIds.put(value, (long) primitiveIds.size());
                    return primitiveArray(value);
                }
                return tracked(value);
            }
        }
    }

    private Object primitiveArray(Object array) {
        PrimitiveArrays.Kind kind = PrimitiveArrays.kindOf(array.getClass());
        MemorySegment segment = PrimitiveArrays.segment(array);
        Map<String, Object> m = new LinkedHashMap<>(4);
        m.put("t", kind.tag());
        if (segment.byteSize() >= registry.frameThreshold()) {
            m.put("n", (long) PrimitiveArrays.length(array));
            // The array's own memory (a packed copy for boolean[], whose kind has no frame type): the descriptor names
            // the type, so that a byte-stream receiver can take the bytes into a fresh array the decoder keeps.
            m.put("fr", addFrame(HostBuffer.wrap(segment), false, kind.frameType()));
        } else {
            m.put("b", segment.toArray(java.lang.foreign.ValueLayout.JAVA_BYTE));
        }
        return m;
    }

    private Object tracked(Object value) {
        Long seen = ids.get(value);
        if (seen != null) {
            if (onPath.containsKey(value)) {
                throw new UnserializableException(
                        "cycle: " + value.getClass().getName()
                                + " contains itself; cuwire preserves shared references but refuses cycles",
                        path());
            }
            if (value instanceof Object[] array
                    && array.getClass().getComponentType() != Object.class
                    && registry.componentName(array.getClass().getComponentType()) == null) {
                throw new UnserializableException(
                        "a second reference to one " + array.getClass().getTypeName()
                                + ": its element type has no registered name, so the receiver would rebuild it as an "
                                + "Object[] and could not share it; register "
                                + array.getClass().getComponentType().getName()
                                + " with TypeRegistry.register",
                        path());
            }
            Map<String, Object> ref = new LinkedHashMap<>(4);
            ref.put("t", "ref");
            ref.put("id", seen);
            return ref;
        }
        ids.put(value, nextId++);
        onPath.put(value, Boolean.TRUE);
        try {
            // The JDK's collection classes first, matched exactly: a registered user type that implements List or
            // Map is not one of them and goes through its serializer.
            CollectionKind kind = CollectionKind.of(value.getClass());
            if (kind != null) {
                return collection(kind, value);
            }
            return switch (value) {
                case Object[] array -> {
                    Map<String, Object> m = tagged("arr", elements(array, true));
                    String component = registry.componentName(array.getClass().getComponentType());
                    if (component != null) {
                        m.put("c", component);
                    }
                    yield m;
                }
                case Collection<?> c when registry.nameOf(c.getClass()) == null -> throw unrebuildable(c, "collection");
                case Map<?, ?> m when registry.nameOf(m.getClass()) == null -> throw unrebuildable(m, "map");
                default -> object(value);
            };
        } finally {
            onPath.remove(value);
        }
    }

    private UnserializableException unrebuildable(Object value, String what) {
        return new UnserializableException(
                value.getClass().getName() + " is a " + what + " the receiver could not "
                        + "rebuild: it is not a registered type, nor one of the kinds cuwire rebuilds ("
                        + CollectionKind.supported() + "); copy it into one of those, or register its class with a "
                        + "serializer",
                path());
    }

    /** A {@code list}, {@code set} or {@code map} node of {@code kind}, as {@link CollectionKind} describes. */
    private Map<String, Object> collection(CollectionKind kind, Object value) {
        Map<String, Object> m = new LinkedHashMap<>(8);
        m.put("t", kind.node().tag());
        if (kind.wireName() != null) {
            m.put("k", kind.wireName());
        }
        switch (kind) {
            case TREE_SET -> comparator(m, ((TreeSet<?>) value).comparator(), value);
            case TREE_MAP -> comparator(m, ((TreeMap<?, ?>) value).comparator(), value);
            case ENUM_SET -> m.put("n", enumName(elementType((EnumSet<?>) value), "element", value));
            case ENUM_MAP -> m.put("n", enumName(keyType((EnumMap<?, ?>) value), "key", value));
            default -> {}
        }
        // After the comparator: the decoder numbers shared values in this order too.
        m.put(
                "v",
                value instanceof Map<?, ?> map
                        ? entries(map)
                        : elements(((Collection<?>) value).toArray(), kind.node() == CollectionKind.Node.LIST));
        return m;
    }

    private void comparator(Map<String, Object> m, Comparator<?> comparator, Object tree) {
        if (comparator == null) {
            return;
        }
        if (registry.nameOf(comparator.getClass()) == null) {
            throw new UnserializableException(
                    tree.getClass().getName() + " ordered by "
                            + comparator.getClass().getName()
                            + ", which is not a registered type: the receiver could not rebuild its order; "
                            + "register the comparator's class (TypeRegistry.register, with a serializer or a generic "
                            + "registration) or use the natural order",
                    path());
        }
        m.put("cmp", node(comparator, "comparator"));
    }

    private String enumName(Class<?> type, String role, Object value) {
        String name = registry.nameOf(type);
        if (name == null) {
            throw new UnserializableException(
                    "enum " + type.getName() + ", the " + role + " type of a "
                            + value.getClass().getName() + ", is not registered",
                    path());
        }
        return name;
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private Class<?> elementType(EnumSet<?> set) {
        // No accessor for it: an element of the set, or else of its complement, names it.
        EnumSet<?> any = set.isEmpty() ? EnumSet.complementOf((EnumSet) set) : set;
        if (any.isEmpty()) {
            throw new UnserializableException(
                    "an EnumSet of an enum without constants: its element type cannot be " + "read", path());
        }
        return ((Enum<?>) any.iterator().next()).getDeclaringClass();
    }

    private Class<?> keyType(EnumMap<?, ?> map) {
        if (!map.isEmpty()) {
            return map.keySet().iterator().next().getDeclaringClass();
        }
        try {
            return JdkSerialization.keyType(map);
        } catch (IllegalStateException e) {
            throw new UnserializableException(
                    "the key type of an empty EnumMap cannot be read: " + e.getMessage(), path(), e);
        }
    }

    private List<Object> entries(Map<?, ?> map) {
        List<Object> kv = new ArrayList<>(map.size() * 2);
        int i = 0;
        for (Map.Entry<?, ?> e : map.entrySet()) {
            kv.add(node(e.getKey(), "[key " + i + "]"));
            kv.add(node(e.getValue(), "[" + e.getKey() + "]"));
            i++;
        }
        return kv;
    }

    /**
     * The nodes of {@code items}, in order; with {@code runs} (a list's or an object array's elements), runs of at
     * least {@value NdArrayRuns#MIN_RUN} arrays alike as one node each ({@link NdArrayRuns}).
     */
    private List<Object> elements(Object[] items, boolean runs) {
        List<Object> out = new ArrayList<>();
        for (int i = 0; i < items.length; ) {
            int run = runs ? arrayRun(items, i) : 0;
            if (run > 0) {
                path.push("[" + i + "]");
                try {
                    WriteContext ctx = new WriteContext(this, runFamily);
                    out.add(NdArrayRuns.write(ctx, items, i, run, frames.size()));
                    families.add(runFamily);
                } finally {
                    path.pop();
                }
                i += run;
            } else {
                out.add(node(items[i], "[" + i + "]"));
                i++;
            }
        }
        return out;
    }

    /**
     * How many of {@code items} from {@code from} on go as one run of arrays: 0 unless at least
     * {@value NdArrayRuns#MIN_RUN} consecutive ones are {@linkplain NdArrayRuns#alike alike} arrays met nowhere
     * before in the value (nor twice in the run) and the send's family for arrays has the built-in serializer. The
     * run's arrays are numbered for {@code ref} here, one id each, as their nodes would be.
     */
    private int arrayRun(Object[] items, int from) {
        if (!(items[from] instanceof NdArray head) || ids.containsKey(head) || runFamily() == null) {
            return 0;
        }
        int n = 0;
        while (from + n < items.length
                && items[from + n] instanceof NdArray a
                && NdArrayRuns.alike(a, head)
                && ids.putIfAbsent(a, nextId + n) == null) {
            n++;
        }
        if (n < NdArrayRuns.MIN_RUN) {
            for (int k = 0; k < n; k++) {
                ids.remove(items[from + k]);
            }
            return 0;
        }
        nextId += n;
        return n;
    }

    /**
     * The first family of the chain with a serializer for {@link NdArray} if that is the built-in one at type version
     * 0 (a run is that serializer's data, batched), else {@code null}: no runs.
     */
    private Family runFamily() {
        if (!runFamilyKnown) {
            runFamilyKnown = true;
            for (Family family : chain) {
                Serializer<Object> serializer = registry.serializerFor(NdArray.class, family);
                if (serializer != null) {
                    runFamily = BuiltinSerializers.isArraySerializer(serializer)
                                    && registry.versionOf(NdArray.class) == 0
                                    && NdArrayRuns.REGISTERED_NAME.equals(registry.nameOf(NdArray.class))
                            ? family
                            : null;
                    break;
                }
            }
        }
        return runFamily;
    }

    private Object object(Object value) {
        Class<?> type = value.getClass();
        for (Family family : chain) {
            Serializer<Object> serializer = registry.serializerFor(type, family);
            if (serializer == null) {
                continue;
            }
            String name = registry.nameOf(type);
            if (name == null) {
                throw new UnserializableException(
                        type.getName() + " has a " + family.wireName()
                                + " serializer but no registered name; register it with TypeRegistry.register",
                        path());
            }
            WriteContext ctx = new WriteContext(this, family);
            int first = frames.size();
            serializer.write(ctx, value);
            families.add(family);
            Map<String, Object> m = new LinkedHashMap<>(8);
            m.put("t", name);
            m.put("f", family.wireName());
            int version = registry.versionOf(type);
            if (version != 0) {
                m.put("tv", (long) version);
            }
            if (frames.size() > first) {
                // The value's frames, its nested values' included, are contiguous: depth-first, in write order.
                m.put("frames", List.of((long) first, (long) (frames.size() - first)));
            }
            m.put("d", ctx.data());
            return m;
        }
        throw new UnserializableException("no family of " + chainNames() + " can serialize " + type.getName(), path());
    }

    private String chainNames() {
        List<String> names = new ArrayList<>();
        for (Family f : chain) {
            names.add(f.wireName());
        }
        return names.toString();
    }
}
