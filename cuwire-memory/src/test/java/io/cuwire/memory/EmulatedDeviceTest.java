package io.cuwire.memory;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** The device contract over the emulated device (CI's platform), with a peer where two are emulated. */
class EmulatedDeviceTest extends DeviceConformanceSuite {
    @Override
    protected Device device() {
        assumeTrue(Devices.platform().equals("emulated"), () -> "the platform is " + Devices.platform());
        return Devices.get(0);
    }

    @Override
    protected Device peerDevice() {
        return Devices.all().size() > 1 ? Devices.get(1) : null;
    }
}
