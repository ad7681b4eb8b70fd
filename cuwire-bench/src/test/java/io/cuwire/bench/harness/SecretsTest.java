package io.cuwire.bench.harness;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import java.util.Arrays;
import java.util.HexFormat;
import org.junit.jupiter.api.Test;

class SecretsTest {
    @Test
    void shouldMakeAFreshSecretForEveryRun() {
        byte[] a = Secrets.generate();
        byte[] b = Secrets.generate();
        assertEquals(32, a.length);
        assertFalse(Arrays.equals(a, b), "two runs got the same secret");
        assertEquals(64, Secrets.hex(a).length());
        assertEquals(Secrets.hex(a), HexFormat.of().formatHex(HexFormat.of().parseHex(Secrets.hex(a))));
    }
}
