package io.cuwire.serialize;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.cuwire.memory.Buffer;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CsrMatrix;
import io.cuwire.memory.DType;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.MemoryKind;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import io.cuwire.memory.SparseMatrix;
import io.cuwire.serialize.msgpack.MalformedMsgpackException;
import io.cuwire.serialize.msgpack.MsgpackLimitException;
import io.cuwire.serialize.msgpack.MsgpackReader;
import io.cuwire.serialize.msgpack.MsgpackWriter;
import io.cuwire.test.TestRandom;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

class DecodeSecurityTest {
    private BufferAllocator<DeviceBuffer> device;
    private BufferAllocator<HostBuffer> host;
    private DecodeTarget target;
    private TypeRegistry registry;

    @BeforeEach
    void open() {
        device = Devices.get(0).newAllocator("security-device", BufferAllocator.UNLIMITED);
        host = BufferAllocator.host("security-host", BufferAllocator.UNLIMITED);
        target = new DecodeTarget(device, host, Limits.DEFAULT);
        registry = Models.registry();
    }

    @AfterEach
    void close() {
        device.close();
        host.close();
    }

    /** A current-version header of raw nodes and raw frame descriptors, listing every family. */
    private static byte[] header(Object root, List<Object> frames) {
        Map<String, Object> top = new LinkedHashMap<>();
        top.put("fam", List.of("cuda", "host", "java"));
        top.put("root", root);
        top.put("frames", frames);
        return sealed(top);
    }

    private static byte[] sealed(Map<String, Object> top) {
        return Serialized.seal(new MsgpackWriter()
                .raw(new byte[Serialized.PREFIX_BYTES])
                .value(top)
                .toByteArray());
    }

    /** {@code bytes} with the checksum of a version-2 header made to match its (mutated) contents again. */
    private static byte[] resealed(byte[] bytes) {
        return bytes.length >= Serialized.PREFIX_BYTES
                        && (bytes[0] & 0xff) == Serialized.PREFIX
                        && bytes[1] == Serialized.FORMAT_VERSION
                ? Serialized.seal(bytes)
                : bytes;
    }

    private Object decode(byte[] bytes) {
        Serialized.Header h = Serialized.parseHeader(bytes, Limits.DEFAULT);
        if (!h.frames().isEmpty()) {
            throw new AssertionError("test headers carry no frames");
        }
        try (Serialized s = Serialized.received(h, List.of())) {
            return registry.deserialize(s, target);
        }
    }

    /**
     * A flight recording of class loads around the decode: the canary's name (a class nothing else refers to) must
     * not appear, while a class loaded by name in the same recording must, which shows the recording would have seen
     * it.
     */
    @Test
    void shouldRefuseAnUnregisteredNameBeforeLoadingItsClass(@TempDir Path dir) throws Exception {
        String canary = Models.class.getName() + "$Canary";
        String control = Models.class.getName() + "$LoadControl";
        Map<String, Object> node = new LinkedHashMap<>();
        node.put("t", canary);
        node.put("f", "cuda");
        node.put("d", Map.of());
        Map<String, Object> inEnum = new LinkedHashMap<>();
        inEnum.put("t", "enum");
        inEnum.put("n", canary);
        inEnum.put("v", "X");
        Path file = dir.resolve("class-loads.jfr");
        try (Recording recording = new Recording()) {
            recording.enable("jdk.ClassLoad").withThreshold(Duration.ZERO);
            recording.start();
            for (Object root : List.of(node, inEnum, Map.of("t", "list", "v", List.of(1L, node)))) {
                UnknownTypeException e =
                        assertThrows(UnknownTypeException.class, () -> decode(header(root, List.of())));
                assertTrue(e.getMessage().contains("Canary"), e.getMessage());
            }
            Class.forName(control, false, getClass().getClassLoader());
            recording.stop();
            recording.dump(file);
        }
        Set<String> loaded = new HashSet<>();
        for (RecordedEvent event : RecordingFile.readAllEvents(file)) {
            loaded.add(event.getClass("loadedClass").getName());
        }
        assertTrue(
                loaded.contains(control),
                "the recording saw the control class load: " + loaded.size() + " loads recorded");
        assertFalse(loaded.contains(canary), "the named class was never loaded");
        assertFalse(Models.Flag.canaryInitialized, "the named class was never initialized");
    }

