package io.cuwire.ml;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.ml.internal.CpuBackend;

/** The CPU backend on host memory. */
class CpuBackendHostTest extends BackendConformanceSuite {
    @Override
    protected ComputeBackend backend() {
        return CpuBackend.instance();
    }

    @Override
    protected BufferAllocator<?> openMemory() {
        return MlTesting.host("cpu-host");
    }
}
