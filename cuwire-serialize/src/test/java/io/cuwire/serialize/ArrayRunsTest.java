package io.cuwire.serialize;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.Buffer;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DType;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.MemoryKind;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import io.cuwire.serialize.msgpack.MsgpackWriter;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Runs of arrays (format version 3, {@link NdArrayRuns}): a list or object array of many {@link NdArray}s is one
 * node of a few bytes per array, and one frame descriptor, and decodes to what one node per array did.
 */
class ArrayRunsTest {
    private BufferAllocator<DeviceBuffer> device;
    private BufferAllocator<HostBuffer> host;
    private DecodeTarget target;
    private TypeRegistry registry;
    private final List<NdArray> made = new ArrayList<>();

    @BeforeEach
    void open() {
        device = Devices.get(0).newAllocator("runs-device", BufferAllocator.UNLIMITED);
        host = BufferAllocator.host("runs-host", BufferAllocator.UNLIMITED);
        target = new DecodeTarget(device, host, Limits.DEFAULT);
        registry = Models.registry();
    }

    @AfterEach
    void close() {
        made.forEach(NdArray::close);
        assertEquals(0, host.allocatedBytes(), "host memory left");
        device.close();
        host.close();
    }

    /** A float32 device array of {@code shape} whose elements start at {@code seed}. */
    private NdArray array(float seed, long... shape) {
        long n = 1;
        for (long d : shape) {
            n *= d;
        }
        float[] data = new float[(int) n];
        for (int i = 0; i < data.length; i++) {
            data[i] = seed + i;
        }
        NdArray a = NdArray.fromArray(device, data, shape);
        made.add(a);
        return a;
    }

