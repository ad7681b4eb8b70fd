package io.cuwire.cuda;

import io.cuwire.test.arch.Architecture;
import org.junit.jupiter.api.Test;

/**
 * The architecture rules of {@link Architecture} for this module: no class uses another module's {@code internal}
 * package, no package cycle, and no benchmark class in this library. The dependency within the module points one way:
 * {@code io.cuwire.cuda.internal} (the service provider) uses the public package, which names nothing of it.
 */
class ArchitectureTest {
    @Test
    void shouldKeepTheArchitectureRules() {
        Architecture.checkLibrary(CuBlas.class);
    }
}
