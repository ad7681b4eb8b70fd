package io.cuwire.cuda;

import io.cuwire.test.arch.Architecture;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The architecture rules of {@link Architecture} for this module: no class uses another module's {@code internal}
 * package, no package cycle but the known ones below, and no benchmark class in this library.
 */
class ArchitectureTest {
    /**
     * The package cycles this module had when the rule came (2026-12-02): the public package and the packages that
     * use it name each other. The list may only shrink: a new cycle fails, and so does a listed one that is gone.
     */
    private static final List<String> KNOWN_CYCLES =
            List.of("io.cuwire.cuda -> io.cuwire.cuda.internal -> io.cuwire.cuda");

    @Test
    void shouldKeepTheArchitectureRules() {
        Architecture.checkLibrary(CuBlas.class, KNOWN_CYCLES);
    }
}
