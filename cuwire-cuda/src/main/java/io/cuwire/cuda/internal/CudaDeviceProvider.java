package io.cuwire.cuda.internal;

import io.cuwire.cuda.Cuda;
import io.cuwire.memory.Device;
import io.cuwire.memory.spi.DeviceProvider;
import io.cuwire.memory.spi.DeviceUnavailableException;
import java.util.List;

/**
 * The CUDA platform for {@link io.cuwire.memory.Devices}: preferred (priority 100) wherever a GPU is visible. A client
 * of the public API ({@link Cuda}) only: the platform itself lives in {@code io.cuwire.cuda}.
 */
public final class CudaDeviceProvider implements DeviceProvider {
    @Override
    public String platform() {
        return Cuda.PLATFORM;
    }

    @Override
    public int priority() {
        return 100;
    }

    /**
     * The visible GPUs.
     *
     * @throws DeviceUnavailableException with {@link Cuda#unavailableReason()} when the driver or a GPU is missing
     */
    @Override
    public List<Device> open() throws DeviceUnavailableException {
        String reason = Cuda.unavailableReason();
        if (!reason.isEmpty()) {
            throw new DeviceUnavailableException(reason);
        }
        return Cuda.devices();
    }
}
