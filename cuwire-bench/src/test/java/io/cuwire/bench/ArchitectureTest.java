package io.cuwire.bench;

import io.cuwire.test.arch.Architecture;
import org.junit.jupiter.api.Test;

/**
 * The architecture rules of {@link Architecture} over this module and every cuwire module on its class path: no
 * class uses another module's {@code internal} package, no package cycle. An application, not a library, so
 * benchmark classes may be here.
 */
class ArchitectureTest {
    @Test
    void shouldKeepTheArchitectureRules() {
        Architecture.checkApplication(BenchModel.class);
    }
}
