package io.cuwire.serialize.internal;

import java.io.IOException;
import java.io.ObjectOutput;
import java.io.ObjectOutputStream;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Constructor;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.Map;

/**
 * What the JDK offers serialization libraries in {@code sun.reflect.ReflectionFactory} (module
 * {@code jdk.unsupported}, exported for them; Objenesis, Kryo and Fory use it too): instances made without running a
 * constructor of their class, and the serial fields of JDK classes that have no accessor for them. Linked once,
 * reflectively, because javac's warning on that package cannot be suppressed and the build fails on warnings; a
 * named module using this class needs {@code requires jdk.unsupported}.
 */
public final class JdkSerialization {
    private static final MethodHandle NEW_CONSTRUCTOR;
    private static final MethodHandle ENUM_MAP_FIELDS;
    private static final String UNAVAILABLE;

    static {
        MethodHandle newConstructor = null;
        MethodHandle enumMapFields = null;
        String unavailable = null;
        try {
            Class<?> factoryType = Class.forName("sun.reflect.ReflectionFactory");
            MethodHandles.Lookup lookup = MethodHandles.publicLookup();
            Object factory = lookup.findStatic(factoryType, "getReflectionFactory", MethodType.methodType(factoryType))
                    .invoke();
            newConstructor = lookup.findVirtual(
                            factoryType,
                            "newConstructorForSerialization",
                            MethodType.methodType(Constructor.class, Class.class, Constructor.class))
                    .bindTo(factory);
            MethodHandle defaultWrite = lookup.findVirtual(
                            factoryType,
                            "defaultWriteObjectForSerialization",
                            MethodType.methodType(MethodHandle.class, Class.class))
                    .bindTo(factory);
            enumMapFields = ((MethodHandle) defaultWrite.invoke(EnumMap.class))
                    .asType(MethodType.methodType(void.class, Object.class, ObjectOutputStream.class));
        } catch (Throwable t) {
            unavailable = "sun.reflect.ReflectionFactory is not available (it is in the module jdk.unsupported: a "
                    + "runtime made with jlink needs --add-modules jdk.unsupported): " + t;
        }
        NEW_CONSTRUCTOR = newConstructor;
        ENUM_MAP_FIELDS = enumMapFields;
        UNAVAILABLE = unavailable;
    }

    private JdkSerialization() {}

    /**
     * A handle of type {@code ()Object} that makes an instance of {@code type} without running any constructor of
     * {@code type} or its superclasses (only {@code Object}'s): every field holds its default value (zero,
     * {@code false}, {@code null}).
     *
     * @throws IllegalStateException if the JDK does not offer it, saying why
     */
    public static MethodHandle instantiator(Class<?> type) {
        if (UNAVAILABLE != null) {
            throw new IllegalStateException(UNAVAILABLE);
        }
        try {
            Constructor<?> c = (Constructor<?>) NEW_CONSTRUCTOR.invoke(type, Object.class.getDeclaredConstructor());
            // The constructor is declared by Object, so unreflecting it would make Objects: call it as it is.
            // A full lookup: newInstance is caller-sensitive, and Object's constructor is public to every caller.
            MethodHandle newInstance = MethodHandles.lookup()
                    .findVirtual(Constructor.class, "newInstance", MethodType.methodType(Object.class, Object[].class))
                    .bindTo(c);
            return MethodHandles.insertArguments(newInstance, 0, (Object) new Object[0]);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("no instantiator for " + type.getName() + ": " + t, t);
        }
    }

    /**
     * The key type of {@code map}, read from its serial form (the JDK offers no accessor; an empty map has no key to
     * ask).
     *
     * @throws IllegalStateException if the JDK does not offer it, saying why
     */
    public static Class<?> keyType(EnumMap<?, ?> map) {
        if (UNAVAILABLE != null) {
            throw new IllegalStateException(UNAVAILABLE);
        }
        try {
            FieldCapture capture = new FieldCapture();
            ENUM_MAP_FIELDS.invokeExact((Object) map, (ObjectOutputStream) capture);
            if (!(capture.fields.get("keyType") instanceof Class<?> keyType)) {
                throw new IllegalStateException(
                        "EnumMap's serial fields " + capture.fields.keySet() + " hold no keyType");
            }
            return keyType;
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("reading an EnumMap's key type failed: " + t, t);
        }
    }

    /** Receives the serial fields a default-write handle puts, and writes nothing. */
    private static final class FieldCapture extends ObjectOutputStream {
        final Map<String, Object> fields = new HashMap<>();

        FieldCapture() throws IOException {}

        @Override
        public PutField putFields() {
            return new PutField() {
                @Override
                public void put(String name, boolean val) {
                    fields.put(name, val);
                }

                @Override
                public void put(String name, byte val) {
                    fields.put(name, val);
                }

                @Override
                public void put(String name, char val) {
                    fields.put(name, val);
                }

                @Override
                public void put(String name, short val) {
                    fields.put(name, val);
                }

                @Override
                public void put(String name, int val) {
                    fields.put(name, val);
                }

                @Override
                public void put(String name, long val) {
                    fields.put(name, val);
                }

                @Override
                public void put(String name, float val) {
                    fields.put(name, val);
                }

                @Override
                public void put(String name, double val) {
                    fields.put(name, val);
                }

                @Override
                public void put(String name, Object val) {
                    fields.put(name, val);
                }

                @Override
                @SuppressWarnings("removal")
                public void write(ObjectOutput out) {
                    throw new UnsupportedOperationException("a field capture writes nothing");
                }
            };
        }

        @Override
        public void writeFields() {}
    }
}
