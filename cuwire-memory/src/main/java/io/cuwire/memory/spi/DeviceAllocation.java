package io.cuwire.memory.spi;

/**
 * A device platform's own record of one allocation (a device pointer, a mapped shared-memory file). Only the platform
 * that made it looks inside; everyone else sees a {@link io.cuwire.memory.DeviceBuffer}.
 */
public interface DeviceAllocation {
    /** Size of the allocation in bytes. */
    long byteSize();
}
