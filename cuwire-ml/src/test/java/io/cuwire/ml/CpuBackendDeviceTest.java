package io.cuwire.ml;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.ml.internal.CpuBackend;

/** The CPU backend on emulated-device memory, staged through the copy engine. */
class CpuBackendDeviceTest extends BackendConformanceSuite {
    @Override
    protected ComputeBackend backend() {
        return CpuBackend.instance();
    }

    @Override
    protected BufferAllocator<?> openMemory() {
        MlTesting.assumeEmulatedDevices();
        return MlTesting.device("cpu-device");
    }
}
