package io.cuwire.bench.harness;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** The Python scripts the benches run beside themselves: resources of the bench's package, written out to run. */
public final class Scripts {
    private Scripts() {}

    /**
     * Writes the resource {@code name} of {@code owner}'s package into {@code dir} and returns the file.
     *
     * @throws IllegalStateException if the resource is missing from the jar
     * @throws UncheckedIOException naming the file if it cannot be written
     */
    public static Path write(Class<?> owner, String name, Path dir) {
        Path script = dir.resolve(name);
        try (InputStream in = owner.getResourceAsStream(name)) {
            if (in == null) {
                throw new IllegalStateException("resource " + name + " is missing from " + owner.getPackageName());
            }
            Files.copy(in, script);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + script + ": " + e.getMessage(), e);
        }
        return script;
    }
}
