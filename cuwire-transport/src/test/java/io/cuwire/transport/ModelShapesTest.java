package io.cuwire.transport;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DType;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import io.cuwire.transport.ModelShapes.ClassKind;
import io.cuwire.transport.ModelShapes.ClassSpec;
import io.cuwire.transport.ModelShapes.Feature;
import io.cuwire.transport.ModelShapes.FieldSpec;
import io.cuwire.transport.ModelShapes.Generated;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.lang.reflect.RecordComponent;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The tools of {@link ModelShapeConformanceSuite} checked on their own: the class generator is deterministic and
 * covers every feature with real records, final and transient fields and missing constructors, and the deep
 * equality fails on each kind of difference it is there to find.
 */
class ModelShapesTest {
    private static final long SEED = 7;

    @Test
    void shouldGenerateTheSameClassFilesFromTheSameSeedAndOthersFromAnother() {
        List<ClassSpec> a = ModelShapes.specify(SEED, 64, Set.of());
        List<ClassSpec> b = ModelShapes.specify(SEED, 64, Set.of());
        assertEquals(a, b);
        for (int i = 0; i < a.size(); i++) {
            assertArrayEquals(
                    ModelShapes.bytecode(a.get(i), a),
                    ModelShapes.bytecode(b.get(i), b),
                    a.get(i).name());
        }
        assertNotEquals(a, ModelShapes.specify(SEED + 1, 64, Set.of()));
    }

    @Test
    void shouldPutEveryFeatureNotExcludedIntoAGeneratedClassAndNoExcludedOne() {
        for (long seed = 0; seed < 12; seed++) {
            assertCoverage(seed, EnumSet.of(Feature.TREE_MAP, Feature.NO_NO_ARG_CONSTRUCTOR, Feature.DOUBLE_ARRAY));
            assertCoverage(seed, ModelShapeConformanceSuite.unsupportedFeatures());
        }
    }

    private static void assertCoverage(long seed, Set<Feature> excluded) {
        Generated g = ModelShapes.generate(seed, ModelShapeConformanceSuite.DEFAULT_CLASSES, excluded);
        assertTrue(g.models().size() >= 50);
        Set<Feature> seen = EnumSet.noneOf(Feature.class);
        for (ClassSpec spec : g.models()) {
            Class<?> c = g.type(spec.index());
            assertTrue(ModelShapes.GeneratedModel.class.isAssignableFrom(c), c.getName());
            assertEquals(spec.kind() == ClassKind.RECORD, c.isRecord(), c.getName());
            if (spec.kind() == ClassKind.RECORD) {
                seen.add(Feature.RECORD);
            } else if (spec.kind() == ClassKind.CLASS_WITHOUT_NO_ARG_CONSTRUCTOR) {
                seen.add(Feature.NO_NO_ARG_CONSTRUCTOR);
            }
            assertEquals(spec.kind() == ClassKind.CLASS, hasNoArgConstructor(c), c.getName());
            for (FieldSpec f : spec.fields()) {
                seen.add(f.feature());
                seen.add(f.sharesWith() >= 0 ? Feature.SHARED_REFERENCE : f.feature());
                Field field = field(c, f.name());
                if (Modifier.isFinal(field.getModifiers()) && !c.isRecord()) {
                    seen.add(Feature.FINAL_FIELD);
                }
                if (ModelShapes.isTransient(field)) {
                    seen.add(Feature.TRANSIENT_FIELD);
                }
            }
        }
        Set<Feature> expected =
                excluded.isEmpty() ? EnumSet.allOf(Feature.class) : EnumSet.complementOf(EnumSet.copyOf(excluded));
        assertEquals(expected, seen, "seed " + seed + ", without " + excluded);
    }

    @Test
    void shouldMakeRecordsWithComponentsAccessorsAndValueEquality() throws Exception {
        Generated g = ModelShapes.generate(SEED, 0, Set.of());
        ClassSpec spec = g.probe(Feature.RECORD);
        Class<?> c = g.type(spec.index());
        assertTrue(c.isRecord());
        RecordComponent[] rc = c.getRecordComponents();
        assertEquals(List.of("id", "label"), List.of(rc[0].getName(), rc[1].getName()));
        Object a = g.construct(spec.index(), new Object[] {7, "seven"});
        Object b = g.construct(spec.index(), new Object[] {7, "seven"});
        assertEquals(7, rc[0].getAccessor().invoke(a));
        assertEquals(a, b);
        assertEquals(a.hashCode(), b.hashCode());
        assertNotEquals(a, g.construct(spec.index(), new Object[] {8, "seven"}));
        assertTrue(a.toString().contains("seven"), a.toString());
    }

