package io.cuwire.serialize;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.Buffer;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.MemoryKind;
import io.cuwire.memory.NdArray;
import io.cuwire.serialize.Models.Solver;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.LinkedList;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Optional;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.Vector;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The collection and map classes users put in fields come back as those classes (the immutable ones immutable), in
 * both array families; the ones a receiver could not rebuild are refused at the sender.
 */
class GenericSerializerCollectionsTest {
    /** Fields declared as the concrete classes, so that a receiver that rebuilt another class could not set them. */
    static final class Shelf extends Models.Estimator {
        ArrayList<Object> arrayList;
        LinkedList<Object> linkedList;
        ArrayDeque<Object> deque;
        List<Object> list;
        Collection<Object> collection;
        HashSet<String> hashSet;
        LinkedHashSet<String> linkedHashSet;
        TreeSet<String> treeSet;
        SortedSet<String> sortedSet;
        EnumSet<Solver> enumSet;
        Set<Object> set;
        HashMap<String, Object> hashMap;
        LinkedHashMap<String, Object> linkedHashMap;
        TreeMap<String, Object> treeMap;
        NavigableMap<String, Object> navigableMap;
        ConcurrentHashMap<String, Object> concurrentMap;
        EnumMap<Solver, Object> enumMap;
        Map<Object, Object> map;
        Optional<Object> optional;
        Object anything;
    }

    /** A comparator of a registered type: it travels with the trees it orders. */
    static final class ByLength implements Comparator<String> {
        boolean descending;

        ByLength() {}

        ByLength(boolean descending) {
            this.descending = descending;
        }

        @Override
        public int compare(String a, String b) {
            int c = a.length() != b.length() ? Integer.compare(a.length(), b.length()) : a.compareTo(b);
            return descending ? -c : c;
        }
    }

    /** A user's list type with its own registered serializer. */
    static final class Route extends ArrayList<String> {
        private static final long serialVersionUID = 1L;

        static final Serializer<Route> SERIALIZER = new Serializer<>() {
            @Override
            public void write(WriteContext out, Route value) {
                out.put("stops", List.copyOf(value));
            }

            @Override
            public Route read(ReadContext in) {
                Route r = new Route();
                for (Object stop : in.getList("stops")) {
                    r.add((String) stop);
                }
                return r;
            }
        };
    }

    /** A user's list type nobody registered. */
    static final class Unregistered extends ArrayList<String> {
        private static final long serialVersionUID = 1L;
    }

    record Catalog(
            List<String> names,
            TreeMap<String, Long> counts,
            EnumSet<Solver> solvers,
            Optional<String> note,
            Map<Solver, List<String>> bySolver) {}

    /** An enum nobody registered. */
    enum Colour {
        RED,
        GREEN
    }

    /** A registered enum without constants: an EnumSet of it has nothing that names its type. */
    enum Nothing {}

    private BufferAllocator<DeviceBuffer> senderDevice;
    private BufferAllocator<DeviceBuffer> device;
    private BufferAllocator<HostBuffer> host;
    private DecodeTarget target;
    private TypeRegistry registry;
    private final List<NdArray> arrays = new ArrayList<>();

    @BeforeEach
    void open() {
        senderDevice = Devices.get(0).newAllocator("collections-sender", BufferAllocator.UNLIMITED);
        device = Devices.get(0).newAllocator("collections-device", BufferAllocator.UNLIMITED);
        host = BufferAllocator.host("collections-host", BufferAllocator.UNLIMITED);
        target = new DecodeTarget(device, host, Limits.DEFAULT);
        registry = Models.registry()
                .register(Shelf.class, "test.Shelf")
                .register(Catalog.class, "test.Catalog")
                .registerGeneric(ByLength.class, Family.CUDA, Family.HOST)
                .register(ByLength.class, "test.ByLength");
    }

    @AfterEach
    void close() {
        arrays.forEach(NdArray::close);
        for (BufferAllocator<?> a : List.of(senderDevice, device, host)) {
            a.close();
            assertEquals(0, a.allocatedBytes(), a.name());
        }
    }

    /** A device array on the sender, closed after the test. */
    private NdArray array(double... values) {
        NdArray a = NdArray.fromArray(senderDevice, values, values.length);
        arrays.add(a);
        return a;
    }

    /** A received device array, checked against what was sent and closed after the test. */
    private void assertArray(NdArray sent, Object received) {
        NdArray a = (NdArray) received;
        arrays.add(a);
        assertEquals(MemoryKind.DEVICE, a.kind(), "rebuilt on the receiver's device");
        assertTrue(sent.contentEquals(a), sent + " vs " + a);
    }

