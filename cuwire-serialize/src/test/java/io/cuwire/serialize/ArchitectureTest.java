package io.cuwire.serialize;

import io.cuwire.test.arch.Architecture;
import org.junit.jupiter.api.Test;

/**
 * The architecture rules of {@link Architecture} for this module: no class uses another module's {@code internal}
 * package, no package cycle (the public package uses {@code internal} and {@code msgpack}, which name nothing of it),
 * and no benchmark class in this library.
 */
class ArchitectureTest {
    @Test
    void shouldKeepTheArchitectureRules() {
        Architecture.checkLibrary(BuiltinSerializers.class);
    }
}
