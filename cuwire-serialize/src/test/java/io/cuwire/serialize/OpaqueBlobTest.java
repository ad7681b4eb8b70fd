package io.cuwire.serialize;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.cuwire.memory.Buffer;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyDirection;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.MemoryKind;
import io.cuwire.memory.TransferScope;
import io.cuwire.test.TestRandom;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

class OpaqueBlobTest {
    private BufferAllocator<DeviceBuffer> device;
    private BufferAllocator<HostBuffer> host;
    private final TypeRegistry registry = new TypeRegistry();

    @BeforeEach
    void open() {
        device = Devices.get(0).newAllocator("blob-device", BufferAllocator.UNLIMITED);
        host = BufferAllocator.host("blob-host", BufferAllocator.UNLIMITED);
    }

    @AfterEach
    void close() {
        device.close();
        host.close();
        assertEquals(0, device.allocatedBytes());
        assertEquals(0, host.allocatedBytes());
    }

    private Serialized transfer(Serialized s) {
        Serialized.Header header = Serialized.parseHeader(s.encodeHeader(), Limits.DEFAULT);
        List<Buffer> received = new ArrayList<>();
        for (int i = 0; i < header.frames().size(); i++) {
            Buffer b = header.frames().get(i).kind() == MemoryKind.DEVICE
                    ? device.allocate(header.frames().get(i).length())
                    : host.allocate(header.frames().get(i).length());
            CopyEngine.copy(s.frames().get(i).buffer(), b);
            received.add(b);
        }
        return Serialized.received(header, received);
    }

    @Test
    void shouldCarryAForestBlobAsOneDeviceFrameOrOneHostCopy(TestInfo info) {
        SplittableRandom random = TestRandom.create(info);
        byte[] forest = TestRandom.bytes(random, 100_000 + random.nextInt(100_000));
        DeviceBuffer bytes = device.allocate(forest.length);
        CopyEngine.copyFromSegment(MemorySegment.ofArray(forest), bytes, 0);
        Map<String, Object> meta = Map.of("trees", 100L, "classes", List.of("a", "b"), "maxDepth", 16L);
        try (OpaqueBlob blob = OpaqueBlob.adopt("cuwire.forest/1", meta, bytes)) {
            for (Family family : List.of(Family.CUDA, Family.HOST)) {
                try (TransferScope scope = CopyEngine.openScope(family.wireName());
                        Serialized s = registry.serialize(blob, family);
                        Serialized wire = transfer(s);
                        OpaqueBlob back = registry.deserialize(
                                wire, OpaqueBlob.class, new DecodeTarget(device, host, Limits.DEFAULT))) {
                    assertEquals(1, s.frames().size());
                    long hostBytes = scope.bytes(CopyDirection.D2H) + scope.bytes(CopyDirection.H2D);
                    assertEquals(family == Family.CUDA ? 0 : 2L * forest.length, hostBytes, family.wireName());
                    assertEquals("cuwire.forest/1", back.format());
                    assertEquals(meta, back.metadata());
                    assertEquals(MemoryKind.DEVICE, back.kind());
                    byte[] out = new byte[forest.length];
                    CopyEngine.copyToSegment(back.buffer(), 0, MemorySegment.ofArray(out));
                    assertArrayEquals(forest, out);
                }
            }
        }
    }

    @Test
    void shouldRefuseMetadataThatCannotTravelInAHeader() {
        try (HostBuffer b = host.allocate(8)) {
            IllegalArgumentException e = assertThrows(
                    IllegalArgumentException.class, () -> OpaqueBlob.view("x", Map.of("when", new Object()), b));
            assertEquals(true, e.getMessage().contains("'when'"), e.getMessage());
        }
    }
}
