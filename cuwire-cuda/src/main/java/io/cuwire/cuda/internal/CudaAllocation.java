package io.cuwire.cuda.internal;

import io.cuwire.memory.spi.DeviceAllocation;

/**
 * CUDA device memory behind a {@link io.cuwire.memory.DeviceBuffer}: {@code byteSize} bytes at device pointer
 * {@code pointer} (a {@code CUdeviceptr}); the buffer starts at its {@code rootOffset()} within it.
 *
 * @param pointer the first byte's device address (unified addressing: valid in every context of the process)
 * @param byteSize the bytes usable from {@code pointer}
 */
public record CudaAllocation(long pointer, long byteSize) implements DeviceAllocation {
    @Override
    public String toString() {
        return "CudaAllocation[0x" + Long.toHexString(pointer) + ", " + byteSize + " bytes]";
    }
}
