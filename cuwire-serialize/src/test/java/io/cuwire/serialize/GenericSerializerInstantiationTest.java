package io.cuwire.serialize;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
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
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** How the generic serializer makes instances: no-argument constructor, canonical constructor, or none at all. */
class GenericSerializerInstantiationTest {
    /** Immutable, built only through a checking constructor. */
    static final class Fixed extends Models.Estimator {
        final int rank;
        final String label;
        final double[] weights;
        final NdArray coef;
        transient String note = "initialised";

        Fixed(int rank, String label, double[] weights, NdArray coef) {
            if (rank < 0) {
                throw new IllegalArgumentException("rank " + rank);
            }
            this.rank = rank;
            this.label = label;
            this.weights = weights;
            this.coef = coef;
        }
    }

    /** No no-argument constructor; verifies what its constructor would have, after the fields are set. */
    static final class Checked extends Models.Estimator implements PostDeserialize {
        final int rank;
        transient int twice;

        Checked(int rank) {
            if (rank < 0) {
                throw new IllegalArgumentException("rank " + rank);
            }
            this.rank = rank;
            this.twice = rank * 2;
        }

        @Override
        public void postDeserialize() {
            if (rank < 0) {
                throw new IllegalArgumentException("rank " + rank + " (expected: >= 0)");
            }
            twice = rank * 2;
        }
    }

    /** Has a no-argument constructor: its initialisers give the fields a header lacks. */
    static final class Defaults extends Models.Estimator {
        @WireOptional
        int retries = 3;

        int attempts;
    }

    /** Made without a constructor: a field a header lacks stays zero. */
    static final class NoDefaults extends Models.Estimator {
        @WireOptional
        final int retries;

        final int attempts;

        NoDefaults(int retries, int attempts) {
            this.retries = retries;
            this.attempts = attempts;
        }
    }

    /** A generically registered interface, for lambdas and for a header that names it. */
    interface Task {
        int run();
    }

    private int outerState = 11;

    /** Holds this test instance (it reads {@link #outerState}). */
    final class Inner extends Models.Estimator {
        int value;

        int outer() {
            return outerState + value;
        }
    }

    private BufferAllocator<DeviceBuffer> senderDevice;
    private BufferAllocator<DeviceBuffer> device;
    private BufferAllocator<HostBuffer> host;
    private DecodeTarget target;
    private TypeRegistry registry;

    @BeforeEach
    void open() {
        senderDevice = Devices.get(0).newAllocator("instantiation-sender", BufferAllocator.UNLIMITED);
        device = Devices.get(0).newAllocator("instantiation-device", BufferAllocator.UNLIMITED);
        host = BufferAllocator.host("instantiation-host", BufferAllocator.UNLIMITED);
        target = new DecodeTarget(device, host, Limits.DEFAULT);
        registry = Models.registry()
                .register(Fixed.class, "test.Fixed")
                .register(Checked.class, "test.Checked")
                .register(Defaults.class, "test.Defaults")
                .register(NoDefaults.class, "test.NoDefaults")
                .register(Inner.class, "test.Inner")
                .register(Models.Estimator.class, "test.AbstractEstimator")
                .registerGeneric(Task.class, Family.CUDA, Family.HOST)
                .register(Task.class, "test.Task");
    }

    @AfterEach
    void close() {
        for (BufferAllocator<?> a : List.of(senderDevice, device, host)) {
            a.close();
            assertEquals(0, a.allocatedBytes(), a.name());
        }
    }

    /**
     * Serializes, lets {@code edit} change the header's root node as a peer could, moves the frames through the
     * header bytes into new memory, and decodes.
     */
    private Object roundTrip(Object value, Family family, Consumer<Map<String, Object>> edit) {
        try (Serialized s = registry.serialize(value, family)) {
            Serialized.Header parsed = Serialized.parseHeader(s.encodeHeader(), Limits.DEFAULT);
            @SuppressWarnings("unchecked")
            Map<String, Object> root = new LinkedHashMap<>((Map<String, Object>) parsed.root());
            @SuppressWarnings("unchecked")
            Map<String, Object> fields = new LinkedHashMap<>((Map<String, Object>) root.get("d"));
            edit.accept(fields);
            root.put("d", fields);
            List<Buffer> received = new ArrayList<>();
            for (Frame f : s.frames()) {
                Buffer b = f.kind() == MemoryKind.DEVICE ? device.allocate(f.length()) : host.allocate(f.length());
                CopyEngine.copy(f.buffer(), b);
                received.add(b);
            }
            try (Serialized wire = Serialized.received(
                    new Serialized.Header(parsed.version(), parsed.families(), root, parsed.frames()), received)) {
                return registry.deserialize(wire, target);
            }
        }
    }

