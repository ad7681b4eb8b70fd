package io.cuwire.cuda;

import io.cuwire.memory.Devices;

/**
 * The other process of {@link CudaAvailabilityTest}'s platform-choice tests: a fresh JVM with no platform forced asks
 * for the devices the several ways a program does, then prints what was chosen.
 */
public final class DeviceSelectionChild {
    private DeviceSelectionChild() {}

    public static void main(String[] args) {
        Devices.Selection selection = Devices.selection();
        Devices.all();
        Devices.get(0);
        Devices.platform();
        Devices.selection();
        System.out.println("CHOSEN " + selection.platform() + " DEVICES "
                + selection.devices().size() + " PASSED OVER " + selection.passedOver());
    }
}
