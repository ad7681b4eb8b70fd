package io.cuwire.ml.internal;

import io.cuwire.memory.Device;
import io.cuwire.ml.ComputeBackend;
import io.cuwire.ml.spi.BackendProvider;
import java.util.Optional;

/**
 * The {@link CpuBackend} for the emulated device and host memory, found by {@link io.cuwire.ml.ComputeBackends} with
 * the service loader.
 */
public final class CpuBackendProvider implements BackendProvider {
    @Override
    public String platform() {
        return "emulated";
    }

    @Override
    public ComputeBackend open(Device device) {
        if (!device.platform().equals(platform())) {
            throw new IllegalArgumentException(
                    device + " is not an emulated device (platform " + device.platform() + ")");
        }
        return CpuBackend.instance();
    }

    @Override
    public Optional<ComputeBackend> hostBackend() {
        return Optional.of(CpuBackend.instance());
    }
}
