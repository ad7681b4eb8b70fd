package io.cuwire.transport;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.DType;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.MemoryKind;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import io.cuwire.transport.ModelShapes.ClassSpec;
import io.cuwire.transport.ModelShapes.Color;
import io.cuwire.transport.ModelShapes.Element;
import io.cuwire.transport.ModelShapes.Feature;
import io.cuwire.transport.ModelShapes.FieldSpec;
import io.cuwire.transport.ModelShapes.GeneratedModel;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.LinkedList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Values of generated models: drawn as immutable descriptions ({@link Value}) from a {@link Draw} — the property
 * library's source of randomness, which is what it shrinks — and only then made into live objects ({@link Live}),
 * whose NdArrays are closed with it. Descriptions hold no memory, so a library may draw, print and discard as many
 * as it likes; large arrays are described by their length and the seed of their contents.
 */
final class ModelValues {
    /** Nested models deeper than this are null (or left out of a collection). */
    static final int MAX_DEPTH = 3;
    /** Most models in one message, the root included: more nested ones are null (or left out). */
    static final int MAX_MODELS = 40;
    /**
     * Bytes of arrays at or above the frame threshold (primitive arrays and NdArrays) one message may hold: about
     * one {@link Size#LARGE} array and a few framed ones; past it, arrays are small.
     */
    static final long FRAMED_BUDGET = 6L << 20;

    private ModelValues() {}

    /**
     * Where choices come from. {@code between} shrinks towards {@code lo}, so the drawer puts the plain case there:
     * a reference is present unless the draw is {@code hi} (then null), a collection is empty, an array small.
     */
    interface Draw {
        int between(int lo, int hi);

        long anyLong();
    }

    /** Which drawn values a run may contain (the value-level half of the exclusions). */
    interface Rules {
        Rules ALL = new Rules() {};

        default boolean allowsArray(Feature arrayType, Size size) {
            return true;
        }
    }

    /** Sizes of primitive arrays around the frame threshold of the registry (64 KiB), and far above it. */
    enum Size {
        SMALL,
        BELOW_THRESHOLD,
        AT_THRESHOLD,
        ABOVE_THRESHOLD,
        LARGE;

        int length(int elementSize, Draw d) {
            int atThreshold = ModelShapes.FRAME_THRESHOLD / elementSize;
            return switch (this) {
                case SMALL -> d.between(0, 40);
                case BELOW_THRESHOLD -> atThreshold - 1;
                case AT_THRESHOLD -> atThreshold;
                case ABOVE_THRESHOLD -> atThreshold + 1;
                case LARGE -> (d.between(2, 4) << 20) / elementSize + d.between(0, 3);
            };
        }
    }

    /** A described value. */
    sealed interface Value permits Scalar, PrimitiveArray, Model, Shared, Elements, Entries, Opt, Nd {}

    /** {@code null}, a boxed value, a string or an enum constant. */
    record Scalar(Object value) implements Value {
        @Override
        public String toString() {
            if (value instanceof String s) {
                return s.length() > 24 ? "\"" + s.substring(0, 20) + "…\"(" + s.length() + " chars)" : "\"" + s + "\"";
            }
            if (value instanceof Character c) {
                return "'\\u" + String.format("%04x", (int) c) + "'";
            }
            return value == null ? "null" : value + (value instanceof Float ? "f" : value instanceof Long ? "L" : "");
        }
    }

    /** A primitive array of {@code length} elements filled from {@code seed}. */
    record PrimitiveArray(Class<?> type, Size size, int length, long seed) implements Value {
        @Override
        public String toString() {
            return type.getComponentType().getName() + "[" + length + "](" + size + ", seed " + seed + ")";
        }
    }

    /** An instance of generated class {@code index}, one value per field in declaration order. */
    record Model(int index, String name, List<Value> fields) implements Value {
        @Override
        public String toString() {
            return name + fields;
        }
    }

