package io.cuwire.cuda;

import static io.cuwire.cuda.CudaTestSupport.assumeCuda;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.cuwire.cuda.internal.CudaDeviceProvider;
import io.cuwire.memory.Device;
import io.cuwire.memory.Devices;
import io.cuwire.memory.spi.DeviceUnavailableException;
import java.util.List;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

class CudaAvailabilityTest {
    @Test
    void shouldAnswerAvailabilityWithoutThrowing() {
        assertEquals(Cuda.unavailableReason().isEmpty(), Cuda.isAvailable());
    }

    @Test
    void shouldExplainWhyCudaIsUnavailableEverywhereItIsAsked() {
        assumeFalse(Cuda.isAvailable(), "CUDA is available here");
        String reason = Cuda.unavailableReason();

        assertFalse(reason.isBlank());
        assertTrue(reason.contains("libcuda.so.1") || reason.contains("cuInit") || reason.contains("no CUDA device"),
                reason);
        assertEquals(0, Cuda.deviceCount());
        DeviceUnavailableException e = assertThrows(DeviceUnavailableException.class,
                () -> new CudaDeviceProvider().open());
        assertEquals(reason, e.getMessage());
        CudaException c = assertThrows(CudaException.class, Cuda::devices);
        assertTrue(c.getMessage().contains(reason), c.getMessage());
    }

    @Test
    void shouldLetDevicesFallBackToTheEmulatedPlatformWithTheReason() {
        assumeFalse(Cuda.isAvailable(), "CUDA is available here");
        assumeFalse(System.getProperty(Devices.PLATFORM_PROPERTY) != null, "a platform is forced");

        Devices.Selection selection = Devices.selection();

        assertEquals("emulated", selection.platform());
        assertEquals(Cuda.unavailableReason(), selection.passedOver().get("cuda"));
    }

    @Test
    void shouldRegisterTheCudaProviderWithHigherPriorityThanTheEmulatedOne() {
        CudaDeviceProvider provider = new CudaDeviceProvider();

        assertEquals("cuda", provider.platform());
        assertEquals(100, provider.priority());
    }

    @Test
    @Tag("gpu")
    void shouldOpenEveryVisibleGpuAsTheDefaultPlatform() {
        assumeCuda();
        String forced = System.getProperty(Devices.PLATFORM_PROPERTY);
        // The GPU bundle forces cuda, the platform chosen anyway where a GPU is.
        assumeTrue(forced == null || forced.equals("cuda"), () -> "the platform is forced to " + forced);

        List<Device> devices = Cuda.devices();

        assertEquals(Cuda.deviceCount(), devices.size());
        assertEquals("cuda", Devices.platform());
        assertEquals(devices, Devices.all());
        for (Device d : devices) {
            System.out.println(d + ": " + d.name() + ", " + d.totalMemory() + " bytes, " + d.freeMemory() + " free");
            assertEquals("cuda", d.platform());
            assertFalse(d.name().isBlank());
            assertTrue(d.totalMemory() > 0);
            assertTrue(d.freeMemory() > 0 && d.freeMemory() <= d.totalMemory());
        }
        assertTrue(Cuda.driverVersion().matches("\\d+\\.\\d+"), Cuda.driverVersion());
    }
}
