package io.cuwire.bench.ml;

import io.cuwire.cuda.Cuda;
import io.cuwire.cuda.CudaTestSupport;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.HostBuffer;
import org.junit.jupiter.api.Tag;

/**
 * {@link ForestQualityTest} with the data on CUDA device 0, so that the forests grow on the GPU (the CUDA backend's
 * device tree growing): held-out accuracy / R², mean of 3 seeds, within 0.01 of scikit-learn's with the same trees,
 * depth and features per split (issue 23). Needs a GPU and a Python with scikit-learn
 * ({@code -Dcuwire.bench.python}); it is not in the GPU bundle's test jars (cuwire-bench's tests need JMH, Kryo and
 * Fory): run it with the bench module's test classes on the class path,
 * {@code bin/gpu-tests -cp cuwire-bench/target/test-classes -c io.cuwire.bench.ml.CudaForestQualityTest}.
 */
@Tag("gpu")
class CudaForestQualityTest extends ForestQualityTest {
    @Override
    BufferAllocator<?> memory(BufferAllocator<HostBuffer> hostMemory) {
        CudaTestSupport.assumeCuda();
        return Cuda.device(0).newAllocator("cuda-forest-quality", BufferAllocator.UNLIMITED);
    }

    @Override
    String grower() {
        return "cuwire CUDA backend";
    }
}
