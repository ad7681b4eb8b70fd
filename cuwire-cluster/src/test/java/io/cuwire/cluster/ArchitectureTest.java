package io.cuwire.cluster;

import io.cuwire.test.arch.Architecture;
import org.junit.jupiter.api.Test;

/**
 * The architecture rules of {@link Architecture} for this module: no class uses another module's {@code internal}
 * package, no package cycle (the public package, {@code internal}, {@code runtime} and {@code rpc} are layers, each
 * naming only those below it), and no benchmark class in this library.
 */
class ArchitectureTest {
    @Test
    void shouldKeepTheArchitectureRules() {
        Architecture.checkLibrary(BroadcastOptions.class);
    }
}
