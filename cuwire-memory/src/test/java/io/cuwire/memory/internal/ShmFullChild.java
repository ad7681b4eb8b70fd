package io.cuwire.memory.internal;

import io.cuwire.memory.AllocationLimitException;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.Device;
import io.cuwire.memory.DeviceBuffer;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Run by {@link ShmFullTest} in a JVM whose directory {@code args[0]} is a small tmpfs: allocates emulated device
 * memory of {@code args[1]} bytes at a time and writes every byte of each allocation, until an allocation is refused.
 * The platform is told the file system has room without end, as if another process had filled it after the check:
 * only the reservation before mapping stands between the writes and a fault. Prints {@code method ...},
 * {@code allocated N} and {@code refused <message>}, and exits 0; a fault while writing prints {@code fault ...} and
 * exits 3.
 */
public final class ShmFullChild {
    private ShmFullChild() {}

    public static void main(String[] args) {
        Path dir = Path.of(args[0]);
        long chunk = Long.parseLong(args[1]);
        System.out.println("method " + FileSpace.method());
        Device device = EmulatedPlatform.create(dir, 1, 1L << 40, EmulatedPlatform.MAX_MAPPINGS, () -> Long.MAX_VALUE)
                .devices()
                .getFirst();
        List<DeviceBuffer> held = new ArrayList<>();
        try (BufferAllocator<DeviceBuffer> alloc = device.newAllocator("fill", BufferAllocator.UNLIMITED);
                Arena arena = Arena.ofConfined()) {
            MemorySegment ones = arena.allocate(chunk).fill((byte) 1);
            try {
                while (true) {
                    DeviceBuffer b = alloc.allocate(chunk);
                    held.add(b);
                    CopyEngine.copyFromSegment(ones, b, 0);
                    System.out.println("allocated " + held.size());
                }
            } catch (AllocationLimitException e) {
                System.out.println("refused " + e.getMessage().replace('\n', '|'));
            } catch (InternalError e) {
                System.out.println("fault " + e);
                System.out.flush();
                Runtime.getRuntime().halt(3);
            } finally {
                held.forEach(DeviceBuffer::close);
            }
        }
        System.exit(0);
    }
}
