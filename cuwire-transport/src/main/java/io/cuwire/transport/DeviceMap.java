package io.cuwire.transport;

import io.cuwire.memory.Buffer;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.HostBuffer;
import io.cuwire.serialize.FrameDescriptor;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;

/**
 * The usual {@link FrameAllocator}: device frames go to this process's device allocator for the sender's device
 * ordinal (a map, with a default), host frames to a host allocator, pinned frames to a pinned allocator (or the host
 * one). Give it allocators over pooled memory ({@link io.cuwire.memory.HostMemoryPool}, a device pool) so that
 * frames land in memory that is already touched. Immutable; {@code with…} methods return a new map.
 */
public final class DeviceMap implements FrameAllocator {
    private final BufferAllocator<HostBuffer> host;
    private final BufferAllocator<HostBuffer> pinned;
    private final BufferAllocator<DeviceBuffer> defaultDevice;
    private final Map<Integer, BufferAllocator<DeviceBuffer>> bySenderDevice;

    private DeviceMap(
            BufferAllocator<HostBuffer> host,
            BufferAllocator<HostBuffer> pinned,
            BufferAllocator<DeviceBuffer> defaultDevice,
            Map<Integer, BufferAllocator<DeviceBuffer>> bySenderDevice) {
        this.host = Objects.requireNonNull(host, "host");
        this.pinned = pinned;
        this.defaultDevice = Objects.requireNonNull(defaultDevice, "defaultDevice");
        this.bySenderDevice = Map.copyOf(bySenderDevice);
    }

    /** Host and pinned frames into {@code host}, device frames from any sender device into {@code device}. */
    public static DeviceMap of(BufferAllocator<HostBuffer> host, BufferAllocator<DeviceBuffer> device) {
        return new DeviceMap(host, null, device, Map.of());
    }

    /** This map, with pinned frames going to {@code pinnedAllocator}. */
    public DeviceMap withPinned(BufferAllocator<HostBuffer> pinnedAllocator) {
        return new DeviceMap(host, Objects.requireNonNull(pinnedAllocator, "pinned"), defaultDevice, bySenderDevice);
    }

    /** This map, with device frames from the sender's device {@code senderOrdinal} going to {@code device}. */
    public DeviceMap with(int senderOrdinal, BufferAllocator<DeviceBuffer> device) {
        Map<Integer, BufferAllocator<DeviceBuffer>> m = new HashMap<>(bySenderDevice);
        m.put(senderOrdinal, Objects.requireNonNull(device, "device"));
        return new DeviceMap(host, pinned, defaultDevice, m);
    }

    @Override
    public Buffer allocate(FrameDescriptor d) {
        return switch (d.kind()) {
            case HOST -> host.allocate(d.length());
            case PINNED -> (pinned != null ? pinned : host).allocate(d.length());
            case DEVICE ->
                bySenderDevice.getOrDefault(d.deviceOrdinal(), defaultDevice).allocate(d.length());
        };
    }

    @Override
    public String toString() {
        return "DeviceMap[host " + host.name() + (pinned == null ? "" : ", pinned " + pinned.name()) + ", device "
                + defaultDevice.name() + (bySenderDevice.isEmpty() ? "" : ", by sender device " + bySenderDevice)
                + "]";
    }
}
