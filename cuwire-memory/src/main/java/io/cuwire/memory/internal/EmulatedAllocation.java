package io.cuwire.memory.internal;

import io.cuwire.memory.spi.DeviceAllocation;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;

/** One emulated allocation (or an imported mapping of another process's): a mapped shared-memory file. */
record EmulatedAllocation(Path file, long fileOffset, MemorySegment segment) implements DeviceAllocation {
    @Override
    public long byteSize() {
        return segment.byteSize();
    }
}
