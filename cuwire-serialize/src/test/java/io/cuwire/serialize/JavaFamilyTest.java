package io.cuwire.serialize;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class JavaFamilyTest {
    private BufferAllocator<DeviceBuffer> device;
    private BufferAllocator<HostBuffer> host;
    private DecodeTarget target;

    @BeforeEach
    void open() {
        device = Devices.get(0).newAllocator("java-device", BufferAllocator.UNLIMITED);
        host = BufferAllocator.host("java-host", BufferAllocator.UNLIMITED);
        target = new DecodeTarget(device, host, Limits.DEFAULT);
    }

    @AfterEach
    void close() {
        device.close();
        host.close();
    }

    @Test
    void shouldBeOffUnlessTheChainNamesItAndTheTypeIsAllowed() {
        TypeRegistry registry = new TypeRegistry();
        Models.Legacy legacy = new Models.Legacy();
        assertThrows(UnserializableException.class, () -> registry.serialize(legacy, Family.JAVA));
        registry.allowJava(Models.Legacy.class);
        assertThrows(UnserializableException.class, () -> registry.serialize(legacy, Family.CUDA, Family.HOST));
    }

    @Test
    void shouldRoundTripAllowedTypesInlineAndAsAFrame() {
        TypeRegistry registry = new TypeRegistry().allowJava(Models.Legacy.class);
        for (int n : new int[] {3, 100_000}) {
            Models.Legacy legacy = new Models.Legacy();
            legacy.text = "hello";
            legacy.values = new int[n];
            legacy.values[n - 1] = 77;
            try (Serialized s = registry.serialize(legacy, Family.CUDA, Family.JAVA)) {
                assertEquals(n > 3 ? 1 : 0, s.frames().size());
                Models.Legacy back = registry.deserialize(s, Models.Legacy.class, target);
                assertEquals("hello", back.text);
                assertArrayEquals(legacy.values, back.values);
            }
        }
        assertEquals(0, registry.hostAllocator().allocatedBytes(), "the frame copy was released");
    }

    @Test
    void shouldRefuseAStreamNamingAClassOffTheAllowList() {
        TypeRegistry writer = new TypeRegistry().allowJava(Models.NotAllowed.class);
        TypeRegistry reader = new TypeRegistry().allowJava(Models.Legacy.class);
        reader.register(Models.NotAllowed.class, Models.NotAllowed.class.getName());
        reader.register(Models.NotAllowed.class, Family.JAVA, JavaFamily.serializer(reader));
        try (Serialized s = writer.serialize(new Models.NotAllowed(), Family.JAVA);
                Serialized wire = Serialized.received(Serialized.parseHeader(s.encodeHeader(), Limits.DEFAULT),
                        List.of())) {
            MalformedHeaderException e = assertThrows(MalformedHeaderException.class,
                    () -> reader.deserialize(wire, target));
            assertTrue(e.getMessage().contains("allow-list"), e.getMessage());
        }
    }
}
