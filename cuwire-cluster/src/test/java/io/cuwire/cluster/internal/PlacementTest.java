package io.cuwire.cluster.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.cluster.ClusterException;
import io.cuwire.cluster.LocalCluster;
import io.cuwire.cuda.Cuda;
import io.cuwire.memory.Devices;
import org.junit.jupiter.api.Test;

class PlacementTest {
    @Test
    void shouldPutWorkerIOnDeviceIModuloTheDevicesSoOneGpuIsShared() {
        assertEquals(0, Placement.ordinal(0, null, 1));
        assertEquals(0, Placement.ordinal(2, null, 1));
        assertEquals(1, Placement.ordinal(1, null, 2));
        assertEquals(0, Placement.ordinal(2, null, 2));
        assertEquals(5, Placement.ordinal(5, null, 8));
    }

    @Test
    void shouldTakeTheGivenOrdinalsInTurn() {
        int[] given = {3, 1};
        assertEquals(3, Placement.ordinal(0, given, 8));
        assertEquals(1, Placement.ordinal(1, given, 8));
        assertEquals(3, Placement.ordinal(2, given, 8));
    }

    @Test
    void shouldNameTheVisibleDevicesAndCudaVisibleDevicesForADeviceTheProcessLacks() {
        assertEquals(
                "device 1 is not visible to this process: it sees 1 device(s) on platform cuda "
                        + "(CUDA_VISIBLE_DEVICES=\"0\") (expected: 0 <= device < 1)",
                Placement.notVisible(1, 1, "cuda", "CUDA_VISIBLE_DEVICES=\"0\""));
        assertEquals(
                "device 2 is not visible to this process: it sees 2 device(s) on platform emulated "
                        + "(expected: 0 <= device < 2)",
                Placement.notVisible(2, 2, "emulated", null));
    }

    @Test
    void shouldReturnTheDeviceOfAVisibleOrdinalAndRefuseOthers() {
        int visible = Devices.all().size();
        assertSame(Devices.get(visible - 1), Placement.device(visible - 1));
        String message = assertThrows(IllegalArgumentException.class, () -> Placement.device(visible))
                .getMessage();
        String cuda = Devices.platform().equals("cuda") ? " (" + Cuda.visibleDevices() + ")" : "";
        assertEquals(
                "device " + visible + " is not visible to this process: it sees " + visible + " device(s) on "
                        + "platform " + Devices.platform() + cuda + " (expected: 0 <= device < " + visible + ")",
                message);
        assertThrows(IllegalArgumentException.class, () -> Placement.device(-1));
    }

    @Test
    void shouldRefuseToStartAClusterOnADeviceThisProcessLacksBeforeStartingAnyWorker() {
        int visible = Devices.all().size();
        ClusterException e = assertThrows(
                ClusterException.class,
                () -> LocalCluster.builder().workers(2).devices(0, visible).start());
        assertTrue(
                e.getMessage()
                        .startsWith("the local cluster did not start: worker 1: device " + visible
                                + " is not visible to this process: it sees " + visible + " device(s)"),
                e.getMessage());
    }
}
