package io.cuwire.serialize;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.NdArray;
import java.lang.foreign.MemorySegment;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Every single-byte corruption of valid version-2 headers: each byte XOR 0xFF and XOR each single bit. Every
 * corrupted header must be refused with a typed {@link SerializationException} or decode to a value equal to the
 * original; nothing may leak. Then flips with the checksum made valid again (what a hostile peer can do): still only
 * typed errors or values (a flipped number is another valid number), and a flipped field name is always refused.
 */
class HeaderByteFlipTest {
    private static final int[] MASKS = {0xFF, 0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80};
    /** Behind a valid checksum: all bits, the lowest, and the ASCII case bit (which renames {@code w} to {@code W}). */
    private static final int[] RESEALED_MASKS = {0xFF, 0x01, 0x20};
    /** Bounds a flipped frame length, so that a corrupted header is refused instead of allocating gigabytes. */
    private static final Limits LIMITS = new Limits(1 << 20, 64, 64, 1 << 20, 4 << 20, 1 << 12);

    private BufferAllocator<DeviceBuffer> device;
    private BufferAllocator<HostBuffer> host;
    private DecodeTarget target;
    private TypeRegistry registry;

    @BeforeEach
    void open() {
        device = Devices.get(0).newAllocator("flip-device", BufferAllocator.UNLIMITED);
        host = BufferAllocator.host("flip-host", BufferAllocator.UNLIMITED);
        target = new DecodeTarget(device, host, Limits.DEFAULT);
        registry = WireFixtures.registry(host);
    }

    @AfterEach
    void close() {
        device.close();
        host.close();
    }

    /** A valid header, the bytes of its frames, and how to tell a decoded value equal to the original. */
    private record Case(String name, byte[] header, byte[] frames, Predicate<Object> equalsOriginal) {}

    private static byte[] frameBytes(Serialized s) {
        byte[] out = new byte[Math.toIntExact(s.totalFrameBytes())];
        long at = 0;
        for (Frame f : s.frames()) {
            CopyEngine.copyToSegment(f.buffer(), 0, MemorySegment.ofArray(out).asSlice(at, f.length()));
            at += f.length();
        }
        return out;
    }

    private List<Case> cases(NdArray array) {
        List<Case> cases = new ArrayList<>();
        WireFixtures.Model model = WireFixtures.model();
        try (Serialized s = registry.serialize(model, Family.CUDA)) {
            cases.add(new Case("generic model with weights", s.encodeHeader(), frameBytes(s), model::equals));
        }
        try (Serialized s = registry.serialize(array, Family.CUDA)) {
            cases.add(new Case(
                    "ndarray",
                    s.encodeHeader(),
                    frameBytes(s),
                    v -> v instanceof NdArray a
                            && a.dtype() == array.dtype()
                            && a.order() == array.order()
                            && java.util.Arrays.equals(a.shape(), array.shape())
                            && array.contentEquals(a)));
        }
        WireFixtures.Shared shared = WireFixtures.shared();
        try (Serialized s = registry.serialize(shared, Family.CUDA)) {
            cases.add(new Case(
                    "collections and references",
                    s.encodeHeader(),
                    frameBytes(s),
                    v -> v instanceof WireFixtures.Shared d
                            && shared.first.equals(d.first)
                            && d.first == d.second
                            && java.util.Arrays.equals(shared.p, d.p)
                            && d.p == d.q
                            && shared.l1.equals(d.l1)
                            && d.l1 == d.l2
                            && shared.point.equals(d.point)
                            && d.both.length == 3
                            && d.both[0] == d.point
                            && d.both[1] == d.point
                            && d.both[2] == d.first));
        }
        return cases;
    }

    /** Decodes {@code header} over fresh frames; the outcome's name: "equal", "different" or an exception class. */
    private String outcome(Case c, byte[] header) {
        Object value = null;
        try {
            try (Serialized s = WireFixtures.received(header, c.frames(), host, device, LIMITS)) {
                value = registry.deserialize(s, target);
            }
            return c.equalsOriginal().test(value) ? "equal" : "different";
        } catch (SerializationException e) {
            return e.getClass().getSimpleName();
        } catch (RuntimeException | Error e) {
            return fail(c.name() + ": a flipped header raised " + e + " instead of a SerializationException", e);
        } finally {
            if (value instanceof NdArray a && a.isOpen()) {
                a.close();
            }
        }
    }

