package io.cuwire.serialize;

import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.NdArray;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InvalidClassException;
import java.io.ObjectInputFilter;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.ObjectStreamClass;
import java.io.OutputStream;
import java.lang.foreign.MemorySegment;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.Deque;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The {@code java} family: JDK serialization for allow-listed types only. A class name in the stream is checked
 * against the allow-list before it is resolved, so a stream naming anything else fails without loading it; an
 * {@link ObjectInputFilter} bounds depth ({@value #MAX_DEPTH} levels, or {@link Limits#maxDepth} if smaller), array
 * sizes (by the stream's length) and stream bytes, and charges every object reference the stream reads to the
 * message's decode budget ({@link Limits#maxDecodeWork}). The writer checks every class it describes against the
 * same list, so a value the receiver would refuse fails at the sender.
 *
 * <p>Hashing: a JDK stream can share objects by reference, so a few kilobytes can describe a graph whose hash code
 * walks 2^60 paths ("SerialDOS": sets nested in sets), and the JDK's own {@code HashSet} and {@code HashMap} compute
 * those hash codes while they read. As each object is rebuilt, the reader works out its <em>span</em> (the objects
 * hashing it reaches, a shared one counted every time) from its elements' or fields' spans, and refuses the stream
 * as soon as one object spans more than the whole decode budget, before any set can hash it; every set and map the
 * stream rebuilt is charged its keys' spans. What stays possible within the budget: a set of many references to one
 * large earlier object hashes that object once per reference before the set's charge is known, so the work of one
 * stream can reach its reference count times the budget's span bound, quadratic in the stream's length rather than
 * exponential. The java family is off unless a type is allow-listed and the connection agreed the family.
 *
 * <p>{@link NdArray}s inside a JDK-serialized value travel as pickle carries GPU arrays: their serial form copies the
 * bytes to the heap inside the stream. While reading, {@link NdArray#readTarget} points at the decode target's
 * device and host allocators, so arrays that were on a device are rebuilt on the receiver's device, as the
 * {@code host} family rebuilds them, and host arrays stay host arrays.
 */
final class JavaFamily {
    /**
     * Always readable: boxed values, strings, the plain collections, arrays of these and of primitives, and
     * {@link NdArray}: its serial form (a private nested class of it: dtype and order names, shape, bytes) and the
     * array that form resolves to (the filter checks a {@code readResolve} result too; an {@code NdArray} itself never
     * appears in a stream, its {@code readObject} refuses); {@link OpaqueBlob} the same way.
     */
    private static final Set<String> BASE = Set.of(
            "java.lang.String",
            "java.lang.Number",
            "java.lang.Integer",
            "java.lang.Long",
            "java.lang.Double",
            "java.lang.Float",
            "java.lang.Short",
            "java.lang.Byte",
            "java.lang.Character",
            "java.lang.Boolean",
            "java.lang.Enum",
            "java.util.ArrayList",
            "java.util.HashMap",
            "java.util.LinkedHashMap",
            "java.util.HashSet",
            "java.util.LinkedHashSet",
            "[B",
            "[S",
            "[C",
            "[I",
            "[J",
            "[F",
            "[D",
            "[Z",
            "io.cuwire.memory.NdArray$SerialForm",
            "io.cuwire.memory.NdArray",
            "io.cuwire.serialize.OpaqueBlob$SerialForm",
            "io.cuwire.serialize.OpaqueBlob");

    private static final int INLINE_BYTES = 64 * 1024;
    /** Deepest nesting of {@code readObject} calls a stream may make (a 60-level SerialDOS stream needs 60). */
    static final int MAX_DEPTH = 32;

    private JavaFamily() {}

    static void allow(TypeRegistry registry, Class<?> type) {
        registry.javaAllowed.add(type.getName());
    }

    static Serializer<Object> serializer(TypeRegistry registry) {
        return new Serializer<>() {
            @Override
            public void write(WriteContext out, Object value) {
                ByteArrayOutputStream bytes = new ByteArrayOutputStream();
                AllowListOutput oos = null;
                try {
                    oos = new AllowListOutput(bytes, registry);
                    oos.writeObject(value);
                    oos.close();
                } catch (IOException | OutOfMemoryError e) {
                    // The JDK writes a failure into the stream as an exception object, whose class the allow-list
                    // refuses in turn: report the first class refused, not that.
                    String why = oos != null && oos.refused != null ? oos.refused + " is " + NOT_ALLOWED : e.toString();
                    throw new UnserializableException(
                            "JDK serialization of " + value.getClass().getName() + " failed: " + why, out.path(), e);
                }
                byte[] b = bytes.toByteArray();
                if (b.length < INLINE_BYTES) {
                    out.put("b", b);
                } else {
                    HostBuffer frame = registry.hostAllocator().allocate(b.length);
                    MemorySegment.copy(MemorySegment.ofArray(b), 0, frame.segment(), 0, b.length);
                    out.put("fr", out.ownedFrame(frame));
                }
            }

            @Override
            public Object read(ReadContext in) {
                byte[] b;
                if (in.has("b")) {
                    b = in.getBytes("b");
                } else {
                    Frame f = in.takeFrame("fr");
                    if (f.length() > Integer.MAX_VALUE - 8) {
                        throw new LimitExceededException(
                                "JDK-serialized frame of " + f.length() + " bytes at " + in.path());
                    }
                    b = new byte[(int) f.length()];
                    io.cuwire.memory.CopyEngine.copyToSegment(f.buffer(), 0, MemorySegment.ofArray(b));
                    if (f.owned()) {
                        f.buffer().close();
                    }
                }
                NdArray.ReadScope arrays =
                        NdArray.readTarget(in.target().device(), in.target().host());
                AllowListStream ois = null;
                try {
                    ois = new AllowListStream(b, registry, in);
                    Object value = ois.readObject();
                    releaseUnreachable(value, ois.made);
                    return value;
                } catch (IOException | ClassNotFoundException e) {
                    if (ois != null && ois.refusal != null) {
                        throw ois.refusal; // the filter's typed refusal, which the JDK wrapped
                    }
                    throw new MalformedHeaderException("JDK deserialization failed at " + in.path() + ": " + e, e);
                } finally {
                    if (ois != null) {
                        try {
                            ois.close();
                        } catch (IOException ignored) {
                            // a stream over bytes in memory: nothing to release
                        }
                    }
                    arrays.close();
                }
            }
        };
    }

    /**
     * Closes the arrays and blobs a stream rebuilt that the value read does not hold: a stream may make objects and
     * drop them (a corrupt or hostile one does), and dropped device or host memory would stay allocated. Walks the
     * value's fields; where it meets a class it cannot look into, it closes nothing.
     */
    private static void releaseUnreachable(Object value, List<AutoCloseable> made) {
        if (made.isEmpty()) {
            return;
        }
        Set<Object> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        Deque<Object> todo = new ArrayDeque<>();
        push(todo, value);
        while (!todo.isEmpty()) {
            Object v = todo.pop();
            if (!seen.add(v)) {
                continue;
            }
            Class<?> c = v.getClass();
            if (v instanceof NdArray
                    || v instanceof OpaqueBlob
                    || v instanceof String
                    || v instanceof Number
                    || v instanceof Boolean
                    || v instanceof Character
                    || v instanceof Enum<?>
                    || c.isArray() && c.getComponentType().isPrimitive()) {
                continue;
            }
            if (v instanceof Object[] array) {
                for (Object e : array) {
                    push(todo, e);
                }
            } else if (v instanceof Map<?, ?> map) {
                map.forEach((k, e) -> {
                    push(todo, k);
                    push(todo, e);
                });
            } else if (v instanceof Collection<?> collection) {
                collection.forEach(e -> push(todo, e));
            } else {
                for (; c != null && c != Object.class; c = c.getSuperclass()) {
                    for (Field f : c.getDeclaredFields()) {
                        if (Modifier.isStatic(f.getModifiers()) || f.getType().isPrimitive()) {
                            continue;
                        }
                        try {
                            f.setAccessible(true);
                            push(todo, f.get(v));
                        } catch (ReflectiveOperationException | RuntimeException e) {
                            return;
                        }
                    }
                }
            }
        }
        for (AutoCloseable m : made) {
            if (!seen.contains(m)) {
                try {
                    if (!(m instanceof NdArray a) || a.isOpen()) {
                        m.close();
                    }
                } catch (Exception e) {
                    throw new MalformedHeaderException("releasing what a JDK stream dropped failed: " + e, e);
                }
            }
        }
    }

    private static void push(Deque<Object> todo, Object o) {
        if (o != null) {
            todo.push(o);
        }
    }

    private static final class AllowListStream extends ObjectInputStream {
        private final TypeRegistry registry;
        private final ReadContext ctx;
        /** The arrays and blobs the stream rebuilt, in order. */
        private final List<AutoCloseable> made = new ArrayList<>();
        /** The span of each rebuilt object that spans more than itself (see the class comment). */
        private final Map<Object, Long> spans = new IdentityHashMap<>();
        /** References the stream read so far, all charged. */
        private long references;
        /** Why the filter or a charge refused the stream, when it did: thrown instead of what the JDK makes of it. */
        private SerializationException refusal;

        /**
         * A stream over {@code stream} whose filter also bounds every array the stream makes by the stream's own
         * length, so that a few bytes cannot declare gigabytes: a primitive array's elements are all in the stream,
         * and an object array (a field's, or the table {@code ArrayList} and {@code HashMap} size before reading
         * their elements) has at least one byte per element, or per two table slots.
         */
        AllowListStream(byte[] stream, TypeRegistry registry, ReadContext ctx) throws IOException {
            super(new ByteArrayInputStream(stream));
            this.registry = registry;
            this.ctx = ctx;
            enableResolveObject(true);
            long maxBytes = ctx.target().limits().maxTotalFrameBytes();
            int maxDepth = Math.min(MAX_DEPTH, ctx.target().limits().maxDepth());
            long length = stream.length;
            setObjectInputFilter(info -> {
                if (info.depth() > maxDepth) {
                    return refuse(new LimitExceededException(
                            "JDK-serialized value nests deeper than " + maxDepth + " at " + ctx.path()));
                }
                if (info.references() > references) {
                    try {
                        ctx.charge(info.references() - references, "JDK stream references");
                    } catch (DecodeBudgetExceededException e) {
                        return refuse(e);
                    }
                    references = info.references();
                }
                if (info.arrayLength() > Integer.MAX_VALUE - 8 || info.streamBytes() > maxBytes) {
                    return ObjectInputFilter.Status.REJECTED;
                }
                Class<?> c = info.serialClass();
                if (c == null) {
                    return ObjectInputFilter.Status.UNDECIDED;
                }
                if (c.isArray()
                        && info.arrayLength() > 0
                        && (c.getComponentType().isPrimitive()
                                ? info.arrayLength() * elementBytes(c.getComponentType()) > length
                                : info.arrayLength() > 2 * length + 16)) {
                    return ObjectInputFilter.Status.REJECTED;
                }
                boolean array = c.isArray();
                while (c.isArray()) {
                    c = c.getComponentType();
                }
                if (array && (c == Object.class || c == java.util.Map.Entry.class)) {
                    // The backing arrays ArrayList and HashMap check before allocating; their elements are
                    // filtered one by one as they are read.
                    return ObjectInputFilter.Status.ALLOWED;
                }
                return c.isPrimitive() || allowed(registry, c.getName())
                        ? ObjectInputFilter.Status.ALLOWED
                        : ObjectInputFilter.Status.REJECTED;
            });
        }

        private ObjectInputFilter.Status refuse(SerializationException why) {
            if (refusal == null) {
                refusal = why;
            }
            return ObjectInputFilter.Status.REJECTED;
        }

        /**
         * Works out the span of an object just rebuilt from its elements', entries' or fields' spans, refusing it if it
         * spans more than the decode budget; charges a set's or map's keys' spans, the hashing its reading did.
         */
        private void account(Object obj) {
            long span = 1;
            long keys = 0;
            switch (obj) {
                case Collection<?> c -> {
                    for (Object e : c) {
                        span = add(span, spanOf(e));
                    }
                    if (obj instanceof Set<?>) {
                        keys = span - 1;
                    }
                }
                case Map<?, ?> m -> {
                    for (Map.Entry<?, ?> e : m.entrySet()) {
                        long k = spanOf(e.getKey());
                        keys = add(keys, k);
                        span = add(add(span, k), spanOf(e.getValue()));
                    }
                }
                case Object[] a -> {
                    for (Object e : a) {
                        span = add(span, spanOf(e));
                    }
                }
                default -> {
                    Class<?> c = obj.getClass();
                    if (c.isArray()
                            || obj instanceof String
                            || obj instanceof Number
                            || obj instanceof Boolean
                            || obj instanceof Character
                            || obj instanceof Enum<?>
                            || obj instanceof NdArray
                            || obj instanceof OpaqueBlob) {
                        return; // hashes by identity or by its own bytes, which are in the stream
                    }
                    span = add(span, fieldSpans(obj));
                }
            }
            long max = ctx.target().limits().maxDecodeWork();
            if (span > max) {
                throw refused(new DecodeBudgetExceededException(
                        "decode work exceeds the budget of " + max
                                + " units (Limits.maxDecodeWork): a JDK-serialized "
                                + obj.getClass().getName()
                                + " reaches " + span + " objects when hashed",
                        ctx.path()));
            }
            if (keys > 0) {
                try {
                    ctx.charge(keys, "hashing the keys of a JDK-serialized set or map");
                } catch (DecodeBudgetExceededException e) {
                    throw refused(e);
                }
            }
            if (span > 1) {
                spans.put(obj, span);
            }
        }

        private SerializationException refused(SerializationException why) {
            refuse(why);
            return why;
        }

        private long spanOf(Object o) {
            return o == null ? 0 : spans.getOrDefault(o, 1L);
        }

        /** The spans of an object's reference fields; 0 where its class cannot be looked into. */
        private long fieldSpans(Object obj) {
            long sum = 0;
            for (Class<?> c = obj.getClass(); c != null && c != Object.class; c = c.getSuperclass()) {
                for (Field f : c.getDeclaredFields()) {
                    if (Modifier.isStatic(f.getModifiers()) || f.getType().isPrimitive()) {
                        continue;
                    }
                    try {
                        f.setAccessible(true);
                        sum = add(sum, spanOf(f.get(obj)));
                    } catch (ReflectiveOperationException | RuntimeException e) {
                        return sum;
                    }
                }
            }
            return sum;
        }

        private static long add(long a, long b) {
            long r = a + b;
            return ((a ^ r) & (b ^ r)) < 0 ? Long.MAX_VALUE : r;
        }

        private static int elementBytes(Class<?> primitive) {
            return primitive == long.class || primitive == double.class
                    ? 8
                    : primitive == int.class || primitive == float.class
                            ? 4
                            : primitive == short.class || primitive == char.class ? 2 : 1;
        }

        /** Arrays and blobs the stream rebuilt belong to the decode until it succeeds: released if anything fails. */
        @Override
        protected Object resolveObject(Object obj) {
            account(obj);
            if (obj instanceof NdArray a) {
                ctx.own(a);
                made.add(a);
            } else if (obj instanceof OpaqueBlob b) {
                ctx.own(b.buffer());
                made.add(b);
            }
            return obj;
        }

        @Override
        protected Class<?> resolveClass(ObjectStreamClass desc) throws IOException, ClassNotFoundException {
            if (!allowed(registry, desc.getName())) {
                throw notAllowed(desc.getName());
            }
            return super.resolveClass(desc);
        }
    }

    /**
     * Whether a stream may name the class {@code name} ({@link Class#getName()} form): a {@link #BASE} class, an
     * allow-listed one, or an array of these or of a primitive type. A one-letter name is a primitive only as an
     * array's element ({@code [I}); a class of the unnamed package called {@code I} is not.
     */
    private static boolean allowed(TypeRegistry registry, String name) {
        if (BASE.contains(name)) {
            return true;
        }
        int dims = 0;
        while (dims < name.length() && name.charAt(dims) == '[') {
            dims++;
        }
        String element = name.substring(dims);
        if (dims > 0) {
            if (element.length() == 1) {
                return "BCDFIJSZ".indexOf(element.charAt(0)) >= 0;
            }
            if (!element.startsWith("L") || !element.endsWith(";")) {
                return false;
            }
            element = element.substring(1, element.length() - 1);
        }
        return BASE.contains(element) || registry.javaAllowed.contains(element);
    }

    private static final String NOT_ALLOWED = "not on the java family's allow-list (TypeRegistry.allowJava)";

    private static InvalidClassException notAllowed(String name) {
        return new InvalidClassException(name, NOT_ALLOWED);
    }

    /**
     * The writing side of the allow-list: every class the stream describes (the value's, its fields', their
     * superclasses', enums', arrays') is checked as the reader will check it, so a value holding a class the
     * receiver would refuse fails here, at the sender, with the class named.
     */
    private static final class AllowListOutput extends ObjectOutputStream {
        private final TypeRegistry registry;
        private String refused;

        AllowListOutput(OutputStream out, TypeRegistry registry) throws IOException {
            super(out);
            this.registry = registry;
        }

        @Override
        protected void annotateClass(Class<?> cl) throws IOException {
            if (!allowed(registry, cl.getName())) {
                throw refuse(cl);
            }
        }

        @Override
        protected void annotateProxyClass(Class<?> cl) throws IOException {
            throw refuse(cl);
        }

        private InvalidClassException refuse(Class<?> cl) {
            if (refused == null) {
                refused = cl.getName();
            }
            return notAllowed(cl.getName());
        }
    }
}
