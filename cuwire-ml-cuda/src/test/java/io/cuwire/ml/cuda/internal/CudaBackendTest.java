package io.cuwire.ml.cuda.internal;

import io.cuwire.cuda.Cuda;
import io.cuwire.cuda.CudaTestSupport;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.ml.BackendConformanceSuite;
import io.cuwire.ml.ComputeBackend;
import io.cuwire.ml.ComputeBackends;
import org.junit.jupiter.api.Tag;

/**
 * The backend contract for the CUDA backend on CUDA device memory (GPU 0), float32 and float64, at the suite's
 * tolerances: the kernels accumulate in double precision and cuBLAS's float64 products in float64, so the float64
 * bound {@code 1e-12 (terms + |want|)} holds with orders of magnitude to spare. The backend is the one the service
 * loader finds for the device, which checks the provider's registration too.
 */
@Tag("gpu")
class CudaBackendTest extends BackendConformanceSuite {
    @Override
    protected ComputeBackend backend() {
        CudaTestSupport.assumeCuda();
        return ComputeBackends.forDevice(Cuda.device(0));
    }

    @Override
    protected BufferAllocator<?> openMemory() {
        CudaTestSupport.assumeCuda();
        return Cuda.device(0).newAllocator("cuda-backend-test", BufferAllocator.UNLIMITED);
    }
}