    @Test
    void shouldFailOnEachKindOfDifference() {
        Generated g = ModelShapes.generate(SEED, 0, Set.of());
        int shared = g.probe(Feature.SHARED_REFERENCE).index();
        double[] w = {1, 2};
        double[] copy = w.clone();
        ModelEquality.assertDeepEquals(make(g, shared, w, w), make(g, shared, copy, copy));
        assertFails("a shared reference was not kept", make(g, shared, w, w), make(g, shared, w.clone(), w.clone()));
        assertFails("the sender had two distinct objects", make(g, shared, w, w.clone()), make(g, shared, w, w));
        assertFails(
                "root.sameWeights[1]",
                make(g, shared, w, new double[] {1, 3}),
                make(g, shared, w.clone(), new double[] {1, 4}));
        assertFails(
                "root.weights[0]",
                make(g, shared, new double[] {-0.0}, null),
                make(g, shared, new double[] {0.0}, null));

        int list = g.probe(Feature.LINKED_LIST).index();
        assertFails(
                "received a java.util.ArrayList",
                make(g, list, new LinkedList<>(List.of(1)), null),
                make(g, list, new ArrayList<>(List.of(1)), null));

        int floats = g.probe(Feature.BOXED_FLOAT).index();
        ModelEquality.assertDeepEquals(make(g, floats, Float.NaN), make(g, floats, Float.NaN));
        assertFails("root.value", make(g, floats, -0f), make(g, floats, 0f));

        int transients = g.probe(Feature.TRANSIENT_FIELD).index();
        ModelEquality.assertDeepEquals(make(g, transients, 1, "sent"), make(g, transients, 1, null));
        assertFails(
                "a transient field must not travel", make(g, transients, 1, "sent"), make(g, transients, 1, "sent"));

        int nd = g.probe(Feature.NDARRAY).index();
        try (BufferAllocator<HostBuffer> host = BufferAllocator.host("equality-test", BufferAllocator.UNLIMITED);
                var device = Devices.get(0).newAllocator("equality-test-device", BufferAllocator.UNLIMITED);
                NdArray a = NdArray.fromArray(host, new float[] {1, 2, 3, 4}, 2, 2);
                NdArray onDevice = NdArray.fromArray(device, new float[] {1, 2, 3, 4}, 2, 2);
                NdArray other = NdArray.fromArray(host, new float[] {1, 2, 3, 5}, 2, 2);
                NdArray fOrder = NdArray.zeros(host, DType.FLOAT32, Order.F, 2, 2);
                NdArray same = a.copyTo(host)) {
            ModelEquality.assertDeepEquals(make(g, nd, a), make(g, nd, same));
            assertFails("root.value: sent", make(g, nd, a), make(g, nd, onDevice));
            assertFails("contents", make(g, nd, a), make(g, nd, other));
            assertFails("root.value: sent", make(g, nd, a), make(g, nd, fOrder));
        }
    }

    private static void assertFails(String expected, Object sent, Object received) {
        assertNotSame(sent, received);
        AssertionError e = assertThrows(AssertionError.class, () -> ModelEquality.assertDeepEquals(sent, received));
        assertTrue(e.getMessage().contains(expected), e.getMessage());
    }

    private static Object make(Generated g, int index, Object... values) {
        return g.construct(index, values);
    }

    private static boolean hasNoArgConstructor(Class<?> c) {
        for (Constructor<?> k : c.getDeclaredConstructors()) {
            if (k.getParameterCount() == 0) {
                return true;
            }
        }
        return false;
    }

    private static Field field(Class<?> c, String name) {
        try {
            return c.getDeclaredField(name);
        } catch (NoSuchFieldException e) {
            throw new AssertionError(c.getName() + " has no field " + name, e);
        }
    }
}
