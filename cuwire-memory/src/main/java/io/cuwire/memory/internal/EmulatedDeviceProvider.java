package io.cuwire.memory.internal;

import io.cuwire.memory.Device;
import io.cuwire.memory.spi.DeviceProvider;
import io.cuwire.memory.spi.DeviceUnavailableException;
import java.util.List;

/** The emulated platform: always opens, with {@value EmulatedPlatform#DEVICES_PROPERTY} devices (default 2). */
public final class EmulatedDeviceProvider implements DeviceProvider {
    @Override
    public String platform() {
        return EmulatedPlatform.NAME;
    }

    @Override
    public int priority() {
        return 0;
    }

    @Override
    public List<Device> open() throws DeviceUnavailableException {
        return EmulatedPlatform.fromSystemProperties().devices();
    }
}
