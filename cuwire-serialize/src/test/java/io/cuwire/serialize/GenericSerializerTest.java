package io.cuwire.serialize;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.MemoryKind;
import io.cuwire.memory.TransferScope;
import io.cuwire.serialize.Models.Hooked;
import io.cuwire.serialize.Models.KMeans;
import io.cuwire.serialize.Models.Point;
import io.cuwire.serialize.Models.Solver;
import io.cuwire.serialize.Models.State;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class GenericSerializerTest {
    private BufferAllocator<DeviceBuffer> device;
    private BufferAllocator<HostBuffer> host;
    private DecodeTarget target;
    private TypeRegistry registry;

    @BeforeEach
    void open() {
        device = Devices.get(0).newAllocator("decode-device", BufferAllocator.UNLIMITED);
        host = BufferAllocator.host("decode-host", BufferAllocator.UNLIMITED);
        target = new DecodeTarget(device, host, Limits.DEFAULT);
        registry = Models.registry();
    }

    @AfterEach
    void close() {
        device.close();
        host.close();
    }

    private static KMeans sample() {
        KMeans m = new KMeans();
        m.name = "km";
        m.seed = 42;
        m.nClusters = 8;
        m.tol = 1e-4;
        m.learningRate = 0.5f;
        m.fitted = true;
        m.solver = Solver.NEWTON;
        m.counts = new long[] {1, 2, 3};
        m.centers = new double[100_000];
        for (int i = 0; i < m.centers.length; i++) {
            m.centers[i] = i * 0.5;
        }
        m.blob = new byte[] {1, 2, 3};
        m.boxed = 5;
        m.c = 'x';
        m.history.add(1);
        m.history.add(2L);
        m.history.add(3.0f);
        m.history.add("four");
        m.history.add(Solver.LBFGS);
        m.history.add(null);
        m.extras.put("alpha", 0.1);
        m.extras.put("nested", List.of(1, 2));
        m.tags = new LinkedHashSet<>(List.of("a", "b"));
        m.label = Optional.of("lbl");
        m.state = new State();
        m.state.weights = new double[] {0.25, 0.75};
        m.points = new Point[] {new Point(1, 2, "p"), null};
        m.anything = new int[] {4, 5};
        m.rebuilt = 3;
        return m;
    }

    private Object roundTrip(Object value, Family... chain) {
        try (Serialized s = registry.serialize(value, chain)) {
            Serialized.Header header = Serialized.parseHeader(s.encodeHeader(), Limits.DEFAULT);
            List<io.cuwire.memory.Buffer> received = new ArrayList<>();
            for (Frame f : s.frames()) {
                io.cuwire.memory.Buffer b =
                        f.kind() == MemoryKind.DEVICE ? device.allocate(f.length()) : host.allocate(f.length());
                CopyEngine.copy(f.buffer(), b);
                received.add(b);
            }
            try (Serialized wire = Serialized.received(header, received)) {
                return registry.deserialize(wire, target);
            }
        }
    }

    @Test
    void shouldRoundTripEveryKindOfFieldThroughHeaderBytesAndFrames() {
        KMeans before = sample();
        before.nativeHandle = "sender's handle";
        before.cache = "sender's cache";
        KMeans after = (KMeans) roundTrip(before, Family.CUDA);
        assertEquals("km", after.name);
        assertEquals(42, after.seed);
        assertEquals(8, after.nClusters);
        assertEquals(1e-4, after.tol);
        assertEquals(0.5f, after.learningRate);
        assertTrue(after.fitted);
        assertEquals(Solver.NEWTON, after.solver);
        assertArrayEquals(before.counts, after.counts);
        assertArrayEquals(before.centers, after.centers);
        assertArrayEquals(before.blob, after.blob);
        assertEquals(5, after.boxed);
        assertEquals('x', after.c);
        assertEquals(before.history, after.history, "boxed types inside collections keep their exact types");
        assertInstanceOf(Float.class, after.history.get(2));
        assertEquals(Map.of("alpha", 0.1, "nested", List.of(1, 2)), after.extras);
        assertEquals(before.tags, after.tags);
        assertEquals(Optional.of("lbl"), after.label);
        assertArrayEquals(before.state.weights, after.state.weights);
        assertEquals(before.points[0], after.points[0]);
        assertNull(after.points[1]);
        assertArrayEquals(new int[] {4, 5}, (int[]) after.anything);
        assertNotEquals("sender's handle", after.nativeHandle, "transient fields are skipped");
        assertEquals("cache", after.cache, "@SkipSerialization fields keep the constructor's value");
        assertEquals(3, after.rebuilt);
    }

    @Test
    void shouldSendLargePrimitiveArraysAsZeroCopyHostFrames() {
        KMeans m = sample();
        try (Serialized s = registry.serialize(m, Family.CUDA)) {
            assertEquals(1, s.frames().size(), "only the 800 KB array is a frame");
            Frame f = s.frames().get(0);
            assertEquals(MemoryKind.HOST, f.kind());
            assertEquals(800_000, f.length());
            assertFalse(f.owned(), "the frame is the array's own memory");
            assertTrue(s.encodeHeader().length < 2048, "header stays small: " + s.encodeHeader().length);
        }
    }

    @Test
    void shouldPackALargeBooleanArrayIntoAFrameAndBack() {
        boolean[] flags = new boolean[100_000];
        for (int i = 0; i < flags.length; i += 3) {
            flags[i] = true;
        }
        try (Serialized s = registry.serialize(flags, Family.CUDA)) {
            assertEquals(1, s.frames().size());
            assertEquals(flags.length, s.frames().get(0).length(), "one byte per element");
        }
        assertArrayEquals(flags, (boolean[]) roundTrip(flags, Family.CUDA));
    }

    @Test
    void shouldPreserveSharedReferences() {
        KMeans m = sample();
        List<Object> shared = new ArrayList<>(List.of("s"));
        m.history.add(shared);
        m.extras.put("same", shared);
        m.anything = m.points;
        m.state.inner = null;
        KMeans after = (KMeans) roundTrip(m, Family.CUDA);
        assertSame(after.history.get(after.history.size() - 1), after.extras.get("same"));
        assertSame(after.points, after.anything, "an array of a registered type is one array, of its own type");
    }

    @Test
    void shouldPreserveSharedPrimitiveArraysAndSendALargeOneOnce() {
        KMeans m = sample();
        m.anything = m.centers;
        m.state.weights = new double[] {0.5};
        m.extras.put("weights", m.state.weights);
        try (Serialized s = registry.serialize(m, Family.CUDA)) {
            assertEquals(1, s.frames().size(), "the shared 800 KB array is one frame");
        }
        KMeans after = (KMeans) roundTrip(m, Family.CUDA);
        assertSame(after.centers, after.anything);
        assertArrayEquals(m.centers, after.centers);
        assertSame(after.state.weights, after.extras.get("weights"));
    }

    @Test
    void shouldRebuildObjectArraysWithTheirElementTypes() {
        List<Object> arrays = new ArrayList<>(List.of(
                new String[] {"a", null},
                new Solver[] {Solver.LBFGS},
                new Point[][] {{new Point(1, 2, "p")}},
                new double[][] {{1.5}, {}},
                new Long[] {7L},
                new Object[] {"any"},
                new Object[][] {{"nested", 1L}}));
        List<?> after = (List<?>) roundTrip(arrays, Family.CUDA);
        for (int i = 0; i < arrays.size(); i++) {
            assertEquals(arrays.get(i).getClass(), after.get(i).getClass(), "element " + i);
            assertArrayEquals((Object[]) arrays.get(i), (Object[]) after.get(i), "element " + i);
        }
    }

    @Test
    void shouldRefuseASharedArrayWhoseElementTypeHasNoName() {
        KMeans m = sample();
        Runnable[] tasks = new Runnable[1];
        m.history.add(tasks);
        m.anything = tasks;
        UnserializableException e =
                assertThrows(UnserializableException.class, () -> registry.serialize(m, Family.CUDA));
        assertTrue(e.getMessage().contains("java.lang.Runnable[]"), e.getMessage());
        assertEquals("KMeans.anything", e.path());
        m.anything = null;
        KMeans after = (KMeans) roundTrip(m, Family.CUDA);
        assertInstanceOf(
                Object[].class,
                after.history.get(after.history.size() - 1),
                "unshared, such an array travels and comes back as an Object[]");
    }

    @Test
    void shouldRefuseCyclesNamingThePath() {
        KMeans m = sample();
        m.state.inner = m.state;
        UnserializableException e =
                assertThrows(UnserializableException.class, () -> registry.serialize(m, Family.CUDA));
        assertEquals("KMeans.state.inner", e.path());
        assertTrue(e.getMessage().contains("cycle"), e.getMessage());
    }

    @Test
    void shouldFailAtTheSenderNamingTheClassAndFieldPath() {
        KMeans m = sample();
        m.state.lock = new Thread();
        UnserializableException e =
                assertThrows(UnserializableException.class, () -> registry.serialize(m, Family.CUDA, Family.HOST));
        assertEquals("KMeans.state.lock", e.path());
        assertTrue(e.getMessage().contains("java.lang.Thread"), e.getMessage());
        assertTrue(e.getMessage().contains("[cuda, host]"), e.getMessage());
    }

    @Test
    void shouldRefuseAtPutAHeaderValueASerializerCannotPutThere() {
        Serializer<Models.HostOnly> careless = new Serializer<>() {
            @Override
            public void write(WriteContext out, Models.HostOnly value) {
                out.put("text", value.text);
                out.put("extra", List.of(1L, Map.of("when", java.time.Instant.EPOCH)));
            }

            @Override
            public Models.HostOnly read(ReadContext in) {
                return new Models.HostOnly(in.getString("text"));
            }
        };
        registry.register(Models.HostOnly.class, Family.HOST, careless);
        KMeans m = sample();
        m.anything = new Models.HostOnly("x");
        UnserializableException e =
                assertThrows(UnserializableException.class, () -> registry.serialize(m, Family.CUDA, Family.HOST));
        assertEquals("KMeans.anything", e.path());
        assertTrue(
                e.getMessage().contains("java.time.Instant") && e.getMessage().contains("\"extra\""), e.getMessage());
    }

    @Test
    void shouldFallBackAlongTheChainPerFieldAsInDask() {
        registry.register(Models.HostOnly.class, Family.HOST, Models.HostOnly.SERIALIZER)
                .allowJava(Models.Holder.class);
        KMeans m = sample();
        m.anything = new Models.HostOnly("only host");
        Models.Holder holder = new Models.Holder();
        holder.inner = "only java";
        m.state.lock = holder;
        try (Serialized s = registry.serialize(m, Family.CUDA, Family.HOST, Family.JAVA)) {
            Map<?, ?> root = (Map<?, ?>) s.root();
            Map<?, ?> fields = (Map<?, ?>) root.get("d");
            Map<?, ?> state = (Map<?, ?>) fields.get("state");
            assertEquals("cuda", root.get("f"), "the estimator takes the first family");
            assertEquals("cuda", state.get("f"));
            assertEquals("host", ((Map<?, ?>) fields.get("anything")).get("f"), "this field falls back to host");
            assertEquals("java", ((Map<?, ?>) ((Map<?, ?>) state.get("d")).get("lock")).get("f"), "this one to java");
        }
        KMeans after = (KMeans) roundTrip(m, Family.CUDA, Family.HOST, Family.JAVA);
        assertEquals("only host", ((Models.HostOnly) after.anything).text);
        assertEquals("only java", ((Models.Holder) after.state.lock).inner);
        assertArrayEquals(m.centers, after.centers);
        UnserializableException e =
                assertThrows(UnserializableException.class, () -> registry.serialize(m, Family.CUDA, Family.HOST));
        assertEquals("KMeans.state.lock", e.path(), "without java in the chain, the sender names the field");
        assertTrue(e.getMessage().contains(Models.Holder.class.getName()), e.getMessage());
    }

    @Test
    void shouldRefuseAtTheSenderAValueNestedDeeperThanTheLimit() {
        State top = new State();
        State s = top;
        for (int i = 0; i < 100; i++) {
            s.inner = new State();
            s = s.inner;
        }
        UnserializableException e =
                assertThrows(UnserializableException.class, () -> registry.serialize(top, Family.CUDA));
        assertTrue(e.getMessage().contains("deeper than " + Limits.DEFAULT.maxDepth()), e.getMessage());
        assertTrue(e.path().startsWith("State.inner.inner."), e.path());
    }

    @Test
    void shouldMakeInstancesThroughAPrivateNoArgumentConstructor() {
        Models.PrivateConstructor after =
                (Models.PrivateConstructor) roundTrip(Models.PrivateConstructor.of(77), Family.CUDA);
        assertEquals(77, after.fitted);
    }

    @Test
    void shouldRunThePostDeserializeHook() {
        Hooked h = new Hooked();
        h.base = 21;
        Hooked after = (Hooked) roundTrip(h, Family.HOST);
        assertEquals(42, after.derived);
    }

    @Test
    void shouldMakeAClassWithoutANoArgumentConstructorWithoutRunningOne() {
        Models.NoDefaultConstructor after =
                (Models.NoDefaultConstructor) roundTrip(new Models.NoDefaultConstructor(9), Family.CUDA);
        assertEquals(9, after.x, "the final field is set");
    }

    @Test
    void shouldRequireANameForSubclassesCoveredByAGenericRegistration() {
        class Unnamed extends Models.Estimator {}
        UnserializableException e =
                assertThrows(UnserializableException.class, () -> registry.serialize(new Unnamed(), Family.CUDA));
        assertTrue(e.getMessage().contains("no registered name"), e.getMessage());
    }

    @Test
    void shouldNotCopyAnythingBetweenHostAndDeviceForHostOnlyValues() {
        try (TransferScope scope = CopyEngine.openScope("encode")) {
            registry.serialize(sample(), Family.CUDA).close();
            assertEquals(0, scope.stats().totalBytes(), "encoding hands arrays over without copying");
        }
    }

    @Test
    void shouldKeepRecordsAndTheirCanonicalConstructor() {
        Point p = (Point) roundTrip(new Point(3, 4, "q"), Family.CUDA);
        assertEquals(new Point(3, 4, "q"), p);
    }
}