    @Test
    void shouldRefuseArrayElementTypesThatAreUnknownOrDoNotHoldTheElements() {
        Map<String, Object> unknown = new LinkedHashMap<>();
        unknown.put("t", "arr");
        unknown.put("v", List.of());
        unknown.put("c", Models.class.getName() + "$Canary");
        assertThrows(UnknownTypeException.class, () -> decode(header(unknown, List.of())));
        Map<String, Object> wrong = new LinkedHashMap<>();
        wrong.put("t", "arr");
        wrong.put("v", List.of("not a point"));
        wrong.put("c", "test.Point");
        MalformedHeaderException e =
                assertThrows(MalformedHeaderException.class, () -> decode(header(wrong, List.of())));
        assertTrue(e.getMessage().contains("java.lang.String"), e.getMessage());
        Map<String, Object> deep = new LinkedHashMap<>(wrong);
        deep.put("v", List.of());
        deep.put("c", "[".repeat(300) + "str");
        assertThrows(MalformedHeaderException.class, () -> decode(header(deep, List.of())));
        assertFalse(Models.Flag.canaryInitialized);
    }

    @Test
    void shouldRefuseNewerFormatAndTypeVersions() {
        byte[] v4 = header(null, List.of());
        v4[1] = 4;
        IncompatibleVersionException prefixed =
                assertThrows(IncompatibleVersionException.class, () -> Serialized.parseHeader(v4, Limits.DEFAULT));
        assertTrue(
                prefixed.getMessage()
                        .contains("header format version 4, this reader reads version 3 (and versions 2 and 1)"),
                prefixed.getMessage());
        byte[] v0 = header(null, List.of());
        v0[1] = 1;
        assertTrue(
                assertThrows(IncompatibleVersionException.class, () -> Serialized.parseHeader(v0, Limits.DEFAULT))
                        .getMessage()
                        .contains("header format version 1, this reader reads version 3"),
                "version 1 was never prefixed");
        Map<String, Object> top = new LinkedHashMap<>();
        top.put("v", 4L);
        top.put("root", null);
        top.put("frames", List.of());
        IncompatibleVersionException bare = assertThrows(
                IncompatibleVersionException.class,
                () -> Serialized.parseHeader(new MsgpackWriter().value(top).toByteArray(), Limits.DEFAULT));
        assertTrue(
                bare.getMessage().contains("header format version 4, this reader reads version 3"), bare.getMessage());
        for (long prefixedVersion : new long[] {2, 3}) {
            top.put("v", prefixedVersion);
            assertThrows(
                    MalformedHeaderException.class,
                    () -> Serialized.parseHeader(new MsgpackWriter().value(top).toByteArray(), Limits.DEFAULT),
                    "a version-" + prefixedVersion + " header is prefixed");
        }
        Map<String, Object> node = new LinkedHashMap<>();
        node.put("t", "test.Point");
        node.put("f", "cuda");
        node.put("tv", 3L);
        node.put("d", Map.of("x", 1.0, "y", 2.0, "tag", "t"));
        IncompatibleVersionException e =
                assertThrows(IncompatibleVersionException.class, () -> decode(header(node, List.of())));
        assertTrue(e.getMessage().contains("version 3"), e.getMessage());
    }

    static final class V1 {
        int a;
    }

    static final class V2 {
        int a;

        @WireOptional
        double added = 0.5;

        @WireOptional
        String alsoAdded = "default";
    }

    @Test
    void shouldDecodeAnOlderVersionIntoAnEvolvedTypeWithDefaults() {
        TypeRegistry old =
                new TypeRegistry().registerGeneric(Object.class, Family.CUDA).register(V1.class, "evolving");
        TypeRegistry evolved =
                new TypeRegistry().registerGeneric(Object.class, Family.CUDA).register(V2.class, "evolving", 1);
        V1 v1 = new V1();
        v1.a = 9;
        try (Serialized s = old.serialize(v1, Family.CUDA);
                Serialized wire =
                        Serialized.received(Serialized.parseHeader(s.encodeHeader(), Limits.DEFAULT), List.of())) {
            V2 v2 = evolved.deserialize(wire, V2.class, target);
            assertEquals(9, v2.a);
            assertEquals(0.5, v2.added);
            assertEquals("default", v2.alsoAdded);
        }
    }

