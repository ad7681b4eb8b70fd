package io.cuwire.cluster;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.HostBuffer;

/**
 * What a running task may use on its worker.
 *
 * @param worker the worker's index
 * @param deviceOrdinal the device the worker is bound to
 * @param device the worker's device memory (every value it holds is accounted here or in {@code host})
 * @param host the worker's host memory
 */
public record TaskContext(
        int worker, int deviceOrdinal, BufferAllocator<DeviceBuffer> device, BufferAllocator<HostBuffer> host) {}
