package io.cuwire.serialize;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.CsrMatrix;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.HostMemory;
import io.cuwire.memory.HostMemoryPool;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.TransferScope;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The close policy of docs/architecture.md ("Errors and closing") over the public closeables of cuwire-memory and
 * cuwire-serialize that this module reaches on the emulated device: an owner of memory (a {@link Serialized} value
 * too, for the frames it owns) throws {@link IllegalStateException} on a second close, naming what was closed; a
 * scope ignores it.
 */
class ClosePolicyTest {
    /** Closes {@code owner} once, then checks that the second close throws, with a message. */
    private static void assertOwner(AutoCloseable owner, String what) throws Exception {
        owner.close();
        IllegalStateException e = assertThrows(IllegalStateException.class, owner::close, what + ": second close");
        assertTrue(e.getMessage() != null && !e.getMessage().isBlank(), what + ": the error says what was closed");
    }

    @Test
    void shouldThrowOnTheSecondCloseOfEveryOwner() throws Exception {
        BufferAllocator<HostBuffer> host = BufferAllocator.host("close-policy-host", BufferAllocator.UNLIMITED);
        BufferAllocator<DeviceBuffer> device =
                Devices.get(0).newAllocator("close-policy-device", BufferAllocator.UNLIMITED);
        assertOwner(host.allocate(64), "a host buffer");
        assertOwner(device.allocate(64), "a device buffer");
        assertOwner(NdArray.fromArray(host, new float[] {1, 2, 3}, 3), "an NdArray on the host");
        assertOwner(NdArray.fromArray(device, new float[] {1, 2, 3}, 3), "an NdArray on the device");
        assertOwner(CsrMatrix.fromDense(device, new double[][] {{0, 1}, {2, 0}}), "a CSR matrix");
        assertOwner(OpaqueBlob.adopt("close-policy", Map.of(), host.allocate(16)), "an adopted opaque blob");
        try (NdArray a = NdArray.fromArray(device, new float[] {1, 2, 3}, 3)) {
            TypeRegistry registry = new TypeRegistry();
            assertOwner(registry.serialize(a, Family.HOST), "a serialized value owning its frames (host family)");
            assertOwner(registry.serialize(a, Family.CUDA), "a serialized value lending the array's memory");
        }
        assertOwner(Devices.get(0).newStream(), "a stream of the emulated device");
        assertOwner(new HostMemoryPool(HostMemory.resource(), 1 << 16), "a host memory pool");
        assertOwner(device, "a device allocator");
        assertOwner(host, "a host allocator");
    }

    @Test
    void shouldIgnoreTheSecondCloseOfAScope() {
        TransferScope scope = CopyEngine.openScope("close-policy");
        scope.close();
        assertDoesNotThrow(scope::close, "a transfer scope: second close");
    }
}
