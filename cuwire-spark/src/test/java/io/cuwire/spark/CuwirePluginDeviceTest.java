package io.cuwire.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** How an executor's {@code gpu} address or {@code spark.cuwire.device} becomes a device ordinal. */
class CuwirePluginDeviceTest {
    @Test
    void shouldMapExecutorSlotAddressesOntoTheDevicesModuloTheirCount() {
        assertEquals(0, CuwirePlugin.ordinal("0", 1));
        assertEquals(0, CuwirePlugin.ordinal("1", 1), "two slots of a one-GPU host share device 0");
        assertEquals(1, CuwirePlugin.ordinal("3", 2));
        assertEquals(2, CuwirePlugin.ordinal(" 2 ", 4), "a GPU host's own ordinals are kept");
        assertEquals(0, CuwirePlugin.ordinal("", 2), "no address and no setting: device 0");
    }

    @Test
    void shouldRefuseAnAddressThatIsNoOrdinal() {
        assertThrows(NumberFormatException.class, () -> CuwirePlugin.ordinal("GPU-5d3c", 1));
        assertThrows(IllegalArgumentException.class, () -> CuwirePlugin.ordinal("-1", 1));
    }
}
