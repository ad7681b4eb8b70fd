package io.cuwire.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;

class CuBlasLibraryTest {
    @Test
    void shouldLookInTheVersionedNamesThenTheToolkitDirectories() {
        assertEquals(
                List.of(
                        "libcublas.so.13",
                        "libcublas.so.12",
                        "/usr/local/cuda/lib64/libcublas.so.13",
                        "/usr/local/cuda/lib64/libcublas.so.12",
                        "/usr/local/cuda/targets/x86_64-linux/lib/libcublas.so.13",
                        "/usr/local/cuda/targets/x86_64-linux/lib/libcublas.so.12"),
                CuBlasLibrary.candidates(null, null));
    }

    @Test
    void shouldTryOnlyTheLibraryNamedByThePropertyOrTheEnvironment() {
        assertEquals(List.of("/opt/a.so"), CuBlasLibrary.candidates("/opt/a.so", "/opt/b.so"));
        assertEquals(List.of("/opt/b.so"), CuBlasLibrary.candidates(null, "/opt/b.so"));
        assertEquals(List.of("/opt/b.so"), CuBlasLibrary.candidates(" ", "/opt/b.so"));
    }

    @Test
    void shouldNameTheMissingFileAndThePropertyWhenThePropertyIsWrong() {
        CudaException e =
                assertThrows(CudaException.class, () -> CuBlasLibrary.load("/nonexistent/libcublas.so.13", null));

        assertTrue(
                e.getMessage()
                        .startsWith("cuBLAS not found named by -Dcuwire.cublas.library; tried: "
                                + "/nonexistent/libcublas.so.13 (no such file)."),
                e.getMessage());
        assertTrue(e.getMessage().contains("$CUWIRE_CUBLAS_LIBRARY"), e.getMessage());
    }

    @Test
    void shouldNameTheEnvironmentVariableWhenItIsWrong() {
        CudaException e = assertThrows(CudaException.class, () -> CuBlasLibrary.load(null, "/nonexistent/cublas.so"));

        assertTrue(
                e.getMessage()
                        .startsWith("cuBLAS not found named by $CUWIRE_CUBLAS_LIBRARY; tried: "
                                + "/nonexistent/cublas.so (no such file)."),
                e.getMessage());
    }

    @Test
    void shouldNameAFileThatIsNotALibrary() throws Exception {
        Path notALibrary = Files.createTempFile("cuwire-not-cublas", ".so");
        try {
            CudaException e = assertThrows(CudaException.class, () -> CuBlasLibrary.load(notALibrary.toString(), null));
            assertTrue(e.getMessage().contains(notALibrary + " (cannot be loaded: "), e.getMessage());
        } finally {
            Files.delete(notALibrary);
        }
    }

    @Test
    void shouldEitherLoadCuBlasOrNameEveryPlaceTried() {
        CuBlasLibrary library;
        try {
            library = CuBlasLibrary.load(null, null);
        } catch (CudaException e) {
            for (String candidate : CuBlasLibrary.candidates(null, null)) {
                assertTrue(e.getMessage().contains(candidate + " ("), "missing " + candidate + " in " + e.getMessage());
            }
            assertTrue(e.getMessage().contains("-Dcuwire.cublas.library"), e.getMessage());
            return;
        }
        assertNotNull(library.location());
    }

    @Test
    void shouldNameCuBlasStatuses() {
        assertEquals("CUBLAS_STATUS_INVALID_VALUE", CuBlasLibrary.statusName(7));
        assertEquals("unknown cublasStatus_t", CuBlasLibrary.statusName(99));
    }
}
