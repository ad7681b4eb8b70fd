package io.cuwire.memory.spi;

import java.util.OptionalLong;

/**
 * A device platform's own record of one allocation (a device pointer, a mapped shared-memory file). Only the platform
 * that made it looks inside; everyone else sees a {@link io.cuwire.memory.DeviceBuffer}.
 */
public interface DeviceAllocation {
    /** Size of the allocation in bytes. */
    long byteSize();

    /**
     * The allocation's first byte as an address that native libraries of the platform can use (a CUDA device
     * pointer, for UCX built with CUDA); empty where memory has no such address (emulated memory, which only the
     * copy engine touches).
     */
    default OptionalLong nativeAddress() {
        return OptionalLong.empty();
    }
}
