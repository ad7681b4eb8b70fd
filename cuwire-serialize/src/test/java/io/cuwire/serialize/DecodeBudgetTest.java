package io.cuwire.serialize;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import io.cuwire.serialize.msgpack.MsgpackWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Decoding is bounded in work, not only in size: headers and JDK streams of a few kilobytes whose shared references
 * describe exponential graphs are refused with the budget named, before anything hashes them, and what they took is
 * released. The guard of each hostile case is a generous preemptive timeout: the code before the budget spun for
 * ever on every one of them (2^60 paths).
 */
class DecodeBudgetTest {
    /** Far more than any refusal here takes, far less than the unbounded work takes. */
    private static final Duration GUARD = Duration.ofSeconds(20);

    private BufferAllocator<DeviceBuffer> device;
    private BufferAllocator<HostBuffer> host;
    private TypeRegistry registry;

    @BeforeEach
    void open() {
        device = Devices.get(0).newAllocator("budget-device", BufferAllocator.UNLIMITED);
        host = BufferAllocator.host("budget-host", BufferAllocator.UNLIMITED);
        registry = Models.registry();
    }

    @AfterEach
    void close() {
        assertEquals(0, device.allocatedBytes() + host.allocatedBytes(), "the decodes left nothing allocated");
        device.close();
        host.close();
    }

    private static byte[] header(Object root) {
        Map<String, Object> top = new LinkedHashMap<>();
        top.put("fam", List.of("cuda", "host", "java"));
        top.put("root", root);
        top.put("frames", List.of());
        return Serialized.seal(new MsgpackWriter()
                .raw(new byte[Serialized.PREFIX_BYTES])
                .value(top)
                .toByteArray());
    }

    private Object decode(byte[] bytes, Limits limits) {
        try (Serialized s = Serialized.received(Serialized.parseHeader(bytes, limits), List.of())) {
            return registry.deserialize(s, new DecodeTarget(device, host, limits));
        }
    }

