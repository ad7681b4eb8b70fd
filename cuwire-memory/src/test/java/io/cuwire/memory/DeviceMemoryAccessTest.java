package io.cuwire.memory;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.cuwire.memory.spi.DeviceAllocation;
import java.lang.foreign.MemorySegment;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.ByteBuffer;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * A device buffer cannot be read or written from the host except through the {@link CopyEngine}, which counts every
 * byte (issue 2): no public API hands out host memory behind a device buffer.
 */
class DeviceMemoryAccessTest {
    private static final Set<Class<?>> HOST_VIEWS = Set.of(MemorySegment.class, ByteBuffer.class, byte[].class);

    private static void assertNoHostView(Class<?> type) {
        for (Method m : type.getMethods()) {
            for (Class<?> view : HOST_VIEWS) {
                assertFalse(
                        view.isAssignableFrom(m.getReturnType()),
                        type.getSimpleName() + " hands out host memory: " + m);
            }
        }
    }

    @Test
    void shouldOfferNoPublicMethodReturningHostMemoryOnADeviceBufferOrItsAllocation() {
        assertNoHostView(DeviceBuffer.class);
        assertNoHostView(DeviceAllocation.class);
        assertNoHostView(Device.class);
        Set<String> copies = Set.of("copyHostToDevice", "copyDeviceToHost", "copyDeviceToDevice", "copyHostToHost");
        int found = 0;
        for (Method m : Device.class.getDeclaredMethods()) {
            if (copies.contains(m.getName())) {
                found++;
                assertTrue(Modifier.isProtected(m.getModifiers()), "the platform's half of the copy engine: " + m);
            }
        }
        assertEquals(copies.size(), found);
    }

    @Test
    void shouldKeepTheEmulatedMappingOutOfReachAndMoveBytesOnlyThroughTheCountingCopyEngine() throws Exception {
        Device device = Devices.get(0);
        assumeTrue(device.platform().equals("emulated"), "runs on the emulated platform");
        try (BufferAllocator<DeviceBuffer> alloc = device.newAllocator("access", BufferAllocator.UNLIMITED);
                DeviceBuffer buffer = alloc.allocate(16)) {
            DeviceAllocation allocation = buffer.allocation(DeviceAllocation.class);
            assertFalse(
                    Modifier.isPublic(allocation.getClass().getModifiers()),
                    allocation.getClass().getName());
            assertTrue(allocation.nativeAddress().isEmpty(), "no address for native code either");
            Method segment = allocation.getClass().getMethod("segment");
            assertThrows(
                    IllegalAccessException.class,
                    () -> segment.invoke(allocation),
                    "the mapping is the emulated platform's own");

            byte[] data = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
            byte[] back = new byte[16];
            try (TransferScope scope = CopyEngine.openScope("access")) {
                CopyEngine.copyFromSegment(MemorySegment.ofArray(data), buffer, 0);
                CopyEngine.copyToSegment(buffer, 0, MemorySegment.ofArray(back));
                assertEquals(16, scope.bytes(CopyDirection.H2D));
                assertEquals(16, scope.bytes(CopyDirection.D2H));
            }
            assertArrayEquals(data, back);
        }
    }
}
