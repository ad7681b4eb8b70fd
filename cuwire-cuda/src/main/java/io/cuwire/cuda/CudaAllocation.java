package io.cuwire.cuda;

import io.cuwire.memory.spi.DeviceAllocation;
import java.util.OptionalLong;

/**
 * CUDA device memory behind a {@link io.cuwire.memory.DeviceBuffer}: {@code byteSize} bytes at device pointer
 * {@code pointer} (a {@code CUdeviceptr}); the buffer starts at its {@code rootOffset()} within it.
 *
 * @param pointer the first byte's device address (unified addressing: valid in every context of the process)
 * @param byteSize the bytes usable from {@code pointer}
 */
record CudaAllocation(long pointer, long byteSize) implements DeviceAllocation {
    @Override
    public OptionalLong nativeAddress() {
        return OptionalLong.of(pointer);
    }

    @Override
    public String toString() {
        return "CudaAllocation[0x" + Long.toHexString(pointer) + ", " + byteSize + " bytes]";
    }
}
