package io.cuwire.ml.types;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.HostBuffer;
import io.cuwire.ml.Estimator;
import io.cuwire.ml.MlTesting;
import io.cuwire.ml.Partial;
import io.cuwire.ml.cluster.KMeans;
import io.cuwire.serialize.DecodeTarget;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.Limits;
import io.cuwire.serialize.Serialized;
import io.cuwire.serialize.TypeRegistry;
import io.cuwire.serialize.UnknownTypeException;
import io.cuwire.serialize.WireType;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class MlTypesTest {
    @Test
    void shouldGiveEveryTypeAStableUniqueNameAndMakeItAnEstimatorOrAPartial() {
        TypeRegistry registry = MlTesting.registry();
        Set<String> names = new HashSet<>();
        for (Class<?> type : MlTypes.TYPES) {
            WireType wt = type.getAnnotation(WireType.class);
            assertNotNull(wt, type + " has a @WireType");
            assertTrue(wt.value().startsWith("cuwire.ml."), wt.value());
            assertTrue(names.add(wt.value()), "unique: " + wt.value());
            assertEquals(wt.value(), registry.nameOf(type));
            assertTrue(
                    Estimator.class.isAssignableFrom(type) || Partial.class.isAssignableFrom(type),
                    type + " is covered by a generic registration");
        }
    }

    @Test
    void shouldCarryAnUnfittedEstimatorWithItsParameters() {
        try (BufferAllocator<DeviceBuffer> device = MlTesting.device("types-device");
                BufferAllocator<HostBuffer> host = MlTesting.host("types-host")) {
            KMeans km =
                    new KMeans().nClusters(3).init(KMeans.Init.RANDOM).tol(0.5).seed(9);
            KMeans back = MlTesting.roundTrip(MlTesting.registry(), km, Family.CUDA, device, host);
            assertEquals(km.params(), back.params());
            assertFalse(back.isFitted());
        }
    }

    /**
     * The serializer lives below this module and cannot see {@link io.cuwire.ml.Param}; what puts parameters in the
     * header is that each is a scalar, string or enum, which the generic serializer writes as a plain header value.
     * Checked for every parameter of every estimator: a non-simple parameter would travel as a nested value or a
     * frame.
     */
    @Test
    void shouldCarryEveryParamOfEveryEstimatorAsAPlainHeaderValue() throws Exception {
        TypeRegistry registry = MlTesting.registry();
        int checked = 0;
        for (Class<?> type : MlTypes.TYPES) {
            if (!Estimator.class.isAssignableFrom(type)) {
                continue;
            }
            var ctor = type.getDeclaredConstructor();
            ctor.setAccessible(true);
            try (Estimator e = (Estimator) ctor.newInstance();
                    Serialized s = registry.serialize(e, Family.CUDA)) {
                Map<?, ?> fields = (Map<?, ?>) ((Map<?, ?>) s.root()).get("d");
                assertFalse(e.params().isEmpty(), type + " has parameters");
                for (Map.Entry<String, Object> p : e.params().entrySet()) {
                    Object expected = switch (p.getValue()) {
                        case Integer i -> (long) i;
                        case Float f -> (double) f;
                        case Enum<?> en -> en.name();
                        default -> p.getValue();
                    };
                    assertEquals(
                            expected,
                            fields.get(p.getKey()),
                            type.getSimpleName() + "." + p.getKey() + " is a plain header value");
                    checked++;
                }
            }
        }
        assertTrue(checked > 20, "parameters checked: " + checked);
    }

    @Test
    void shouldBeRefusedByNameByAReceiverWithoutTheMlTypes() {
        try (BufferAllocator<DeviceBuffer> device = MlTesting.device("types-device");
                BufferAllocator<HostBuffer> host = MlTesting.host("types-host")) {
            TypeRegistry sender = MlTesting.registry();
            TypeRegistry receiver = new TypeRegistry();
            try (Serialized s = sender.serialize(new KMeans(), Family.CUDA);
                    Serialized wire =
                            Serialized.received(Serialized.parseHeader(s.encodeHeader(), Limits.DEFAULT), List.of())) {
                UnknownTypeException e = assertThrows(
                        UnknownTypeException.class,
                        () -> receiver.deserialize(wire, new DecodeTarget(device, host, Limits.DEFAULT)));
                assertTrue(e.getMessage().contains("cuwire.ml.KMeans"), e.getMessage());
            }
        }
    }
}
