package io.cuwire.spark;

import io.cuwire.test.arch.Architecture;
import org.junit.jupiter.api.Test;

/**
 * The architecture rules of {@link Architecture} over this module and every cuwire module on its class path: no
 * class uses another module's {@code internal} package, no package cycle, and no benchmark class in this library.
 */
class ArchitectureTest {
    @Test
    void shouldKeepTheArchitectureRules() {
        Architecture.checkLibrary(CuwirePlugin.class);
    }
}
