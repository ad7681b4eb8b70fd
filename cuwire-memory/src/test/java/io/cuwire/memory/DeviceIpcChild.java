package io.cuwire.memory;

import java.lang.foreign.MemorySegment;
import java.util.HexFormat;
import java.util.zip.CRC32;

/**
 * The other process of {@link DeviceConformanceSuite}'s IPC test, on any platform (the parent's
 * {@code cuwire.device.platform} is passed on): opens the handle given as arguments (platform, device ordinal, hex
 * bytes, offset, length), prints the CRC32 of the bytes it reads, writes back their complement and closes the mapping.
 */
public final class DeviceIpcChild {
    private DeviceIpcChild() {}

    public static void main(String[] args) {
        IpcHandle handle = new IpcHandle(
                args[0],
                Integer.parseInt(args[1]),
                HexFormat.of().parseHex(args[2]),
                Long.parseLong(args[3]),
                Long.parseLong(args[4]));
        byte[] bytes = new byte[Math.toIntExact(handle.length())];
        try (DeviceBuffer buffer = Devices.get(handle.deviceOrdinal()).openHandle(handle)) {
            CopyEngine.copyToSegment(buffer, 0, MemorySegment.ofArray(bytes));
            CRC32 crc = new CRC32();
            crc.update(bytes);
            System.out.println("CHECKSUM " + crc.getValue() + " DEVICE " + buffer.device());
            for (int i = 0; i < bytes.length; i++) {
                bytes[i] = (byte) ~bytes[i];
            }
            CopyEngine.copyFromSegment(MemorySegment.ofArray(bytes), buffer, 0);
        }
        System.out.println("CLOSED");
    }
}