    /**
     * Serializes, encodes and parses the header, moves the frames into new memory of their kind, and decodes; every
     * frame is a device frame in the {@code cuda} family and a host copy in {@code host}.
     */
    private Object roundTrip(Object value, Family family) {
        try (Serialized s = registry.serialize(value, family)) {
            MemoryKind expected = family == Family.CUDA ? MemoryKind.DEVICE : MemoryKind.HOST;
            for (Frame f : s.frames()) {
                assertEquals(expected, f.kind(), "frame kind in the " + family.wireName() + " family");
            }
            Serialized.Header header = Serialized.parseHeader(s.encodeHeader(), Limits.DEFAULT);
            List<Buffer> received = new ArrayList<>();
            for (Frame f : s.frames()) {
                Buffer b = f.kind() == MemoryKind.DEVICE ? device.allocate(f.length()) : host.allocate(f.length());
                CopyEngine.copy(f.buffer(), b);
                received.add(b);
            }
            try (Serialized wire = Serialized.received(header, received)) {
                return registry.deserialize(wire, target);
            }
        }
    }

    private Shelf roundTrip(Shelf shelf, Family family) {
        return (Shelf) roundTrip((Object) shelf, family);
    }

    private static void assertImmutable(Collection<Object> c) {
        assertThrows(UnsupportedOperationException.class, () -> c.add("more"));
        assertThrows(UnsupportedOperationException.class, c::clear);
    }

    private static void assertImmutable(Map<Object, Object> m) {
        assertThrows(UnsupportedOperationException.class, () -> m.put("more", "x"));
        assertThrows(UnsupportedOperationException.class, m::clear);
    }

    @ParameterizedTest
    @EnumSource(
            value = Family.class,
            names = {"CUDA", "HOST"})
    void shouldRebuildAnArrayListFieldAsAnArrayList(Family family) {
        Shelf shelf = new Shelf();
        NdArray a = array(1, 2);
        shelf.arrayList = new ArrayList<>(Arrays.asList("b", null, 3, a));
        Shelf after = roundTrip(shelf, family);
        assertEquals(ArrayList.class, after.arrayList.getClass());
        assertEquals(Arrays.asList("b", null, 3), after.arrayList.subList(0, 3));
        assertArray(a, after.arrayList.get(3));
    }

    @ParameterizedTest
    @EnumSource(
            value = Family.class,
            names = {"CUDA", "HOST"})
    void shouldRebuildALinkedListFieldAsALinkedList(Family family) {
        Shelf shelf = new Shelf();
        NdArray a = array(3);
        shelf.linkedList = new LinkedList<>(List.of("z", "a", a));
        Shelf after = roundTrip(shelf, family);
        assertEquals(LinkedList.class, after.linkedList.getClass());
        assertEquals(List.of("z", "a"), after.linkedList.subList(0, 2));
        assertArray(a, after.linkedList.getLast());
    }

    @ParameterizedTest
    @EnumSource(
            value = Family.class,
            names = {"CUDA", "HOST"})
    void shouldRebuildAnArrayDequeFieldAsAnArrayDequeInOrder(Family family) {
        Shelf shelf = new Shelf();
        NdArray a = array(4, 5);
        shelf.deque = new ArrayDeque<>();
        shelf.deque.addFirst("second");
        shelf.deque.addFirst("first");
        shelf.deque.addLast(a);
        Shelf after = roundTrip(shelf, family);
        assertEquals(ArrayDeque.class, after.deque.getClass());
        assertEquals("first", after.deque.pollFirst());
        assertEquals("second", after.deque.pollFirst());
        assertArray(a, after.deque.pollFirst());
        assertTrue(after.deque.isEmpty());
    }

    @ParameterizedTest
    @EnumSource(
            value = Family.class,
            names = {"CUDA", "HOST"})
    void shouldRebuildArraysAsListAsAFixedSizeList(Family family) {
        Shelf shelf = new Shelf();
        NdArray a = array(6);
        shelf.list = Arrays.asList("x", null, a);
        Shelf after = roundTrip(shelf, family);
        assertEquals(Arrays.asList().getClass(), after.list.getClass());
        assertEquals(Arrays.asList("x", null), after.list.subList(0, 2));
        assertArray(a, after.list.get(2));
        after.list.set(0, "settable");
        assertEquals("settable", after.list.get(0));
        assertThrows(UnsupportedOperationException.class, () -> after.list.add("no"));
    }

    @ParameterizedTest
    @EnumSource(
            value = Family.class,
            names = {"CUDA", "HOST"})
    void shouldRebuildAHashSetFieldAsAHashSet(Family family) {
        Shelf shelf = new Shelf();
        shelf.hashSet = new HashSet<>(List.of("a", "b", "c"));
        Shelf after = roundTrip(shelf, family);
        assertEquals(HashSet.class, after.hashSet.getClass());
        assertEquals(Set.of("a", "b", "c"), after.hashSet);
    }

