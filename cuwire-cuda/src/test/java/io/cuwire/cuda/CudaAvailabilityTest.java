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
import io.cuwire.test.ChildJvm;
import java.io.IOException;
import java.time.Duration;
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
        assertTrue(
                reason.contains("libcuda.so.1") || reason.contains("cuInit") || reason.contains("no CUDA device"),
                reason);
        assertEquals(0, Cuda.deviceCount());
        DeviceUnavailableException e =
                assertThrows(DeviceUnavailableException.class, () -> new CudaDeviceProvider().open());
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

    /**
     * Runs {@link DeviceSelectionChild} in a fresh JVM with no platform forced (nor any JVM options from the
     * environment) and returns what it printed, standard error (the log) included.
     */
    private static String chooseInAFreshProcess() throws IOException, InterruptedException {
        return chooseInAFreshProcess(null);
    }

    /** {@link #chooseInAFreshProcess()} with {@code CUDA_VISIBLE_DEVICES} set to {@code visible} unless null. */
    private static String chooseInAFreshProcess(String visible) throws IOException, InterruptedException {
        ChildJvm.Builder builder = ChildJvm.builder(DeviceSelectionChild.class)
                .withoutInheritedProperties()
                .env("JAVA_TOOL_OPTIONS", null)
                .env("JDK_JAVA_OPTIONS", null);
        if (visible != null) {
            builder.env(Driver.VISIBLE_DEVICES, visible);
        }
        try (ChildJvm child = builder.start()) {
            int exit = child.awaitExit(Duration.ofSeconds(60));
            String output = child.output();
            assertEquals(0, exit, output);
            return output;
        }
    }

    /** The lines of {@code output} that log the platform choice. */
    private static List<String> choiceLogLines(String output) {
        return output.lines()
                .filter(l -> l.contains("cuwire devices: platform "))
                .toList();
    }

    @Test
    void shouldChooseTheEmulatedPlatformByItselfWithoutAGpuAndLogTheChoiceOnce() throws Exception {
        assumeFalse(Cuda.isAvailable(), "CUDA is available here");

        String output = chooseInAFreshProcess();

        List<String> log = choiceLogLines(output);
        assertEquals(1, log.size(), "the choice is logged exactly once:\n" + output);
        assertTrue(
                log.getFirst()
                        .contains("cuwire devices: platform emulated, 2 device(s); passed over: {cuda="
                                + Cuda.unavailableReason() + "}"),
                output);
        assertTrue(
                output.contains("CHOSEN emulated DEVICES 2 PASSED OVER {cuda=" + Cuda.unavailableReason() + "}"),
                output);
    }

    @Test
    @Tag("gpu")
    void shouldChooseCudaByItselfOnAGpuHostAndLogTheChoiceOnce() throws Exception {
        assumeCuda();

        String output = chooseInAFreshProcess();

        List<String> log = choiceLogLines(output);
        assertEquals(1, log.size(), "the choice is logged exactly once:\n" + output);
        assertTrue(
                log.getFirst().endsWith("cuwire devices: platform cuda, " + Cuda.deviceCount() + " device(s)"), output);
        assertTrue(output.contains("CHOSEN cuda DEVICES " + Cuda.deviceCount() + " PASSED OVER {}"), output);
    }

    @Test
    @Tag("gpu")
    void shouldFallBackToTheEmulatedPlatformNamingCudaVisibleDevicesWhenItHidesEveryGpu() throws Exception {
        assumeCuda();

        String output = chooseInAFreshProcess("");

        List<String> log = choiceLogLines(output);
        assertEquals(1, log.size(), "the choice is logged exactly once:\n" + output);
        assertTrue(
                log.getFirst().contains("cuwire devices: platform emulated, 2 device(s); passed over: {cuda="), output);
        String reason = log.getFirst();
        assertTrue(
                reason.contains("(CUDA_VISIBLE_DEVICES=\"\")")
                        && (reason.contains(
                                        "cuInit(0) failed: "
                                                + "CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is visible to this process")
                                || reason.contains("no CUDA device: cuDeviceGetCount returned 0")),
                output);
        assertTrue(output.contains("CHOSEN emulated DEVICES 2"), output);
    }

    @Test
    @Tag("gpu")
    void shouldSeeOnlyTheGpuCudaVisibleDevicesNames() throws Exception {
        assumeCuda();
        String inherited = System.getenv(Driver.VISIBLE_DEVICES);
        String first = inherited == null || inherited.isBlank() ? "0" : inherited.split(",")[0].strip();

        String output = chooseInAFreshProcess(first);

        assertTrue(
                output.contains("CHOSEN cuda DEVICES 1 PASSED OVER {}"),
                "CUDA_VISIBLE_DEVICES=" + first + ":\n" + output);
    }

    @Test
    void shouldDescribeCudaVisibleDevicesForMessages() {
        assertEquals("CUDA_VISIBLE_DEVICES not set", Driver.visibleDevices(null));
        assertEquals("CUDA_VISIBLE_DEVICES=\"\"", Driver.visibleDevices(""));
        assertEquals("CUDA_VISIBLE_DEVICES=\"1,0\"", Driver.visibleDevices("1,0"));
        assertEquals(Driver.visibleDevices(System.getenv("CUDA_VISIBLE_DEVICES")), Cuda.visibleDevices());
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
        // The GPU bundle forces cuda, the platform chosen anyway where a GPU is; the choice without the property is
        // shouldChooseCudaByItselfOnAGpuHostAndLogTheChoiceOnce's.
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
