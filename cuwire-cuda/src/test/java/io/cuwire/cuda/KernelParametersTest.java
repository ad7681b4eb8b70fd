package io.cuwire.cuda;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_DOUBLE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import org.junit.jupiter.api.Test;

/** Without a GPU: the {@code kernelParams} array that {@code cuLaunchKernel} reads, and the grid sizes. */
@SuppressWarnings("restricted") // reads the arguments the parameter array points at, as the driver does
class KernelParametersTest {
    @Test
    void shouldPointAtEachArgumentInItsCSize() {
        KernelParam[] kinds = {KernelParam.I64, KernelParam.I32, KernelParam.F32, KernelParam.F64, KernelParam.PTR};
        long[] bits = {1L << 40, -7, Float.floatToRawIntBits(2.5f), Double.doubleToRawLongBits(-0.25), 0L};
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment params = KernelModules.parameters(arena, kinds.length, i -> kinds[i], i -> bits[i]);
            assertEquals(1L << 40, params.getAtIndex(ADDRESS, 0).reinterpret(8).get(JAVA_LONG, 0));
            assertEquals(-7, params.getAtIndex(ADDRESS, 1).reinterpret(4).get(JAVA_INT, 0));
            assertEquals(2.5f, params.getAtIndex(ADDRESS, 2).reinterpret(4).get(JAVA_FLOAT, 0));
            assertEquals(-0.25, params.getAtIndex(ADDRESS, 3).reinterpret(8).get(JAVA_DOUBLE, 0));
            assertEquals(0L, params.getAtIndex(ADDRESS, 4).reinterpret(8).get(JAVA_LONG, 0));
        }
    }

    @Test
    void shouldCoverAnyWorkWithABoundedGrid() {
        assertEquals(1, KernelModule.grid(0));
        assertEquals(1, KernelModule.grid(256));
        assertEquals(2, KernelModule.grid(257));
        assertEquals(KernelModule.MAX_GRID, KernelModule.grid(1L << 40));
    }
}
