package io.cuwire.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.InvalidHandleException;
import io.cuwire.memory.IpcHandle;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/**
 * Without a GPU: the checks {@link CudaDevice#openHandle} makes of a peer's handle (issue 15, deliverable 4) — its
 * bytes before the driver sees them, its range against the size of the allocation the driver opened.
 */
class CudaIpcHandlesTest {
    private static IpcHandle handle(String bus, long offset, long length) {
        byte[] ipc = new byte[Driver.IPC_HANDLE_SIZE];
        Arrays.fill(ipc, (byte) 0x5a);
        byte[] busBytes = bus.getBytes(StandardCharsets.US_ASCII);
        byte[] bytes = Arrays.copyOf(ipc, ipc.length + busBytes.length);
        System.arraycopy(busBytes, 0, bytes, ipc.length, busBytes.length);
        return new IpcHandle(Cuda.PLATFORM, 0, bytes, offset, length);
    }

    @Test
    void shouldReadTheBusIdAndTheMemHandleOfAWellFormedHandle() {
        IpcHandle h = handle("0000:3B:00.0", 0, 1 << 20);
        assertEquals("0000:3B:00.0", CudaIpcHandles.busId(h));
        assertEquals("", CudaIpcHandles.busId(handle("", 0, 8)));
        byte[] expected = new byte[Driver.IPC_HANDLE_SIZE];
        Arrays.fill(expected, (byte) 0x5a);
        assertArrayEquals(expected, CudaIpcHandles.memHandle(h));
    }

    @Test
    void shouldRefuseMalformedBytesBeforeTheDriverSeesThem() {
        InvalidHandleException shortOne = assertThrows(
                InvalidHandleException.class,
                () -> CudaIpcHandles.busId(new IpcHandle(Cuda.PLATFORM, 0, new byte[63], 0, 8)));
        assertTrue(
                shortOne.getMessage()
                        .endsWith("holds 63 bytes (expected: 64 of CUipcMemHandle and at most 16 of " + "PCI bus id)"),
                shortOne.getMessage());
        assertThrows(InvalidHandleException.class, () -> CudaIpcHandles.busId(handle("0000:3B:00.0/../../etc", 0, 8)));
        InvalidHandleException bus =
                assertThrows(InvalidHandleException.class, () -> CudaIpcHandles.busId(handle("not-a-bus\n", 0, 8)));
        assertTrue(
                bus.getMessage().contains("names PCI bus id 'not-a-bus?' (expected: domain:bus:device.function"),
                bus.getMessage());
        InvalidHandleException platform = assertThrows(
                InvalidHandleException.class,
                () -> CudaIpcHandles.busId(new IpcHandle("emulated", 0, new byte[64], 0, 8)));
        assertTrue(platform.getMessage().endsWith("was not made by the CUDA platform"), platform.getMessage());
    }

    @Test
    void shouldRefuseARangeThatReachesPastTheOpenedAllocation() {
        CudaIpcHandles.checkOpened(handle("0000:3B:00.0", 0, 2 << 20), 2 << 20);
        CudaIpcHandles.checkOpened(handle("0000:3B:00.0", 1 << 20, 1 << 20), 2 << 20);
        IpcHandle past = handle("0000:3B:00.0", 1 << 20, (1 << 20) + 1);
        InvalidHandleException e =
                assertThrows(InvalidHandleException.class, () -> CudaIpcHandles.checkOpened(past, 2 << 20));
        assertEquals(
                past + " reaches byte 2097153 of an allocation of 2097152 bytes (expected: offset + length <= "
                        + "2097152)",
                e.getMessage());
        IpcHandle huge = handle("", Long.MAX_VALUE, Long.MAX_VALUE);
        assertThrows(
                InvalidHandleException.class,
                () -> CudaIpcHandles.checkOpened(huge, 1L << 40),
                "offset + length overflows and is still refused");
    }
}
