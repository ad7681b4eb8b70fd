package io.cuwire.cuda;

import io.cuwire.memory.Buffer;
import io.cuwire.memory.BufferConformanceSuite;
import io.cuwire.memory.Device;
import io.cuwire.memory.MemoryResource;
import org.junit.jupiter.api.Tag;

/** The buffer contract over CUDA pinned host memory ({@code cuMemHostAlloc}). */
@Tag("gpu")
class CudaPinnedBufferTest extends BufferConformanceSuite {
    @Override
    protected MemoryResource<? extends Buffer> resource() {
        CudaTestSupport.assumeCuda();
        return Cuda.device(0).pinnedMemory();
    }

    @Override
    protected Device streamDevice() {
        return Cuda.device(0);
    }
}