    @Test
    void shouldRefuseHeadersFramesAndDepthBeyondTheLimits() {
        Limits tight = new Limits(64, 2, 4, 1000, 1500, 10);
        byte[] big = header("x".repeat(100), List.of());
        assertThrows(LimitExceededException.class, () -> Serialized.parseHeader(big, tight));
        byte[] frames = header(null, List.of(List.of(0L, -1L, 8L), List.of(0L, -1L, 8L), List.of(0L, -1L, 8L)));
        assertThrows(
                LimitExceededException.class,
                () -> Serialized.parseHeader(frames, new Limits(1 << 20, 2, 4, 1000, 1500, 10)));
        byte[] huge = header(null, List.of(List.of(2L, 0L, 1L << 50)));
        LimitExceededException e =
                assertThrows(LimitExceededException.class, () -> Serialized.parseHeader(huge, Limits.DEFAULT));
        assertTrue(e.getMessage().contains("frame 0"), e.getMessage());
        Object deep = "leaf";
        for (int i = 0; i < 10; i++) {
            deep = List.of(deep);
        }
        byte[] nested = header(deep, List.of());
        assertThrows(
                LimitExceededException.class,
                () -> Serialized.parseHeader(nested, new Limits(1 << 20, 2, 4, 1000, 1500, 10)));
    }

    @Test
    void shouldRefuseADuplicateMapKeyEvenAfterANil() {
        // {"v": 1, "v": 1} and {"a": nil, "a": 1}: the second value must not silently replace the first.
        byte[] twice = {(byte) 0x82, (byte) 0xa1, 'v', 0x01, (byte) 0xa1, 'v', 0x01};
        byte[] afterNil = {(byte) 0x82, (byte) 0xa1, 'a', (byte) 0xc0, (byte) 0xa1, 'a', 0x01};
        for (byte[] bytes : List.of(twice, afterNil)) {
            MalformedMsgpackException e = assertThrows(
                    MalformedMsgpackException.class, () -> new MsgpackReader(bytes, 0, bytes.length, 8, 8).readValue());
            assertTrue(e.getMessage().contains("duplicate map key"), e.getMessage());
            MalformedHeaderException h =
                    assertThrows(MalformedHeaderException.class, () -> Serialized.parseHeader(bytes, Limits.DEFAULT));
            assertEquals(e.getMessage(), h.getMessage(), "the reader's message, as this layer's exception");
            assertNull(h.path());
        }
    }

    @Test
    void shouldReportTheReadersLimitAsALimitExceededWithItsMessage() {
        // a map of 3 entries where 2 are allowed
        byte[] bytes =
                new MsgpackWriter(64).value(Map.of("a", 1L, "b", 2L, "c", 3L)).toByteArray();
        MsgpackLimitException e = assertThrows(
                MsgpackLimitException.class, () -> new MsgpackReader(bytes, 0, bytes.length, 8, 2).readValue());
        assertEquals("map of 3 entries exceeds the limit of 2 at byte 1", e.getMessage());
        LimitExceededException h = assertThrows(
                LimitExceededException.class,
                () -> Serialized.parseHeader(bytes, new Limits(1 << 20, 8, 8, 1000, 1500, 2)));
        assertEquals(e.getMessage(), h.getMessage());
        assertNull(h.path());
    }

    /**
     * Valid headers to mutate: an estimator-like object in the {@code cuda} family with no frames; a list of a device
     * array, a large primitive array, a sparse matrix, an opaque blob, an enum and records, in {@code cuda} and in
     * {@code host}; and an allow-listed value in the {@code java} family (a JDK stream in the header).
     */
    private List<byte[]> fuzzSeeds(TypeRegistry registry) {
        Models.KMeans m = new Models.KMeans();
        m.name = "fuzz";
        m.counts = new long[] {1, 2};
        m.history.add(List.of(1, "two", 3.0));
        m.extras.put("k", Map.of("x", 1L));
        m.state = new Models.State();
        m.state.weights = new double[] {1, 2};
        m.points = new Models.Point[] {new Models.Point(1, 2, "p")};
        List<byte[]> seeds = new ArrayList<>();
        try (Serialized s = registry.serialize(m, Family.CUDA)) {
            seeds.add(s.encodeHeader());
        }
        try (NdArray dense = NdArray.zeros(device, DType.FLOAT32, Order.F, 32, 32);
                CsrMatrix sparse = CsrMatrix.fromDense(device, new double[][] {{0, 1}, {2, 0}});
                OpaqueBlob blob = OpaqueBlob.adopt("fuzz/1", Map.of("trees", 3L), device.allocate(1024))) {
            List<Object> arrays = new ArrayList<>(List.of(
                    dense,
                    new long[10_000],
                    sparse,
                    blob,
                    Models.Solver.NEWTON,
                    new Models.Point[] {new Models.Point(3, 4, "q")},
                    dense));
            for (Family family : List.of(Family.CUDA, Family.HOST)) {
                try (Serialized s = registry.serialize(arrays, family)) {
                    seeds.add(s.encodeHeader());
                }
            }
        }
        try (NdArray small = NdArray.fromArray(host, new float[] {1, 2, 3, 4}, 2, 2)) {
            Models.Holder holder = new Models.Holder();
            holder.inner = new ArrayList<>(List.of("text", new int[] {1, 2, 3}, small, 5L));
            try (Serialized s = registry.serialize(holder, Family.JAVA)) {
                seeds.add(s.encodeHeader());
            }
        }
        return seeds;
    }

