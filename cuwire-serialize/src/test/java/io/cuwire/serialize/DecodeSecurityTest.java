package io.cuwire.serialize;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.TestRandom;
import io.cuwire.serialize.msgpack.MsgpackReader;
import io.cuwire.serialize.msgpack.MsgpackWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
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

    private static byte[] header(Object root, List<Object> frames) {
        Map<String, Object> top = new LinkedHashMap<>();
        top.put("v", 1L);
        top.put("root", root);
        top.put("frames", frames);
        return new MsgpackWriter().value(top).toByteArray();
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
                UnknownTypeException e = assertThrows(UnknownTypeException.class,
                        () -> decode(header(root, List.of())));
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
        assertTrue(loaded.contains(control), "the recording saw the control class load: " + loaded.size()
                + " loads recorded");
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
        MalformedHeaderException e = assertThrows(MalformedHeaderException.class,
                () -> decode(header(wrong, List.of())));
        assertTrue(e.getMessage().contains("java.lang.String"), e.getMessage());
        Map<String, Object> deep = new LinkedHashMap<>(wrong);
        deep.put("v", List.of());
        deep.put("c", "[".repeat(300) + "str");
        assertThrows(MalformedHeaderException.class, () -> decode(header(deep, List.of())));
        assertFalse(Models.Flag.canaryInitialized);
    }

    @Test
    void shouldRefuseNewerFormatAndTypeVersions() {
        Map<String, Object> top = new LinkedHashMap<>();
        top.put("v", 2L);
        top.put("root", null);
        top.put("frames", List.of());
        assertThrows(IncompatibleVersionException.class,
                () -> Serialized.parseHeader(new MsgpackWriter().value(top).toByteArray(), Limits.DEFAULT));
        Map<String, Object> node = new LinkedHashMap<>();
        node.put("t", "test.Point");
        node.put("f", "cuda");
        node.put("tv", 3L);
        node.put("d", Map.of("x", 1.0, "y", 2.0, "tag", "t"));
        IncompatibleVersionException e = assertThrows(IncompatibleVersionException.class,
                () -> decode(header(node, List.of())));
        assertTrue(e.getMessage().contains("version 3"), e.getMessage());
    }

    static final class V1 {
        int a;
    }

    static final class V2 {
        int a;
        double added = 0.5;
        String alsoAdded = "default";
    }

    @Test
    void shouldDecodeAnOlderVersionIntoAnEvolvedTypeWithDefaults() {
        TypeRegistry old = new TypeRegistry().registerGeneric(Object.class, Family.CUDA).register(V1.class, "evolving");
        TypeRegistry evolved = new TypeRegistry().registerGeneric(Object.class, Family.CUDA)
                .register(V2.class, "evolving", 1);
        V1 v1 = new V1();
        v1.a = 9;
        try (Serialized s = old.serialize(v1, Family.CUDA);
                Serialized wire = Serialized.received(Serialized.parseHeader(s.encodeHeader(), Limits.DEFAULT),
                        List.of())) {
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
        assertThrows(LimitExceededException.class, () -> Serialized.parseHeader(frames,
                new Limits(1 << 20, 2, 4, 1000, 1500, 10)));
        byte[] huge = header(null, List.of(List.of(2L, 0L, 1L << 50)));
        LimitExceededException e = assertThrows(LimitExceededException.class,
                () -> Serialized.parseHeader(huge, Limits.DEFAULT));
        assertTrue(e.getMessage().contains("frame 0"), e.getMessage());
        Object deep = "leaf";
        for (int i = 0; i < 10; i++) {
            deep = List.of(deep);
        }
        byte[] nested = header(deep, List.of());
        assertThrows(LimitExceededException.class, () -> Serialized.parseHeader(nested,
                new Limits(1 << 20, 2, 4, 1000, 1500, 10)));
    }

    @Test
    void shouldRefuseADuplicateMapKeyEvenAfterANil() {
        // {"v": 1, "v": 1} and {"a": nil, "a": 1}: the second value must not silently replace the first.
        byte[] twice = {(byte) 0x82, (byte) 0xa1, 'v', 0x01, (byte) 0xa1, 'v', 0x01};
        byte[] afterNil = {(byte) 0x82, (byte) 0xa1, 'a', (byte) 0xc0, (byte) 0xa1, 'a', 0x01};
        for (byte[] bytes : List.of(twice, afterNil)) {
            MalformedHeaderException e = assertThrows(MalformedHeaderException.class,
                    () -> new MsgpackReader(bytes, 0, bytes.length, 8, 8).readValue());
            assertTrue(e.getMessage().contains("duplicate map key"), e.getMessage());
        }
    }

    @Test
    void shouldAnswerMutatedAndRandomHeadersOnlyWithTypedErrors(TestInfo info) {
        SplittableRandom random = TestRandom.create(info);
        Models.KMeans m = new Models.KMeans();
        m.name = "fuzz";
        m.counts = new long[] {1, 2};
        m.history.add(List.of(1, "two", 3.0));
        m.extras.put("k", Map.of("x", 1L));
        m.state = new Models.State();
        m.state.weights = new double[] {1, 2};
        m.points = new Models.Point[] {new Models.Point(1, 2, "p")};
        byte[] valid;
        try (Serialized s = registry.serialize(m, Family.CUDA)) {
            valid = s.encodeHeader();
        }
        Limits limits = new Limits(1 << 16, 16, 32, 1 << 20, 1 << 22, 1 << 12);
        int typed = 0;
        int decoded = 0;
        for (int i = 0; i < 100_000; i++) {
            byte[] bytes;
            if (i % 10 == 0) {
                bytes = TestRandom.bytes(random, random.nextInt(64));
            } else {
                bytes = valid.clone();
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
            }
            try {
                Serialized.Header h = Serialized.parseHeader(bytes, limits);
                List<io.cuwire.memory.Buffer> frames = new java.util.ArrayList<>();
                for (FrameDescriptor d : h.frames()) {
                    frames.add(host.allocate(d.length()));
                }
                try (Serialized s = Serialized.received(h, frames)) {
                    registry.deserialize(s, new DecodeTarget(device, host, limits));
                    decoded++;
                }
            } catch (SerializationException e) {
                typed++;
            } catch (RuntimeException | Error e) {
                fail("header " + i + " raised " + e + " instead of a SerializationException", e);
            }
        }
        assertEquals(100_000, typed + decoded);
        assertTrue(typed > 50_000, "most mutations are refused: " + typed);
        assertEquals(0, host.allocatedBytes(), "every frame of every attempt was released");
    }
}
