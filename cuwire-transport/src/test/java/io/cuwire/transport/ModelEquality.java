package io.cuwire.transport;

import io.cuwire.memory.NdArray;
import io.cuwire.transport.ModelShapes.Color;
import io.cuwire.transport.ModelShapes.GeneratedModel;
import java.lang.reflect.Array;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.SortedMap;
import java.util.SortedSet;

/**
 * Deep, field-for-field equality of a model the test sent and the one that came back: the same concrete class at
 * every place (collections included: a {@code TreeMap} must come back a {@code TreeMap}), equal scalars (boxed
 * floating-point values compare as {@link Double#equals} does: NaN equals NaN, -0.0 differs from 0.0), primitive
 * arrays equal bit for bit, NdArrays of the same dtype, order, shape, memory kind and contents, {@code transient}
 * fields at their type's default on the receiver, and the same sharing: two places that hold one object on the
 * sender hold one object on the receiver, and two that hold distinct objects hold distinct ones. Strings, boxed
 * values, enum constants and optionals are values, so their identity is not compared.
 *
 * <p>A difference fails with an {@link AssertionError} naming the path ({@code root.f3TreeMap[k].f0Int}) and both
 * values.
 */
final class ModelEquality {
    private final IdentityHashMap<Object, Object> sentToReceived = new IdentityHashMap<>();
    private final IdentityHashMap<Object, Object> receivedToSent = new IdentityHashMap<>();

    private ModelEquality() {}

    /** Fails unless {@code received} equals {@code sent} as described above. */
    static void assertDeepEquals(Object sent, Object received) {
        new ModelEquality().compare(sent, received, "root");
    }

    private static AssertionError differ(String path, String what) {
        return new AssertionError(path + ": " + what);
    }

    private static String show(Object o) {
        if (o == null) {
            return "null";
        }
        if (o.getClass().isArray()) {
            return o.getClass().getComponentType().getName() + "[" + Array.getLength(o) + "]";
        }
        if (o instanceof GeneratedModel || o instanceof NdArray) {
            return o.getClass().getSimpleName();
        }
        String s = o instanceof String str ? "\"" + str + "\"" : String.valueOf(o);
        return (s.length() > 80 ? s.substring(0, 77) + "..." : s) + " ("
                + o.getClass().getName() + ")";
    }

    private static boolean isValue(Object o) {
        return o instanceof String
                || o instanceof Number
                || o instanceof Boolean
                || o instanceof Character
                || o instanceof Enum<?>
                || o instanceof Optional<?>;
    }

    private void compare(Object sent, Object received, String path) {
        if (sent == null || received == null) {
            if (sent != received) {
                throw differ(path, "sent " + show(sent) + ", received " + show(received));
            }
            return;
        }
        if (sent.getClass() != received.getClass()) {
            throw differ(
                    path,
                    "sent a " + sent.getClass().getName() + ", received a "
                            + received.getClass().getName() + " (" + show(received) + ")");
        }
        if (!isValue(sent)) {
            Object before = sentToReceived.get(sent);
            if (before != null) {
                if (before != received) {
                    throw differ(
                            path,
                            "the sender's " + show(sent) + " here is the object it has at an earlier place;"
                                    + " the receiver's is another object (a shared reference was not kept)");
                }
                return;
            }
            Object other = receivedToSent.get(received);
            if (other != null) {
                throw differ(
                        path,
                        "the receiver's " + show(received) + " here is the object it has at an earlier "
                                + "place; the sender had two distinct objects there");
            }
            sentToReceived.put(sent, received);
            receivedToSent.put(received, sent);
        }
        switch (sent) {
            case GeneratedModel m -> fields(m, (GeneratedModel) received, path);
            case NdArray a -> ndArray(a, (NdArray) received, path);
            case Optional<?> o -> optional(o, (Optional<?>) received, path);
            case List<?> l -> ordered(l, (List<?>) received, path);
            case ArrayDeque<?> q -> ordered(q, (ArrayDeque<?>) received, path);
            case Set<?> s -> set(s, (Set<?>) received, path);
            case Map<?, ?> m -> map(m, (Map<?, ?>) received, path);
            default -> {
                if (sent.getClass().isArray()
                        && sent.getClass().getComponentType().isPrimitive()) {
                    primitiveArray(sent, received, path);
                } else if (isValue(sent)) {
                    if (!sent.equals(received)) {
                        throw differ(path, "sent " + show(sent) + ", received " + show(received));
                    }
                } else {
                    throw differ(path, "no comparison for " + sent.getClass().getName());
                }
            }
        }
    }

    private void fields(GeneratedModel sent, GeneratedModel received, String path) {
        for (Field f : sent.getClass().getDeclaredFields()) {
            if (Modifier.isStatic(f.getModifiers())) {
                continue;
            }
            f.setAccessible(true);
            Object s;
            Object r;
            try {
                s = f.get(sent);
                r = f.get(received);
            } catch (IllegalAccessException e) {
                throw new IllegalStateException(e);
            }
            String at = path + "." + f.getName();
            if (ModelShapes.isTransient(f)) {
                Object expected = f.getType().isPrimitive() ? Array.get(Array.newInstance(f.getType(), 1), 0) : null;
                if (!java.util.Objects.equals(expected, r)) {
                    throw differ(
                            at,
                            "a transient field must not travel: expected the default " + expected + ", received "
                                    + show(r));
                }
                continue;
            }
            compare(s, r, at);
        }
    }

    private static void ndArray(NdArray sent, NdArray received, String path) {
        if (sent.dtype() != received.dtype()
                || sent.order() != received.order()
                || !Arrays.equals(sent.shape(), received.shape())
                || sent.kind() != received.kind()) {
            throw differ(path, "sent " + sent + ", received " + received);
        }
        if (!sent.contentEquals(received)) {
            throw differ(path, "the contents of " + sent + " differ");
        }
    }