    @ParameterizedTest
    @EnumSource(
            value = Family.class,
            names = {"CUDA", "HOST"})
    void shouldRebuildALinkedHashSetFieldInInsertionOrder(Family family) {
        Shelf shelf = new Shelf();
        shelf.linkedHashSet = new LinkedHashSet<>(List.of("z", "a", "m"));
        Shelf after = roundTrip(shelf, family);
        assertEquals(LinkedHashSet.class, after.linkedHashSet.getClass());
        assertEquals(List.of("z", "a", "m"), List.copyOf(after.linkedHashSet));
    }

    @ParameterizedTest
    @EnumSource(
            value = Family.class,
            names = {"CUDA", "HOST"})
    void shouldRebuildATreeSetFieldInNaturalOrder(Family family) {
        Shelf shelf = new Shelf();
        shelf.treeSet = new TreeSet<>(List.of("pear", "apple", "fig"));
        Shelf after = roundTrip(shelf, family);
        assertEquals(TreeSet.class, after.treeSet.getClass());
        assertNull(after.treeSet.comparator());
        assertEquals(List.of("apple", "fig", "pear"), List.copyOf(after.treeSet));
        after.treeSet.add("banana");
        assertEquals("banana", after.treeSet.higher("apple"), "still ordered after the round trip");
    }

    @ParameterizedTest
    @EnumSource(
            value = Family.class,
            names = {"CUDA", "HOST"})
    void shouldRebuildATreeSetWithARegisteredComparatorOrderedByIt(Family family) {
        Shelf shelf = new Shelf();
        shelf.sortedSet = new TreeSet<>(new ByLength(true));
        shelf.sortedSet.addAll(List.of("fig", "banana", "kiwi"));
        Shelf after = roundTrip(shelf, family);
        assertEquals(TreeSet.class, after.sortedSet.getClass());
        ByLength comparator = (ByLength) after.sortedSet.comparator();
        assertTrue(comparator.descending, "the comparator's own fields travel");
        assertEquals(List.of("banana", "kiwi", "fig"), List.copyOf(after.sortedSet));
        after.sortedSet.add("plum");
        assertEquals(List.of("banana", "plum", "kiwi", "fig"), List.copyOf(after.sortedSet));
    }

    @ParameterizedTest
    @EnumSource(
            value = Family.class,
            names = {"CUDA", "HOST"})
    void shouldRebuildATreeMapFieldAsATreeMap(Family family) {
        Shelf shelf = new Shelf();
        NdArray a = array(7, 8);
        shelf.treeMap = new TreeMap<>(Map.of("b", 2L, "a", a, "c", "three"));
        Shelf after = roundTrip(shelf, family);
        assertEquals(TreeMap.class, after.treeMap.getClass());
        assertNull(after.treeMap.comparator());
        assertEquals(List.of("a", "b", "c"), List.copyOf(after.treeMap.keySet()));
        assertArray(a, after.treeMap.get("a"));
        assertEquals(2L, after.treeMap.get("b"));
        assertEquals("three", after.treeMap.get("c"));
    }

    @ParameterizedTest
    @EnumSource(
            value = Family.class,
            names = {"CUDA", "HOST"})
    void shouldRebuildATreeMapWithARegisteredComparatorAndShareThatComparator(Family family) {
        Shelf shelf = new Shelf();
        ByLength byLength = new ByLength(false);
        NdArray a = array(9);
        shelf.navigableMap = new TreeMap<>(byLength);
        shelf.navigableMap.put("ccc", a);
        shelf.navigableMap.put("a", 1L);
        shelf.navigableMap.put("bb", 2L);
        shelf.sortedSet = new TreeSet<>(byLength);
        shelf.sortedSet.addAll(List.of("zz", "y"));
        Shelf after = roundTrip(shelf, family);
        assertEquals(TreeMap.class, after.navigableMap.getClass());
        assertEquals(List.of("a", "bb", "ccc"), List.copyOf(after.navigableMap.keySet()));
        assertArray(a, after.navigableMap.get("ccc"));
        assertSame(
                after.navigableMap.comparator(),
                after.sortedSet.comparator(),
                "one comparator ordering two trees is one comparator after the round trip");
        assertEquals(List.of("y", "zz"), List.copyOf(after.sortedSet));
    }