    @Test
    void shouldRefuseEveryFlippedByteWithATypedErrorOrDecodeItToAnEqualValue() {
        try (NdArray array = WireFixtures.cudaArray(device)) {
            Map<String, Integer> totals = new TreeMap<>();
            int flips = 0;
            for (Case c : cases(array)) {
                assertEquals("equal", outcome(c, c.header()), c.name() + " decodes unflipped");
                Map<String, Integer> counts = new TreeMap<>();
                for (int pos = 0; pos < c.header().length; pos++) {
                    for (int mask : MASKS) {
                        byte[] flipped = c.header().clone();
                        flipped[pos] ^= (byte) mask;
                        String o = outcome(c, flipped);
                        assertTrue(
                                !o.equals("different"),
                                c.name() + ": flipping byte " + pos + " with 0x" + Integer.toHexString(mask)
                                        + " decoded to a different value");
                        counts.merge(o, 1, Integer::sum);
                        totals.merge(o, 1, Integer::sum);
                        flips++;
                    }
                }
                System.out.println("byte flips of the " + c.name() + " header (" + c.header().length + " bytes, "
                        + c.header().length * MASKS.length + " flips): " + counts);
                assertEquals(
                        (c.header().length - 2) * MASKS.length,
                        counts.getOrDefault(HeaderChecksumException.class.getSimpleName(), 0),
                        "every flip after the prefix and version bytes is a checksum mismatch");
            }
            System.out.println("byte flips, all headers (" + flips + "): " + totals);
        }
        assertEquals(0, host.allocatedBytes() + device.allocatedBytes(), "nothing leaked");
    }

    /** Field names of the model's classes, as msgpack strings in the header: where a flip renames a field. */
    private static List<int[]> fieldNameSpans(byte[] header) {
        List<int[]> spans = new ArrayList<>();
        for (Class<?> type : List.of(WireFixtures.Model.class, WireFixtures.Inner.class)) {
            for (Field f : type.getDeclaredFields()) {
                if (Modifier.isStatic(f.getModifiers()) || f.isSynthetic()) {
                    continue;
                }
                byte[] name = f.getName().getBytes(StandardCharsets.UTF_8);
                for (int at = 0; at + name.length < header.length; at++) {
                    if ((header[at] & 0xff) == (0xa0 | name.length)
                            && java.util.Arrays.equals(header, at + 1, at + 1 + name.length, name, 0, name.length)) {
                        spans.add(new int[] {at + 1, at + 1 + name.length});
                    }
                }
            }
        }
        return spans;
    }

    @Test
    void shouldAnswerFlipsBehindAValidChecksumWithTypedErrorsAndRefuseEveryRenamedField() {
        try (NdArray array = WireFixtures.cudaArray(device)) {
            for (Case c : cases(array)) {
                List<int[]> names = fieldNameSpans(c.header());
                Map<String, Integer> counts = new TreeMap<>();
                int renamed = 0;
                for (int pos = Serialized.PREFIX_BYTES; pos < c.header().length; pos++) {
                    boolean inName = false;
                    for (int[] span : names) {
                        inName |= pos >= span[0] && pos < span[1];
                    }
                    for (int mask : RESEALED_MASKS) {
                        byte[] flipped = c.header().clone();
                        flipped[pos] ^= (byte) mask;
                        String o = outcome(c, Serialized.seal(flipped));
                        counts.merge(o, 1, Integer::sum);
                        if (inName) {
                            renamed++;
                            assertTrue(
                                    !o.equals("equal") && !o.equals("different"),
                                    c.name() + ": renaming a "
                                            + "field by flipping byte " + pos + " with 0x" + Integer.toHexString(mask)
                                            + " decoded");
                        }
                    }
                }
                System.out.println("byte flips of the " + c.name() + " header behind a valid checksum: " + counts + "; "
                        + renamed + " of them rename a field, all refused");
                if (c.name().startsWith("generic")) {
                    assertTrue(renamed > 300, "the model's field names were found in its header: " + renamed);
                    assertInstanceOf(
                            Integer.class,
                            counts.get(SchemaMismatchException.class.getSimpleName()),
                            "renamed fields are schema mismatches");
                }
            }
        }
        assertEquals(0, host.allocatedBytes() + device.allocatedBytes(), "nothing leaked");
    }
}
