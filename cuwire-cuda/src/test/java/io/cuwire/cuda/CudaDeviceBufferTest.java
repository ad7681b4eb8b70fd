package io.cuwire.cuda;

import io.cuwire.memory.Buffer;
import io.cuwire.memory.BufferConformanceSuite;
import io.cuwire.memory.Device;
import io.cuwire.memory.MemoryResource;
import org.junit.jupiter.api.Tag;

/** The buffer contract over CUDA device memory (the pool), with peer copies when a second GPU is there. */
@Tag("gpu")
class CudaDeviceBufferTest extends BufferConformanceSuite {
    @Override
    protected MemoryResource<? extends Buffer> resource() {
        CudaTestSupport.assumeCuda();
        return Cuda.device(0).memory();
    }

    @Override
    protected Device streamDevice() {
        return Cuda.device(0);
    }

    @Override
    protected Device peerDevice() {
        return Cuda.deviceCount() > 1 ? Cuda.device(1) : null;
    }
}