    /** The very object of this model's field {@code field} (an earlier one). */
    record Shared(int field) implements Value {
        @Override
        public String toString() {
            return "same as field " + field;
        }
    }

    /** A list, deque or set of the kind {@code kind}. */
    record Elements(Feature kind, List<Value> elements) implements Value {
        @Override
        public String toString() {
            return kind.name() + elements;
        }
    }

    /** A map of the kind {@code kind}; keys are scalars. */
    record Entries(Feature kind, List<Value> keys, List<Value> values) implements Value {
        @Override
        public String toString() {
            StringBuilder b = new StringBuilder(kind.name()).append('{');
            for (int i = 0; i < keys.size(); i++) {
                b.append(i == 0 ? "" : ", ").append(keys.get(i)).append('=').append(values.get(i));
            }
            return b.append('}').toString();
        }
    }

    /** An {@link Optional}: empty when {@code value} is null. */
    record Opt(Value value) implements Value {
        @Override
        public String toString() {
            return value == null ? "Optional.empty" : "Optional[" + value + "]";
        }
    }

    /** An NdArray in {@code memory}, its bytes made from {@code seed}. */
    record Nd(DType dtype, Order order, long[] shape, MemoryKind memory, long seed) implements Value {
        @Override
        public String toString() {
            return "NdArray(" + dtype.wireName() + " " + order + " " + Arrays.toString(shape) + " " + memory + ")";
        }
    }

    /** Draws the value of one generated model (a root) and what it nests. Not thread-safe; one per value. */
    static final class Drawer {
        private final List<ClassSpec> specs;
        private final Draw d;
        private final Rules rules;
        private long framedBudget = FRAMED_BUDGET;
        private int models;

        Drawer(List<ClassSpec> specs, Draw d, Rules rules) {
            this.specs = specs;
            this.d = d;
            this.rules = rules;
        }

        Model model(int index, int depth) {
            models++;
            ClassSpec spec = specs.get(index);
            List<Value> fields = new ArrayList<>();
            for (FieldSpec f : spec.fields()) {
                if (f.sharesWith() >= 0 && !chance(4)) {
                    fields.add(new Shared(f.sharesWith()));
                } else {
                    fields.add(field(f, depth));
                }
            }
            return new Model(index, spec.simpleName(), List.copyOf(fields));
        }

        /** True once in {@code oneIn} draws: at the far end, never the shrink target. */
        private boolean chance(int oneIn) {
            return d.between(0, oneIn - 1) == oneIn - 1;
        }

        private boolean mayNest(int depth) {
            return depth < MAX_DEPTH && models < MAX_MODELS;
        }

        private Value field(FieldSpec f, int depth) {
            Feature feature = f.feature();
            if (feature.isScalar()) {
                boolean primitive = feature.declared.isPrimitive();
                return !primitive && chance(8) ? new Scalar(null) : new Scalar(scalar(feature));
            }
            if (chance(8)) {
                return new Scalar(null);
            }
            if (feature.isPrimitiveArray()) {
                return array(feature);
            }
            return switch (feature) {
                case NDARRAY -> ndArray();
                case NESTED -> mayNest(depth) ? model(f.nested(), depth + 1) : new Scalar(null);
                default -> collection(f, depth);
            };
        }

        private Object scalar(Feature f) {
            return switch (f) {
                case BOOLEAN, BOXED_BOOLEAN -> d.between(0, 1) == 1;
                case BYTE, BOXED_BYTE -> (byte) bits(Byte.MIN_VALUE, Byte.MAX_VALUE);
                case SHORT, BOXED_SHORT -> (short) bits(Short.MIN_VALUE, Short.MAX_VALUE);
                case CHAR, BOXED_CHARACTER -> (char) bits(Character.MAX_VALUE, 0xD800, 0xDFFF, 0xFFFE);
                case INT, BOXED_INTEGER -> (int) bits(Integer.MIN_VALUE, Integer.MAX_VALUE);
                case LONG, BOXED_LONG -> bits(Long.MIN_VALUE, Long.MAX_VALUE);
                case FLOAT, BOXED_FLOAT -> floatValue();
                case DOUBLE, BOXED_DOUBLE -> doubleValue();
                case STRING -> string();
                case ENUM -> color();
                default -> throw new IllegalArgumentException(f + " is not a scalar");
            };
        }

