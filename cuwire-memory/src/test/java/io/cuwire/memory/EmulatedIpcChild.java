package io.cuwire.memory;

import java.lang.foreign.MemorySegment;
import java.util.HexFormat;

/**
 * Run in a second JVM by {@link EmulatedIpcTest}: maps the parent's buffer by its handle, checks the parent's
 * bytes, writes its own answer into the second half, and exits 0 (or 1 with a message).
 */
public final class EmulatedIpcChild {
    private EmulatedIpcChild() {
    }

    public static void main(String[] args) {
        IpcHandle handle = new IpcHandle(args[0], Integer.parseInt(args[1]), HexFormat.of().parseHex(args[2]),
                Long.parseLong(args[3]), Long.parseLong(args[4]));
        int half = (int) (handle.length() / 2);
        try (DeviceBuffer mapped = Devices.get(handle.deviceOrdinal()).openHandle(handle)) {
            byte[] seen = new byte[half];
            CopyEngine.copyToSegment(mapped, 0, MemorySegment.ofArray(seen));
            for (int i = 0; i < half; i++) {
                if (seen[i] != (byte) (i * 7)) {
                    System.err.println("byte " + i + " is " + seen[i] + ", expected " + (byte) (i * 7));
                    System.exit(1);
                }
            }
            byte[] answer = new byte[half];
            for (int i = 0; i < half; i++) {
                answer[i] = (byte) (i * 13);
            }
            CopyEngine.copyFromSegment(MemorySegment.ofArray(answer), mapped, half);
        }
        System.exit(0);
    }
}
