package io.cuwire.ml;

import io.cuwire.test.arch.Architecture;
import org.junit.jupiter.api.Test;

/**
 * The architecture rules of {@link Architecture} for this module: no class uses another module's {@code internal}
 * package, no package cycle (the estimator packages and {@code internal} use the public package, which names none of
 * them: {@code types} registers the estimators, the CPU backend comes through the provider SPI), and no benchmark
 * class in this library.
 */
class ArchitectureTest {
    @Test
    void shouldKeepTheArchitectureRules() {
        Architecture.checkLibrary(Classifier.class);
    }
}
