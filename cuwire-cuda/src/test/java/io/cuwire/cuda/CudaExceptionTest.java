package io.cuwire.cuda;

import static io.cuwire.cuda.CudaTestSupport.assumeCuda;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.AllocationLimitException;
import io.cuwire.memory.MemoryException;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

class CudaExceptionTest {
    @Test
    void shouldNameTheCallAndTheDriversErrorName() {
        CudaException e = new CudaException("cuMemAlloc_v2(1073741824 bytes)", 2, "CUDA_ERROR_OUT_OF_MEMORY");

        assertEquals("cuMemAlloc_v2(1073741824 bytes) failed: CUDA_ERROR_OUT_OF_MEMORY (2)", e.getMessage());
        assertEquals(2, e.result());
        assertEquals("CUDA_ERROR_OUT_OF_MEMORY", e.errorName());
        assertInstanceOf(MemoryException.class, e);
    }

    @Test
    void shouldHaveNoResultWhenALibraryIsMissing() {
        CudaException e = new CudaException("cuBLAS not found; tried: x", null);

        assertEquals(CudaException.NO_RESULT, e.result());
        assertEquals("", e.errorName());
        assertEquals("cuBLAS not found; tried: x", e.getMessage());
    }

    @Test
    @Tag("gpu")
    void shouldTakeErrorNamesFromTheDriver() {
        assumeCuda();

        assertEquals("CUDA_ERROR_OUT_OF_MEMORY", Driver.errorName(2));
        assertEquals("CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED", Driver.errorName(704));
        assertEquals("unknown CUresult", Driver.errorName(123_456));
    }

    @Test
    @Tag("gpu")
    void shouldReportAnImpossibleAllocationAsOutOfMemoryFromCuMemAlloc() {
        assumeCuda();

        AllocationLimitException e = assertThrows(
                AllocationLimitException.class, () -> Cuda.device(0).memory().allocate(1L << 50));

        CudaException cause = assertInstanceOf(CudaException.class, e.getCause());
        assertEquals(Driver.CUDA_ERROR_OUT_OF_MEMORY, cause.result());
        assertTrue(
                cause.getMessage()
                        .startsWith(
                                "cuMemAlloc_v2(" + (1L << 50) + " bytes) failed: " + "CUDA_ERROR_OUT_OF_MEMORY (2)"),
                cause.getMessage());
        assertTrue(
                e.getMessage().contains("DEVICE:cuda0 pool cannot allocate " + (1L << 50) + " bytes"), e.getMessage());
    }
}
