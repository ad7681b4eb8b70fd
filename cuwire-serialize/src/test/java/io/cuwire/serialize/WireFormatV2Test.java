package io.cuwire.serialize;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.NdArray;
import io.cuwire.serialize.msgpack.MsgpackWriter;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The prefixed header of version 2, which version 3 keeps: prefix, checksum checked before parsing, the family list
 * and what the decoder holds it to.
 */
class WireFormatV2Test {
    private BufferAllocator<DeviceBuffer> device;
    private BufferAllocator<HostBuffer> host;
    private DecodeTarget target;
    private TypeRegistry registry;

    @BeforeEach
    void open() {
        device = Devices.get(0).newAllocator("v2-device", BufferAllocator.UNLIMITED);
        host = BufferAllocator.host("v2-host", BufferAllocator.UNLIMITED);
        target = new DecodeTarget(device, host, Limits.DEFAULT);
        registry = Models.registry();
    }

    @AfterEach
    void close() {
        device.close();
        host.close();
    }

    private static byte[] sealed(Object fam, Object root) {
        Map<String, Object> top = new LinkedHashMap<>();
        top.put("fam", fam);
        top.put("root", root);
        top.put("frames", List.of());
        return Serialized.seal(new MsgpackWriter()
                .raw(new byte[Serialized.PREFIX_BYTES])
                .value(top)
                .toByteArray());
    }

    private Object decode(byte[] header) {
        try (Serialized s = Serialized.received(Serialized.parseHeader(header, Limits.DEFAULT), List.of())) {
            return registry.deserialize(s, target);
        }
    }

    @Test
    void shouldWriteThePrefixTheVersionAndACrc32cOfTheMapThatFollows() {
        try (Serialized s = registry.serialize(new Models.Point(1, 2, "p"), Family.CUDA)) {
            byte[] h = s.encodeHeader();
            assertEquals(0xC1, h[0] & 0xff);
            assertEquals(Serialized.FORMAT_VERSION, h[1]);
            assertEquals(3, Serialized.FORMAT_VERSION);
            CRC32C crc = new CRC32C();
            crc.update(h, 6, h.length - 6);
            long stored = ((h[2] & 0xffL) << 24) | ((h[3] & 0xff) << 16) | ((h[4] & 0xff) << 8) | (h[5] & 0xff);
            assertEquals(crc.getValue(), stored);
            assertEquals(0x80 | 3, h[6] & 0xff, "a map of three entries follows: fam, root, frames");
            Serialized.Header parsed = Serialized.parseHeader(h, Limits.DEFAULT);
            assertEquals(3, parsed.version());
            assertEquals(Set.of(Family.CUDA), parsed.families());
        }
    }

    @Test
    void shouldCheckTheChecksumBeforeParsingAndNameBothValues() {
        byte[] h;
        try (Serialized s = registry.serialize(new Models.Point(1, 2, "p"), Family.CUDA)) {
            h = s.encodeHeader();
        }
        byte[] broken = h.clone();
        broken[6] = (byte) 0xC1;
        HeaderChecksumException e = assertThrows(
                HeaderChecksumException.class,
                () -> Serialized.parseHeader(broken, Limits.DEFAULT),
                "a map byte msgpack cannot parse fails the checksum first");
        CRC32C crc = new CRC32C();
        crc.update(broken, 6, broken.length - 6);
        assertEquals(crc.getValue(), e.actual());
        assertEquals(
                ((h[2] & 0xffL) << 24) | ((h[3] & 0xff) << 16) | ((h[4] & 0xff) << 8) | (h[5] & 0xff), e.expected());
        String named = String.format(
                java.util.Locale.ROOT, "carries CRC32C 0x%08x, its bytes give 0x%08x", e.expected(), e.actual());
        assertTrue(e.getMessage().contains(named), e.getMessage());
        assertThrows(
                MalformedHeaderException.class,
                () -> Serialized.parseHeader(new byte[] {(byte) 0xC1, 2, 0}, Limits.DEFAULT),
                "shorter than its prefix");
    }

