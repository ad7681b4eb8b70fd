package io.cuwire.memory;

/** The buffer contract over the chosen platform's pinned host memory. */
class PinnedBufferTest extends BufferConformanceSuite {
    @Override
    protected MemoryResource<? extends Buffer> resource() {
        return Devices.get(0).pinnedMemory();
    }

    @Override
    protected Device streamDevice() {
        return Devices.get(0);
    }
}