        /** 0, 1, -1, one of {@code edges}, or any 64 bits (narrowed by the caller). */
        private long bits(long... edges) {
            int k = d.between(0, edges.length + 3);
            return switch (k) {
                case 0 -> 0;
                case 1 -> 1;
                case 2 -> -1;
                default -> k - 3 < edges.length ? edges[k - 3] : d.anyLong();
            };
        }

        private float floatValue() {
            float[] edges = {
                0f,
                -0f,
                1.5f,
                Float.NaN,
                Float.POSITIVE_INFINITY,
                Float.NEGATIVE_INFINITY,
                Float.MIN_VALUE,
                Float.MAX_VALUE,
                Float.MIN_NORMAL
            };
            int k = d.between(0, edges.length);
            return k < edges.length ? edges[k] : Float.intBitsToFloat((int) d.anyLong());
        }

        private double doubleValue() {
            double[] edges = {
                0d,
                -0d,
                1.5d,
                Double.NaN,
                Double.POSITIVE_INFINITY,
                Double.NEGATIVE_INFINITY,
                Double.MIN_VALUE,
                Double.MAX_VALUE,
                Double.MIN_NORMAL
            };
            int k = d.between(0, edges.length);
            return k < edges.length ? edges[k] : Double.longBitsToDouble(d.anyLong());
        }

        private Color color() {
            return Color.values()[d.between(0, Color.values().length - 1)];
        }

        /** Empty, short ASCII, short with any code point (supplementary ones too), or a few thousand chars. */
        private String string() {
            switch (d.between(0, 3)) {
                case 0:
                    return "";
                case 1: {
                    StringBuilder b = new StringBuilder();
                    for (int n = d.between(1, 12); n > 0; n--) {
                        b.append((char) d.between(0x20, 0x7e));
                    }
                    return b.toString();
                }
                case 2: {
                    StringBuilder b = new StringBuilder();
                    for (int n = d.between(1, 8); n > 0; n--) {
                        int cp = d.between(0, 0x10FFFF - 0x800);
                        b.appendCodePoint(cp >= 0xD800 ? cp + 0x800 : cp);
                    }
                    return b.toString();
                }
                default: {
                    SplittableRandom r = new SplittableRandom(d.anyLong());
                    StringBuilder b = new StringBuilder();
                    for (int n = d.between(100, 5000); n > 0; n--) {
                        b.appendCodePoint(r.nextInt(4) == 0 ? 0x4E00 + r.nextInt(0x5000) : 0x20 + r.nextInt(0x5F));
                    }
                    return b.toString();
                }
            }
        }

        private Value array(Feature type) {
            int elementSize = elementSize(type.declared.getComponentType());
            List<Size> sizes = new ArrayList<>();
            for (Size s : Size.values()) {
                if (rules.allowsArray(type, s)) {
                    sizes.add(s);
                }
            }
            if (sizes.isEmpty()) {
                return new Scalar(null);
            }
            Size size = sizes.get(d.between(0, sizes.size() - 1));
            int length = size.length(elementSize, d);
            long bytes = (long) length * elementSize;
            if (size != Size.SMALL && bytes > framedBudget) {
                size = Size.SMALL;
                length = Math.min(length, 40);
            } else if (size != Size.SMALL) {
                framedBudget -= bytes;
            }
            return new PrimitiveArray(type.declared, size, length, d.anyLong());
        }

