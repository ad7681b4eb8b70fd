package io.cuwire.cuda;

import io.cuwire.memory.InvalidHandleException;
import io.cuwire.memory.IpcHandle;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.regex.Pattern;

/**
 * The checks of a CUDA IPC handle that came from a peer, apart from the driver so that they run without a GPU: its
 * bytes before anything is opened ({@link #busId}, {@link #memHandle}), and its range against the size of the
 * allocation it opened ({@link #checkOpened}).
 *
 * <p>A handle's bytes are the 64-byte {@code CUipcMemHandle} followed by the PCI bus id of the exporter's GPU
 * ({@code domain:bus:device.function} in hex, as {@code cuDeviceGetPCIBusId} writes it), or by nothing.
 */
final class CudaIpcHandles {
    /** {@code cuDeviceGetPCIBusId}'s form: {@code 0000:3B:00.0} (domains of up to 8 digits). */
    private static final Pattern BUS_ID =
            Pattern.compile("[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\\.[0-9A-Fa-f]");

    private static final int MAX_BUS_ID = 16;

    private CudaIpcHandles() {}

    /**
     * The PCI bus id the handle names, or {@code ""} when it names none.
     *
     * @throws InvalidHandleException if the handle is not the CUDA platform's, or its bytes are not a
     *     {@code CUipcMemHandle} and a well-formed bus id
     */
    static String busId(IpcHandle handle) {
        if (!Cuda.PLATFORM.equals(handle.platform())) {
            throw new InvalidHandleException(handle + " was not made by the CUDA platform");
        }
        byte[] bytes = handle.handle();
        int busBytes = bytes.length - Driver.IPC_HANDLE_SIZE;
        if (busBytes < 0 || busBytes > MAX_BUS_ID) {
            throw new InvalidHandleException(handle + " holds " + bytes.length + " bytes (expected: "
                    + Driver.IPC_HANDLE_SIZE + " of CUipcMemHandle and at most " + MAX_BUS_ID + " of PCI bus id)");
        }
        String bus = new String(bytes, Driver.IPC_HANDLE_SIZE, busBytes, StandardCharsets.US_ASCII);
        if (!bus.isEmpty() && !BUS_ID.matcher(bus).matches()) {
            throw new InvalidHandleException(handle + " names PCI bus id '" + bus.replaceAll("[^\\x20-\\x7e]", "?")
                    + "' (expected: domain:bus:device.function in hex, e.g. 0000:3B:00.0)");
        }
        return bus;
    }

    /** The handle's {@code CUipcMemHandle}; {@link #busId} checked the handle first. */
    static byte[] memHandle(IpcHandle handle) {
        return Arrays.copyOf(handle.handle(), Driver.IPC_HANDLE_SIZE);
    }

    /**
     * Refuses a handle whose range does not lie within the allocation it opened, of {@code allocationBytes} as the
     * driver reports it: a peer's handle declares its own offset and length.
     *
     * @throws InvalidHandleException if the range reaches past the allocation
     */
    static void checkOpened(IpcHandle handle, long allocationBytes) {
        handle.checkWithin(allocationBytes);
    }
}
