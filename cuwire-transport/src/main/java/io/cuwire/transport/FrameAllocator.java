package io.cuwire.transport;

import io.cuwire.memory.Buffer;
import io.cuwire.serialize.FrameDescriptor;

/**
 * Where a receiver puts incoming frames: called once per frame, after the header's descriptors were read and checked
 * against the limits and before the frame's bytes are read. The buffer returned is owned by the received message.
 * {@link DeviceMap} is the usual implementation. Must be thread-safe when several connections share it.
 *
 * <p>The socket transports ({@code tcp}, {@code ipc}) do not call it for a frame whose descriptor names a primitive
 * array type ({@link FrameDescriptor#arrayType()}, a Java array's memory at the sender): they take its bytes into a
 * fresh array of that type, their own memory, which the decoder then returns as the array without a copy. The other
 * transports allocate every frame here.
 */
@FunctionalInterface
public interface FrameAllocator {
    /**
     * A buffer of exactly {@code descriptor.length()} bytes for the frame: device memory for a frame that was device
     * memory at the sender (on the receiver's own device), native host memory for host and pinned frames (a
     * {@link io.cuwire.memory.BufferAllocator}'s: a transport refuses a heap segment, which sockets and UCX cannot
     * write into directly).
     *
     * @throws io.cuwire.memory.AllocationLimitException if the memory or an allocator's limit is exhausted
     */
    Buffer allocate(FrameDescriptor descriptor);
}