        private Value ndArray() {
            DType dtype = DType.values()[d.between(0, DType.values().length - 1)];
            Order order = d.between(0, 1) == 0 ? Order.C : Order.F;
            long[] shape = new long[d.between(0, 3)];
            for (int i = 0; i < shape.length; i++) {
                shape[i] = i == 0 && chance(6) ? d.between(64, 2048) : d.between(0, 16);
            }
            long bytes = product(shape) * dtype.byteSize();
            if (bytes >= ModelShapes.FRAME_THRESHOLD && bytes > framedBudget) {
                shape[0] = Math.min(shape[0], 1);
            } else if (bytes >= ModelShapes.FRAME_THRESHOLD) {
                framedBudget -= bytes;
            }
            MemoryKind[] kinds = {MemoryKind.HOST, MemoryKind.DEVICE, MemoryKind.PINNED};
            MemoryKind memory = kinds[d.between(0, kinds.length - 1)];
            return new Nd(dtype, order, shape, memory, d.anyLong());
        }

        private Value collection(FieldSpec f, int depth) {
            Feature kind = f.feature();
            if (kind == Feature.OPTIONAL) {
                Value v = chance(3) ? null : element(f.element(), f, depth, false);
                return new Opt(v instanceof Scalar s && s.value() == null ? null : v);
            }
            int n = d.between(0, 5);
            if (kind == Feature.ENUM_SET) {
                List<Value> e = new ArrayList<>();
                int mask = d.between(0, (1 << Color.values().length) - 1);
                for (Color c : Color.values()) {
                    if ((mask & 1 << c.ordinal()) != 0) {
                        e.add(new Scalar(c));
                    }
                }
                return new Elements(kind, List.copyOf(e));
            }
            boolean nulls = kind == Feature.ARRAY_LIST
                    || kind == Feature.LINKED_LIST
                    || kind == Feature.HASH_MAP
                    || kind == Feature.LINKED_HASH_MAP
                    || kind == Feature.TREE_MAP
                    || kind == Feature.ENUM_MAP;
            if (!kind.isMap()) {
                List<Value> e = new ArrayList<>();
                Set<Object> seen = new HashSet<>();
                for (int i = 0; i < n; i++) {
                    Value v = element(f.element(), f, depth, nulls);
                    boolean isNull = v instanceof Scalar s && s.value() == null;
                    if (isNull && !nulls || !ModelShapes.isList(kind) && !seen.add(((Scalar) v).value())) {
                        continue;
                    }
                    e.add(v);
                }
                return new Elements(kind, frozen(e));
            }
            List<Value> keys = new ArrayList<>();
            List<Value> values = new ArrayList<>();
            Set<Object> seen = new HashSet<>();
            for (int i = 0; i < n; i++) {
                Value key = element(f.key(), f, depth, false);
                Value value = element(f.element(), f, depth, nulls);
                boolean nullValue = value instanceof Scalar s && s.value() == null;
                if (nullValue && !nulls || !seen.add(((Scalar) key).value())) {
                    continue;
                }
                keys.add(key);
                values.add(value);
            }
            return new Entries(kind, frozen(keys), frozen(values));
        }

        private Value element(Element e, FieldSpec f, int depth, boolean nullable) {
            if (nullable && chance(8)) {
                return new Scalar(null);
            }
            return switch (e) {
                case STRING -> new Scalar(string());
                case LONG -> new Scalar(bits(Long.MIN_VALUE, Long.MAX_VALUE));
                case INT -> new Scalar((int) bits(Integer.MIN_VALUE, Integer.MAX_VALUE));
                case DOUBLE -> new Scalar(doubleValue());
                case ENUM -> new Scalar(color());
                case NESTED -> mayNest(depth) ? model(f.nested(), depth + 1) : new Scalar(null);
                case NDARRAY -> ndArray();
                case DOUBLE_ARRAY -> array(Feature.DOUBLE_ARRAY);
            };
        }
    }

