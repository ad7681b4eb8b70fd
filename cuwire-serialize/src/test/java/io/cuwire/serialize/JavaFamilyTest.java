package io.cuwire.serialize;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
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
import io.cuwire.memory.NdArray;
import io.cuwire.memory.TransferScope;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
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
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class, () -> registry.registerGeneric(Object.class, Family.CUDA, Family.JAVA));
        assertTrue(e.getMessage().contains("allowJava"), e.getMessage());
        UnserializableException none = assertThrows(
                UnserializableException.class, () -> registry.serialize(new Models.NotAllowed(), Family.CUDA));
        assertTrue(
                none.getMessage().contains("no family of [cuda]"),
                "the refused registration left no generic " + "serializer behind: " + none.getMessage());
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
    void shouldCarryDeviceArraysThroughTheHeapAndRebuildThemOnTheReceiversDevice() {
        TypeRegistry registry = new TypeRegistry().allowJava(Models.SerializableEstimator.class);
        Models.SerializableEstimator model = new Models.SerializableEstimator();
        model.solver = "lloyd";
        model.nClusters = 3;
        model.features.add("x");
        float[] centers = new float[3 * 20_000];
        for (int i = 0; i < centers.length; i++) {
            centers[i] = i * 0.5f;
        }
        model.coef = NdArray.fromArray(device, new double[] {1, 2, 3}, 3);
        model.centers = NdArray.fromArray(device, centers, 3, 20_000);
        long arrayBytes = model.coef.byteSize() + model.centers.byteSize();
        BufferAllocator<DeviceBuffer> receiver =
                Devices.get(Devices.all().size() - 1).newAllocator("java-receiver", BufferAllocator.UNLIMITED);
        try (TransferScope encode = CopyEngine.openScope("java encode");
                Serialized s = registry.serialize(model, Family.CUDA, Family.HOST, Family.JAVA)) {
            assertEquals(arrayBytes, encode.bytes(CopyDirection.D2H), "every array copied to the heap in the stream");
            assertEquals(1, s.frames().size(), "one host frame: the JDK stream");
            assertEquals(MemoryKind.HOST, s.frames().get(0).kind());
            try (Serialized wire = Serialized.received(
                            Serialized.parseHeader(s.encodeHeader(), Limits.DEFAULT),
                            List.of(copyToHost(s.frames().get(0))));
                    TransferScope decode = CopyEngine.openScope("java decode")) {
                Models.SerializableEstimator back = registry.deserialize(
                        wire, Models.SerializableEstimator.class, new DecodeTarget(receiver, host, Limits.DEFAULT));
                assertEquals(arrayBytes, decode.bytes(CopyDirection.H2D), "rebuilt on the receiver's device");
                assertEquals("lloyd", back.solver);
                assertEquals(3, back.nClusters);
                assertEquals(List.of("x"), back.features);
                for (NdArray a : List.of(back.coef, back.centers)) {
                    assertEquals(MemoryKind.DEVICE, a.kind());
                    assertSame(receiver, a.buffer().allocator());
                }
                assertTrue(model.coef.contentEquals(back.coef));
                assertTrue(model.centers.contentEquals(back.centers));
                back.coef.close();
                back.centers.close();
            }
        }
        model.coef.close();
        model.centers.close();
        receiver.close();
        assertEquals(0, registry.hostAllocator().allocatedBytes(), "the stream's frame was released");
    }

    private HostBuffer copyToHost(Frame frame) {
        HostBuffer b = host.allocate(frame.length());
        CopyEngine.copy(frame.buffer(), b);
        return b;
    }

    @Test
    void shouldRefuseAtTheSenderAnAllowedValueHoldingAClassOffTheAllowList() {
        TypeRegistry registry = new TypeRegistry().allowJava(Models.Holder.class);
        Models.Holder holder = new Models.Holder();
        holder.inner = List.of(new Models.NotAllowed());
        UnserializableException e =
                assertThrows(UnserializableException.class, () -> registry.serialize(holder, Family.CUDA, Family.JAVA));
        assertTrue(e.getMessage().contains("java.util.CollSer is not on"), e.getMessage());
        assertEquals("Holder", e.path());
        holder.inner = new ArrayList<>(List.of(new Models.NotAllowed()));
        e = assertThrows(UnserializableException.class, () -> registry.serialize(holder, Family.JAVA));
        assertTrue(e.getMessage().contains(Models.NotAllowed.class.getName()), e.getMessage());
        assertTrue(e.getMessage().contains("allow-list"), e.getMessage());
        assertEquals(0, registry.hostAllocator().allocatedBytes());
    }

    @Test
    void shouldRefuseAnArrayLongerThanTheStreamBeforeAllocatingIt() {
        TypeRegistry registry = new TypeRegistry().allowJava(Models.Legacy.class);
        Models.Legacy legacy = new Models.Legacy();
        legacy.text = "t";
        legacy.values = new int[] {0x11223344};
        try (Serialized s = registry.serialize(legacy, Family.JAVA)) {
            byte[] stream = (byte[]) ((Map<?, ?>) ((Map<?, ?>) s.root()).get("d")).get("b");
            int element = indexOf(stream, new byte[] {0x11, 0x22, 0x33, 0x44});
            assertTrue(element >= 4, "the stream holds the element");
            // The int[]'s length, just before its one element: now 2^31 - 16 elements (8 GiB) in a stream of
            // about 100 bytes.
            stream[element - 4] = 0x7f;
            stream[element - 3] = (byte) 0xff;
            stream[element - 2] = (byte) 0xff;
            stream[element - 1] = (byte) 0xf0;
            MalformedHeaderException e =
                    assertThrows(MalformedHeaderException.class, () -> registry.deserialize(s, target));
            assertTrue(e.getMessage().contains("REJECTED"), e.getMessage());
        }
    }

    private static int indexOf(byte[] haystack, byte[] needle) {
        for (int i = 0; i <= haystack.length - needle.length; i++) {
            if (Arrays.equals(haystack, i, i + needle.length, needle, 0, needle.length)) {
                return i;
            }
        }
        return -1;
    }

    @Test
    void shouldReleaseTheArraysAStreamRebuiltWhenItFailsLater() {
        TypeRegistry writer = new TypeRegistry().allowJava(Models.Holder.class, Models.NotAllowed.class);
        TypeRegistry reader = new TypeRegistry().allowJava(Models.Holder.class);
        Models.Holder holder = new Models.Holder();
        try (NdArray a = NdArray.fromArray(device, new float[] {1, 2}, 2);
                NdArray b = NdArray.fromArray(host, new long[] {3}, 1)) {
            holder.inner = new ArrayList<>(List.of(a, b, new Models.NotAllowed()));
            try (Serialized s = writer.serialize(holder, Family.JAVA);
                    Serialized wire =
                            Serialized.received(Serialized.parseHeader(s.encodeHeader(), Limits.DEFAULT), List.of())) {
                BufferAllocator<DeviceBuffer> rxDevice = Devices.get(0).newAllocator("java-rx", 1 << 20);
                BufferAllocator<HostBuffer> rxHost = BufferAllocator.host("java-rx-host", 1 << 20);
                MalformedHeaderException e = assertThrows(
                        MalformedHeaderException.class,
                        () -> reader.deserialize(wire, new DecodeTarget(rxDevice, rxHost, Limits.DEFAULT)));
                assertTrue(e.getMessage().contains("allow-list"), e.getMessage());
                assertEquals(0, rxDevice.allocatedBytes(), "the device array read before the refusal was released");
                assertEquals(0, rxHost.allocatedBytes(), "the host array read before the refusal was released");
                rxDevice.close();
                rxHost.close();
            }
        }
    }

    @Test
    void shouldReleaseTheArraysAStreamReadButDropped() {
        TypeRegistry registry = new TypeRegistry().allowJava(Models.Dropping.class, Models.Holder.class);
        Models.Dropping dropping = new Models.Dropping();
        BufferAllocator<DeviceBuffer> rxDevice = Devices.get(0).newAllocator("java-rx", 1 << 20);
        BufferAllocator<HostBuffer> rxHost = BufferAllocator.host("java-rx-host", 1 << 20);
        try (NdArray a = NdArray.fromArray(device, new float[] {1, 2}, 2)) {
            dropping.array = a;
            try (Serialized s = registry.serialize(dropping, Family.JAVA)) {
                Models.Holder back = registry.deserialize(
                        s, Models.Holder.class, new DecodeTarget(rxDevice, rxHost, Limits.DEFAULT));
                assertEquals("dropped", back.inner);
                assertEquals(0, rxDevice.allocatedBytes(), "the array the value no longer holds was released");
            }
        }
        rxDevice.close();
        rxHost.close();
    }

    @Test
    void shouldRefuseAStreamNamingAClassOffTheAllowList() {
        TypeRegistry writer = new TypeRegistry().allowJava(Models.NotAllowed.class);
        TypeRegistry reader = new TypeRegistry().allowJava(Models.Legacy.class);
        reader.register(Models.NotAllowed.class, Models.NotAllowed.class.getName());
        reader.register(Models.NotAllowed.class, Family.JAVA, JavaFamily.serializer(reader));
        try (Serialized s = writer.serialize(new Models.NotAllowed(), Family.JAVA);
                Serialized wire =
                        Serialized.received(Serialized.parseHeader(s.encodeHeader(), Limits.DEFAULT), List.of())) {
            MalformedHeaderException e =
                    assertThrows(MalformedHeaderException.class, () -> reader.deserialize(wire, target));
            assertTrue(e.getMessage().contains("allow-list"), e.getMessage());
        }
    }
}
