package io.cuwire.memory;

import java.util.List;
import java.util.Objects;

/**
 * What holds one device's memory, as this process knows it: the device's total and free memory (as the platform
 * reports them) and one line per registered {@link MemoryHolder} that holds something. A failed allocation of device
 * memory through a {@link BufferAllocator} made by {@link Device#newAllocator} appends the report of its device to its
 * message.
 *
 * <p>The lines overlap: an allocator's bytes include the buffers of the caches that allocate from it (a worker's
 * models are in its device allocator), and a pool's bytes in use are the allocators' buffers rounded up to blocks.
 * Memory of other processes on the same device shows only in the free memory.
 *
 * @param device the device, e.g. {@code cuda0 (NVIDIA H200)}
 * @param totalBytes the device's total memory
 * @param freeBytes its free memory as the platform reports it, or -1 when it could not be asked
 * @param holders one line per holder, in the order they registered
 */
public record DeviceMemoryReport(String device, long totalBytes, long freeBytes, List<String> holders) {
    public DeviceMemoryReport {
        Objects.requireNonNull(device, "device");
        holders = List.copyOf(holders);
    }

    /** The report in lines: the device, then each holder indented. */
    @Override
    public String toString() {
        StringBuilder b = new StringBuilder("memory of ")
                .append(device)
                .append(": ")
                .append(totalBytes)
                .append(" bytes total, ")
                .append(freeBytes < 0 ? "free unknown" : freeBytes + " free");
        if (holders.isEmpty()) {
            b.append("; no holder in this process says it holds any");
        } else {
            b.append("; held in this process by:");
            for (String h : holders) {
                b.append("\n  - ").append(h);
            }
        }
        return b.toString();
    }
}
