package io.cuwire.cuda.internal;

import io.cuwire.memory.Device;
import io.cuwire.memory.spi.DeviceProvider;
import io.cuwire.memory.spi.DeviceUnavailableException;
import java.util.List;

/** The CUDA platform for {@link io.cuwire.memory.Devices}: preferred (priority 100) wherever a GPU is visible. */
public final class CudaDeviceProvider implements DeviceProvider {
    @Override
    public String platform() {
        return CudaPlatform.NAME;
    }

    @Override
    public int priority() {
        return 100;
    }

    @Override
    public List<Device> open() throws DeviceUnavailableException {
        return List.copyOf(CudaPlatform.get().devices());
    }
}
