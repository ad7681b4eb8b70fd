package io.cuwire.serialize;

import io.cuwire.serialize.internal.JdkSerialization;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Array;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.InaccessibleObjectException;
import java.lang.reflect.Modifier;
import java.lang.reflect.RecordComponent;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The field-walking serializer (cuwire's {@code register_generic}), which
 * {@link TypeRegistry#registerGeneric} registers; that method's javadoc is the user's statement of
 * the rules, this is how they are carried out.
 *
 * <p>Writing: every instance field of the class and its superclasses, except {@code transient} fields, fields
 * annotated {@link SkipSerialization} and statics; a record's components. Primitives, boxed values, strings and
 * enums become header values; every other field is written as a nested value through the send's family chain, so
 * shared references and the cycle refusal of the encoder apply to it. Two fields of one class with one name (a
 * superclass's and a subclass's) are keyed {@code Declaring.name}.
 *
 * <p>Reading makes the instance in one of three ways, chosen once per class:
 * <ul>
 *   <li>a record: its canonical constructor, with the header's components (absent ones zero or {@code null});</li>
 *   <li>a class with a no-argument constructor (of any visibility): that constructor, so the field initialisers
 *       and the constructor give the values of fields the header lacks; then the fields are set;</li>
 *   <li>any other class: {@link JdkSerialization#instantiator}, as Java serialization, Kryo's and Fory's
 *       instantiators do: no constructor of the class or its superclasses runs, no field initialiser either, and
 *       nothing a constructor would check is checked; fields the header lacks stay zero, {@code false} or
 *       {@code null}. Final fields are set like the others (compiled code reads a final field initialised with a
 *       constant expression as that constant, whatever the header held).</li>
 * </ul>
 * {@link PostDeserialize#postDeserialize()} runs after every field is set: the place to rebuild skipped state and
 * to verify what a constructor would have.
 *
 * <p>Fields the header lacks and header fields the class lacks, checked before any field is decoded (format version
 * 2; see {@link WireOptional} and {@link Evolving}): a missing field is a {@link SchemaMismatchException} unless it is
 * {@link WireOptional} (it then keeps the value the instance was made with); a header field the class does not have
 * is one unless the class is {@link Evolving} (the entry is then skipped). A header of format version 1 is read as
 * that version did: missing fields keep the values the instance was made with, header entries with no matching field
 * are ignored.
 *
 * <p>Refused, at the sender with the class and field path (and by a receiver whose header names such a class):
 * hidden classes (lambdas), interfaces and abstract classes, inner, local and anonymous classes that hold their
 * enclosing instance or captured variables, and classes whose fields the JDK's module rules keep closed.
 *
 * <p>Everything reflective is resolved once per class (the {@code Plan}, in a {@link ClassValue}): per value only
 * method handles run (for a class made without a constructor, one {@code Constructor.newInstance} of the constructor
 * resolved for it).
 */
final class GenericSerializer implements Serializer<Object> {
    private static final MethodHandles.Lookup LOOKUP = MethodHandles.lookup();

    private final ClassValue<Plan> plans = new ClassValue<>() {
        @Override
        protected Plan computeValue(Class<?> type) {
            return Plan.of(type);
        }
    };

    private record Slot(
            String key, Class<?> type, MethodHandle getter, MethodHandle setter, boolean simple, boolean optional) {}

    /**
     * How one class is walked, resolved once: its slots, how an instance is made, or why it cannot be.
     *
     * @param constructor {@code ()Object} for a class (its no-argument constructor, else an instantiator that runs
     *     none), {@code (Object[])Object} for a record (its canonical constructor)
     * @param keys the slots' keys
     * @param evolving whether the class is {@link Evolving}
     */
    private record Plan(
            Class<?> type,
            List<Slot> slots,
            MethodHandle constructor,
            boolean record,
            String problem,
            Set<String> keys,
            boolean evolving) {
        Plan(Class<?> type, List<Slot> slots, MethodHandle constructor, boolean record, String problem) {
            this(type, slots, constructor, record, problem, keysOf(slots), type.isAnnotationPresent(Evolving.class));
        }

        private static Set<String> keysOf(List<Slot> slots) {
            Set<String> keys = new HashSet<>();
            for (Slot slot : slots) {
                keys.add(slot.key());
            }
            return Set.copyOf(keys);
        }

        static Plan of(Class<?> type) {
            String refused = refusal(type);
            if (refused != null) {
                return refused(type, refused);
            }
            if (type.isRecord()) {
                return ofRecord(type);
            }
            List<Field> fields = new ArrayList<>();
            for (Class<?> c = type; c != null && c != Object.class; c = c.getSuperclass()) {
                for (Field f : c.getDeclaredFields()) {
                    int mod = f.getModifiers();
                    if (Modifier.isStatic(mod)) {
                        continue;
                    }
                    if (f.isSynthetic()) {
                        return refused(
                                type,
                                "it is an inner, local or anonymous class that holds its enclosing "
                                        + "instance or captured variables (synthetic field " + c.getName() + "."
                                        + f.getName()
                                        + "), which cannot travel: make it a static nested or top-level class and give it "
                                        + "what it needs as fields");
                    }
                    if (!Modifier.isTransient(mod) && !f.isAnnotationPresent(SkipSerialization.class)) {
                        fields.add(f);
                    }
                }
            }
            Set<String> seen = new HashSet<>();
            Set<String> duplicated = new HashSet<>();
            for (Field f : fields) {
                if (!seen.add(f.getName())) {
                    duplicated.add(f.getName());
                }
            }
            List<Slot> slots = new ArrayList<>();
            try {
                for (Field f : fields) {
                    f.setAccessible(true);
                    String key = duplicated.contains(f.getName())
                            ? f.getDeclaringClass().getSimpleName() + "." + f.getName()
                            : f.getName();
                    MethodHandle getter =
                            LOOKUP.unreflectGetter(f).asType(MethodType.methodType(Object.class, Object.class));
                    MethodHandle setter = LOOKUP.unreflectSetter(f)
                            .asType(MethodType.methodType(void.class, Object.class, Object.class));
                    slots.add(new Slot(
                            key,
                            f.getType(),
                            getter,
                            setter,
                            isSimple(f.getType()),
                            f.isAnnotationPresent(WireOptional.class)));
                }
            } catch (ReflectiveOperationException | RuntimeException e) {
                return refused(type, "its fields cannot be accessed: " + e + notOpen(type, e));
            }
            Constructor<?> ctor;
            try {
                ctor = type.getDeclaredConstructor();
            } catch (NoSuchMethodException e) {
                ctor = null;
            }
            try {
                if (ctor == null) {
                    // Like Java serialization, Kryo's and Fory's instantiators: no constructor of the class runs.
                    return new Plan(type, slots, JdkSerialization.instantiator(type), false, null);
                }
                ctor.setAccessible(true);
                MethodHandle h = LOOKUP.unreflectConstructor(ctor).asType(MethodType.methodType(Object.class));
                return new Plan(type, slots, h, false, null);
            } catch (ReflectiveOperationException | RuntimeException e) {
                return refused(
                        type,
                        (ctor == null
                                        ? "it has no no-argument constructor and cannot be made without " + "one: "
                                        : "its constructor cannot be accessed: ")
                                + e
                                + notOpen(type, e));
            }
        }

        /**
         * What to add when {@code e} is the module system's refusal: the package of {@code type}, in a named module,
         * is not open to this one. Empty otherwise.
         */
        private static String notOpen(Class<?> type, Exception e) {
            Module module = type.getModule();
            if (!(e instanceof InaccessibleObjectException) || !module.isNamed()) {
                return "";
            }
            String self = GenericSerializer.class.getModule().getName();
            if (self == null) {
                return "";
            }
            return "; add 'opens " + type.getPackageName() + " to " + self + ";' to the module-info of "
                    + module.getName();
        }

        private static Plan refused(Class<?> type, String problem) {
            return new Plan(type, List.of(), null, type.isRecord(), problem);
        }

        /** Why no instance of {@code type} can be made or filled, whatever its fields; {@code null} if one can. */
        private static String refusal(Class<?> type) {
            if (type.isHidden()) {
                return "it is a hidden class (a lambda, or defined by Lookup.defineHiddenClass), whose final fields "
                        + "cannot be set and whose name is not stable: send an instance of a named class";
            }
            if (type.isInterface()) {
                return "it is an interface: register and send a class that implements it";
            }
            if (Modifier.isAbstract(type.getModifiers())) {
                return "it is abstract: register and send a concrete subclass";
            }
            return null;
        }

        static Plan ofRecord(Class<?> type) {
            RecordComponent[] components = type.getRecordComponents();
            List<Slot> slots = new ArrayList<>();
            Class<?>[] types = new Class<?>[components.length];
            try {
                for (int i = 0; i < components.length; i++) {
                    RecordComponent rc = components[i];
                    types[i] = rc.getType();
                    rc.getAccessor().setAccessible(true);
                    MethodHandle getter = LOOKUP.unreflect(rc.getAccessor())
                            .asType(MethodType.methodType(Object.class, Object.class));
                    slots.add(new Slot(
                            rc.getName(),
                            rc.getType(),
                            getter,
                            null,
                            isSimple(rc.getType()),
                            rc.isAnnotationPresent(WireOptional.class)));
                }
                Constructor<?> ctor = type.getDeclaredConstructor(types);
                ctor.setAccessible(true);
                MethodHandle h = LOOKUP.unreflectConstructor(ctor)
                        .asSpreader(Object[].class, components.length)
                        .asType(MethodType.methodType(Object.class, Object[].class));
                return new Plan(type, slots, h, true, null);
            } catch (ReflectiveOperationException | RuntimeException e) {
                return refused(type, "its canonical constructor cannot be accessed: " + e + notOpen(type, e));
            }
        }
    }

    private static boolean isSimple(Class<?> t) {
        return t.isPrimitive()
                || t == String.class
                || t == Integer.class
                || t == Long.class
                || t == Double.class
                || t == Float.class
                || t == Short.class
                || t == Byte.class
                || t == Character.class
                || t == Boolean.class
                || t.isEnum();
    }

    @Override
    public void write(WriteContext out, Object value) {
        Plan plan = plans.get(value.getClass());
        if (plan.problem() != null) {
            throw new UnserializableException(
                    value.getClass().getName() + " cannot be serialized generically: " + plan.problem(), out.path());
        }
        for (Slot slot : plan.slots()) {
            Object v;
            try {
                v = slot.getter().invokeExact(value);
            } catch (Throwable t) {
                throw new UnserializableException("reading " + slot.key() + " failed: " + t, out.path(), t);
            }
            if (slot.simple()) {
                out.put(slot.key(), simpleToHeader(v));
            } else {
                out.writeValue(slot.key(), v);
            }
        }
    }

    private static Object simpleToHeader(Object v) {
        return switch (v) {
            case null -> null;
            case Integer i -> (long) i;
            case Short s -> (long) s;
            case Byte b -> (long) b;
            case Character c -> (long) c;
            case Float f -> (double) f;
            case Enum<?> e -> e.name();
            default -> v;
        };
    }

    @Override
    public Object read(ReadContext in) {
        Class<?> type = in.type();
        Plan plan = plans.get(type);
        if (plan.problem() != null) {
            throw new MalformedHeaderException(
                    type.getName() + " cannot be deserialized generically: " + plan.problem() + " at " + in.path());
        }
        if (in.formatVersion() >= 2) {
            checkFields(plan, in);
        }
        Object[] values = new Object[plan.slots().size()];
        boolean[] present = new boolean[values.length];
        for (int i = 0; i < values.length; i++) {
            Slot slot = plan.slots().get(i);
            if (!in.has(slot.key())) {
                continue;
            }
            Object raw = slot.simple() ? in.raw(slot.key()) : in.readValue(slot.key());
            values[i] = convert(raw, slot.type(), slot.key(), in);
            present[i] = true;
        }
        Object instance;
        try {
            if (plan.record()) {
                for (int i = 0; i < values.length; i++) {
                    if (!present[i]) {
                        values[i] = defaultValue(plan.slots().get(i).type());
                    }
                }
                instance = plan.constructor().invokeExact(values);
            } else {
                instance = plan.constructor().invokeExact();
                for (int i = 0; i < values.length; i++) {
                    if (present[i]) {
                        plan.slots().get(i).setter().invokeExact(instance, values[i]);
                    }
                }
            }
        } catch (RuntimeException e) {
            throw new MalformedHeaderException(
                    "constructing " + type.getName() + " failed at " + in.path() + ": " + e, e);
        } catch (Throwable t) {
            throw new MalformedHeaderException(
                    "constructing " + type.getName() + " failed at " + in.path() + ": " + t, t);
        }
        if (instance instanceof PostDeserialize hook) {
            hook.postDeserialize();
        }
        return instance;
    }

    /** Format version 2's rules: no required field missing, no header field unknown unless the class evolves. */
    private static void checkFields(Plan plan, ReadContext in) {
        List<String> missing = null;
        for (Slot slot : plan.slots()) {
            if (!slot.optional() && !in.has(slot.key())) {
                missing = missing == null ? new ArrayList<>() : missing;
                missing.add(slot.key());
            }
        }
        List<String> unknown = null;
        if (!plan.evolving()) {
            for (String key : in.keys()) {
                if (!plan.keys().contains(key)) {
                    unknown = unknown == null ? new ArrayList<>() : unknown;
                    unknown.add(key);
                }
            }
        }
        if (missing != null || unknown != null) {
            throw new SchemaMismatchException(
                    plan.type(),
                    in.path(),
                    missing == null ? List.of() : missing,
                    unknown == null ? List.of() : unknown);
        }
    }

    private static Object defaultValue(Class<?> t) {
        if (!t.isPrimitive()) {
            return null;
        }
        return Array.get(Array.newInstance(t, 1), 0);
    }

    private static MalformedHeaderException mismatch(Object v, Class<?> t, String key, ReadContext in) {
        return new MalformedHeaderException("field '" + key + "' at " + in.path() + " holds "
                + (v == null ? "nil" : v.getClass().getSimpleName()) + ", which does not fit " + t.getName());
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static Object convert(Object v, Class<?> t, String key, ReadContext in) {
        if (v == null) {
            if (t.isPrimitive()) {
                throw mismatch(null, t, key, in);
            }
            return null;
        }
        if (t == int.class || t == Integer.class) {
            if (v instanceof Long l && l == l.intValue()) {
                return l.intValue();
            }
            if (v instanceof Integer) {
                return v;
            }
        } else if (t == long.class || t == Long.class) {
            if (v instanceof Long) {
                return v;
            }
        } else if (t == short.class || t == Short.class) {
            if (v instanceof Long l && l == l.shortValue()) {
                return l.shortValue();
            }
        } else if (t == byte.class || t == Byte.class) {
            if (v instanceof Long l && l == l.byteValue()) {
                return l.byteValue();
            }
        } else if (t == char.class || t == Character.class) {
            if (v instanceof Long l && l >= 0 && l <= Character.MAX_VALUE) {
                return (char) l.longValue();
            }
        } else if (t == double.class || t == Double.class) {
            if (v instanceof Double) {
                return v;
            }
        } else if (t == float.class || t == Float.class) {
            if (v instanceof Double d) {
                return d.floatValue();
            }
        } else if (t == boolean.class || t == Boolean.class) {
            if (v instanceof Boolean) {
                return v;
            }
        } else if (t.isEnum()) {
            if (v instanceof String s) {
                for (Object c : t.getEnumConstants()) {
                    if (((Enum) c).name().equals(s)) {
                        return c;
                    }
                }
            } else if (t.isInstance(v)) {
                return v;
            }
        } else if (t.isArray() && !t.getComponentType().isPrimitive() && v instanceof Object[] arr) {
            if (t.isInstance(v)) {
                return v;
            }
            // An array whose element type has no wire name arrives as Object[]: copied into the field's type.
            Object typed = Array.newInstance(t.getComponentType(), arr.length);
            for (int i = 0; i < arr.length; i++) {
                if (arr[i] != null && !t.getComponentType().isInstance(arr[i])) {
                    throw mismatch(arr[i], t.getComponentType(), key + "[" + i + "]", in);
                }
                Array.set(typed, i, arr[i]);
            }
            return typed;
        } else if (t.isInstance(v)) {
            return v;
        }
        throw mismatch(v, t, key, in);
    }
}