    @ParameterizedTest
    @EnumSource(
            value = Family.class,
            names = {"CUDA", "HOST"})
    void shouldMakeAClassWithoutANoArgumentConstructorAndSetItsFinalFields(Family family) {
        try (NdArray coef = NdArray.fromArray(senderDevice, new float[] {1f, 2f}, 2)) {
            Fixed before = new Fixed(4, "fixed", new double[] {0.5, 1.5}, coef);
            before.name = "estimator";
            Fixed after = (Fixed) roundTrip(before, family, fields -> {});
            try (NdArray received = after.coef) {
                assertEquals(4, after.rank);
                assertEquals("fixed", after.label);
                assertArrayEquals(new double[] {0.5, 1.5}, after.weights);
                assertEquals("estimator", after.name, "superclass fields are set too");
                assertEquals(7, after.seed);
                assertEquals(MemoryKind.DEVICE, received.kind());
                assertTrue(coef.contentEquals(received));
                assertNull(after.note, "no constructor ran, so no field initialiser either");
            }
        }
    }

    @ParameterizedTest
    @EnumSource(
            value = Family.class,
            names = {"CUDA", "HOST"})
    void shouldLeavePostDeserializeToRebuildAndVerifyWhatTheConstructorWouldHave(Family family) {
        Checked after = (Checked) roundTrip(new Checked(5), family, fields -> {});
        assertEquals(5, after.rank);
        assertEquals(10, after.twice, "rebuilt by the hook");
        MalformedHeaderException e = assertThrows(
                MalformedHeaderException.class,
                () -> roundTrip(new Checked(5), family, fields -> fields.put("rank", -1L)));
        assertTrue(
                e.getMessage().contains("rank -1 (expected: >= 0)"),
                "the constructor's check did not run, the hook's did: " + e.getMessage());
    }

    @Test
    void shouldGiveMissingFieldsTheInitialisersOnlyWhenThereIsANoArgumentConstructor() {
        Defaults withConstructor = new Defaults();
        withConstructor.retries = 8;
        withConstructor.attempts = 2;
        Defaults a = (Defaults) roundTrip(withConstructor, Family.CUDA, fields -> fields.remove("retries"));
        assertEquals(3, a.retries, "the no-argument constructor ran");
        assertEquals(2, a.attempts);
        NoDefaults b = (NoDefaults) roundTrip(new NoDefaults(8, 2), Family.CUDA, fields -> fields.remove("retries"));
        assertEquals(0, b.retries, "made without a constructor, a missing field stays zero");
        assertEquals(2, b.attempts);
    }

    @Test
    void shouldRefuseAtTheSenderAnInnerClassThatHoldsItsEnclosingInstance() {
        Inner inner = new Inner();
        inner.value = 1;
        assertEquals(12, inner.outer());
        Models.State holder = new Models.State();
        holder.lock = inner;
        UnserializableException e =
                assertThrows(UnserializableException.class, () -> registry.serialize(holder, Family.CUDA));
        assertEquals("State.lock", e.path());
        assertTrue(
                e.getMessage().contains(Inner.class.getName())
                        && e.getMessage().contains("this$0")
                        && e.getMessage().contains("make it a static nested or top-level class"),
                e.getMessage());
    }

    @Test
    void shouldRefuseAtTheSenderALocalClassThatCapturesAVariable() {
        int captured = 5;
        class Local extends Models.Estimator {
            int get() {
                return captured;
            }
        }
        registry.register(Local.class, "test.Local");
        assertEquals(5, new Local().get());
        UnserializableException e =
                assertThrows(UnserializableException.class, () -> registry.serialize(new Local(), Family.CUDA));
        assertTrue(e.getMessage().contains("captured variables"), e.getMessage());
        assertTrue(e.getMessage().contains("val$captured"), e.getMessage());
    }

    @Test
    void shouldRefuseAtTheSenderAHiddenClass() {
        int base = 2;
        Task lambda = () -> base + 1;
        registry.register(lambda.getClass(), "test.Lambda");
        UnserializableException e =
                assertThrows(UnserializableException.class, () -> registry.serialize(lambda, Family.CUDA));
        assertTrue(e.getMessage().contains("hidden class"), e.getMessage());
        assertEquals(3, lambda.run());
    }

    private Object decode(Map<String, Object> root) {
        try (Serialized s = Serialized.received(
                new Serialized.Header(Serialized.FORMAT_VERSION, EnumSet.allOf(Family.class), root, List.of()),
                List.of())) {
            return registry.deserialize(s, target);
        }
    }

    @Test
    void shouldRefuseAHeaderNamingAnAbstractClassOrAnInterface() {
        Map<String, Object> node = new LinkedHashMap<>();
        node.put("t", "test.AbstractEstimator");
        node.put("f", "cuda");
        node.put("d", Map.of());
        MalformedHeaderException e = assertThrows(MalformedHeaderException.class, () -> decode(node));
        assertTrue(e.getMessage().contains("it is abstract"), e.getMessage());
        node.put("t", "test.Task");
        e = assertThrows(MalformedHeaderException.class, () -> decode(node));
        assertTrue(e.getMessage().contains("it is an interface"), e.getMessage());
    }
}
