package io.cuwire.serialize;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DType;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.MemoryKind;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Headers written by the previous format versions (files under {@code fixtures/v1/} and {@code fixtures/v2/}, see
 * their READMEs) still decode, to values equal to the ones they were written from.
 */
class PreviousVersionFixturesTest {
    private BufferAllocator<HostBuffer> host;
    private BufferAllocator<DeviceBuffer> device;
    private TypeRegistry registry;
    private DecodeTarget target;

    @BeforeEach
    void open() {
        host = BufferAllocator.host("fixture-host", BufferAllocator.UNLIMITED);
        device = Devices.get(0).newAllocator("fixture-device", BufferAllocator.UNLIMITED);
        registry = WireFixtures.registry(host);
        target = new DecodeTarget(device, host, Limits.DEFAULT);
    }

    @AfterEach
    void close() {
        host.close();
        device.close();
    }

    private Object decode(int version, String name) {
        try (Serialized s = WireFixtures.read(version, name, host, device)) {
            return registry.deserialize(s, target);
        }
    }

    @Test
    void shouldHoldVersion1HeadersOnlyUnderV1() {
        for (String name : WireFixtures.names(1)) {
            byte[] header = WireFixtures.resource(1, name + ".header");
            assertEquals(0x80, header[0] & 0xf0, name + " is a bare msgpack map, as version 1 wrote");
            assertEquals(1, Serialized.parseHeader(header, Limits.DEFAULT).version(), name);
        }
    }

    @Test
    void shouldHoldVersion2HeadersOnlyUnderV2() {
        for (String name : WireFixtures.names(2)) {
            byte[] header = WireFixtures.resource(2, name + ".header");
            assertEquals(0xC1, header[0] & 0xff, name + " is prefixed, as version 2 wrote");
            assertEquals(2, header[1], name + "'s version byte");
            assertEquals(2, Serialized.parseHeader(header, Limits.DEFAULT).version(), name);
        }
    }

    @ParameterizedTest(name = "version {0}")
    @ValueSource(ints = {1, 2})
    void shouldDecodeAGenericModelToAnEqualValue(int version) {
        WireFixtures.Model m = assertInstanceOf(WireFixtures.Model.class, decode(version, "generic"));
        assertEquals(WireFixtures.model(), m);
        assertEquals(512, m.weights.length);
    }

    @ParameterizedTest(name = "version {0}")
    @ValueSource(ints = {1, 2})
    void shouldDecodeNdArraysOfTheCudaAndHostFamiliesOntoTheDevice(int version) {
        try (NdArray cuda = (NdArray) decode(version, "ndarray-cuda");
                NdArray expected = WireFixtures.cudaArray(device)) {
            assertEquals(MemoryKind.DEVICE, cuda.kind());
            assertEquals(DType.FLOAT32, cuda.dtype());
            assertArrayEquals(new long[] {64, 8}, cuda.shape());
            assertTrue(expected.contentEquals(cuda));
        }
        try (NdArray hostFamily = (NdArray) decode(version, "ndarray-host");
                NdArray expected = WireFixtures.hostArray(device)) {
            assertEquals(MemoryKind.DEVICE, hostFamily.kind(), "a host-family frame of device memory is rebuilt there");
            assertEquals(Order.F, hostFamily.order());
            assertArrayEquals(new long[] {5, 3}, hostFamily.shape());
            assertTrue(expected.contentEquals(hostFamily));
        }
        assertEquals(0, device.allocatedBytes() + host.allocatedBytes());
    }

    @ParameterizedTest(name = "version {0}")
    @ValueSource(ints = {1, 2})
    void shouldDecodeBackReferencesToTheSameInstances(int version) {
        WireFixtures.Shared s = assertInstanceOf(WireFixtures.Shared.class, decode(version, "refs"));
        WireFixtures.Shared expected = WireFixtures.shared();
        assertEquals(expected.first, s.first);
        assertSame(s.first, s.second);
        assertArrayEquals(expected.p, s.p);
        assertSame(s.p, s.q);
        assertEquals(expected.l1, s.l1);
        assertSame(s.l1, s.l2);
        assertEquals(expected.point, s.point);
        assertSame(s.point, s.both[0]);
        assertSame(s.point, s.both[1]);
        assertSame(s.first, s.both[2]);
    }

    @Test
    void shouldDecodeAVersion2ListOfDeviceArraysWrittenOneNodeEach() {
        List<?> decoded = assertInstanceOf(List.class, decode(2, "layers"));
        List<NdArray> expected = WireFixtures.layers(device);
        try {
            assertEquals(WireFixtures.LAYERS, decoded.size());
            for (int i = 0; i < decoded.size(); i++) {
                NdArray a = assertInstanceOf(NdArray.class, decoded.get(i));
                assertEquals(MemoryKind.DEVICE, a.kind(), "layer " + i);
                assertArrayEquals(expected.get(i).shape(), a.shape(), "layer " + i);
                assertEquals(expected.get(i).dtype(), a.dtype(), "layer " + i);
                assertTrue(expected.get(i).contentEquals(a), "layer " + i);
            }
        } finally {
            expected.forEach(NdArray::close);
            decoded.forEach(a -> ((NdArray) a).close());
        }
        assertEquals(0, device.allocatedBytes() + host.allocatedBytes());
    }
}
