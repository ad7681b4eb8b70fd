package io.cuwire.memory;

/** The buffer contract over the chosen platform's device memory (the emulated device without a GPU). */
class DeviceBufferTest extends BufferConformanceSuite {
    @Override
    protected MemoryResource<? extends Buffer> resource() {
        return Devices.get(0).memory();
    }

    @Override
    protected Device streamDevice() {
        return Devices.get(0);
    }

    @Override
    protected Device peerDevice() {
        return Devices.all().size() > 1 ? Devices.get(1) : null;
    }
}