    private void optional(Optional<?> sent, Optional<?> received, String path) {
        if (sent.isPresent() != received.isPresent()) {
            throw differ(path, "sent " + show(sent) + ", received " + show(received));
        }
        if (sent.isPresent()) {
            compare(sent.get(), received.get(), path + ".get()");
        }
    }

    private void ordered(Collection<?> sent, Collection<?> received, String path) {
        if (sent.size() != received.size()) {
            throw differ(path, "sent " + sent.size() + " elements, received " + received.size());
        }
        Iterator<?> r = received.iterator();
        int i = 0;
        for (Object s : sent) {
            compare(s, r.next(), path + "[" + i++ + "]");
        }
    }

    /** Set elements are values (strings, boxed numbers, enum constants): compared by equality, and in order. */
    private void set(Set<?> sent, Set<?> received, String path) {
        if (!sent.equals(received)) {
            throw differ(path, "sent " + show(sent) + ", received " + show(received));
        }
        if (isOrdered(sent) && !new ArrayList<>(sent).equals(new ArrayList<>(received))) {
            throw differ(path, "sent the order " + sent + ", received " + received);
        }
        if (sent instanceof SortedSet<?> s && s.comparator() != ((SortedSet<?>) received).comparator()) {
            throw differ(
                    path, "sent comparator " + s.comparator() + ", received " + ((SortedSet<?>) received).comparator());
        }
        if (sent instanceof EnumSet<?> s) {
            // the complement reveals the element type, which an empty set does not show otherwise
            if (!EnumSet.complementOf(enumSet(s)).equals(EnumSet.complementOf(enumSet(received)))) {
                throw differ(path, "an EnumSet of another element type");
            }
        }
    }

    /** The set as the {@code EnumSet<Color>} it claims to be (what its complement then shows is its real type). */
    @SuppressWarnings("unchecked")
    private static EnumSet<Color> enumSet(Set<?> s) {
        return (EnumSet<Color>) s;
    }

    private static boolean isOrdered(Object collection) {
        return collection instanceof LinkedHashSet<?>
                || collection instanceof SortedSet<?>
                || collection instanceof EnumSet<?>
                || collection instanceof LinkedHashMap<?, ?>
                || collection instanceof SortedMap<?, ?>
                || collection instanceof EnumMap<?, ?>;
    }

    /** Keys are values; the values under them are compared deeply. */
    private void map(Map<?, ?> sent, Map<?, ?> received, String path) {
        if (!sent.keySet().equals(received.keySet())) {
            throw differ(path, "sent the keys " + sent.keySet() + ", received " + received.keySet());
        }
        if (isOrdered(sent) && !new ArrayList<>(sent.keySet()).equals(new ArrayList<>(received.keySet()))) {
            throw differ(path, "sent the key order " + sent.keySet() + ", received " + received.keySet());
        }
        if (sent instanceof SortedMap<?, ?> s && s.comparator() != ((SortedMap<?, ?>) received).comparator()) {
            throw differ(
                    path,
                    "sent comparator " + s.comparator() + ", received " + ((SortedMap<?, ?>) received).comparator());
        }
        if (received instanceof EnumMap<?, ?> e && !holdsColors(e)) {
            throw differ(path, "an EnumMap whose key type is not " + Color.class.getName());
        }
        for (Map.Entry<?, ?> e : sent.entrySet()) {
            compare(e.getValue(), received.get(e.getKey()), path + "[" + e.getKey() + "]");
        }
    }

    /** Whether {@code map}'s key type is {@link Color}: a copy takes a {@code Color} key only then. */
    @SuppressWarnings("unchecked")
    private static boolean holdsColors(EnumMap<?, ?> map) {
        EnumMap<Color, Object> copy = new EnumMap<>((EnumMap<Color, Object>) map);
        try {
            copy.put(Color.RED, Boolean.TRUE);
            return true;
        } catch (ClassCastException e) {
            return false;
        }
    }

    private static void primitiveArray(Object sent, Object received, String path) {
        int n = Array.getLength(sent);
        if (n != Array.getLength(received)) {
            throw differ(path, "sent " + show(sent) + ", received " + show(received));
        }
        int at = switch (sent) {
            case boolean[] s -> Arrays.mismatch(s, (boolean[]) received);
            case byte[] s -> Arrays.mismatch(s, (byte[]) received);
            case short[] s -> Arrays.mismatch(s, (short[]) received);
            case char[] s -> Arrays.mismatch(s, (char[]) received);
            case int[] s -> Arrays.mismatch(s, (int[]) received);
            case long[] s -> Arrays.mismatch(s, (long[]) received);
            case float[] s -> firstRawDifference(s, (float[]) received);
            case double[] s -> firstRawDifference(s, (double[]) received);
            default -> throw new IllegalArgumentException(sent.getClass().getName());
        };
        if (at >= 0) {
            throw differ(
                    path + "[" + at + "]",
                    "sent " + Array.get(sent, at) + ", received " + Array.get(received, at) + " (" + show(sent) + ")");
        }
    }

    private static int firstRawDifference(float[] a, float[] b) {
        for (int i = 0; i < a.length; i++) {
            if (Float.floatToRawIntBits(a[i]) != Float.floatToRawIntBits(b[i])) {
                return i;
            }
        }
        return -1;
    }

    private static int firstRawDifference(double[] a, double[] b) {
        for (int i = 0; i < a.length; i++) {
            if (Double.doubleToRawLongBits(a[i]) != Double.doubleToRawLongBits(b[i])) {
                return i;
            }
        }
        return -1;
    }
}