    @ParameterizedTest
    @EnumSource(
            value = Family.class,
            names = {"CUDA", "HOST"})
    void shouldRebuildAHashMapFieldAsAHashMap(Family family) {
        Shelf shelf = new Shelf();
        NdArray a = array(10, 11);
        shelf.hashMap = new HashMap<>();
        shelf.hashMap.put("array", a);
        shelf.hashMap.put("nil", null);
        shelf.hashMap.put("n", 5);
        Shelf after = roundTrip(shelf, family);
        assertEquals(HashMap.class, after.hashMap.getClass());
        assertEquals(Set.of("array", "nil", "n"), after.hashMap.keySet());
        assertNull(after.hashMap.get("nil"));
        assertEquals(5, after.hashMap.get("n"));
        assertArray(a, after.hashMap.get("array"));
    }

    @ParameterizedTest
    @EnumSource(
            value = Family.class,
            names = {"CUDA", "HOST"})
    void shouldRebuildALinkedHashMapFieldInInsertionOrder(Family family) {
        Shelf shelf = new Shelf();
        NdArray a = array(12);
        shelf.linkedHashMap = new LinkedHashMap<>();
        shelf.linkedHashMap.put("z", 1L);
        shelf.linkedHashMap.put("a", a);
        shelf.linkedHashMap.put("m", null);
        Shelf after = roundTrip(shelf, family);
        assertEquals(LinkedHashMap.class, after.linkedHashMap.getClass());
        assertEquals(List.of("z", "a", "m"), List.copyOf(after.linkedHashMap.keySet()));
        assertArray(a, after.linkedHashMap.get("a"));
    }

    @ParameterizedTest
    @EnumSource(
            value = Family.class,
            names = {"CUDA", "HOST"})
    void shouldRebuildAConcurrentHashMapFieldAsAConcurrentHashMap(Family family) {
        Shelf shelf = new Shelf();
        NdArray a = array(13);
        shelf.concurrentMap = new ConcurrentHashMap<>(Map.of("array", a, "n", 2L));
        Shelf after = roundTrip(shelf, family);
        assertEquals(ConcurrentHashMap.class, after.concurrentMap.getClass());
        assertEquals(Set.of("array", "n"), after.concurrentMap.keySet());
        assertEquals(2L, after.concurrentMap.get("n"));
        assertArray(a, after.concurrentMap.get("array"));
    }

