package io.cuwire.serialize;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import io.cuwire.serialize.msgpack.MsgpackWriter;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The generic serializer's field rules for version-2 headers, one test per rule: a value written by one class and
 * read into another class registered under the same name (an earlier and a later version of one type).
 */
class SchemaEvolutionTest {
    private BufferAllocator<DeviceBuffer> device;
    private BufferAllocator<HostBuffer> host;
    private DecodeTarget target;

    @BeforeEach
    void open() {
        device = Devices.get(0).newAllocator("evolution-device", BufferAllocator.UNLIMITED);
        host = BufferAllocator.host("evolution-host", BufferAllocator.UNLIMITED);
        target = new DecodeTarget(device, host, Limits.DEFAULT);
    }

    @AfterEach
    void close() {
        device.close();
        host.close();
    }

    static final class Before {
        int a = 1;
        double[] weights = {0.5, 1.5};
    }

    static final class Added {
        int a;
        double[] weights;
        String added = "from the constructor";
    }

    static final class AddedOptional {
        int a;
        double[] weights;

        @WireOptional
        String added = "from the constructor";

        @WireOptional
        long addedPrimitive = 77;
    }

    static final class Dropped {
        int a;
    }

    @Evolving
    static final class DroppedEvolving {
        int a;
    }

    /** A subclass of an evolving class does not inherit its leniency. */
    static final class DroppedEvolvingSubclass extends Base {}

    @Evolving
    static class Base {
        int a;
    }

    record PointBefore(double x, double y) {}

    record PointAdded(double x, double y, String label) {}

    record PointAddedOptional(
            double x,
            double y,
            @WireOptional String label,
            @WireOptional int z) {}

    record PointDropped(double x) {}

    @Evolving
    record PointDroppedEvolving(double x) {}

    /** Writes {@code value} under name {@code evo} and reads it back as {@code reader} registered under that name. */
    private <T> T evolve(Object value, Class<T> reader) {
        TypeRegistry writer =
                new TypeRegistry().registerGeneric(Object.class, Family.CUDA).register(value.getClass(), "evo");
        TypeRegistry later =
                new TypeRegistry().registerGeneric(Object.class, Family.CUDA).register(reader, "evo");
        try (Serialized s = writer.serialize(value, Family.CUDA)) {
            return received(later, s.encodeHeader(), reader);
        }
    }

    private <T> T received(TypeRegistry registry, byte[] header, Class<T> type) {
        try (Serialized wire = Serialized.received(Serialized.parseHeader(header, Limits.DEFAULT), List.of())) {
            return registry.deserialize(wire, type, target);
        }
    }

    @Test
    void shouldRefuseAHeaderThatLacksARequiredFieldNamingTheFieldAndPath() {
        SchemaMismatchException e =
                assertThrows(SchemaMismatchException.class, () -> evolve(new Before(), Added.class));
        assertEquals(List.of("added"), e.missing());
        assertEquals(List.of(), e.unknown());
        assertEquals("root", e.path());
        assertTrue(e.getMessage().contains(Added.class.getName() + " at root"), e.getMessage());
        assertTrue(e.getMessage().contains("lacks field 'root.added'"), e.getMessage());
        assertTrue(e.getMessage().contains("@WireOptional"), e.getMessage());
    }

    @Test
    void shouldKeepTheConstructorsValueForAMissingOptionalField() {
        AddedOptional after = evolve(new Before(), AddedOptional.class);
        assertEquals(1, after.a);
        assertEquals(1.5, after.weights[1]);
        assertEquals("from the constructor", after.added);
        assertEquals(77, after.addedPrimitive);
    }

    @Test
    void shouldSetAnOptionalFieldThatIsPresent() {
        AddedOptional before = new AddedOptional();
        before.added = "sent";
        before.addedPrimitive = 5;
        AddedOptional after = evolve(before, AddedOptional.class);
        assertEquals("sent", after.added);
        assertEquals(5, after.addedPrimitive);
    }

    @Test
    void shouldRefuseAHeaderFieldTheClassDoesNotHave() {
        SchemaMismatchException e =
                assertThrows(SchemaMismatchException.class, () -> evolve(new Before(), Dropped.class));
        assertEquals(List.of(), e.missing());
        assertEquals(List.of("weights"), e.unknown());
        assertTrue(e.getMessage().contains("has field 'root.weights' the class does not"), e.getMessage());
        assertTrue(e.getMessage().contains("@Evolving"), e.getMessage());
    }