    @Test
    void shouldListTheFamiliesTheValueUses() {
        registry.register(Models.HostOnly.class, Family.HOST, Models.HostOnly.SERIALIZER);
        Models.KMeans m = new Models.KMeans();
        m.anything = new Models.HostOnly("host only");
        try (Serialized mixed = registry.serialize(m, Family.CUDA, Family.HOST);
                Serialized plain = registry.serialize(List.of("no registered type", 1L), Family.CUDA);
                NdArray a = NdArray.fromArray(device, new float[] {1, 2}, 2);
                Serialized array = registry.serialize(a, Family.HOST)) {
            assertEquals(EnumSet.of(Family.CUDA, Family.HOST), mixed.families());
            assertEquals(
                    EnumSet.of(Family.CUDA, Family.HOST),
                    Serialized.parseHeader(mixed.encodeHeader(), Limits.DEFAULT).families());
            assertEquals(
                    Set.of(),
                    Serialized.parseHeader(plain.encodeHeader(), Limits.DEFAULT).families());
            assertEquals(
                    Set.of(Family.HOST),
                    Serialized.parseHeader(array.encodeHeader(), Limits.DEFAULT).families());
        }
    }

    @Test
    void shouldRefuseANodeInAFamilyTheHeadersListDoesNotName() {
        Map<String, Object> node = new LinkedHashMap<>();
        node.put("t", "test.Point");
        node.put("f", "cuda");
        node.put("d", Map.of("x", 1.0, "y", 2.0, "tag", "t"));
        assertEquals(new Models.Point(1, 2, "t"), decode(sealed(List.of("cuda"), node)));
        MalformedHeaderException e = assertThrows(
                MalformedHeaderException.class,
                () -> decode(sealed(List.of("host"), Map.of("t", "list", "v", List.of(node)))));
        assertTrue(
                e.getMessage()
                        .contains("'test.Point' in family cuda, which the header's family list [host] does "
                                + "not name at root[0]"),
                e.getMessage());
    }

    @Test
    void shouldRefuseAFamilyListThatIsNotDistinctKnownNamesAndUnknownTopLevelEntries() {
        assertThrows(MalformedHeaderException.class, () -> decode(sealed(List.of("cuda", "cuda"), null)));
        assertThrows(MalformedHeaderException.class, () -> decode(sealed(List.of("gpu"), null)));
        assertThrows(MalformedHeaderException.class, () -> decode(sealed("cuda", null)));
        Map<String, Object> top = new LinkedHashMap<>();
        top.put("fam", List.of());
        top.put("root", null);
        top.put("frames", List.of());
        top.put("extra", 1L);
        byte[] extra = Serialized.seal(new MsgpackWriter()
                .raw(new byte[Serialized.PREFIX_BYTES])
                .value(top)
                .toByteArray());
        MalformedHeaderException e = assertThrows(MalformedHeaderException.class, () -> decode(extra));
        assertTrue(e.getMessage().contains("unknown entry 'extra'"), e.getMessage());
    }

    @Test
    void shouldReadAVersion1HeaderAsEveryFamilyAndWriteItBackAsTheCurrentVersion() {
        Map<String, Object> top = new LinkedHashMap<>();
        top.put("v", 1L);
        top.put("root", "old");
        top.put("frames", List.of());
        Serialized.Header v1 =
                Serialized.parseHeader(new MsgpackWriter().value(top).toByteArray(), Limits.DEFAULT);
        assertEquals(1, v1.version());
        assertEquals(EnumSet.allOf(Family.class), v1.families(), "a version-1 header could use any family");
        assertThrows(IllegalStateException.class, v1::encode);
        try (Serialized s = Serialized.received(v1, List.of())) {
            assertEquals(1, s.formatVersion());
            Serialized.Header again = Serialized.parseHeader(s.encodeHeader(), Limits.DEFAULT);
            assertEquals(Serialized.FORMAT_VERSION, again.version());
            assertEquals("old", again.root());
        }
    }
}
