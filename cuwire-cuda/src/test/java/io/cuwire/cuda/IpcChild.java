package io.cuwire.cuda;

import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.IpcHandle;
import java.lang.foreign.MemorySegment;
import java.util.HexFormat;
import java.util.zip.CRC32;

/**
 * The other process of {@link CudaIpcTest}: opens the handle given as arguments (hex bytes, device ordinal, offset,
 * length), prints the CRC32 of the bytes it reads, writes back their complement and closes the mapping.
 */
public final class IpcChild {
    private IpcChild() {
    }

    public static void main(String[] args) {
        IpcHandle handle = new IpcHandle("cuda", Integer.parseInt(args[1]), HexFormat.of().parseHex(args[0]),
                Long.parseLong(args[2]), Long.parseLong(args[3]));
        byte[] bytes = new byte[Math.toIntExact(handle.length())];
        try (DeviceBuffer buffer = Cuda.device(0).openHandle(handle)) {
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
