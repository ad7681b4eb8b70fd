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
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Headers written by the previous format version (files under {@code fixtures/v1/}, see its README) still decode,
 * to values equal to the ones they were written from.
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

    private Object decode(String name) {
        try (Serialized s = WireFixtures.read(name, host, device)) {
            return registry.deserialize(s, target);
        }
    }

    @Test
    void shouldHoldVersion1HeadersOnly() {
        for (String name : WireFixtures.NAMES) {
            byte[] header = WireFixtures.resource(name + ".header");
            assertEquals(0x80, header[0] & 0xf0, name + " is a bare msgpack map, as version 1 wrote");
            assertEquals(1, Serialized.parseHeader(header, Limits.DEFAULT).version(), name);
        }
    }

    @Test
    void shouldDecodeAVersion1GenericModelToAnEqualValue() {
        WireFixtures.Model m = assertInstanceOf(WireFixtures.Model.class, decode("generic"));
        assertEquals(WireFixtures.model(), m);
        assertEquals(512, m.weights.length);
    }

    @Test
    void shouldDecodeVersion1NdArraysOfTheCudaAndHostFamiliesOntoTheDevice() {
        try (NdArray cuda = (NdArray) decode("ndarray-cuda");
                NdArray expected = WireFixtures.cudaArray(device)) {
            assertEquals(MemoryKind.DEVICE, cuda.kind());
            assertEquals(DType.FLOAT32, cuda.dtype());
            assertArrayEquals(new long[] {64, 8}, cuda.shape());
            assertTrue(expected.contentEquals(cuda));
        }
        try (NdArray hostFamily = (NdArray) decode("ndarray-host");
                NdArray expected = WireFixtures.hostArray(device)) {
            assertEquals(MemoryKind.DEVICE, hostFamily.kind(), "a host-family frame of device memory is rebuilt there");
            assertEquals(Order.F, hostFamily.order());
            assertArrayEquals(new long[] {5, 3}, hostFamily.shape());
            assertTrue(expected.contentEquals(hostFamily));
        }
        assertEquals(0, device.allocatedBytes() + host.allocatedBytes());
    }

    @Test
    void shouldDecodeVersion1BackReferencesToTheSameInstances() {
        WireFixtures.Shared s = assertInstanceOf(WireFixtures.Shared.class, decode("refs"));
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
}
