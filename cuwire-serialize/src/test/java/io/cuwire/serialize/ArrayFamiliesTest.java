package io.cuwire.serialize;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.Buffer;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CooMatrix;
import io.cuwire.memory.CopyDirection;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.CscMatrix;
import io.cuwire.memory.CsrMatrix;
import io.cuwire.memory.DType;
import io.cuwire.memory.Device;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.MemoryKind;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import io.cuwire.memory.TransferScope;
import io.cuwire.memory.TransferStats;
import io.cuwire.test.TestRandom;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/** Arrays and sparse matrices over every family and memory kind, with the copy counters as witnesses. */
class ArrayFamiliesTest {
    /** An estimator whose fitted state lives in device arrays. */
    static final class Fitted {
        int nFeatures;
        String solver;
        NdArray coef;
        NdArray intercept;
        List<NdArray> history = new ArrayList<>();
        CsrMatrix support;
        CooMatrix extra;
        CscMatrix columns;
    }

    private Device sender;
    private Device receiver;
    private BufferAllocator<DeviceBuffer> senderDevice;
    private BufferAllocator<HostBuffer> senderPinned;
    private BufferAllocator<HostBuffer> senderHost;
    private BufferAllocator<DeviceBuffer> receiverDevice;
    private BufferAllocator<HostBuffer> receiverHost;
    private TypeRegistry registry;

    @BeforeEach
    void open() {
        sender = Devices.get(0);
        receiver = Devices.get(Devices.all().size() - 1);
        senderDevice = sender.newAllocator("sender", BufferAllocator.UNLIMITED);
        senderPinned = sender.newPinnedAllocator("sender-pinned", BufferAllocator.UNLIMITED);
        senderHost = BufferAllocator.host("sender-host", BufferAllocator.UNLIMITED);
        receiverDevice = receiver.newAllocator("receiver", BufferAllocator.UNLIMITED);
        receiverHost = BufferAllocator.host("receiver-host", BufferAllocator.UNLIMITED);
        registry = new TypeRegistry()
                .registerGeneric(Fitted.class, Family.CUDA, Family.HOST)
                .register(Fitted.class, "test.Fitted")
                .allowJava(Models.Holder.class);
    }

    @AfterEach
    void close() {
        for (BufferAllocator<?> a : List.of(senderDevice, senderPinned, senderHost, receiverDevice, receiverHost)) {
            a.close();
            assertEquals(0, a.allocatedBytes(), a.name());
        }
    }

    /** Moves the frames as a transport would: each into new memory of the same kind on the receiver. */
    private Serialized transfer(Serialized s) {
        Serialized.Header header = Serialized.parseHeader(s.encodeHeader(), Limits.DEFAULT);
        List<Buffer> received = new ArrayList<>();
        for (FrameDescriptor d : header.frames()) {
            Buffer b = d.kind() == MemoryKind.DEVICE
                    ? receiverDevice.allocate(d.length())
                    : receiverHost.allocate(d.length());
            received.add(b);
        }
        for (int i = 0; i < received.size(); i++) {
            CopyEngine.copy(s.frames().get(i).buffer(), received.get(i));
        }
        return Serialized.received(header, received);
    }

    private Fitted fitted(SplittableRandom random, BufferAllocator<?> memory, int n) {
        Fitted f = new Fitted();
        f.nFeatures = n;
        f.solver = "lbfgs";
        double[] coef = new double[n * 3];
        for (int i = 0; i < coef.length; i++) {
            coef[i] = random.nextDouble();
        }
        f.coef = NdArray.fromArray(memory, coef, 3, n);
        f.intercept = NdArray.fromArray(memory, new float[] {1f, 2f, 3f}, 3);
        f.history.add(NdArray.fromArray(memory, new int[] {random.nextInt(), 5}, 2));
        f.support = CsrMatrix.fromDense(memory, new double[][] {{0, 1.5, 0}, {2.5, 0, 0}});
        f.extra = CooMatrix.fromDense(memory, new float[][] {{0, 0}, {0, 7f}});
        f.columns = CscMatrix.fromDense(memory, new double[][] {{0, 0, 4.5}, {random.nextDouble(), 0, 0}});
        return f;
    }

    private static void closeAll(Fitted f) {
        f.coef.close();
        f.intercept.close();
        f.history.forEach(NdArray::close);
        f.support.close();
        f.extra.close();
        f.columns.close();
    }

    private static void assertSameContent(Fitted a, Fitted b) {
        assertEquals(a.nFeatures, b.nFeatures);
        assertEquals(a.solver, b.solver);
        assertTrue(a.coef.contentEquals(b.coef));
        assertTrue(a.intercept.contentEquals(b.intercept));
        assertTrue(a.history.get(0).contentEquals(b.history.get(0)));
        assertArrayEquals(a.support.toDense(), b.support.toDense());
        assertArrayEquals(a.extra.toDense(), b.extra.toDense());
        assertArrayEquals(a.columns.toDense(), b.columns.toDense());
    }

