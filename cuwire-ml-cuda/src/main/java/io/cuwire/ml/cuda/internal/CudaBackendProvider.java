package io.cuwire.ml.cuda.internal;

import io.cuwire.memory.Device;
import io.cuwire.ml.ComputeBackend;
import io.cuwire.ml.spi.BackendProvider;

/** The {@link CudaBackend} for CUDA devices, found by {@link io.cuwire.ml.ComputeBackends} with the service loader. */
public final class CudaBackendProvider implements BackendProvider {
    @Override
    public String platform() {
        return "cuda";
    }

    @Override
    public ComputeBackend open(Device device) {
        return new CudaBackend(device);
    }
}
