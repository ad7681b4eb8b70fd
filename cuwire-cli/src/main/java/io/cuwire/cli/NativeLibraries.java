package io.cuwire.cli;

import io.cuwire.transport.spi.Availability;
import java.lang.foreign.Arena;
import java.lang.foreign.SymbolLookup;

/** Finds shared libraries the way the dynamic linker would, without keeping them loaded. */
public final class NativeLibraries {
    private NativeLibraries() {}

    /**
     * Whether {@code name} (e.g. {@code libucp.so.0}) can be loaded. The library is opened and closed again at once;
     * loading runs its constructors, so probe only libraries that are safe to load into a JVM.
     */
    @SuppressWarnings("restricted") // loading a library is what this probe is for
    public static Availability probe(String name) {
        try (Arena arena = Arena.ofConfined()) {
            SymbolLookup.libraryLookup(name, arena);
            return Availability.available(name + " found");
        } catch (IllegalArgumentException | IllegalCallerException e) {
            return Availability.unavailable(name + " not found: " + e.getMessage());
        }
    }
}
