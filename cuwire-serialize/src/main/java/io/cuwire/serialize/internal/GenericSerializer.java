package io.cuwire.serialize.internal;

import io.cuwire.serialize.Evolving;
import io.cuwire.serialize.MalformedHeaderException;
import io.cuwire.serialize.PostDeserialize;
import io.cuwire.serialize.ReadContext;
import io.cuwire.serialize.SchemaMismatchException;
import io.cuwire.serialize.Serializer;
import io.cuwire.serialize.SkipSerialization;
import io.cuwire.serialize.UnserializableException;
import io.cuwire.serialize.WireOptional;
import io.cuwire.serialize.WriteContext;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Array;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.lang.reflect.RecordComponent;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The field-walking serializer (cuwire's {@code register_generic}): writes every instance field of a class and its
 * superclasses — scalars, boxed values, strings and enums as header values, everything else as nested values through
 * the send's family chain — and reads them back into a new instance made through a no-argument constructor of any
 * visibility, or a record's canonical constructor. {@code transient} and {@link SkipSerialization} fields are left
 * out; {@link PostDeserialize} runs after the fields are set.
 *
 * <p>Fields the header lacks and header fields the class lacks (format version 2; see {@link WireOptional} and
 * {@link Evolving}): a missing field is a {@link SchemaMismatchException} unless it is {@link WireOptional} (it then
 * keeps the value the constructor gave it, or Java's default for a record component); a header field the class does
 * not have is one unless the class is {@link Evolving} (the entry is then skipped). Both are checked before any field
 * is decoded. A header of format version 1 is read leniently, as that version did: missing fields keep their
 * defaults and unknown header fields are ignored.
 *
 * <p>Accessors are resolved once per class (a {@link ClassValue}); no reflective lookup happens per call.
 */
public final class GenericSerializer implements Serializer<Object> {
    private static final MethodHandles.Lookup LOOKUP = MethodHandles.lookup();

    private final ClassValue<Plan> plans = new ClassValue<>() {
        @Override
        protected Plan computeValue(Class<?> type) {
            return Plan.of(type);
        }
    };

    private record Slot(String key, Class<?> type, MethodHandle getter, MethodHandle setter, boolean simple,
            boolean optional) {
    }

    /** {@code keys}: the slots' keys; {@code evolving}: whether the class is {@link Evolving}. */
    private record Plan(Class<?> type, List<Slot> slots, MethodHandle constructor, boolean record, String problem,
            Set<String> keys, boolean evolving) {
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
            if (type.isRecord()) {
                return ofRecord(type);
            }
            List<Field> fields = new ArrayList<>();
            for (Class<?> c = type; c != null && c != Object.class; c = c.getSuperclass()) {
                for (Field f : c.getDeclaredFields()) {
                    int mod = f.getModifiers();
                    if (!Modifier.isStatic(mod) && !Modifier.isTransient(mod) && !f.isSynthetic()
                            && !f.isAnnotationPresent(SkipSerialization.class)) {
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
                            ? f.getDeclaringClass().getSimpleName() + "." + f.getName() : f.getName();
                    MethodHandle getter = LOOKUP.unreflectGetter(f).asType(MethodType.methodType(Object.class,
                            Object.class));
                    MethodHandle setter = LOOKUP.unreflectSetter(f).asType(MethodType.methodType(void.class,
                            Object.class, Object.class));
                    slots.add(new Slot(key, f.getType(), getter, setter, isSimple(f.getType()),
                            f.isAnnotationPresent(WireOptional.class)));
                }
            } catch (ReflectiveOperationException | RuntimeException e) {
                return new Plan(type, List.of(), null, false, "its fields cannot be accessed: " + e);
            }
            try {
                Constructor<?> ctor = type.getDeclaredConstructor();
                ctor.setAccessible(true);
                MethodHandle h = LOOKUP.unreflectConstructor(ctor).asType(MethodType.methodType(Object.class));
                return new Plan(type, slots, h, false, null);
            } catch (NoSuchMethodException e) {
                return new Plan(type, slots, null, false, "it has no no-argument constructor and is not a record");
            } catch (ReflectiveOperationException | RuntimeException e) {
                return new Plan(type, slots, null, false, "its constructor cannot be accessed: " + e);
            }
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
                    MethodHandle getter = LOOKUP.unreflect(rc.getAccessor()).asType(MethodType.methodType(
                            Object.class, Object.class));
                    slots.add(new Slot(rc.getName(), rc.getType(), getter, null, isSimple(rc.getType()),
                            rc.isAnnotationPresent(WireOptional.class)));
                }
                Constructor<?> ctor = type.getDeclaredConstructor(types);
                ctor.setAccessible(true);
                MethodHandle h = LOOKUP.unreflectConstructor(ctor).asSpreader(Object[].class, components.length)
                        .asType(MethodType.methodType(Object.class, Object[].class));
                return new Plan(type, slots, h, true, null);
            } catch (ReflectiveOperationException | RuntimeException e) {
                return new Plan(type, List.of(), null, true, "its canonical constructor cannot be accessed: " + e);
            }
        }
    }

    private static boolean isSimple(Class<?> t) {
        return t.isPrimitive() || t == String.class || t == Integer.class || t == Long.class || t == Double.class
                || t == Float.class || t == Short.class || t == Byte.class || t == Character.class
                || t == Boolean.class || t.isEnum();
    }

    @Override
    public void write(WriteContext out, Object value) {
        Plan plan = plans.get(value.getClass());
        if (plan.problem() != null) {
            throw new UnserializableException(value.getClass().getName() + " cannot be serialized generically: "
                    + plan.problem(), out.path());
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
            throw new MalformedHeaderException(type.getName() + " cannot be deserialized generically: "
                    + plan.problem() + " at " + in.path());
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
            throw new MalformedHeaderException("constructing " + type.getName() + " failed at " + in.path() + ": "
                    + e, e);
        } catch (Throwable t) {
            throw new MalformedHeaderException("constructing " + type.getName() + " failed at " + in.path() + ": "
                    + t, t);
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
            throw new SchemaMismatchException(plan.type(), in.path(), missing == null ? List.of() : missing,
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
