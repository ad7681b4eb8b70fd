package io.cuwire.cuda;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class KernelModulesTest {
    @Test
    void shouldNameTheMissingResourceAndTheMissingNvcc() {
        String message = Kernels.MODULE.missingResourceMessage();

        assertTrue(message.contains("META-INF/cuwire/kernels.fatbin"), message);
        assertTrue(message.contains("this cuwire-cuda was built without nvcc"), message);
    }

    @Test
    void shouldFailToLoadKernelsWithTheMissingResourceMessageWhenTheFatbinIsNotOnTheClassPath() {
        ClassLoader withoutFatbin = new ClassLoader(null) {}; // the JDK's resources only, as a build without nvcc

        CudaException e = assertThrows(
                CudaException.class, () -> KernelModules.readImage(withoutFatbin, Kernels.RESOURCE, "cuwire-cuda"));

        assertEquals(Kernels.MODULE.missingResourceMessage(), e.getMessage());
        assertEquals(CudaException.NO_RESULT, e.result());
    }

    @Test
    void shouldPackageTheKernelFatbinWhenBuiltWithNvcc() throws IOException {
        assumeTrue(Files.exists(Path.of("/usr/local/cuda/bin/nvcc")), "no nvcc: the build made no fatbin");

        try (InputStream in = Kernels.class.getClassLoader().getResourceAsStream(Kernels.RESOURCE)) {
            assertNotNull(in, Kernels.RESOURCE);
            byte[] head = in.readNBytes(4);
            // fatbin magic 0xBA55ED50, little-endian
            assertArrayEquals(new byte[] {0x50, (byte) 0xED, 0x55, (byte) 0xBA}, head, Arrays.toString(head));
        }
    }
}
