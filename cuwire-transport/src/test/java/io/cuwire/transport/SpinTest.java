package io.cuwire.transport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import org.junit.jupiter.api.Test;

class SpinTest {
    @Test
    void shouldSpinOnlyWithCoresToSpareUnlessThePropertySays() {
        assertEquals(0, Spin.nanos(null, 2));
        assertEquals(30_000, Spin.nanos(null, 4));
        assertEquals(100_000, Spin.nanos(null, 32));
        assertEquals(0, Spin.nanos("0", 32));
        assertEquals(250_000, Spin.nanos(" 250 ", 2));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Spin.nanos("-1", 8));
        assertTrue(e.getMessage().contains(Spin.PROPERTY), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> Spin.nanos("fast", 8));
    }

    @Test
    void shouldKeepSpinningPastTheSpinOnlyWhileBusyAndNeverPastTheBusyLimit() {
        // The spin follows the property and the cores of this run: the module's build sets spinMicros=20, the GPU
        // bundle's test launcher sets nothing (so 100 µs on a GPU host's many cores).
        assertEquals(Spin.nanos(System.getProperty(Spin.PROPERTY), Runtime.getRuntime().availableProcessors()),
                Spin.NANOS);
        assumeTrue(Spin.NANOS > 0, "spinning is off in this run (" + Spin.PROPERTY + "=0 or under 4 cores)");
        assertTrue(Spin.keepSpinning(0, () -> false));
        assertTrue(!Spin.keepSpinning(Spin.NANOS, () -> false));
        assertTrue(Spin.keepSpinning(Spin.NANOS, () -> true));
        assertTrue(!Spin.keepSpinning(Spin.BUSY_MAX_NANOS, () -> true));
    }
}
