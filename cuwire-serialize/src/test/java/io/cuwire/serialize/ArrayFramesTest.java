package io.cuwire.serialize;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyDirection;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.MemoryKind;
import io.cuwire.memory.TransferScope;
import io.cuwire.serialize.msgpack.MsgpackWriter;
import io.cuwire.test.TestRandom;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * Frames that are a primitive array's memory: the descriptor names the array's type, a receiver that took the bytes
 * into a fresh array of that type hands it over with {@link Serialized#receivedFrames}, and the decoder returns that
 * array itself; everywhere else such a frame is bytes, copied as before.
 */
class ArrayFramesTest {
    /** A model of one framed array of every primitive type. */
    static final class AllArrays {
        byte[] i8;
        short[] i16;
        char[] u16;
        int[] i32;
        long[] i64;
        float[] f32;
        double[] f64;
        boolean[] bool;
    }

    private BufferAllocator<DeviceBuffer> device;
    private BufferAllocator<HostBuffer> host;
    private DecodeTarget target;
    private TypeRegistry registry;

    @BeforeEach
    void open() {
        device = Devices.get(0).newAllocator("array-frames-device", BufferAllocator.UNLIMITED);
        host = BufferAllocator.host("array-frames-host", BufferAllocator.UNLIMITED);
        target = new DecodeTarget(device, host, Limits.DEFAULT);
        // Every array of at least one byte is a frame.
        registry = new TypeRegistry(Limits.DEFAULT, 1, host)
                .registerGeneric(AllArrays.class, Family.HOST)
                .register(AllArrays.class);
    }

    @AfterEach
    void close() {
        device.close();
        host.close();
    }

    private static AllArrays random(SplittableRandom random, int n) {
        AllArrays m = new AllArrays();
        m.i8 = new byte[n];
        random.nextBytes(m.i8);
        m.i16 = new short[n];
        m.u16 = new char[n];
        m.i32 = new int[n];
        m.i64 = new long[n];
        m.f32 = new float[n];
        m.f64 = new double[n];
        m.bool = new boolean[n];
        for (int i = 0; i < n; i++) {
            m.i16[i] = (short) random.nextInt();
            m.u16[i] = (char) random.nextInt();
            m.i32[i] = random.nextInt();
            m.i64[i] = random.nextLong();
            m.f32[i] = (float) random.nextDouble();
            m.f64[i] = random.nextDouble();
            m.bool[i] = random.nextBoolean();
        }
        return m;
    }

    private static void assertSameContents(AllArrays expected, AllArrays actual) {
        assertArrayEquals(expected.i8, actual.i8);
        assertArrayEquals(expected.i16, actual.i16);
        assertArrayEquals(expected.u16, actual.u16);
        assertArrayEquals(expected.i32, actual.i32);
        assertArrayEquals(expected.i64, actual.i64);
        assertArrayEquals(expected.f32, actual.f32);
        assertArrayEquals(expected.f64, actual.f64);
        assertArrayEquals(expected.bool, actual.bool);
    }

    /** What a byte-stream receiver does: a fresh array per typed descriptor, a native copy for every other frame. */
    private static List<Frame> receivedAsArrays(
            Serialized sent, Serialized.Header header, BufferAllocator<HostBuffer> host) {
        List<Frame> frames = new ArrayList<>();
        for (int i = 0; i < header.frames().size(); i++) {
            FrameDescriptor d = header.frames().get(i);
            MemorySegment bytes = ((HostBuffer) sent.frames().get(i).buffer()).segment();
            if (d.arrayType() != null) {
                MemorySegment array = d.arrayType().newArraySegment(d.arrayLength());
                array.copyFrom(bytes);
                frames.add(new Frame(HostBuffer.wrap(array), true, d.arrayType()));
            } else {
                HostBuffer b = host.allocate(d.length());
                b.segment().copyFrom(bytes);
                frames.add(new Frame(b, true));
            }
        }
        return frames;
    }

    @Test
    void shouldDescribeEachPrimitiveArraysFrameByItsTypeAndKeepTheTypeThroughTheHeader(TestInfo info) {
        AllArrays m = random(TestRandom.create(info), 5);
        try (Serialized s = registry.serialize(m, Family.HOST)) {
            List<PrimitiveArrayType> types = new ArrayList<>();
            for (Frame f : s.frames()) {
                types.add(f.arrayType());
            }
            // In field order; boolean[]'s frame is a packed byte copy, bytes to the receiver.
            assertEquals(
                    Arrays.asList(
                            PrimitiveArrayType.I8,
                            PrimitiveArrayType.I16,
                            PrimitiveArrayType.U16,
                            PrimitiveArrayType.I32,
                            PrimitiveArrayType.I64,
                            PrimitiveArrayType.F32,
                            PrimitiveArrayType.F64,
                            null),
                    types);
            Serialized.Header header = Serialized.parseHeader(s.encodeHeader(), Limits.DEFAULT);
            assertEquals(s.frameDescriptors(), header.frames());
            for (FrameDescriptor d : header.frames()) {
                if (d.arrayType() != null) {
                    assertEquals(5, d.arrayLength());
                }
            }
        }
    }

    @Test
    void shouldReturnTheReceivedArrayItselfWhenTheFrameIsAFreshArrayOfTheNodesType(TestInfo info) {
        AllArrays m = random(TestRandom.create(info), 300);
        try (Serialized sent = registry.serialize(m, Family.HOST)) {
            Serialized.Header header = Serialized.parseHeader(sent.encodeHeader(), Limits.DEFAULT);
            List<Frame> frames = receivedAsArrays(sent, header, host);
            Map<Object, Boolean> arrays = new IdentityHashMap<>();
            for (Frame f : frames) {
                if (f.arrayType() != null) {
                    arrays.put(((HostBuffer) f.buffer()).segment().heapBase().orElseThrow(), true);
                }
            }
            assertEquals(7, arrays.size());
            AllArrays back;
            try (Serialized received = Serialized.receivedFrames(header, frames);
                    TransferScope scope = CopyEngine.openScope("decode")) {
                back = registry.deserialize(received, AllArrays.class, target);
                // Only the boolean[] frame (bytes, converted element by element) is read by a copy.
                assertEquals(300, scope.bytes(CopyDirection.H2H), scope.toString());
            }
            assertSameContents(m, back);
            for (Frame f : frames) {
                assertFalse(f.buffer().isOpen(), "the decoder ended the use of " + f);
            }
            for (Object array : List.of(back.i8, back.i16, back.u16, back.i32, back.i64, back.f32, back.f64)) {
                assertTrue(arrays.containsKey(array), array.getClass().getTypeName() + " is the received array");
            }
        }
        assertEquals(0, host.allocatedBytes());
    }

    @Test
    void shouldCopyAFrameThatIsNotAFreshArrayOfItsOwn(TestInfo info) {
        AllArrays m = random(TestRandom.create(info), 64);
        // Decoding the sender's own value: its frames are the live arrays, not owned.
        try (Serialized sent = registry.serialize(m, Family.HOST)) {
            AllArrays copy = registry.deserialize(sent, AllArrays.class, target);
            assertSameContents(m, copy);
            assertNotSame(m.f32, copy.f32);
            assertNotSame(m.i64, copy.i64);
        }
        // Received as owned buffers over the same arrays but without an array type (a loan, as in-process).
        try (Serialized sent = registry.serialize(m, Family.HOST)) {
            Serialized.Header header = Serialized.parseHeader(sent.encodeHeader(), Limits.DEFAULT);
            List<HostBuffer> loans = new ArrayList<>();
            for (Frame f : sent.frames()) {
                loans.add(HostBuffer.wrap(((HostBuffer) f.buffer()).segment()));
            }
            AllArrays copy;
            try (Serialized received = Serialized.received(header, loans)) {
                copy = registry.deserialize(received, AllArrays.class, target);
            }
            assertSameContents(m, copy);
            assertNotSame(m.f32, copy.f32);
            assertNotSame(m.u16, copy.u16);
        }
    }

    @Test
    void shouldCopyAReceivedArrayOfAnotherTypeThanTheNodesIntoANewArray() {
        float[] floats = {1.5f, -2.25f, 3.0f};
        MemorySegment segment = MemorySegment.ofArray(floats);
        Map<String, Object> node = new LinkedHashMap<>();
        node.put("t", "i32[]");
        node.put("n", 3L);
        node.put("fr", 0L);
        byte[] bytes = header(node, List.of(List.of(0L, -1L, 12L, "f32[]")));
        Serialized.Header header = Serialized.parseHeader(bytes, Limits.DEFAULT);
        Frame frame = new Frame(HostBuffer.wrap(segment), true, PrimitiveArrayType.F32);
        try (Serialized received = Serialized.receivedFrames(header, List.of(frame))) {
            int[] ints = (int[]) registry.deserialize(received, target);
            assertArrayEquals(
                    new int[] {
                        Float.floatToRawIntBits(1.5f), Float.floatToRawIntBits(-2.25f), Float.floatToRawIntBits(3.0f)
                    },
                    ints);
        }
    }

    /** A current-version header of a raw root node and raw frame descriptors. */
    private static byte[] header(Object root, List<Object> frames) {
        Map<String, Object> top = new LinkedHashMap<>();
        top.put("fam", List.of("host"));
        top.put("root", root);
        top.put("frames", frames);
        return Serialized.seal(new MsgpackWriter()
                .raw(new byte[Serialized.PREFIX_BYTES])
                .value(top)
                .toByteArray());
    }

    private static String refusal(List<Object> descriptor, Limits limits) {
        byte[] bytes = header(null, List.of(descriptor));
        return assertThrows(MalformedHeaderException.class, () -> Serialized.parseHeader(bytes, limits))
                .getMessage();
    }

    @Test
    void shouldRefuseADescriptorWhoseArrayTypeCannotHoldTheFrameBeforeAnythingIsAllocated() {
        assertEquals(
                "frame descriptor 0 describes a f64[] frame of 12 bytes, not a whole number of 8-byte elements",
                refusal(List.of(0L, -1L, 12L, "f64[]"), Limits.DEFAULT));
        assertEquals(
                "frame descriptor 0 describes a f32[] frame of DEVICE memory on device 0 (expected: HOST "
                        + "memory, device -1)",
                refusal(List.of(2L, 0L, 16L, "f32[]"), Limits.DEFAULT));
        assertEquals(
                "frame descriptor 0 describes a i32[] frame of PINNED memory on device -1 (expected: HOST "
                        + "memory, device -1)",
                refusal(List.of(1L, -1L, 16L, "i32[]"), Limits.DEFAULT));
        assertEquals(
                "frame descriptor 0 names array type 'bool[]' (expected: one of [i8[], i16[], u16[], i32[], "
                        + "i64[], f32[], f64[]])",
                refusal(List.of(0L, -1L, 16L, "bool[]"), Limits.DEFAULT));
        assertEquals(
                "frame descriptor 0 names array type Double (expected: one of [i8[], i16[], u16[], i32[], "
                        + "i64[], f32[], f64[]], or a count of frames)",
                refusal(List.of(0L, -1L, 16L, 5.0), Limits.DEFAULT));
        assertEquals(
                5,
                Serialized.parseHeader(header(null, List.of(List.of(0L, -1L, 16L, 5L))), Limits.DEFAULT)
                        .frames()
                        .size(),
                "an integer is a count of frames alike (format version 3), not an array type");
        assertEquals(
                "frame descriptor 0 is not [kind, device, length], [kind, device, length, array type] or "
                        + "[kind, device, length, count]",
                refusal(List.of(0L, -1L, 16L, "f32[]", 1L), Limits.DEFAULT));
        Limits large = new Limits(
                Limits.DEFAULT.maxHeaderBytes(),
                Limits.DEFAULT.maxFrames(),
                Limits.DEFAULT.maxDepth(),
                1L << 40,
                1L << 40,
                Limits.DEFAULT.maxCollectionSize());
        long tooMany = PrimitiveArrayType.MAX_LENGTH + 1L;
        assertEquals(
                "frame descriptor 0 describes a i8[] frame of " + tooMany + " elements, more than an array " + "holds ("
                        + PrimitiveArrayType.MAX_LENGTH + ")",
                refusal(List.of(0L, -1L, tooMany, "i8[]"), large));
        // The largest array there is passes the check (nothing is allocated by parsing).
        Serialized.Header fits = Serialized.parseHeader(
                header(null, List.of(List.of(0L, -1L, (long) PrimitiveArrayType.MAX_LENGTH * 8, "i64[]"))), large);
        assertEquals(PrimitiveArrayType.MAX_LENGTH, fits.frames().getFirst().arrayLength());
        assertEquals(PrimitiveArrayType.I64, fits.frames().getFirst().arrayType());
    }

    @Test
    void shouldRefuseAVersionOneDescriptorWithAnArrayType() {
        Map<String, Object> top = new LinkedHashMap<>();
        top.put("v", 1L);
        top.put("root", null);
        top.put("frames", List.of(List.of(0L, -1L, 16L, "f32[]")));
        byte[] bytes = new MsgpackWriter().value(top).toByteArray();
        MalformedHeaderException e =
                assertThrows(MalformedHeaderException.class, () -> Serialized.parseHeader(bytes, Limits.DEFAULT));
        assertEquals("frame descriptor 0 is not [kind, device, length]", e.getMessage());
    }

    @Test
    void shouldRefuseFramesThatDoNotMatchTheirDescriptorsArrayTypeOrAreNotOwned() {
        Serialized.Header header =
                Serialized.parseHeader(header(null, List.of(List.of(0L, -1L, 16L, "f32[]"))), Limits.DEFAULT);
        Frame ints = new Frame(HostBuffer.wrap(MemorySegment.ofArray(new int[4])), true, PrimitiveArrayType.I32);
        MalformedHeaderException e =
                assertThrows(MalformedHeaderException.class, () -> Serialized.receivedFrames(header, List.of(ints)));
        assertEquals("frame 0 is a i32[] array, header says f32[]", e.getMessage());
        Frame borrowed = new Frame(HostBuffer.wrap(MemorySegment.ofArray(new float[4])), false, PrimitiveArrayType.F32);
        IllegalArgumentException notOwned = assertThrows(
                IllegalArgumentException.class, () -> Serialized.receivedFrames(header, List.of(borrowed)));
        assertEquals("frame 0 (HOST[16 bytes]) is not owned: a received value owns its frames", notOwned.getMessage());
        // A frame of bytes matches a typed descriptor of its length: it is copied when decoded.
        try (HostBuffer b = host.allocate(16)) {
            assertNull(Serialized.receivedFrames(header, List.of(new Frame(b, true)))
                    .frames()
                    .getFirst()
                    .arrayType());
        }
    }

    @Test
    void shouldRefuseAnArrayTypeOnAFrameThatIsNotAWholeArrayOfThatType() {
        float[] floats = new float[8];
        String slice = assertThrows(
                        IllegalArgumentException.class,
                        () -> new Frame(
                                HostBuffer.wrap(MemorySegment.ofArray(floats).asSlice(4)),
                                true,
                                PrimitiveArrayType.F32))
                .getMessage();
        assertEquals("HOST[28 bytes] is not the whole memory of a float[]", slice);
        assertThrows(
                IllegalArgumentException.class,
                () -> new Frame(HostBuffer.wrap(MemorySegment.ofArray(floats)), true, PrimitiveArrayType.I32));
        try (HostBuffer b = host.allocate(32)) {
            assertThrows(IllegalArgumentException.class, () -> new Frame(b, true, PrimitiveArrayType.F32));
        }
        assertThrows(
                IllegalArgumentException.class,
                () -> new FrameDescriptor(MemoryKind.HOST, -1, 6, PrimitiveArrayType.F32));
        assertEquals(2, new FrameDescriptor(MemoryKind.HOST, -1, 8, PrimitiveArrayType.F32).arrayLength());
    }

    @Test
    void shouldRefuseASerializerFrameThatIsAPrimitiveArrays() {
        Map<String, Object> data = new LinkedHashMap<>();
        data.put("format", "x");
        data.put("meta", Map.of());
        data.put("mem", "HOST");
        data.put("fr", 0L);
        Map<String, Object> node = new LinkedHashMap<>();
        node.put("t", "cuwire.blob");
        node.put("f", "host");
        node.put("d", data);
        Serialized.Header header =
                Serialized.parseHeader(header(node, List.of(List.of(0L, -1L, 16L, "f32[]"))), Limits.DEFAULT);
        Frame frame = new Frame(HostBuffer.wrap(MemorySegment.ofArray(new float[4])), true, PrimitiveArrayType.F32);
        try (Serialized received = Serialized.receivedFrames(header, List.of(frame))) {
            MalformedHeaderException e =
                    assertThrows(MalformedHeaderException.class, () -> registry.deserialize(received, target));
            assertTrue(
                    e.getMessage()
                            .contains("'fr' at root names frame 0, a f32[] array's frame, not a frame of " + "bytes"),
                    e.getMessage());
        }
    }

    @Test
    void shouldMakeFreshArraysOfEveryTypeAsTheirWholeSegment() {
        for (PrimitiveArrayType t : PrimitiveArrayType.values()) {
            MemorySegment s = t.newArraySegment(3);
            assertEquals(3L * t.elementSize(), s.byteSize());
            assertTrue(t.isWholeArray(s), t.toString());
            assertSame(t, PrimitiveArrayType.of(s.heapBase().orElseThrow().getClass()));
            assertSame(t, PrimitiveArrayType.ofTag(t.tag()));
            assertFalse(t.isWholeArray(s.asSlice(t.elementSize())), t.toString());
        }
        assertNull(PrimitiveArrayType.of(boolean[].class));
        assertThrows(IllegalArgumentException.class, () -> PrimitiveArrayType.F32.newArraySegment(-1));
    }
}
