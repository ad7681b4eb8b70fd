package io.cuwire.memory;

/** The buffer contract over ordinary host memory. */
class HostBufferTest extends BufferConformanceSuite {
    @Override
    protected MemoryResource<? extends Buffer> resource() {
        return HostMemory.resource();
    }

    @Override
    protected Device streamDevice() {
        return Devices.get(0);
    }
}
