package io.cuwire.bench.harness;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

class StatsTest {
    @Test
    void shouldTakeTheMiddleValueOrTheMeanOfTheMiddleTwo() {
        assertEquals(2.0, Stats.median(new double[] {3, 1, 2}));
        assertEquals(2.5, Stats.median(new double[] {4, 1, 2, 3}));
        assertEquals(7.0, Stats.median(new double[] {7}));
        assertEquals(new Stats(2.5, 1, 4, 4), Stats.of(new double[] {4, 1, 2, 3}));
    }

    @Test
    void shouldLeaveTheCallersValuesInTheirOrder() {
        double[] v = {3, 1, 2};
        Stats.of(v);
        assertEquals(3.0, v[0]);
        assertEquals(1.0, v[1]);
    }

    @Test
    void shouldRefuseNoValues() {
        assertEquals(
                "no values (expected: at least one)",
                assertThrows(IllegalArgumentException.class, () -> Stats.of(new double[0]))
                        .getMessage());
    }
}