    @Test
    void shouldIgnoreAHeaderFieldAnEvolvingClassDoesNotHave() {
        assertEquals(1, evolve(new Before(), DroppedEvolving.class).a);
        SchemaMismatchException e = assertThrows(
                SchemaMismatchException.class,
                () -> evolve(new Before(), DroppedEvolvingSubclass.class),
                "@Evolving is not inherited");
        assertEquals(List.of("weights"), e.unknown());
    }

    @Test
    void shouldNameBothARenamedFieldAndTheFieldItReplaced() {
        TypeRegistry registry =
                new TypeRegistry().registerGeneric(Object.class, Family.CUDA).register(Before.class, "evo");
        Map<String, Object> data = new LinkedHashMap<>();
        data.put("a", 1L);
        data.put("weigjts", null);
        Map<String, Object> node = new LinkedHashMap<>();
        node.put("t", "evo");
        node.put("f", "cuda");
        node.put("d", data);
        Map<String, Object> top = new LinkedHashMap<>();
        top.put("fam", List.of("cuda"));
        top.put("root", Map.of("t", "list", "v", List.of(node)));
        top.put("frames", List.of());
        byte[] header = Serialized.seal(new MsgpackWriter()
                .raw(new byte[Serialized.PREFIX_BYTES])
                .value(top)
                .toByteArray());
        SchemaMismatchException e =
                assertThrows(SchemaMismatchException.class, () -> received(registry, header, Object.class));
        assertEquals(List.of("weights"), e.missing());
        assertEquals(List.of("weigjts"), e.unknown());
        assertEquals("root[0]", e.path());
    }

    @Test
    void shouldApplyTheSameRulesToRecordComponents() {
        SchemaMismatchException missing =
                assertThrows(SchemaMismatchException.class, () -> evolve(new PointBefore(1, 2), PointAdded.class));
        assertEquals(List.of("label"), missing.missing());
        PointAddedOptional optional = evolve(new PointBefore(1, 2), PointAddedOptional.class);
        assertEquals(new PointAddedOptional(1, 2, null, 0), optional, "Java's defaults for missing components");
        SchemaMismatchException unknown =
                assertThrows(SchemaMismatchException.class, () -> evolve(new PointBefore(1, 2), PointDropped.class));
        assertEquals(List.of("y"), unknown.unknown());
        assertEquals(new PointDroppedEvolving(1), evolve(new PointBefore(1, 2), PointDroppedEvolving.class));
    }

    @Test
    void shouldReadVersion1HeadersWithVersion1sLenientRules() {
        // {"v": 1, "root": {"t": "evo", "f": "cuda", "d": {"a": 3, "gone": true}}, "frames": []}
        Map<String, Object> data = new LinkedHashMap<>();
        data.put("a", 3L);
        data.put("gone", true);
        Map<String, Object> node = new LinkedHashMap<>();
        node.put("t", "evo");
        node.put("f", "cuda");
        node.put("d", data);
        Map<String, Object> top = new LinkedHashMap<>();
        top.put("v", 1L);
        top.put("root", node);
        top.put("frames", List.of());
        byte[] v1 = new MsgpackWriter().value(top).toByteArray();
        TypeRegistry registry =
                new TypeRegistry().registerGeneric(Object.class, Family.CUDA).register(Added.class, "evo");
        Added after = received(registry, v1, Added.class);
        assertEquals(3, after.a);
        assertNull(after.weights);
        assertEquals("from the constructor", after.added, "missing and not optional: version 1 keeps the default");
    }

    @Test
    void shouldStillRefuseANewerTypeVersionWhateverTheAnnotations() {
        TypeRegistry writer =
                new TypeRegistry().registerGeneric(Object.class, Family.CUDA).register(Before.class, "evo", 2);
        TypeRegistry reader =
                new TypeRegistry().registerGeneric(Object.class, Family.CUDA).register(DroppedEvolving.class, "evo", 1);
        try (Serialized s = writer.serialize(new Before(), Family.CUDA)) {
            IncompatibleVersionException e = assertThrows(
                    IncompatibleVersionException.class, () -> received(reader, s.encodeHeader(), Object.class));
            assertTrue(e.getMessage().contains("'evo' version 2 is newer than this reader's 1"), e.getMessage());
        }
    }
}