    private long arrayBytes(Fitted f) {
        long total =
                f.coef.byteSize() + f.intercept.byteSize() + f.history.get(0).byteSize();
        for (NdArray c : f.support.components()) {
            total += c.byteSize();
        }
        for (NdArray c : f.extra.components()) {
            total += c.byteSize();
        }
        for (NdArray c : f.columns.components()) {
            total += c.byteSize();
        }
        return total;
    }

    @Test
    void shouldMoveDeviceArraysAsDeviceFramesWithZeroBytesThroughTheHostInTheCudaFamily(TestInfo info) {
        SplittableRandom random = TestRandom.create(info);
        Fitted f = fitted(random, senderDevice, 1000 + random.nextInt(1000));
        try (TransferScope scope = CopyEngine.openScope("cuda family")) {
            try (Serialized s = registry.serialize(f, Family.CUDA, Family.HOST)) {
                for (Frame frame : s.frames()) {
                    assertEquals(MemoryKind.DEVICE, frame.kind(), "every array stays a device frame");
                }
                try (Serialized wire = transfer(s)) {
                    Fitted back = registry.deserialize(
                            wire, Fitted.class, new DecodeTarget(receiverDevice, receiverHost, Limits.DEFAULT));
                    TransferStats moved = scope.stats();
                    assertEquals(0, moved.bytes(CopyDirection.D2H), "no byte went device to host: " + moved);
                    assertEquals(0, moved.bytes(CopyDirection.H2D), "no byte went host to device: " + moved);
                    assertEquals(arrayBytes(f), moved.bytes(CopyDirection.D2D) + moved.bytes(CopyDirection.PEER));
                    assertEquals(receiver.ordinal(), back.coef.deviceOrdinal());
                    try (TransferScope check = CopyEngine.openScope("check")) {
                        assertSameContent(f, back);
                        assertTrue(check.bytes(CopyDirection.D2H) > 0, "the check itself reads back");
                    }
                    closeAll(back);
                }
            }
        }
        closeAll(f);
    }

    @Test
    void shouldRecordEachSubHeadersFrameRangeAndRefuseAValueUsingAnotherValuesFrame(TestInfo info) {
        SplittableRandom random = TestRandom.create(info);
        Fitted f = fitted(random, senderDevice, 10 + random.nextInt(10));
        try (Serialized s = registry.serialize(f, Family.CUDA)) {
            // coef, intercept, history[0]: one frame each; support, extra and columns: three each.
            assertEquals(12, s.frames().size());
            Serialized.Header header = Serialized.parseHeader(s.encodeHeader(), Limits.DEFAULT);
            Map<?, ?> root = (Map<?, ?>) header.root();
            Map<?, ?> fields = (Map<?, ?>) root.get("d");
            assertEquals(List.of(0L, 12L), root.get("frames"));
            assertEquals(List.of(0L, 1L), ((Map<?, ?>) fields.get("coef")).get("frames"));
            assertEquals(List.of(3L, 3L), ((Map<?, ?>) fields.get("support")).get("frames"));
            assertEquals(List.of(6L, 3L), ((Map<?, ?>) fields.get("extra")).get("frames"));
            @SuppressWarnings("unchecked")
            Map<String, Object> support = (Map<String, Object>) fields.get("support");
            support.put("frames", List.of(0L, 3L));
            List<Buffer> received = new ArrayList<>();
            for (FrameDescriptor d : header.frames()) {
                received.add(receiverDevice.allocate(d.length()));
            }
            try (Serialized wire = Serialized.received(header, received)) {
                MalformedHeaderException e = assertThrows(
                        MalformedHeaderException.class,
                        () -> registry.deserialize(
                                wire, new DecodeTarget(receiverDevice, receiverHost, Limits.DEFAULT)));
                assertTrue(e.getMessage().contains("outside its frames [0, 3)"), e.getMessage());
            }
        }
        closeAll(f);
    }