    @ParameterizedTest
    @EnumSource(
            value = Family.class,
            names = {"CUDA", "HOST"})
    void shouldRebuildAnEnumMapFieldWithItsKeyTypeEvenWhenEmpty(Family family) {
        Shelf shelf = new Shelf();
        NdArray a = array(14);
        shelf.enumMap = new EnumMap<>(Solver.class);
        shelf.enumMap.put(Solver.NEWTON, a);
        shelf.enumMap.put(Solver.LBFGS, "first");
        shelf.anything = new EnumMap<Solver, Object>(Solver.class);
        Shelf after = roundTrip(shelf, family);
        assertEquals(EnumMap.class, after.enumMap.getClass());
        assertEquals(List.of(Solver.LBFGS, Solver.NEWTON), List.copyOf(after.enumMap.keySet()));
        assertEquals("first", after.enumMap.get(Solver.LBFGS));
        assertArray(a, after.enumMap.get(Solver.NEWTON));
        @SuppressWarnings("unchecked")
        EnumMap<Solver, Object> empty = (EnumMap<Solver, Object>) after.anything;
        assertTrue(empty.isEmpty());
        empty.put(Solver.NEWTON, "x");
        assertEquals(Map.of(Solver.NEWTON, "x"), empty);
        assertThrows(ClassCastException.class, () -> forcePut(empty, Colour.RED), "the key type came back");
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static void forcePut(Map map, Object key) {
        map.put(key, "x");
    }

    @ParameterizedTest
    @EnumSource(
            value = Family.class,
            names = {"CUDA", "HOST"})
    void shouldRebuildAnEnumSetFieldWithItsElementTypeEvenWhenEmpty(Family family) {
        Shelf shelf = new Shelf();
        shelf.enumSet = EnumSet.of(Solver.NEWTON);
        shelf.set = new HashSet<>(List.of(EnumSet.noneOf(Solver.class)));
        Shelf after = roundTrip(shelf, family);
        assertTrue(after.enumSet instanceof EnumSet<?>, after.enumSet.getClass().getName());
        assertEquals(EnumSet.of(Solver.NEWTON), after.enumSet);
        EnumSet<?> empty = (EnumSet<?>) after.set.iterator().next();
        assertTrue(empty.isEmpty());
        assertEquals(EnumSet.allOf(Solver.class), EnumSet.complementOf(empty), "the element type came back");
    }

    @ParameterizedTest
    @EnumSource(
            value = Family.class,
            names = {"CUDA", "HOST"})
    void shouldRebuildImmutableListsAsImmutableListsInOrder(Family family) {
        Shelf shelf = new Shelf();
        NdArray a = array(15);
        List<Object> nullable = Stream.<Object>of("s", null).toList();
        List<Object> sources = List.of(
                List.of("a", "b", "c"),
                List.of(),
                List.of(a),
                List.copyOf(List.of("x", "y")),
                nullable,
                List.of(1, 2, 3, 4).subList(1, 3),
                Collections.unmodifiableList(new ArrayList<>(List.of("u"))),
                Collections.unmodifiableList(new LinkedList<>(List.of("v"))),
                Collections.emptyList(),
                Collections.singletonList("one"));
        shelf.list = new ArrayList<>(sources);
        shelf.collection = Collections.unmodifiableCollection(new ArrayList<>(List.of("c1", "c2")));
        Shelf after = roundTrip(shelf, family);
        assertEquals(sources.size(), after.list.size());
        for (int i = 0; i < sources.size(); i++) {
            @SuppressWarnings("unchecked")
            List<Object> got = (List<Object>) after.list.get(i);
            assertImmutable(got);
            if (i != 2) {
                assertEquals(sources.get(i), got, "list " + i);
            }
        }
        @SuppressWarnings("unchecked")
        List<Object> withArray = (List<Object>) after.list.get(2);
        assertArray(a, withArray.get(0));
        assertImmutable(after.collection);
        assertEquals(List.of("c1", "c2"), List.copyOf(after.collection));
    }

    @ParameterizedTest
    @EnumSource(
            value = Family.class,
            names = {"CUDA", "HOST"})
    void shouldRebuildImmutableSetsAsImmutableSets(Family family) {
        Shelf shelf = new Shelf();
        Set<String> ordered = new LinkedHashSet<>(List.of("z", "y", "x"));
        List<Set<?>> sources = List.of(
                Set.of("a", "b", "c"),
                Set.of(),
                Set.of("one"),
                Set.copyOf(List.of("p", "q")),
                Collections.unmodifiableSet(ordered),
                Collections.emptySet(),
                Collections.singleton("s"));
        shelf.map = new HashMap<>();
        for (int i = 0; i < sources.size(); i++) {
            shelf.map.put((long) i, sources.get(i));
        }
        Shelf after = roundTrip(shelf, family);
        for (int i = 0; i < sources.size(); i++) {
            @SuppressWarnings("unchecked")
            Set<Object> got = (Set<Object>) after.map.get((long) i);
            assertImmutable(got);
            assertEquals(sources.get(i), got, "set " + i);
        }
        assertEquals(List.of("z", "y", "x"), List.copyOf((Set<?>) after.map.get(4L)), "the sender's order is kept");
    }

    @ParameterizedTest
    @EnumSource(
            value = Family.class,
            names = {"CUDA", "HOST"})
    void shouldRebuildImmutableMapsAsImmutableMaps(Family family) {
        Shelf shelf = new Shelf();
        NdArray a = array(16, 17);
        Map<String, Object> ordered = new LinkedHashMap<>();
        ordered.put("z", 1L);
        ordered.put("a", null);
        List<Map<?, ?>> sources = List.of(
                Map.of("k", "v", "n", 2L),
                Map.of(),
                Map.of("one", 1L),
                Map.copyOf(Map.of("p", "q")),
                Collections.unmodifiableMap(ordered),
                Collections.emptyMap(),
                Collections.singletonMap("s", "t"));
        shelf.list = new ArrayList<>(sources);
        shelf.map = Map.of("array", a);
        Shelf after = roundTrip(shelf, family);
        for (int i = 0; i < sources.size(); i++) {
            @SuppressWarnings("unchecked")
            Map<Object, Object> got = (Map<Object, Object>) after.list.get(i);
            assertImmutable(got);
            assertEquals(sources.get(i), got, "map " + i);
        }
        assertEquals(List.of("z", "a"), List.copyOf(((Map<?, ?>) after.list.get(4)).keySet()));
        assertImmutable(after.map);
        assertArray(a, after.map.get("array"));
    }

    @ParameterizedTest
    @EnumSource(
            value = Family.class,
            names = {"CUDA", "HOST"})
    void shouldKeepOptionalFieldsPresentAndEmpty(Family family) {
        Shelf shelf = new Shelf();
        NdArray a = array(18);
        shelf.optional = Optional.of(a);
        shelf.anything = Optional.empty();
        shelf.list = List.of(Optional.of(List.of("in", "optional")));
        Shelf after = roundTrip(shelf, family);
        assertArray(a, after.optional.orElseThrow());
        assertEquals(Optional.empty(), after.anything);
        assertEquals(List.of(Optional.of(List.of("in", "optional"))), after.list);
    }

    @ParameterizedTest
    @EnumSource(
            value = Family.class,
            names = {"CUDA", "HOST"})
    void shouldRebuildARecordHoldingCollectionsThroughItsCanonicalConstructor(Family family) {
        NdArray a = array(19);
        Map<Solver, List<String>> bySolver = new EnumMap<>(Solver.class);
        bySolver.put(Solver.LBFGS, List.of("fast"));
        Catalog before = new Catalog(
                List.of("a", "b"),
                new TreeMap<>(Map.of("y", 2L, "x", 1L)),
                EnumSet.allOf(Solver.class),
                Optional.of("note"),
                bySolver);
        Shelf shelf = new Shelf();
        shelf.anything = before;
        shelf.list = new ArrayList<>(List.of(a));
        Shelf received = roundTrip(shelf, family);
        assertArray(a, received.list.get(0));
        Catalog after = (Catalog) received.anything;
        assertEquals(before, after);
        assertImmutable(castList(after.names()));
        assertEquals(TreeMap.class, after.counts().getClass());
        assertEquals(List.of("x", "y"), List.copyOf(after.counts().keySet()));
        assertEquals(EnumMap.class, after.bySolver().getClass());
    }

    @SuppressWarnings("unchecked")
    private static List<Object> castList(List<?> list) {
        return (List<Object>) list;
    }

    @ParameterizedTest
    @EnumSource(
            value = Family.class,
            names = {"CUDA", "HOST"})
    void shouldKeepSharedReferencesBetweenCollections(Family family) {
        Shelf shelf = new Shelf();
        NdArray a = array(20);
        LinkedList<Object> shared = new LinkedList<>(List.of("s", a));
        List<String> sharedImmutable = List.of("i");
        TreeMap<String, Object> sharedTree = new TreeMap<>(Map.of("k", sharedImmutable));
        shelf.linkedList = shared;
        shelf.hashMap = new HashMap<>(Map.of("same", shared, "tree", sharedTree));
        shelf.treeMap = sharedTree;
        shelf.arrayList = new ArrayList<>(List.of(sharedImmutable, sharedImmutable));
        shelf.set = new HashSet<>(List.of(a));
        Shelf after = roundTrip(shelf, family);
        assertSame(after.linkedList, after.hashMap.get("same"));
        assertSame(after.treeMap, after.hashMap.get("tree"));
        assertSame(after.arrayList.get(0), after.arrayList.get(1));
        assertSame(after.arrayList.get(0), after.treeMap.get("k"));
        assertSame(after.linkedList.get(1), after.set.iterator().next(), "one device array, reached twice");
        assertArray(a, after.linkedList.get(1));
    }

    @Test
    void shouldRefuseACycleThroughCollectionsNamingThePath() {
        Shelf shelf = new Shelf();
        ArrayList<Object> outer = new ArrayList<>();
        Map<String, Object> inner = new TreeMap<>();
        inner.put("back", outer);
        outer.add(inner);
        shelf.arrayList = outer;
        UnserializableException e =
                assertThrows(UnserializableException.class, () -> registry.serialize(shelf, Family.CUDA));
        assertEquals("Shelf.arrayList[0][back]", e.path());
        assertTrue(e.getMessage().contains("cycle"), e.getMessage());
    }

    @Test
    void shouldSendARegisteredListTypeThroughItsOwnSerializer() {
        registry.register(Route.class, Family.HOST, Route.SERIALIZER);
        Route route = new Route();
        route.addAll(List.of("a", "b"));
        Shelf shelf = new Shelf();
        shelf.anything = route;
        try (Serialized s = registry.serialize(shelf, Family.CUDA, Family.HOST)) {
            Map<?, ?> node = (Map<?, ?>) ((Map<?, ?>) ((Map<?, ?>) s.root()).get("d")).get("anything");
            assertEquals(Route.class.getName(), node.get("t"), "a registered type, not a list node");
        }
        Object after = roundTrip(shelf, Family.HOST).anything;
        assertEquals(Route.class, after.getClass());
        assertEquals(List.of("a", "b"), after);
    }

    private UnserializableException refused(Object value) {
        Shelf shelf = new Shelf();
        shelf.anything = new ArrayList<>(List.of("ok", value));
        return assertThrows(UnserializableException.class, () -> registry.serialize(shelf, Family.CUDA, Family.HOST));
    }

    @Test
    void shouldRefuseAtTheSenderCollectionsTheReceiverCouldNotRebuild() {
        List<String> data = new ArrayList<>(List.of("a", "b", "c"));
        Map<String, String> map = new HashMap<>(Map.of("k", "v"));
        Unregistered subclass = new Unregistered();
        subclass.add("x");
        List<Object> refused = List.of(
                subclass,
                Collections.synchronizedList(data),
                new CopyOnWriteArrayList<>(data),
                data.subList(0, 2),
                map.keySet(),
                map.values(),
                Collections.synchronizedMap(map),
                Collections.unmodifiableSortedSet(new TreeSet<>(data)),
                new Vector<>(data));
        for (Object value : refused) {
            UnserializableException e = refused(value);
            assertEquals("Shelf.anything[1]", e.path(), value.getClass().getName());
            assertTrue(e.getMessage().startsWith(value.getClass().getName() + " is a "), e.getMessage());
            assertTrue(e.getMessage().contains("could not rebuild"), e.getMessage());
        }
    }

    @Test
    void shouldRefuseAtTheSenderATreeOrderedByAnUnregisteredComparator() {
        Comparator<String> lambda = (x, y) -> y.compareTo(x);
        for (Object tree : List.of(new TreeMap<String, Object>(Comparator.reverseOrder()), new TreeSet<>(lambda))) {
            UnserializableException e = refused(tree);
            assertEquals("Shelf.anything[1]", e.path());
            assertTrue(e.getMessage().startsWith(tree.getClass().getName() + " ordered by "), e.getMessage());
            assertTrue(e.getMessage().contains("not a registered type"), e.getMessage());
        }
    }

    @Test
    void shouldRefuseAtTheSenderAnEnumCollectionOfAnUnregisteredEnum() {
        UnserializableException e = refused(new EnumMap<Colour, String>(Colour.class));
        assertTrue(
                e.getMessage().contains(Colour.class.getName())
                        && e.getMessage().contains("not registered"),
                e.getMessage());
        e = refused(EnumSet.of(Colour.GREEN));
        assertTrue(
                e.getMessage().contains(Colour.class.getName())
                        && e.getMessage().contains("not registered"),
                e.getMessage());
        registry.register(Nothing.class, "test.Nothing");
        e = refused(EnumSet.noneOf(Nothing.class));
        assertTrue(e.getMessage().contains("an EnumSet of an enum without constants"), e.getMessage());
        assertEquals("Shelf.anything[1]", e.path());
    }

    /** Decodes a hand-written root node (no frames), as a peer could send it. */
    private Object decode(Object root) {
        try (Serialized s = Serialized.received(
                new Serialized.Header(Serialized.FORMAT_VERSION, EnumSet.allOf(Family.class), root, List.of()),
                List.of())) {
            return registry.deserialize(s, target);
        }
    }

    private static Map<String, Object> node(Object... entries) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < entries.length; i += 2) {
            m.put((String) entries[i], entries[i + 1]);
        }
        return m;
    }

    private static Map<String, Object> solver(String constant) {
        return node("t", "enum", "n", "test.Solver", "v", constant);
    }

    @Test
    void shouldDecodeNodesWithoutAKindAsBeforeKindsExisted() {
        assertEquals(
                ArrayList.class, decode(node("t", "list", "v", List.of("a"))).getClass());
        assertEquals(
                LinkedHashSet.class, decode(node("t", "set", "v", List.of("a"))).getClass());
        assertEquals(
                LinkedHashMap.class,
                decode(node("t", "map", "v", List.of("k", "v"))).getClass());
    }

    @Test
    void shouldRefuseAnUnknownCollectionKind() {
        MalformedHeaderException e = assertThrows(
                MalformedHeaderException.class, () -> decode(node("t", "list", "k", "guava", "v", List.of())));
        assertTrue(e.getMessage().contains("unknown list kind 'guava'"), e.getMessage());
        e = assertThrows(MalformedHeaderException.class, () -> decode(node("t", "map", "k", "linked", "v", List.of())));
        assertTrue(e.getMessage().contains("unknown map kind 'linked'"), e.getMessage());
        e = assertThrows(MalformedHeaderException.class, () -> decode(node("t", "set", "k", 3L, "v", List.of())));
        assertTrue(e.getMessage().contains("set kind is not a name"), e.getMessage());
    }

    @Test
    void shouldRefuseDuplicateElementsAndKeysInEveryKind() {
        for (String kind : Arrays.asList(null, "hash", "tree", "imm")) {
            Map<String, Object> set = node("t", "set", "v", List.of("a", "b", "a"));
            Map<String, Object> map = node("t", "map", "v", List.of("a", 1L, "a", 2L));
            if (kind != null) {
                set.put("k", kind);
                map.put("k", kind);
            }
            MalformedHeaderException e = assertThrows(MalformedHeaderException.class, () -> decode(set));
            assertTrue(e.getMessage().contains("duplicate"), kind + ": " + e.getMessage());
            e = assertThrows(MalformedHeaderException.class, () -> decode(map));
            assertTrue(e.getMessage().contains("duplicate key a"), kind + ": " + e.getMessage());
        }
        MalformedHeaderException e = assertThrows(
                MalformedHeaderException.class,
                () -> decode(node(
                        "t",
                        "set",
                        "k",
                        "enum",
                        "n",
                        "test.Solver",
                        "v",
                        List.of(solver("NEWTON"), solver("NEWTON")))));
        assertTrue(e.getMessage().contains("duplicate"), e.getMessage());
        e = assertThrows(
                MalformedHeaderException.class,
                () -> decode(node(
                        "t",
                        "map",
                        "k",
                        "enum",
                        "n",
                        "test.Solver",
                        "v",
                        List.of(solver("LBFGS"), 1L, solver("LBFGS"), 2L))));
        assertTrue(e.getMessage().contains("duplicate key LBFGS"), e.getMessage());
        e = assertThrows(
                MalformedHeaderException.class,
                () -> decode(node("t", "map", "k", "concurrent", "v", List.of("a", 1L, "a", 2L))));
        assertTrue(e.getMessage().contains("duplicate key a"), e.getMessage());
    }

    @Test
    void shouldRefuseEnumCollectionsWhoseElementsOrTypeDoNotFit() {
        MalformedHeaderException e = assertThrows(
                MalformedHeaderException.class,
                () -> decode(node("t", "set", "k", "enum", "n", "test.Solver", "v", List.of("NEWTON"))));
        assertTrue(
                e.getMessage()
                        .contains("element 0 of an EnumSet of " + Solver.class.getName() + " is a java.lang.String"),
                e.getMessage());
        e = assertThrows(
                MalformedHeaderException.class,
                () -> decode(node("t", "map", "k", "enum", "n", "test.Point", "v", List.of())));
        assertTrue(e.getMessage().contains("'test.Point' is not an enum"), e.getMessage());
        e = assertThrows(MalformedHeaderException.class, () -> decode(node("t", "map", "k", "enum", "v", List.of())));
        assertTrue(e.getMessage().contains("without an element type name"), e.getMessage());
        UnknownTypeException unknown = assertThrows(
                UnknownTypeException.class,
                () -> decode(node("t", "set", "k", "enum", "n", "java.lang.Thread$State", "v", List.of())));
        assertTrue(
                unknown.getMessage().contains("unregistered type name 'java.lang.Thread$State'"), unknown.getMessage());
    }

    @Test
    void shouldRefuseWhatTheRebuiltKindCannotHold() {
        MalformedHeaderException e = assertThrows(
                MalformedHeaderException.class,
                () -> decode(node("t", "map", "k", "concurrent", "v", Arrays.asList("a", null))));
        assertTrue(e.getMessage().contains("ConcurrentHashMap with a nil value under a"), e.getMessage());
        e = assertThrows(
                MalformedHeaderException.class,
                () -> decode(node("t", "list", "k", "deque", "v", Arrays.asList("a", null))));
        assertTrue(e.getMessage().contains("ArrayDeque holding nil"), e.getMessage());
        e = assertThrows(
                MalformedHeaderException.class, () -> decode(node("t", "set", "k", "tree", "v", List.of("a", 1L))));
        assertTrue(e.getMessage().contains("element 1 cannot be ordered in a TreeSet"), e.getMessage());
        e = assertThrows(
                MalformedHeaderException.class,
                () -> decode(node("t", "map", "k", "tree", "cmp", "text", "v", List.of())));
        assertTrue(e.getMessage().contains("comparator is a java.lang.String"), e.getMessage());
    }

    @Test
    void shouldRebuildEveryKindFromItsHandWrittenNode() {
        Object[][] cases = {
            {"list", "linked", LinkedList.class},
            {"list", "deque", ArrayDeque.class},
            {"list", "fixed", Arrays.asList().getClass()},
            {"set", "hash", HashSet.class},
            {"set", "tree", TreeSet.class},
            {"map", "hash", HashMap.class},
            {"map", "tree", TreeMap.class},
            {"map", "concurrent", ConcurrentHashMap.class},
        };
        for (Object[] c : cases) {
            List<Object> items = c[0].equals("map") ? List.of("b", 2L, "a", 1L) : List.of("b", "a");
            Object value = decode(node("t", c[0], "k", c[1], "v", items));
            assertEquals(c[2], value.getClass(), c[0] + " " + c[1]);
        }
        Object sorted = decode(node(
                "t",
                "set",
                "k",
                "tree",
                "cmp",
                node("t", "test.ByLength", "f", "cuda", "d", node("descending", true)),
                "v",
                List.of("a", "bbb", "cc")));
        assertEquals(List.of("bbb", "cc", "a"), List.copyOf((Set<?>) sorted));
        assertFalse(((Collection<?>) decode(node("t", "list", "k", "imm", "v", List.of("x")))).isEmpty());
        assertArrayEquals(
                new Object[] {Solver.NEWTON},
                ((Set<?>) decode(node("t", "set", "k", "enum", "n", "test.Solver", "v", List.of(solver("NEWTON")))))
                        .toArray());
    }
}