    private static Map<String, Object> node(String tag, Object... entries) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("t", tag);
        for (int i = 0; i < entries.length; i += 2) {
            m.put((String) entries[i], entries[i + 1]);
        }
        return m;
    }

    private static Map<String, Object> ref(long id) {
        return node("ref", "id", id);
    }

    /**
     * A list whose element {@code i + 1} is a list of two references to element {@code i}: {@code levels} levels,
     * 2^levels paths down the last one, about 30 bytes a level. Element {@code i} of the root has id {@code i + 1}
     * (the root list is id 0), so the last level's id is {@code levels + 1}; {@code last} follows it.
     */
    private static Map<String, Object> doubling(int levels, Object last) {
        List<Object> elements = new ArrayList<>();
        elements.add(node("list", "v", List.of(1L)));
        for (int i = 1; i <= levels; i++) {
            elements.add(node("list", "v", List.of(ref(i), ref(i))));
        }
        elements.add(last);
        return node("list", "v", elements);
    }

    @Test
    void shouldRefuseASetOfAValueWhoseReferencesDescribe2To60PathsBeforeHashingIt() {
        for (String kind : new String[] {"hash", null, "imm", "unmod"}) {
            Map<String, Object> set =
                    kind == null ? node("set", "v", List.of(ref(61))) : node("set", "k", kind, "v", List.of(ref(61)));
            byte[] bytes = header(doubling(60, set));
            assertTrue(bytes.length < 2500, "a header of " + bytes.length + " bytes");
            DecodeBudgetExceededException e = assertTimeoutPreemptively(
                    GUARD,
                    () -> assertThrows(DecodeBudgetExceededException.class, () -> decode(bytes, Limits.DEFAULT)));
            assertInstanceOf(LimitExceededException.class, e);
            assertTrue(
                    e.getMessage()
                            .contains("exceeds the budget of " + Limits.DEFAULT_DECODE_WORK
                                    + " units (Limits.maxDecodeWork)"),
                    e.getMessage());
            // the last level spans 3 * 2^60 - 1 nodes: two of the level below, and itself
            assertTrue(
                    e.getMessage().contains("hashing a set element spanning " + (3 * (1L << 60) - 1) + " nodes"),
                    e.getMessage());
            assertEquals("root[61]", e.path(), "the set");
        }
    }

    @Test
    void shouldRefuseAMapKeyWhoseReferencesDescribe2To60PathsBeforeHashingOrPrintingIt() {
        for (String kind : new String[] {"hash", null, "concurrent", "imm"}) {
            Map<String, Object> map = kind == null
                    ? node("map", "v", List.of(ref(61), 1L))
                    : node("map", "k", kind, "v", List.of(ref(61), 1L));
            DecodeBudgetExceededException e = assertTimeoutPreemptively(
                    GUARD,
                    () -> assertThrows(
                            DecodeBudgetExceededException.class,
                            () -> decode(header(doubling(60, map)), Limits.DEFAULT)));
            assertTrue(e.getMessage().contains("hashing a map key spanning"), e.getMessage());
            assertEquals("root[61]", e.path());
        }
    }

    @Test
    void shouldDecodeSharedValuesInListsAndPrintOnlyScalarKeys() {
        // Lists do not hash: the same 2^60 paths in a list decode at once, sharing one instance per level.
        Object value = assertTimeoutPreemptively(
                GUARD, () -> decode(header(doubling(60, node("list", "v", List.of(ref(61))))), Limits.DEFAULT));
        List<?> levels = (List<?>) value;
        List<?> top = (List<?>) levels.get(60);
        assertTrue(top.get(0) == top.get(1) && top.get(0) == levels.get(59), "references give the same instance");
        // A duplicate key that is not a scalar is named by its position, not printed.
        Map<String, Object> keys =
                node("map", "v", List.of(node("list", "v", List.of(1L)), 1L, node("list", "v", List.of(1L)), 2L));
        MalformedHeaderException e =
                assertThrows(MalformedHeaderException.class, () -> decode(header(keys), Limits.DEFAULT));
        assertTrue(e.getMessage().startsWith("map with duplicate key <key 1> at root"), e.getMessage());
    }

    @Test
    void shouldChargeEveryNodeAndRefuseAHeaderBeyondASmallerBudget() {
        List<Object> items = new ArrayList<>();
        for (long i = 0; i < 5000; i++) {
            items.add(i);
        }
        byte[] bytes = header(node("list", "v", items));
        assertEquals(
                5000,
                ((List<?>) decode(bytes, Limits.DEFAULT.withMaxDecodeWork(5001))).size(),
                "a node each: the list and its 5,000 elements");
        DecodeBudgetExceededException e = assertThrows(
                DecodeBudgetExceededException.class, () -> decode(bytes, Limits.DEFAULT.withMaxDecodeWork(5000)));
        assertTrue(
                e.getMessage()
                        .contains("exceeds the budget of 5000 units (Limits.maxDecodeWork): 5000 spent, a "
                                + "node would cost 1 at root[4999]"),
                e.getMessage());
    }

    /**
     * Lists {@code [i, 62,000 - 31 i]} all have the hash code 961 + 62,000: a set of them makes every insertion
     * compare with every earlier element, which the budget charges; as many lists of distinct hash codes cost a few
     * units each.
     */
    @Test
    void shouldChargeTheComparisonsThatEqualHashCodesCost() {
        List<Object> colliding = new ArrayList<>();
        List<Object> distinct = new ArrayList<>();
        for (long i = 0; i < 2000; i++) {
            colliding.add(node("list", "v", List.of(i, 62_000 - 31 * i)));
            distinct.add(node("list", "v", List.of(i, 62_000L)));
        }
        Limits budget = Limits.DEFAULT.withMaxDecodeWork(1_000_000);
        assertEquals(2000, ((Set<?>) decode(header(node("set", "k", "hash", "v", distinct)), budget)).size());
        assertEquals(2000, ((Set<?>) decode(header(node("set", "k", "hash", "v", colliding)), Limits.DEFAULT)).size());
        DecodeBudgetExceededException e = assertThrows(
                DecodeBudgetExceededException.class,
                () -> decode(header(node("set", "k", "hash", "v", colliding)), budget));
        assertTrue(e.getMessage().contains("exceeds the budget of 1000000 units"), e.getMessage());
    }

    @Test
    void shouldDecodeLargeSetsAndMapsOfUnsharedValuesWithinTheDefaultBudget() {
        List<Object> strings = new ArrayList<>();
        List<Object> entries = new ArrayList<>();
        for (int i = 0; i < 50_000; i++) {
            strings.add("s" + i);
            entries.add(node("list", "v", List.of((long) i, "k" + i)));
            entries.add((long) i);
        }
        Map<String, Object> root = node(
                "list",
                "v",
                List.of(
                        node("set", "k", "hash", "v", strings),
                        node("map", "k", "hash", "v", entries),
                        node("set", "k", "tree", "v", strings)));
        List<?> back = (List<?>) decode(header(root), Limits.DEFAULT);
        assertEquals(50_000, ((Set<?>) back.get(0)).size());
        assertEquals(50_000, ((Map<?, ?>) back.get(1)).size());
        assertEquals(50_000, ((Set<?>) back.get(2)).size());
    }

    // ---------------------------------------------------------------- the java family

    /**
     * The classic "SerialDOS" value: each level's two sets both hold the next level's two, and the first of each pair
     * a string as well, so hashing the root walks 2^levels paths. Built top down, so that every set is hashed while
     * it is still empty.
     */
    private static Set<Object> serialDos(int levels) {
        Set<Object> root = new HashSet<>();
        Set<Object> s1 = root;
        Set<Object> s2 = new HashSet<>();
        for (int i = 0; i < levels; i++) {
            Set<Object> t1 = new HashSet<>();
            Set<Object> t2 = new HashSet<>();
            t1.add("foo");
            s1.add(t1);
            s1.add(t2);
            s2.add(t1);
            s2.add(t2);
            s1 = t1;
            s2 = t2;
        }
        return root;
    }

    private Object decodeJava(Object inner, Limits limits) {
        TypeRegistry java = new TypeRegistry().allowJava(Models.Holder.class);
        Models.Holder holder = new Models.Holder();
        holder.inner = inner;
        try (Serialized s = java.serialize(holder, Family.JAVA);
                Serialized wire = Serialized.received(Serialized.parseHeader(s.encodeHeader(), limits), List.of())) {
            return java.deserialize(wire, new DecodeTarget(device, host, limits));
        }
    }

    @Test
    void shouldRefuseASixtyLevelSerialDosStreamByItsDepth() {
        LimitExceededException e = assertTimeoutPreemptively(
                GUARD,
                () -> assertThrows(LimitExceededException.class, () -> decodeJava(serialDos(60), Limits.DEFAULT)));
        assertTrue(
                e.getMessage()
                        .startsWith("JDK-serialized value nests deeper than " + JavaFamily.MAX_DEPTH + " at root"),
                e.getMessage());
    }

    @Test
    void shouldRefuseASerialDosStreamWithinTheDepthByTheBudget() {
        // 26 levels nest 29 deep (the holder, the root set, the string): within the depth, 2^26 paths.
        DecodeBudgetExceededException e = assertTimeoutPreemptively(
                GUARD,
                () -> assertThrows(
                        DecodeBudgetExceededException.class,
                        () -> decodeJava(serialDos(26), Limits.DEFAULT.withMaxDecodeWork(1 << 16))));
        assertTrue(e.getMessage().contains("exceeds the budget of 65536 units (Limits.maxDecodeWork)"), e.getMessage());
        // The same shape, a few levels deep, decodes within the default budget.
        Models.Holder back = (Models.Holder) decodeJava(serialDos(8), Limits.DEFAULT);
        assertEquals(2, ((Set<?>) back.inner).size());
    }

    /** 29 levels of lists nest 32 deep (the holder, the outer list): within the depth, 2^29 paths. */
    @Test
    void shouldRefuseAJavaStreamWhoseListsDescribe2To29PathsBeforeASetHashesThem() {
        List<Object> level = new ArrayList<>();
        for (int i = 0; i < 29; i++) {
            List<Object> next = new ArrayList<>();
            next.add(level);
            next.add(level);
            level = next;
        }
        Set<Object> set = new HashSet<>();
        List<Object> deferred = new ArrayList<>();
        set.add(deferred); // hashed while empty; holds the 2^29-path list once serialized
        deferred.add(level);
        List<Object> value = new ArrayList<>(List.of(level, set));
        DecodeBudgetExceededException e = assertTimeoutPreemptively(
                GUARD,
                () -> assertThrows(DecodeBudgetExceededException.class, () -> decodeJava(value, Limits.DEFAULT)));
        assertTrue(e.getMessage().contains("a JDK-serialized java.util.ArrayList reaches"), e.getMessage());
    }

    @Test
    void shouldRefuseASelfHoldingListInASetAsTooDeepForTheStack() {
        Set<Object> set = new HashSet<>();
        List<Object> self = new ArrayList<>();
        set.add(self);
        self.add(self); // its hash code never ends: the reading set's hashing overflows the stack
        DecodeBudgetExceededException e =
                assertThrows(DecodeBudgetExceededException.class, () -> decodeJava(set, Limits.DEFAULT));
        assertTrue(e.getMessage().contains("ran out of thread stack"), e.getMessage());
    }
}
