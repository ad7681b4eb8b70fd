package io.cuwire.serialize;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.LinkedList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * The closed set of JDK collection and map classes that travel as {@code list}, {@code set} and {@code map} header
 * nodes, each rebuilt by the decoder as the same class or, for the immutable ones, as an immutable collection of the
 * same family: {@code List.of} and kin through {@code List.copyOf} (so the same JDK classes), the
 * {@code Collections.unmodifiable*} wrappers as unmodifiable wrappers over a copy in the sender's order. The node's
 * {@code "k"} entry names the kind; it is absent for the node's default kind ({@code ArrayList},
 * {@code LinkedHashSet}, {@code LinkedHashMap}), which is what headers written before kinds existed decode as.
 *
 * <p>Classes are matched exactly (a subclass of {@code ArrayList} is not an {@code ArrayList} here: the decoder could
 * not rebuild it), except {@code EnumSet}, whose implementations are the JDK's own.
 */
enum CollectionKind {
    ARRAY_LIST(Node.LIST, null, ArrayList.class),
    LINKED_LIST(Node.LIST, "linked", LinkedList.class),
    ARRAY_DEQUE(Node.LIST, "deque", ArrayDeque.class),
    /** {@code Arrays.asList}: fixed size, elements settable. */
    FIXED_LIST(Node.LIST, "fixed", Arrays.asList().getClass()),
    /** {@code List.of}, {@code List.copyOf}, {@code Stream.toList}: rebuilt as {@code List.copyOf} (nulls, which only
     * {@code Stream.toList} holds: as an unmodifiable list). */
    IMMUTABLE_LIST(
            Node.LIST,
            "imm",
            List.of().getClass(),
            List.of(1).getClass(),
            List.of(1, 2, 3).subList(0, 1).getClass()),
    /** {@code Collections.unmodifiableList}, {@code emptyList}, {@code singletonList} and kin: an unmodifiable list. */
    UNMODIFIABLE_LIST(
            Node.LIST,
            "unmod",
            Collections.emptyList().getClass(),
            Collections.singletonList(1).getClass(),
            Collections.unmodifiableList(new ArrayList<>()).getClass(),
            Collections.unmodifiableList(new LinkedList<>()).getClass(),
            Collections.unmodifiableCollection(new ArrayList<>()).getClass()),
    LINKED_HASH_SET(Node.SET, null, LinkedHashSet.class),
    HASH_SET(Node.SET, "hash", HashSet.class),
    /** Natural order, or a comparator of a registered type ({@code "cmp"}). */
    TREE_SET(Node.SET, "tree", TreeSet.class),
    /** The element type travels by its registered name ({@code "n"}), so that an empty set keeps it. */
    ENUM_SET(Node.SET, "enum"),
    /** {@code Set.of}, {@code Set.copyOf}: rebuilt as {@code Set.copyOf}. */
    IMMUTABLE_SET(Node.SET, "imm", Set.of().getClass(), Set.of(1).getClass()),
    /** {@code Collections.unmodifiableSet}, {@code emptySet}, {@code singleton}: an unmodifiable set, in order. */
    UNMODIFIABLE_SET(
            Node.SET,
            "unmod",
            Collections.emptySet().getClass(),
            Collections.singleton(1).getClass(),
            Collections.unmodifiableSet(new HashSet<>()).getClass()),
    LINKED_HASH_MAP(Node.MAP, null, LinkedHashMap.class),
    HASH_MAP(Node.MAP, "hash", HashMap.class),
    /** Natural order, or a comparator of a registered type ({@code "cmp"}). */
    TREE_MAP(Node.MAP, "tree", TreeMap.class),
    /** No {@code null} keys or values. */
    CONCURRENT_HASH_MAP(Node.MAP, "concurrent", ConcurrentHashMap.class),
    /** The key type travels by its registered name ({@code "n"}), so that an empty map keeps it. */
    ENUM_MAP(Node.MAP, "enum", EnumMap.class),
    /** {@code Map.of}, {@code Map.copyOf}: rebuilt as {@code Map.copyOf}. */
    IMMUTABLE_MAP(Node.MAP, "imm", Map.of().getClass(), Map.of(1, 1).getClass()),
    /** {@code Collections.unmodifiableMap}, {@code emptyMap}, {@code singletonMap}: an unmodifiable map, in order. */
    UNMODIFIABLE_MAP(
            Node.MAP,
            "unmod",
            Collections.emptyMap().getClass(),
            Collections.singletonMap(1, 1).getClass(),
            Collections.unmodifiableMap(new HashMap<>()).getClass());

    /** The header node a kind travels as. */
    enum Node {
        LIST("list"),
        SET("set"),
        MAP("map");

        private final String tag;

        Node(String tag) {
            this.tag = tag;
        }

        String tag() {
            return tag;
        }
    }

    private static final Map<Class<?>, CollectionKind> BY_CLASS = Stream.of(values())
            .flatMap(k -> k.classes.stream().map(c -> Map.entry(c, k)))
            .collect(Collectors.toUnmodifiableMap(Map.Entry::getKey, Map.Entry::getValue));

    private final Node node;
    private final String wireName;
    private final List<Class<?>> classes;

    CollectionKind(Node node, String wireName, Class<?>... classes) {
        this.node = node;
        this.wireName = wireName;
        this.classes = List.of(classes);
    }

    Node node() {
        return node;
    }

    /** The {@code "k"} entry, or {@code null} for the node's default kind. */
    String wireName() {
        return wireName;
    }

    /** The kind of exactly {@code type}, or {@code null} if the decoder could not rebuild it as such. */
    static CollectionKind of(Class<?> type) {
        CollectionKind kind = BY_CLASS.get(type);
        return kind == null && EnumSet.class.isAssignableFrom(type) ? ENUM_SET : kind;
    }

    /** The kind a node's {@code "k"} entry names; {@code null} for an unknown name. */
    static CollectionKind of(Node node, String wireName) {
        for (CollectionKind k : values()) {
            if (k.node == node && Objects.equals(k.wireName, wireName)) {
                return k;
            }
        }
        return null;
    }

    /** What the sender can tell a user who sends a collection outside this set. */
    static String supported() {
        return "ArrayList, LinkedList, ArrayDeque, Arrays.asList, HashSet, LinkedHashSet, TreeSet, EnumSet, HashMap, "
                + "LinkedHashMap, TreeMap, ConcurrentHashMap, EnumMap, and the immutable List.of, Set.of, Map.of, "
                + "List.copyOf, Stream.toList, Collections.unmodifiableList/Set/Map/Collection, empty* and singleton*";
    }
}