    private Object decodeWithFreshFrames(TypeRegistry registry, byte[] bytes, Limits limits) {
        Serialized.Header h = Serialized.parseHeader(bytes, limits);
        List<Buffer> frames = new ArrayList<>();
        for (FrameDescriptor d : h.frames()) {
            frames.add(d.kind() == MemoryKind.DEVICE ? device.allocate(d.length()) : host.allocate(d.length()));
        }
        try (Serialized s = Serialized.received(h, frames)) {
            return registry.deserialize(s, new DecodeTarget(device, host, limits));
        }
    }

    /** Closes what a decode made: sparse matrices and blobs first, then the arrays no one else closed. */
    private static void closeDecoded(Object root) {
        Set<Object> seen = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
        List<AutoCloseable> first = new ArrayList<>();
        List<NdArray> arrays = new ArrayList<>();
        java.util.ArrayDeque<Object> todo = new java.util.ArrayDeque<>();
        if (root != null) {
            todo.push(root);
        }
        while (!todo.isEmpty()) {
            Object v = todo.pop();
            if (!seen.add(v)) {
                continue;
            }
            switch (v) {
                case NdArray a -> arrays.add(a);
                case SparseMatrix sm -> first.add(sm);
                case OpaqueBlob b -> first.add(b);
                case Iterable<?> it -> it.forEach(e -> pushNonNull(todo, e));
                case Map<?, ?> map ->
                    map.forEach((k, e) -> {
                        pushNonNull(todo, k);
                        pushNonNull(todo, e);
                    });
                case Object[] array -> java.util.Arrays.stream(array).forEach(e -> pushNonNull(todo, e));
                case java.util.Optional<?> o -> o.ifPresent(todo::push);
                default -> {
                    for (Class<?> c = v.getClass();
                            c != null && c.getPackageName().equals("io.cuwire.serialize");
                            c = c.getSuperclass()) {
                        for (java.lang.reflect.Field f : c.getDeclaredFields()) {
                            if (!java.lang.reflect.Modifier.isStatic(f.getModifiers())
                                    && !f.getType().isPrimitive()) {
                                f.setAccessible(true);
                                try {
                                    pushNonNull(todo, f.get(v));
                                } catch (IllegalAccessException e) {
                                    throw new AssertionError(e);
                                }
                            }
                        }
                    }
                }
            }
        }
        for (AutoCloseable c : first) {
            try {
                c.close();
            } catch (Exception e) {
                throw new AssertionError(e);
            }
        }
        for (NdArray a : arrays) {
            if (a.isOpen()) {
                a.close();
            }
        }
    }

    private static void pushNonNull(java.util.Deque<Object> todo, Object o) {
        if (o != null) {
            todo.push(o);
        }
    }

