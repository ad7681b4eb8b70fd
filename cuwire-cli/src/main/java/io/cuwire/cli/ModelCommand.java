package io.cuwire.cli;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DType;
import io.cuwire.memory.Devices;
import io.cuwire.ml.Estimator;
import io.cuwire.ml.modelfile.ModelFile;
import io.cuwire.ml.modelfile.ModelFileException;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Path;

/** {@code cuwire model inspect|import}: a model file's content, and whether cuwire rebuilds its estimator. */
final class ModelCommand {
    private ModelCommand() {}

    /** Prints the estimator, parameters, attributes and arrays of {@code file}. */
    static int inspect(Path file, PrintStream out, PrintStream err) {
        try {
            out.print(ModelFile.read(file).describe());
            return Main.OK;
        } catch (ModelFileException | IOException e) {
            err.println("cuwire model inspect: " + file + ": " + e.getMessage());
            return Main.FAILED;
        }
    }

    /** Builds {@code file}'s estimator on the host or device 0, in {@code dtype}, and prints it. */
    static int importFile(Path file, boolean device, DType dtype, PrintStream out, PrintStream err) {
        try {
            ModelFile f = ModelFile.read(file);
            try (BufferAllocator<?> mem = device
                            ? Devices.get(0).newAllocator("cuwire-model-import", BufferAllocator.UNLIMITED)
                            : BufferAllocator.host("cuwire-model-import", BufferAllocator.UNLIMITED);
                    Estimator e = f.toEstimator(mem, dtype)) {
                out.println("imported " + e + " from " + f.producer() + " on " + (device ? "device 0" : "host") + " as "
                        + dtype.wireName() + " (" + mem.allocatedBytes() + " bytes)");
            }
            return Main.OK;
        } catch (ModelFileException | IOException | IllegalArgumentException e) {
            err.println("cuwire model import: " + file + ": " + e.getMessage());
            return Main.FAILED;
        }
    }
}
