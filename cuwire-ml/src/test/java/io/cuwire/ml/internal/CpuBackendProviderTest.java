package io.cuwire.ml.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;

import io.cuwire.memory.Devices;
import io.cuwire.ml.MlTesting;
import io.cuwire.ml.spi.BackendProvider;
import java.util.List;
import java.util.Optional;
import java.util.ServiceLoader;
import org.junit.jupiter.api.Test;

/** The CPU backend is found as every backend is: its provider is registered for the emulated device and host memory. */
class CpuBackendProviderTest {
    @Test
    void shouldRegisterTheCpuBackendForTheEmulatedPlatformAndHostMemory() {
        List<BackendProvider> cpu = ServiceLoader.load(BackendProvider.class).stream()
                .map(ServiceLoader.Provider::get)
                .filter(p -> p instanceof CpuBackendProvider)
                .toList();
        assertEquals(1, cpu.size(), cpu.toString());
        assertEquals("emulated", cpu.getFirst().platform());
        assertEquals(Optional.of(CpuBackend.instance()), cpu.getFirst().hostBackend());
    }

    @Test
    void shouldOpenTheCpuBackendForAnEmulatedDevice() {
        MlTesting.assumeEmulatedDevices();
        assertSame(CpuBackend.instance(), new CpuBackendProvider().open(Devices.get(0)));
    }
}