    private List<NdArray> arrays(int count, long... shape) {
        List<NdArray> list = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            list.add(array(i * 1000, shape));
        }
        return list;
    }

    /** The value as a receiver gets it: the header parsed, each frame copied into memory of its own. */
    private Object roundTrip(Object value, Family... chain) {
        try (Serialized s = registry.serialize(value, chain);
                Serialized received = received(s.encodeHeader(), s)) {
            return registry.deserialize(received, target);
        }
    }

    private Serialized received(byte[] header, Serialized sent) {
        Serialized.Header parsed = Serialized.parseHeader(header, Limits.DEFAULT);
        List<Buffer> buffers = new ArrayList<>();
        for (int i = 0; i < parsed.frames().size(); i++) {
            FrameDescriptor d = parsed.frames().get(i);
            Buffer b = d.kind() == MemoryKind.DEVICE ? device.allocate(d.length()) : host.allocate(d.length());
            buffers.add(b);
            if (sent != null) {
                io.cuwire.memory.CopyEngine.copy(sent.frames().get(i).buffer(), b);
            }
        }
        return Serialized.received(parsed, buffers);
    }

    private static void closeAll(List<?> decoded) {
        for (Object o : decoded) {
            if (o instanceof NdArray a && a.isOpen()) {
                a.close();
            }
        }
    }

    @Test
    void shouldWriteAListOf10000DeviceArraysAsOneRunNodeAndOneDescriptor() {
        List<NdArray> layers = arrays(10_000, 4);
        try (Serialized s = registry.serialize(new ArrayList<>(layers), Family.CUDA)) {
            byte[] header = s.encodeHeader();
            // 8 bytes of shape per array of rank 1; the rest is the run node, the family list and one descriptor
            assertTrue(header.length <= 8 * 10_000 + 200, header.length + " header bytes for 10,000 arrays");
            Serialized.Header parsed = Serialized.parseHeader(header, Limits.DEFAULT);
            assertEquals(10_000, parsed.frames().size());
            Map<?, ?> list = assertInstanceOf(Map.class, parsed.root());
            List<?> nodes = assertInstanceOf(List.class, list.get("v"));
            assertEquals(1, nodes.size(), "one node for the 10,000 arrays");
            Map<?, ?> run = assertInstanceOf(Map.class, nodes.get(0));
            assertEquals(NdArrayRuns.TAG, run.get("t"));
            assertEquals(List.of(0L, 10_000L), run.get("frames"));
            for (FrameDescriptor d : parsed.frames()) {
                assertEquals(new FrameDescriptor(MemoryKind.DEVICE, 0, 16), d);
            }
            for (int i = 0; i < layers.size(); i++) {
                assertSame(layers.get(i).buffer(), s.frames().get(i).buffer(), "the array's own memory");
            }
        }
    }

    @Test
    void shouldDecodeARunToTheArraysOneNodeEachDecodedTo() {
        List<NdArray> layers = new ArrayList<>(arrays(9, 3, 2));
        List<?> decoded = assertInstanceOf(List.class, roundTrip(layers, Family.CUDA));
        try {
            assertEquals(9, decoded.size());
            for (int i = 0; i < 9; i++) {
                NdArray a = assertInstanceOf(NdArray.class, decoded.get(i));
                assertEquals(MemoryKind.DEVICE, a.kind());
                assertEquals(DType.FLOAT32, a.dtype());
                assertEquals(Order.C, a.order());
                assertArrayEquals(new long[] {3, 2}, a.shape());
                assertTrue(layers.get(i).contentEquals(a), "array " + i);
            }
        } finally {
            closeAll(decoded);
        }
    }

    @Test
    void shouldRebuildAHostFamilyRunOnTheDevice() {
        List<NdArray> layers = new ArrayList<>(arrays(12, 5));
        try (Serialized s = registry.serialize(layers, Family.HOST)) {
            assertTrue(s.frames().stream().allMatch(f -> f.kind() == MemoryKind.HOST && f.owned()), "host copies");
            List<?> decoded;
            try (Serialized received = received(s.encodeHeader(), s)) {
                decoded = assertInstanceOf(List.class, registry.deserialize(received, target));
            }
            try {
                for (int i = 0; i < 12; i++) {
                    NdArray a = (NdArray) decoded.get(i);
                    assertEquals(MemoryKind.DEVICE, a.kind(), "rebuilt on the device");
                    assertTrue(layers.get(i).contentEquals(a), "array " + i);
                }
            } finally {
                closeAll(decoded);
            }
        }
    }

    @Test
    void shouldSplitRunsByDtypeOrderRankAndMemoryAndKeepSharedArraysShared() {
        NdArray shared = array(-1, 4);
        List<Object> list = new ArrayList<>();
        list.addAll(arrays(8, 4)); // a run
        list.addAll(arrays(8, 2, 2)); // another rank: another run
        list.add("between");
        list.addAll(arrays(5, 4)); // too short: one node each
        list.add(shared);
        list.addAll(arrays(9, 4)); // a run after the shared array
        list.add(shared); // met before: a reference
        Map<String, Object> holder = new LinkedHashMap<>();
        holder.put("first", shared);
        holder.put("layers", list);
        try (Serialized s = registry.serialize(holder, Family.CUDA)) {
            Serialized.Header parsed = Serialized.parseHeader(s.encodeHeader(), Limits.DEFAULT);
            @SuppressWarnings("unchecked")
            List<Object> kv = (List<Object>) ((Map<?, ?>) parsed.root()).get("v");
            List<?> nodes = (List<?>) ((Map<?, ?>) kv.get(3)).get("v");
            List<Object> tags = new ArrayList<>();
            for (Object n : nodes) {
                tags.add(n instanceof Map<?, ?> m ? m.get("t") : n);
            }
            List<Object> expected = new ArrayList<>(List.of(NdArrayRuns.TAG, NdArrayRuns.TAG, "between"));
            for (int i = 0; i < 5; i++) {
                expected.add("cuwire.ndarray");
            }
            expected.addAll(List.of("ref", NdArrayRuns.TAG, "ref"));
            assertEquals(expected, tags);
        }
        Map<?, ?> back = assertInstanceOf(Map.class, roundTrip(holder, Family.CUDA));
        List<?> decoded = (List<?>) back.get("layers");
        try {
            assertEquals(list.size(), decoded.size());
            assertSame(back.get("first"), decoded.get(22));
            assertSame(back.get("first"), decoded.get(32));
            for (int i = 0; i < list.size(); i++) {
                if (list.get(i) instanceof NdArray a) {
                    NdArray b = assertInstanceOf(NdArray.class, decoded.get(i), "element " + i);
                    assertArrayEquals(a.shape(), b.shape(), "element " + i);
                    assertTrue(a.contentEquals(b), "element " + i);
                } else {
                    assertEquals(list.get(i), decoded.get(i));
                }
            }
        } finally {
            closeAll(decoded);
        }
    }

    @Test
    void shouldWriteAnArrayTwiceInARunOnceAndReferToItAfter() {
        List<NdArray> eight = arrays(8, 4);
        List<NdArray> list = new ArrayList<>(eight);
        list.add(3, eight.get(1)); // the 4th element repeats the 2nd: the run stops before it
        list.addAll(arrays(8, 4));
        List<?> decoded = assertInstanceOf(List.class, roundTrip(list, Family.CUDA));
        try {
            assertEquals(17, decoded.size());
            assertSame(decoded.get(1), decoded.get(3));
            for (int i = 0; i < 17; i++) {
                assertTrue(list.get(i).contentEquals((NdArray) decoded.get(i)), "element " + i);
                if (i != 1 && i != 3) {
                    assertNotSame(decoded.get(1), decoded.get(i));
                }
            }
        } finally {
            closeAll(decoded);
        }
    }

    @Test
    void shouldWriteRunsInObjectArraysToo() {
        NdArray[] layers = arrays(10, 6).toArray(NdArray[]::new);
        try (Serialized s = registry.serialize(layers, Family.CUDA)) {
            Map<?, ?> arr = (Map<?, ?>)
                    Serialized.parseHeader(s.encodeHeader(), Limits.DEFAULT).root();
            assertEquals(1, ((List<?>) arr.get("v")).size());
        }
        NdArray[] decoded = assertInstanceOf(NdArray[].class, roundTrip(layers, Family.CUDA));
        try {
            assertEquals(10, decoded.length);
            for (int i = 0; i < 10; i++) {
                assertTrue(layers[i].contentEquals(decoded[i]), "element " + i);
            }
        } finally {
            closeAll(List.of(decoded));
        }
    }

    @Test
    void shouldWriteNoRunWhereAnotherSerializerTakesArrays() {
        TypeRegistry own = Models.registry().register(NdArray.class, Family.CUDA, new Serializer<NdArray>() {
            @Override
            public void write(WriteContext out, NdArray a) {
                out.put("dims", (long) a.rank());
            }

            @Override
            public NdArray read(ReadContext in) {
                throw new UnsupportedOperationException();
            }
        });
        try (Serialized s = own.serialize(new ArrayList<>(arrays(10, 4)), Family.CUDA)) {
            List<?> nodes = (List<?>) ((Map<?, ?>) s.root()).get("v");
            assertEquals(10, nodes.size(), "one node per array, by the serializer registered");
        }
    }

    @Test
    void shouldChargeEachArrayOfARunToTheDecodeBudget() {
        List<NdArray> layers = new ArrayList<>(arrays(40, 1));
        long before = device.allocatedBytes();
        try (Serialized s = registry.serialize(layers, Family.CUDA);
                Serialized received = received(s.encodeHeader(), s)) {
            DecodeTarget tight = new DecodeTarget(device, host, Limits.DEFAULT.withMaxDecodeWork(30));
            DecodeBudgetExceededException e =
                    assertThrows(DecodeBudgetExceededException.class, () -> registry.deserialize(received, tight));
            assertTrue(e.getMessage().contains("an array run of 40 arrays would cost 40"), e.getMessage());
        }
        assertEquals(before, device.allocatedBytes(), "the received frames are freed");
    }

    // ---- untrusted headers

    /** A header of format version {@code version} over a list holding {@code node}, with {@code frames}. */
    private static byte[] header(int version, Object node, List<Object> frames) {
        Map<String, Object> list = new LinkedHashMap<>();
        list.put("t", "list");
        list.put("v", List.of(node));
        Map<String, Object> top = new LinkedHashMap<>();
        top.put("fam", List.of("cuda", "host"));
        top.put("root", list);
        top.put("frames", frames);
        byte[] bytes = Serialized.seal(new MsgpackWriter()
                .raw(new byte[Serialized.PREFIX_BYTES])
                .value(top)
                .toByteArray());
        bytes[1] = (byte) version; // not under the checksum
        return bytes;
    }

    private static Map<String, Object> run(long first, long count, long rank, byte[] shapes) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("t", NdArrayRuns.TAG);
        m.put("f", "cuda");
        m.put("frames", List.of(first, count));
        m.put("dtype", "float32");
        m.put("order", "C");
        m.put("mem", "DEVICE");
        m.put("rank", rank);
        m.put("shapes", shapes);
        return m;
    }

    private static byte[] dims(long... dims) {
        ByteBuffer b = ByteBuffer.allocate(8 * dims.length).order(ByteOrder.LITTLE_ENDIAN);
        for (long d : dims) {
            b.putLong(d);
        }
        return b.array();
    }

    private static long[] repeat(long value, int n) {
        long[] out = new long[n];
        java.util.Arrays.fill(out, value);
        return out;
    }

    private SerializationException refusal(int version, Object node, List<Object> frames) {
        SerializationException e = assertThrows(SerializationException.class, () -> {
            try (Serialized s = received(header(version, node, frames), null)) {
                registry.deserialize(s, target);
            }
        });
        assertEquals(0, device.allocatedBytes(), "no frame left allocated: " + e.getMessage());
        return e;
    }

    @Test
    void shouldDecodeAWellFormedRunHeader() {
        byte[] header = header(3, run(0, 8, 1, dims(repeat(2, 8))), List.of(List.of(2L, 0L, 8L, 8L)));
        List<?> decoded;
        try (Serialized s = received(header, null)) {
            decoded = assertInstanceOf(List.class, registry.deserialize(s, target));
        }
        assertEquals(8, decoded.size());
        closeAll(decoded);
    }

    @Test
    void shouldRefuseMalformedRunsBeforeTheirArraysAreMade() {
        List<Object> eight = List.of(List.of(2L, 0L, 8L, 8L));
        assertTrue(refusal(3, run(0, 7, 1, dims(repeat(2, 7))), List.of(List.of(2L, 0L, 8L, 7L)))
                .getMessage()
                .contains("count >= 8"));
        assertTrue(refusal(3, run(1, 8, 1, dims(repeat(2, 8))), eight)
                .getMessage()
                .contains("within 8 frames"));
        assertTrue(refusal(3, run(0, 8, 1, dims(repeat(2, 7))), eight)
                .getMessage()
                .contains("8 int64 dimensions"));
        assertTrue(refusal(3, run(0, 8, 9, dims(repeat(1, 72))), eight)
                .getMessage()
                .contains("rank 9"));
        long[] negative = repeat(2, 8);
        negative[5] = -2;
        assertTrue(refusal(3, run(0, 8, 1, dims(negative)), eight).getMessage().contains("negative dimension -2"));
        long[] wrong = repeat(2, 8);
        wrong[6] = 3;
        SerializationException misfit = refusal(3, run(0, 8, 1, dims(wrong)), eight);
        assertTrue(misfit.getMessage().contains("float32 [3] does not fill a frame of 8 bytes"), misfit.getMessage());
        assertEquals("root[6]", misfit.path(), "the refusal names the array of the run");
        Map<String, Object> extra = run(0, 8, 1, dims(repeat(2, 8)));
        extra.put("x", 1L);
        assertTrue(refusal(3, extra, eight).getMessage().contains("9 entries"));
        Map<String, Object> java = run(0, 8, 1, dims(repeat(2, 8)));
        java.put("f", "java");
        assertTrue(refusal(3, java, eight).getMessage().contains("does not name"));
    }

    @Test
    void shouldRefuseARunInAVersion2HeaderOrOutsideAListOrArray() {
        List<Object> eight = List.of(List.of(2L, 0L, 8L), List.of(2L, 0L, 8L), List.of(2L, 0L, 8L));
        assertTrue(refusal(2, run(0, 8, 1, dims(repeat(2, 8))), eight)
                .getMessage()
                .contains("in a header of format version 2, which has none"));
        Map<String, Object> opt = new LinkedHashMap<>();
        opt.put("t", "opt");
        opt.put("v", run(0, 8, 1, dims(repeat(2, 8))));
        assertTrue(refusal(3, opt, List.of(List.of(2L, 0L, 8L, 8L)))
                .getMessage()
                .contains("outside a list or object array"));
    }

    @Test
    void shouldExpandADescriptorRunAndHoldItToTheLimitsBeforeMakingOne() {
        Serialized.Header h = Serialized.parseHeader(
                header(3, "x", List.of(List.of(0L, -1L, 16L), List.of(2L, 1L, 64L, 5L))), Limits.DEFAULT);
        assertEquals(6, h.frames().size());
        assertEquals(new FrameDescriptor(MemoryKind.HOST, -1, 16), h.frames().get(0));
        for (int i = 1; i < 6; i++) {
            assertEquals(
                    new FrameDescriptor(MemoryKind.DEVICE, 1, 64), h.frames().get(i));
        }
        assertEquals(16 + 5 * 64, h.totalFrameBytes());
        Limits ten = new Limits(1 << 20, 10, 64, 1L << 40, 1L << 40, 1 << 20);
        assertTrue(assertThrows(
                        LimitExceededException.class,
                        () -> Serialized.parseHeader(
                                header(3, "x", List.of(List.of(0L, -1L, 1L), List.of(2L, 0L, 1L, 10L))), ten))
                .getMessage()
                .contains("a run of 10 frames (expected: 2 to 9"));
        assertThrows(
                LimitExceededException.class,
                () -> Serialized.parseHeader(
                        header(3, "x", List.of(List.of(2L, 0L, 1L << 37, 9L))),
                        new Limits(1 << 20, 10, 64, 1L << 40, 1L << 40, 1 << 20)),
                "9 x 128 GiB beyond the total");
        assertThrows(
                LimitExceededException.class,
                () -> Serialized.parseHeader(header(3, "x", List.of(List.of(2L, 0L, 8L, 1L))), Limits.DEFAULT),
                "a run of one frame");
        assertThrows(
                MalformedHeaderException.class,
                () -> Serialized.parseHeader(header(2, "x", List.of(List.of(2L, 0L, 8L, 4L))), Limits.DEFAULT),
                "version 2 has no descriptor runs");
    }

    @Test
    void shouldWriteDescriptorRunsOfFramesAlikeOnly() {
        List<FrameDescriptor> frames = List.of(
                new FrameDescriptor(MemoryKind.DEVICE, 0, 8),
                new FrameDescriptor(MemoryKind.DEVICE, 0, 8),
                new FrameDescriptor(MemoryKind.DEVICE, 0, 8),
                new FrameDescriptor(MemoryKind.DEVICE, 1, 8),
                new FrameDescriptor(MemoryKind.HOST, -1, 8, PrimitiveArrayType.F64),
                new FrameDescriptor(MemoryKind.HOST, -1, 8, PrimitiveArrayType.F64),
                new FrameDescriptor(MemoryKind.HOST, -1, 8));
        byte[] header = new Serialized.Header(Serialized.FORMAT_VERSION, java.util.Set.of(), "x", frames).encode();
        Serialized.Header parsed = Serialized.parseHeader(header, Limits.DEFAULT);
        assertEquals(frames, parsed.frames());
        Map<?, ?> top = (Map<?, ?>) new io.cuwire.serialize.msgpack.MsgpackReader(
                        header, Serialized.PREFIX_BYTES, header.length - Serialized.PREFIX_BYTES, 64, 1 << 20)
                .readValue();
        assertEquals(
                List.of(
                        List.of(2L, 0L, 8L, 3L),
                        List.of(2L, 1L, 8L),
                        List.of(0L, -1L, 8L, "f64[]"),
                        List.of(0L, -1L, 8L, "f64[]"),
                        List.of(0L, -1L, 8L)),
                top.get("frames"));
    }
}
