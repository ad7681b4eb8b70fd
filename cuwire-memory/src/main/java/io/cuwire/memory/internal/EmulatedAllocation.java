package io.cuwire.memory.internal;

import io.cuwire.memory.spi.DeviceAllocation;
import java.lang.foreign.MemorySegment;

/**
 * One emulated allocation (or an imported mapping of another process's): {@code segment} is its bytes, which start
 * at {@code fileOffset} of the mapped shared-memory file {@code file}.
 */
record EmulatedAllocation(ShmFile file, long fileOffset, MemorySegment segment) implements DeviceAllocation {
    @Override
    public long byteSize() {
        return segment.byteSize();
    }
}
