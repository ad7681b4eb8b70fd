package io.cuwire.serialize;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.HostBuffer;
import java.util.Objects;

/**
 * Where a decoder puts what it rebuilds: arrays that arrived as host frames but lived on a device at the sender
 * ({@code host} family) are rebuilt in {@code device}; host-side scratch comes from {@code host}. Frames that arrived
 * on the right device are adopted as they are.
 *
 * @param device the receiver's device memory
 * @param host the receiver's host memory
 * @param limits bounds checked before anything is allocated
 */
public record DecodeTarget(BufferAllocator<DeviceBuffer> device, BufferAllocator<HostBuffer> host, Limits limits) {
    public DecodeTarget {
        Objects.requireNonNull(device, "device");
        Objects.requireNonNull(host, "host");
        Objects.requireNonNull(limits, "limits");
    }

    /** A target with the default limits ({@link Limits#DEFAULT}). */
    public DecodeTarget(BufferAllocator<DeviceBuffer> device, BufferAllocator<HostBuffer> host) {
        this(device, host, Limits.DEFAULT);
    }
}
