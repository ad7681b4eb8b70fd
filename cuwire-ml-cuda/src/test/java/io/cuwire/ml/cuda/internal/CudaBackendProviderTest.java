package io.cuwire.ml.cuda.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.Devices;
import io.cuwire.ml.MlTesting;
import io.cuwire.ml.spi.BackendProvider;
import java.util.List;
import java.util.ServiceLoader;
import org.junit.jupiter.api.Test;

/** Without a GPU: the CUDA backend is registered for platform {@code cuda} and refuses other devices. */
class CudaBackendProviderTest {
    @Test
    void shouldRegisterTheCudaBackendForTheCudaPlatform() {
        List<BackendProvider> providers = ServiceLoader.load(BackendProvider.class).stream()
                .map(ServiceLoader.Provider::get)
                .toList();
        assertTrue(
                providers.stream()
                        .anyMatch(p ->
                                p instanceof CudaBackendProvider && p.platform().equals("cuda")),
                providers.toString());
    }

    @Test
    void shouldRefuseADeviceOfAnotherPlatform() {
        MlTesting.assumeEmulatedDevices();
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> new CudaBackendProvider().open(Devices.get(0)));
        assertEquals(Devices.get(0) + " is not a CUDA device (platform emulated)", e.getMessage());
    }
}