    /** An unmodifiable copy that may hold nulls, unlike {@link List#copyOf}. */
    private static List<Value> frozen(List<Value> values) {
        return java.util.Collections.unmodifiableList(new ArrayList<>(values));
    }

    private static long product(long[] shape) {
        long n = 1;
        for (long x : shape) {
            n *= x;
        }
        return n;
    }

    static int elementSize(Class<?> primitive) {
        if (primitive == boolean.class || primitive == byte.class) {
            return 1;
        }
        if (primitive == short.class || primitive == char.class) {
            return 2;
        }
        return primitive == int.class || primitive == float.class ? 4 : 8;
    }

    /**
     * The live objects of described values; owns the NdArrays it made (closed by {@link #close()}). Not
     * thread-safe.
     */
    static final class Live implements AutoCloseable {
        private final ModelShapes.Generated classes;
        private final BufferAllocator<HostBuffer> host;
        private final BufferAllocator<HostBuffer> pinned;
        private final BufferAllocator<DeviceBuffer> device;
        private final List<NdArray> made = new ArrayList<>();

        Live(
                ModelShapes.Generated classes,
                BufferAllocator<HostBuffer> host,
                BufferAllocator<HostBuffer> pinned,
                BufferAllocator<DeviceBuffer> device) {
            this.classes = classes;
            this.host = host;
            this.pinned = pinned;
            this.device = device;
        }

        Object of(Value v) {
            return switch (v) {
                case Scalar s -> s.value();
                case PrimitiveArray a -> primitiveArray(a);
                case Model m -> model(m);
                case Shared s -> throw new IllegalArgumentException(s + " outside a model");
                case Elements e -> elements(e);
                case Entries e -> entries(e);
                case Opt o -> Optional.ofNullable(o.value() == null ? null : of(o.value()));
                case Nd n -> ndArray(n);
            };
        }

        private Object model(Model m) {
            Object[] values = new Object[m.fields().size()];
            for (int i = 0; i < values.length; i++) {
                values[i] = m.fields().get(i) instanceof Shared s
                        ? values[s.field()]
                        : of(m.fields().get(i));
            }
            return classes.construct(m.index(), values);
        }

        private Object elements(Elements e) {
            List<Object> items = new ArrayList<>();
            for (Value v : e.elements()) {
                items.add(of(v));
            }
            return switch (e.kind()) {
                case ARRAY_LIST -> new ArrayList<>(items);
                case LINKED_LIST -> new LinkedList<>(items);
                case ARRAY_DEQUE -> new ArrayDeque<>(items);
                case HASH_SET -> new HashSet<>(items);
                case LINKED_HASH_SET -> new LinkedHashSet<>(items);
                case TREE_SET -> new TreeSet<>(items);
                case ENUM_SET -> {
                    EnumSet<Color> set = EnumSet.noneOf(Color.class);
                    items.forEach(c -> set.add((Color) c));
                    yield set;
                }
                case LIST_OF -> List.of(items.toArray());
                case SET_OF -> Set.of(items.toArray());
                default -> throw new IllegalArgumentException(e.kind() + " is not a list or set");
            };
        }

        private Object entries(Entries e) {
            Map<Object, Object> items = new LinkedHashMap<>();
            for (int i = 0; i < e.keys().size(); i++) {
                items.put(of(e.keys().get(i)), of(e.values().get(i)));
            }
            return switch (e.kind()) {
                case HASH_MAP -> new HashMap<>(items);
                case LINKED_HASH_MAP -> new LinkedHashMap<>(items);
                case TREE_MAP -> new TreeMap<>(items);
                case CONCURRENT_HASH_MAP -> new ConcurrentHashMap<>(items);
                case ENUM_MAP -> {
                    EnumMap<Color, Object> map = new EnumMap<>(Color.class);
                    items.forEach((k, v) -> map.put((Color) k, v));
                    yield map;
                }
                case MAP_OF -> {
                    @SuppressWarnings("unchecked")
                    Map.Entry<Object, Object>[] entries = items.entrySet().stream()
                            .map(x -> Map.entry(x.getKey(), x.getValue()))
                            .toArray(Map.Entry[]::new);
                    yield Map.ofEntries(entries);
                }
                default -> throw new IllegalArgumentException(e.kind() + " is not a map");
            };
        }

