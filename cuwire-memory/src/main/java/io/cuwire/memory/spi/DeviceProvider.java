package io.cuwire.memory.spi;

import io.cuwire.memory.Device;
import java.util.List;

/**
 * A device platform, found with {@link java.util.ServiceLoader}. {@link io.cuwire.memory.Devices} asks every
 * provider, highest {@link #priority()} first, and uses the first that opens; the emulated platform (priority 0)
 * always opens.
 */
public interface DeviceProvider {
    /** The platform's name: {@code cuda}, {@code emulated}. */
    String platform();

    /** Higher is preferred. */
    int priority();

    /**
     * Opens the platform's devices.
     *
     * @throws DeviceUnavailableException naming why (no driver, no device) when the platform can't be used here
     */
    List<Device> open() throws DeviceUnavailableException;
}
