package io.cuwire.serialize;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.HostBuffer;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The closed world of types that travel: each has a stable registered name (the only thing the wire carries — never a
 * class name to load) and serializers per {@link Family}. {@link #registerGeneric} registers the field-walking
 * serializer once for a base type and covers every subclass; each concrete subclass still needs a name
 * ({@link #register(Class)}), because a receiver resolves names only through this registry.
 *
 * <p>Registration is meant for start-up; serializing and deserializing are thread-safe and may run concurrently
 * with each other.
 */
public final class TypeRegistry {
    private static final Set<String> RESERVED = Set.of(
            "i8",
            "i16",
            "i32",
            "char",
            "f32",
            "enum",
            "opt",
            "ref",
            "list",
            "set",
            "map",
            "arr",
            "i8[]",
            "i16[]",
            "u16[]",
            "i32[]",
            "i64[]",
            "f32[]",
            "f64[]",
            "bool[]",
            "str",
            "bool",
            "i64",
            "f64",
            "pref",
            "obj",
            NdArrayRuns.TAG);

    /** The element types an array may name without registering them: strings and boxed values. */
    private static final Map<Class<?>, String> BUILTIN_COMPONENTS = Map.of(
            String.class,
            "str",
            Boolean.class,
            "bool",
            Long.class,
            "i64",
            Double.class,
            "f64",
            Integer.class,
            "i32",
            Short.class,
            "i16",
            Byte.class,
            "i8",
            Character.class,
            "char",
            Float.class,
            "f32");

    private static final Map<String, Class<?>> BUILTIN_COMPONENT_TYPES = inverse(BUILTIN_COMPONENTS);
    /** Most dimensions of an array element type on the wire ({@code "[[name"}: an array of arrays of arrays). */
    private static final int MAX_COMPONENT_DIMENSIONS = 8;

    private record Generic(Class<?> base, Set<Family> families) {}

    private final Map<String, Class<?>> classes = new ConcurrentHashMap<>();
    private final Map<Class<?>, String> names = new ConcurrentHashMap<>();
    private final Map<Class<?>, Integer> versions = new ConcurrentHashMap<>();
    private final Map<Class<?>, Map<Family, Serializer<?>>> exact = new ConcurrentHashMap<>();
    private final List<Generic> generics = new CopyOnWriteArrayList<>();
    private final Map<Class<?>, Map<Family, Optional<Serializer<Object>>>> resolved = new ConcurrentHashMap<>();
    private final GenericSerializer generic = new GenericSerializer();
    private final BufferAllocator<HostBuffer> hostAllocator;
    private final Limits limits;
    private final long frameThreshold;

    /** A registry with default limits, a 64 KiB primitive-array frame threshold and its own host allocator. */
    public TypeRegistry() {
        this(Limits.DEFAULT, 64 * 1024, BufferAllocator.host("cuwire-serialize", BufferAllocator.UNLIMITED));
    }

    /**
     * A registry.
     *
     * @param limits bounds for encoding and decoding
     * @param frameThreshold primitive arrays of at least this many bytes travel as zero-copy host frames (a
     *     {@code boolean[]} as a packed byte copy: the JVM offers no byte view of one), smaller ones inline in the
     *     header
     * @param hostAllocator where {@code host}-family copies of device arrays are made
     */
    public TypeRegistry(Limits limits, long frameThreshold, BufferAllocator<HostBuffer> hostAllocator) {
        this.limits = Objects.requireNonNull(limits, "limits");
        this.frameThreshold = frameThreshold;
        this.hostAllocator = Objects.requireNonNull(hostAllocator, "hostAllocator");
        BuiltinSerializers.registerAll(this);
    }

    /** Registers {@code type} under its {@link WireType} name and version, or its class name. */
    public TypeRegistry register(Class<?> type) {
        WireType wt = type.getAnnotation(WireType.class);
        return wt != null ? register(type, wt.value(), wt.version()) : register(type, type.getName(), 0);
    }

    /** Registers {@code type} under {@code name} with version 0. */
    public TypeRegistry register(Class<?> type, String name) {
        return register(type, name, 0);
    }

    /** Registers {@code type} under {@code name} at {@code version}. */
    public synchronized TypeRegistry register(Class<?> type, String name, int version) {
        Objects.requireNonNull(type, "type");
        if (name == null || name.isEmpty() || RESERVED.contains(name) || name.startsWith("[")) {
            throw new IllegalArgumentException("'" + name + "' cannot be a registered name");
        }
        if (version < 0) {
            throw new IllegalArgumentException("version: " + version + " (expected: >= 0)");
        }
        Class<?> other = classes.get(name);
        if (other != null && other != type) {
            throw new IllegalArgumentException("'" + name + "' is already the name of " + other.getName());
        }
        String old = names.get(type);
        if (old != null && !old.equals(name)) {
            throw new IllegalArgumentException(type.getName() + " is already registered as '" + old + "'");
        }
        classes.put(name, type);
        names.put(type, name);
        versions.put(type, version);
        return this;
    }

    /** Registers {@code serializer} for exactly {@code type} in {@code family}; names the type if it has no name. */
    public synchronized <T> TypeRegistry register(Class<T> type, Family family, Serializer<? super T> serializer) {
        if (!names.containsKey(type)) {
            register(type);
        }
        exact.computeIfAbsent(type, t -> new EnumMap<>(Family.class)).put(family, serializer);
        resolved.clear();
        return this;
    }

    /**
     * Registers the generic field-walking serializer for {@code baseType} and all its subclasses in
     * {@code families}. Concrete subclasses still need names ({@link #register(Class)}): the wire carries names, never
     * class names.
     *
     * <p>What travels: every instance field of the class and of its superclasses, or a record's components;
     * {@code transient} fields and fields annotated {@link SkipSerialization} are left out. Primitives, boxed values,
     * strings and enums (registered ones) go in the header; so do primitive arrays smaller than the registry's frame
     * threshold (64 KiB by default). Larger primitive arrays travel as frames (the array's own memory, not a copy) and
     * device arrays as device frames in the {@code cuda} family, as host copies in {@code host}. Other values
     * (registered types, object arrays, the collections below, {@code Optional}) are nested values, each taking the
     * first family of the send's chain that can serialize it. A value reached twice is sent once and comes back as one
     * object; a value that contains itself is refused at the sender.
     *
     * <p>How instances are made: a record through its canonical constructor; a class with a no-argument constructor
     * (any visibility) through it, so that its initialisers give the fields a header lacks their values; any other
     * class without running a constructor at all (as Java serialization does): its fields start at zero or
     * {@code null}, no initialiser runs and nothing its constructors would check is checked; implement
     * {@link PostDeserialize} to rebuild or verify such state. Refused at the sender: hidden classes (lambdas), inner,
     * local and anonymous classes that hold their enclosing instance or captured variables (make them static), and
     * classes whose fields the module system keeps closed.
     *
     * <p>Collections and maps come back as the class the sender had, so a field holds them again:
     * {@code ArrayList}, {@code LinkedList}, {@code ArrayDeque}, {@code Arrays.asList} (fixed size), {@code HashSet},
     * {@code LinkedHashSet}, {@code HashMap}, {@code LinkedHashMap}, {@code ConcurrentHashMap}, {@code TreeSet} and
     * {@code TreeMap} (natural order, or a comparator whose class is a registered type: it travels as a nested value
     * and the receiver builds the tree with it), {@code EnumSet} and {@code EnumMap} (their enum travels by its
     * registered name, so empty ones keep it). The immutable ones ({@code List.of}, {@code Set.of}, {@code Map.of},
     * {@code copyOf}, {@code Stream.toList}, {@code Collections.unmodifiableList}, {@code unmodifiableSet},
     * {@code unmodifiableMap}, {@code unmodifiableCollection}, {@code empty*}, {@code singleton*}) come back immutable,
     * as unmodifiable views of a list, set or map in the sender's order. Order is kept wherever the class has one. Any
     * other {@code Collection} or {@code Map} (a subclass of one of those, {@code Collections.synchronizedList},
     * {@code CopyOnWriteArrayList}, a library's own) is refused at the sender with its class and field path, unless
     * its class is a registered type, which then goes through its own serializer; so is a {@code TreeSet} or
     * {@code TreeMap} ordered by a comparator whose class is not registered.
     *
     * <p>Schema evolution (headers of format version 2): a field of the receiving class that the header lacks fails
     * the decode with a {@link SchemaMismatchException} naming the field and its path, unless the field is
     * {@link WireOptional} (it then keeps the value the instance was made with); a header field the class does not
     * have fails it too, unless the class is {@link Evolving} (the entry is skipped). Headers of format version 1,
     * from files of earlier releases, are read leniently: missing fields keep those values, unknown ones are ignored.
     *
     * @throws IllegalArgumentException if {@code families} is empty or names {@code java}: that family is JDK
     *     serialization of allow-listed types ({@link #allowJava}), never a field walk
     */
    public synchronized TypeRegistry registerGeneric(Class<?> baseType, Family... families) {
        if (families.length == 0) {
            throw new IllegalArgumentException("registerGeneric(" + baseType.getName() + ") names no family");
        }
        if (List.of(families).contains(Family.JAVA)) {
            throw new IllegalArgumentException("registerGeneric(" + baseType.getName() + ") names the java family, "
                    + "which is JDK serialization of allow-listed types only: use allowJava");
        }
        generics.add(new Generic(baseType, Set.of(families)));
        resolved.clear();
        return this;
    }

    /**
     * Puts {@code types} on the {@code java} family's allow-list: they may travel as JDK serialization when a send's
     * chain names {@code java}, and only they (and what {@link JavaFamily} always allows) may be read back.
     */
    public synchronized TypeRegistry allowJava(Class<?>... types) {
        for (Class<?> type : types) {
            register(type, Family.JAVA, JavaFamily.serializer(this));
            JavaFamily.allow(this, type);
        }
        return this;
    }

    final Set<String> javaAllowed = ConcurrentHashMap.newKeySet();

    /** Serializes {@code value}, each value taking the first family of {@code chain} that can serialize it. */
    public Serialized serialize(Object value, Family... chain) {
        if (chain.length == 0) {
            throw new IllegalArgumentException("empty family chain");
        }
        return new Encoder(this, List.of(chain)).encode(value);
    }

    /**
     * Rebuilds the value. Owned frames the value uses move into it; {@code serialized} should still be closed (it
     * closes what was not used). Frames that were another live value's memory are shared, not copied.
     */
    public Object deserialize(Serialized serialized, DecodeTarget target) {
        return new Decoder(this, serialized, target).decode();
    }

    /** Like {@link #deserialize(Serialized, DecodeTarget)}, checked against {@code type}. */
    public <T> T deserialize(Serialized serialized, Class<T> type, DecodeTarget target) {
        Object value = deserialize(serialized, target);
        if (value != null && !type.isInstance(value)) {
            throw new SerializationException("decoded " + value.getClass().getName() + ", expected " + type.getName());
        }
        return type.cast(value);
    }

    /** The registered name of {@code type}, or {@code null}. */
    public String nameOf(Class<?> type) {
        return names.get(type);
    }

    /** The type registered under {@code name}, or {@code null}. */
    public Class<?> typeOf(String name) {
        return classes.get(name);
    }

    /** The registered version of {@code type} (0 if unregistered). */
    public int versionOf(Class<?> type) {
        return versions.getOrDefault(type, 0);
    }

    private static Map<String, Class<?>> inverse(Map<Class<?>, String> map) {
        Map<String, Class<?>> out = new java.util.HashMap<>();
        map.forEach((k, v) -> out.put(v, k));
        return Map.copyOf(out);
    }

    /**
     * The wire name of an object array's element type, so that the receiver rebuilds an array of that type: a
     * registered name, {@code str} or a boxed value's tag, a primitive array's tag ({@code f64[]}), or {@code [}
     * before the name of an array element type's own element type ({@code [obj} for {@code Object[]}); {@code null}
     * for {@code Object} and for types without a name (those arrays come back as {@code Object[]}).
     */
    String componentName(Class<?> component) {
        if (component == Object.class) {
            return null;
        }
        String builtin = BUILTIN_COMPONENTS.get(component);
        if (builtin != null) {
            return builtin;
        }
        if (component.isArray()) {
            if (component.getComponentType().isPrimitive()) {
                return PrimitiveArrays.kindOf(component).tag();
            }
            Class<?> element = component.getComponentType();
            String inner = element == Object.class ? "obj" : componentName(element);
            return inner == null || inner.startsWith("[".repeat(MAX_COMPONENT_DIMENSIONS - 1)) ? null : "[" + inner;
        }
        return names.get(component);
    }

    /** The element type {@link #componentName} named, for an array at {@code path}; never loads a class. */
    Class<?> componentType(String name, String path) {
        int dims = 0;
        while (dims < name.length() && name.charAt(dims) == '[') {
            dims++;
        }
        if (dims >= MAX_COMPONENT_DIMENSIONS) {
            throw new MalformedHeaderException("array element type with " + dims + " dimensions", path);
        }
        String base = name.substring(dims);
        PrimitiveArrays.Kind kind = PrimitiveArrays.kindOf(base);
        Class<?> type = kind != null
                ? kind.type()
                : base.equals("obj") && dims > 0 ? Object.class : BUILTIN_COMPONENT_TYPES.get(base);
        if (type == null) {
            type = classForName(base, path);
        }
        if (type.isPrimitive()) {
            throw new MalformedHeaderException("array element type '" + name + "'", path);
        }
        for (int i = 0; i < dims; i++) {
            type = type.arrayType();
        }
        return type;
    }

    /** The class registered under {@code name}, for the value at {@code path}; never loads a class. */
    Class<?> classForName(String name, String path) {
        Class<?> type = classes.get(name);
        if (type == null) {
            throw new UnknownTypeException(
                    "unregistered type name '" + (name.length() > 200 ? name.substring(0, 200) + "…" : name) + "'",
                    path);
        }
        return type;
    }

    /** The serializer for {@code type} in {@code family}: exact registration first, then the nearest generic. */
    @SuppressWarnings("unchecked")
    Serializer<Object> serializerFor(Class<?> type, Family family) {
        Map<Family, Optional<Serializer<Object>>> byFamily =
                resolved.computeIfAbsent(type, t -> new ConcurrentHashMap<>());
        return byFamily.computeIfAbsent(family, f -> {
                    Map<Family, Serializer<?>> e = exact.get(type);
                    if (e != null && e.containsKey(f)) {
                        return Optional.of((Serializer<Object>) e.get(f));
                    }
                    List<Generic> candidates = new ArrayList<>();
                    for (Generic g : generics) {
                        if (g.families().contains(f) && g.base().isAssignableFrom(type)) {
                            candidates.add(g);
                        }
                    }
                    if (candidates.isEmpty()) {
                        return Optional.empty();
                    }
                    return Optional.of(generic);
                })
                .orElse(null);
    }

    Limits limits() {
        return limits;
    }

    long frameThreshold() {
        return frameThreshold;
    }

    BufferAllocator<HostBuffer> hostAllocator() {
        return hostAllocator;
    }
}