    @Test
    @Timeout(value = 300, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
    void shouldAnswerMutatedAndRandomHeadersOnlyWithTypedErrors(TestInfo info) {
        SplittableRandom random = TestRandom.create(info);
        TypeRegistry registry = Models.registry().allowJava(Models.Holder.class);
        Limits limits = new Limits(1 << 16, 16, 32, 1 << 20, 1 << 22, 1 << 12);
        List<byte[]> seeds = fuzzSeeds(registry);
        for (byte[] seed : seeds) {
            closeDecoded(decodeWithFreshFrames(registry, seed, limits));
        }
        int typed = 0;
        int decoded = 0;
        for (int i = 0; i < 100_000; i++) {
            byte[] bytes;
            if (i % 10 == 0) {
                bytes = TestRandom.bytes(random, random.nextInt(64));
            } else {
                bytes = seeds.get(i % seeds.size()).clone();
                int mutations = 1 + random.nextInt(4);
                for (int k = 0; k < mutations; k++) {
                    int pos = random.nextInt(bytes.length);
                    switch (random.nextInt(3)) {
                        case 0 -> bytes[pos] = (byte) random.nextInt(256);
                        case 1 -> bytes[pos] ^= (byte) (1 << random.nextInt(8));
                        default -> bytes = java.util.Arrays.copyOf(bytes, pos);
                    }
                    if (bytes.length == 0) {
                        break;
                    }
                }
                if (i % 10 != 1) {
                    // A checksum stops accidents, not a peer that computes one: most mutants carry a valid one,
                    // so that what lies behind it is tried too.
                    bytes = resealed(bytes);
                }
            }
            try {
                closeDecoded(decodeWithFreshFrames(registry, bytes, limits));
                decoded++;
            } catch (SerializationException e) {
                typed++;
            } catch (RuntimeException | Error e) {
                fail("header " + i + " raised " + e + " instead of a SerializationException", e);
            }
        }
        assertEquals(100_000, typed + decoded);
        assertTrue(typed > 50_000, "most mutations are refused: " + typed);
        assertEquals(0, host.allocatedBytes(), "every host frame and array of every attempt was released");
        assertEquals(0, device.allocatedBytes(), "every device frame and array of every attempt was released");
    }

    /** A decode failure says where in the value it happened: in its message and in its {@code path()}. */
    @Test
    void shouldNameTheFieldPathOfADecodeFailure() {
        Models.KMeans m = new Models.KMeans();
        m.history.add(1L);
        m.history.add("two");
        m.history.add(new Models.Point(1, 2, "p"));
        m.state = new Models.State();
        m.state.inner = new Models.State();
        byte[] bytes;
        try (Serialized s = registry.serialize(m, Family.CUDA)) {
            bytes = s.encodeHeader();
        }
        registry = new TypeRegistry()
                .registerGeneric(Models.Estimator.class, Family.CUDA)
                .registerGeneric(Models.State.class, Family.CUDA)
                .register(Models.KMeans.class, "test.KMeans")
                .register(Models.State.class, "test.State");
        UnknownTypeException unknown = assertThrows(UnknownTypeException.class, () -> decode(bytes));
        assertEquals("root.history[2]", unknown.path());
        assertTrue(unknown.getMessage().endsWith("'test.Point' at root.history[2]"), unknown.getMessage());

        Map<String, Object> node = new LinkedHashMap<>();
        node.put("t", "test.State");
        node.put("f", "no-such-family");
        node.put("d", Map.of());
        MalformedHeaderException family = assertThrows(
                MalformedHeaderException.class,
                () -> decode(header(Map.of("t", "list", "v", List.of(1L, node)), List.of())));
        assertEquals("root[1]", family.path());
        assertTrue(
                family.getMessage().contains("unknown serializer family 'no-such-family' at root[1]"),
                family.getMessage());

        Map<String, Object> wrongField = new LinkedHashMap<>(node);
        wrongField.put("f", "cuda");
        Map<String, Object> outer = new LinkedHashMap<>();
        outer.put("weights", null);
        outer.put("lock", null);
        outer.put("inner", Map.of("t", "test.State", "f", "cuda", "d", Map.of("weights", "x")));
        wrongField.put("d", outer);
        SerializationException field =
                assertThrows(SchemaMismatchException.class, () -> decode(header(wrongField, List.of())));
        assertEquals("root.inner", field.path(), "a serializer's failure gets the path of the value it read");

        Object deep = 1L;
        for (int i = 0; i < 5; i++) {
            deep = Map.of("t", "list", "v", List.of(deep));
        }
        target = new DecodeTarget(device, host, new Limits(1 << 20, 16, 3, 1 << 20, 1 << 20, 1024));
        Object tooDeep = deep;
        LimitExceededException limit =
                assertThrows(LimitExceededException.class, () -> decode(header(tooDeep, List.of())));
        assertEquals("root[0][0][0]", limit.path());
        assertTrue(limit.getMessage().endsWith("deeper than 3 at root[0][0][0]"), limit.getMessage());
    }
}
