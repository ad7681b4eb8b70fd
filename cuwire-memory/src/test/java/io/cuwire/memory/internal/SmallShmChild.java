package io.cuwire.memory.internal;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.Device;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import java.lang.foreign.Arena;

/**
 * Run by {@link ShmFullTest} where {@code /dev/shm} is a 64 MiB tmpfs, with the default configuration: prints the
 * device's name (which names the directory of its files), allocates {@code args[0]} bytes of device memory and writes
 * every byte, then prints {@code written N}.
 */
public final class SmallShmChild {
    private SmallShmChild() {}

    public static void main(String[] args) {
        long bytes = Long.parseLong(args[0]);
        Device device = Devices.get(0);
        System.out.println("device " + device.name());
        try (BufferAllocator<DeviceBuffer> alloc = device.newAllocator("big", BufferAllocator.UNLIMITED);
                DeviceBuffer b = alloc.allocate(bytes);
                Arena arena = Arena.ofConfined()) {
            CopyEngine.copyFromSegment(arena.allocate(bytes).fill((byte) 7), b, 0);
            System.out.println("written " + b.byteSize());
        }
        System.exit(0);
    }
}
