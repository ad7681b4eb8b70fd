package io.cuwire.bench.harness;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import org.junit.jupiter.api.Test;

class SizesTest {
    @Test
    void shouldReadEverySpellingUsersTypedBeforeAsTheSameBinarySize() {
        assertEquals(1L << 30, Sizes.parse("1g"));
        assertEquals(1L << 30, Sizes.parse("1G"));
        assertEquals(1L << 30, Sizes.parse("1GiB"));
        assertEquals(64L << 20, Sizes.parse("64m"));
        assertEquals(64L << 20, Sizes.parse("64MiB"));
        assertEquals(1024, Sizes.parse("1KiB"));
        assertEquals(1024, Sizes.parse("1k"));
        assertEquals(2L << 40, Sizes.parse("2TiB"));
        assertEquals(4096, Sizes.parse("4096"));
        assertEquals(4096, Sizes.parse("4096b"));
        assertEquals(0, Sizes.parse("0"));
        assertEquals(List.of(1024L, 1L << 20, 64L << 20), Sizes.parseList("1KiB,1m,64MiB"));
    }

    @Test
    void shouldRefuseWhatIsNotASizeAndNameIt() {
        for (String bad : new String[] {"lots", "", "1.5g", "-1", "1 GiB", "g", "1x", "1GiBs", "1kk", "1MB", "1gb"}) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Sizes.parse(bad), bad);
            assertEquals("size '" + bad + "' (expected: " + Sizes.EXPECTED + ")", e.getMessage());
        }
        assertEquals(
                "size '9000000000g' is too large (expected: at most 9223372036854775807 bytes)",
                assertThrows(IllegalArgumentException.class, () -> Sizes.parse("9000000000g"))
                        .getMessage());
        assertEquals(
                "size '' (expected: " + Sizes.EXPECTED + ")",
                assertThrows(IllegalArgumentException.class, () -> Sizes.parseList("1m,"))
                        .getMessage());
    }

    @Test
    void shouldFormatInTheLargestUnitThatDividesTheSize() {
        assertEquals("1GiB", Sizes.format(1L << 30));
        assertEquals("1536MiB", Sizes.format(3L << 29));
        assertEquals("64KiB", Sizes.format(64 << 10));
        assertEquals("1000", Sizes.format(1000));
        assertEquals("0", Sizes.format(0));
        for (long size : new long[] {1, 1000, 1 << 10, 3L << 29, 5L << 40}) {
            assertEquals(size, Sizes.parse(Sizes.format(size)));
        }
    }
}