        private NdArray ndArray(Nd n) {
            BufferAllocator<?> memory = switch (n.memory()) {
                case HOST -> host;
                case PINNED -> pinned;
                case DEVICE -> device;
            };
            NdArray a = NdArray.empty(memory, n.dtype(), n.order(), n.shape());
            made.add(a);
            byte[] bytes = new byte[Math.toIntExact(a.byteSize())];
            SplittableRandom r = new SplittableRandom(n.seed());
            r.nextBytes(bytes);
            if (n.dtype() == DType.BOOL) {
                for (int i = 0; i < bytes.length; i++) {
                    bytes[i] &= 1;
                }
            }
            CopyEngine.copyFromSegment(MemorySegment.ofArray(bytes), a.buffer(), 0);
            return a;
        }

        private static Object primitiveArray(PrimitiveArray a) {
            SplittableRandom r = new SplittableRandom(a.seed());
            Class<?> c = a.type().getComponentType();
            int n = a.length();
            if (c == boolean.class) {
                boolean[] out = new boolean[n];
                for (int i = 0; i < n; i++) {
                    out[i] = r.nextBoolean();
                }
                return out;
            }
            Object out = java.lang.reflect.Array.newInstance(c, n);
            byte[] bytes = new byte[n * elementSize(c)];
            r.nextBytes(bytes);
            MemorySegment.copy(bytes, 0, segmentOf(out), ValueLayout.JAVA_BYTE, 0, bytes.length);
            return out;
        }

        private static MemorySegment segmentOf(Object array) {
            return switch (array) {
                case byte[] a -> MemorySegment.ofArray(a);
                case short[] a -> MemorySegment.ofArray(a);
                case char[] a -> MemorySegment.ofArray(a);
                case int[] a -> MemorySegment.ofArray(a);
                case long[] a -> MemorySegment.ofArray(a);
                case float[] a -> MemorySegment.ofArray(a);
                case double[] a -> MemorySegment.ofArray(a);
                default -> throw new IllegalArgumentException(array.getClass().getName());
            };
        }

        /** Closes every NdArray this made. */
        @Override
        public void close() {
            made.forEach(NdArray::close);
            made.clear();
        }
    }

    /** Every NdArray reachable from {@code root} through generated models, collections and optionals, once. */
    static List<NdArray> ndArraysIn(Object root) {
        List<NdArray> found = new ArrayList<>();
        collect(root, new IdentityHashMap<>(), found);
        return found;
    }

    private static void collect(Object o, IdentityHashMap<Object, Boolean> seen, List<NdArray> found) {
        if (o == null || seen.put(o, Boolean.TRUE) != null) {
            return;
        }
        switch (o) {
            case NdArray a -> found.add(a);
            case Map<?, ?> m ->
                m.forEach((k, v) -> {
                    collect(k, seen, found);
                    collect(v, seen, found);
                });
            case Collection<?> c -> c.forEach(x -> collect(x, seen, found));
            case Optional<?> opt -> opt.ifPresent(x -> collect(x, seen, found));
            case GeneratedModel m -> {
                for (Field f : m.getClass().getDeclaredFields()) {
                    if (!Modifier.isStatic(f.getModifiers()) && !f.getType().isPrimitive()) {
                        f.setAccessible(true);
                        try {
                            collect(f.get(m), seen, found);
                        } catch (IllegalAccessException e) {
                            throw new IllegalStateException(e);
                        }
                    }
                }
            }
            default -> {}
        }
    }
}
