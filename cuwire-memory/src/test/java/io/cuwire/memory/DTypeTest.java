package io.cuwire.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class DTypeTest {
    @Test
    void shouldHaveStableNamesAndSizes() {
        assertEquals("float32", DType.FLOAT32.wireName());
        assertEquals("float64", DType.FLOAT64.wireName());
        assertEquals("int32", DType.INT32.wireName());
        assertEquals("int64", DType.INT64.wireName());
        assertEquals("uint8", DType.UINT8.wireName());
        assertEquals("bool", DType.BOOL.wireName());
        assertEquals(4, DType.FLOAT32.byteSize());
        assertEquals(8, DType.FLOAT64.byteSize());
        assertEquals(4, DType.INT32.byteSize());
        assertEquals(8, DType.INT64.byteSize());
        assertEquals(1, DType.UINT8.byteSize());
        assertEquals(1, DType.BOOL.byteSize());
        assertTrue(DType.FLOAT64.isFloatingPoint());
        assertFalse(DType.INT64.isFloatingPoint());
        assertTrue(DType.INT32.isIndex());
        assertFalse(DType.UINT8.isIndex());
    }

    @Test
    void shouldFindEveryDtypeByItsWireName() {
        for (DType t : DType.values()) {
            assertEquals(t, DType.byName(t.wireName()));
        }
    }

    @Test
    void shouldRejectUnknownNamesListingTheKnownOnes() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> DType.byName("FLOAT32"));
        assertEquals(
                "unknown dtype: 'FLOAT32' (expected one of: float32, float64, int32, int64, uint8, bool)",
                e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> DType.byName(null));
    }
}