    @Test
    void shouldReleaseADeviceArrayRebuiltFromAHostFrameWhenTheDecodeFailsLater() {
        try (NdArray a = NdArray.fromArray(senderDevice, new float[] {1, 2, 3}, 3);
                Serialized s = registry.serialize(new ArrayList<>(List.of(a, "next")), Family.HOST)) {
            Serialized.Header header = Serialized.parseHeader(s.encodeHeader(), Limits.DEFAULT);
            @SuppressWarnings("unchecked")
            List<Object> items = (List<Object>) ((Map<?, ?>) header.root()).get("v");
            items.set(1, Map.of("t", "test.Unregistered", "f", "host", "d", Map.of()));
            List<Buffer> received = new ArrayList<>();
            for (FrameDescriptor d : header.frames()) {
                received.add(receiverHost.allocate(d.length()));
            }
            try (Serialized wire = Serialized.received(header, received)) {
                assertThrows(
                        UnknownTypeException.class,
                        () -> registry.deserialize(
                                wire, new DecodeTarget(receiverDevice, receiverHost, Limits.DEFAULT)));
            }
            assertEquals(0, receiverDevice.allocatedBytes(), "the array rebuilt on the device was released");
            assertEquals(0, receiverHost.allocatedBytes(), "the host frame was released");
        }
    }

    @Test
    void shouldCopyExactlyTheArrayBytesThroughTheHostInTheHostFamily(TestInfo info) {
        SplittableRandom random = TestRandom.create(info);
        Fitted f = fitted(random, senderDevice, 500 + random.nextInt(500));
        long bytes = arrayBytes(f);
        try (TransferScope encode = CopyEngine.openScope("host family encode");
                Serialized s = registry.serialize(f, Family.HOST)) {
            assertEquals(bytes, encode.bytes(CopyDirection.D2H));
            assertEquals(0, encode.bytes(CopyDirection.H2D));
            for (Frame frame : s.frames()) {
                assertEquals(MemoryKind.HOST, frame.kind());
                assertTrue(frame.owned(), "host copies belong to the serialized value");
            }
            try (Serialized wire = transfer(s);
                    TransferScope decode = CopyEngine.openScope("host family decode")) {
                Fitted back = registry.deserialize(
                        wire, Fitted.class, new DecodeTarget(receiverDevice, receiverHost, Limits.DEFAULT));
                assertEquals(bytes, decode.bytes(CopyDirection.H2D), "rebuilt on the receiver's device");
                assertEquals(0, decode.bytes(CopyDirection.D2H));
                assertEquals(MemoryKind.DEVICE, back.coef.kind());
                assertEquals(receiver.ordinal(), back.coef.deviceOrdinal());
                assertSameContent(f, back);
                closeAll(back);
            }
        }
        assertEquals(0, registry.hostAllocator().allocatedBytes(), "host copies released with the serialized value");
        closeAll(f);
    }

    @Test
    void shouldRoundTripRandomArraysOverEveryFamilyAndMemoryKind(TestInfo info) {
        SplittableRandom random = TestRandom.create(info);
        List<BufferAllocator<?>> memories = List.of(senderHost, senderPinned, senderDevice);
        DType[] dtypes = DType.values();
        for (Family family : Family.values()) {
            for (BufferAllocator<?> memory : memories) {
                for (int trial = 0; trial < 5; trial++) {
                    DType dtype = dtypes[random.nextInt(dtypes.length)];
                    int rank = random.nextInt(4);
                    long[] shape = new long[rank];
                    for (int i = 0; i < rank; i++) {
                        shape[i] = 1 + random.nextInt(20);
                    }
                    Order order = random.nextBoolean() ? Order.C : Order.F;
                    try (NdArray a = NdArray.zeros(memory, dtype, order, shape)) {
                        byte[] bytes = TestRandom.bytes(random, (int) a.byteSize());
                        if (dtype == DType.BOOL) {
                            for (int i = 0; i < bytes.length; i++) {
                                bytes[i] &= 1;
                            }
                        }
                        CopyEngine.copyFromSegment(java.lang.foreign.MemorySegment.ofArray(bytes), a.buffer(), 0);
                        List<Object> value = new ArrayList<>(List.of(a, "tag", (long) trial));
                        // The java family takes allow-listed types only: the list goes inside one.
                        Models.Holder holder = new Models.Holder();
                        holder.inner = value;
                        try (Serialized s = registry.serialize(family == Family.JAVA ? holder : value, family);
                                Serialized wire = transfer(s)) {
                            Object decoded = registry.deserialize(
                                    wire, new DecodeTarget(receiverDevice, receiverHost, Limits.DEFAULT));
                            List<?> back =
                                    (List<?>) (family == Family.JAVA ? ((Models.Holder) decoded).inner : decoded);
                            try (NdArray b = (NdArray) back.get(0)) {
                                assertTrue(a.contentEquals(b), family + " " + a + " vs " + b);
                                assertEquals(
                                        a.kind() == MemoryKind.DEVICE ? MemoryKind.DEVICE : MemoryKind.HOST,
                                        b.kind() == MemoryKind.PINNED ? MemoryKind.HOST : b.kind());
                                assertEquals(order, b.order());
                            }
                            assertEquals("tag", back.get(1));
                        }
                    }
                }
            }
        }
    }
}
