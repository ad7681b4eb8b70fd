package io.cuwire.cli;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DType;
import io.cuwire.memory.Devices;
import io.cuwire.ml.Estimator;
import io.cuwire.ml.modelfile.ModelFile;
import io.cuwire.ml.modelfile.ModelFileException;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * {@code cuwire model inspect|import|export}: a model file's content, whether cuwire rebuilds its estimator, and that
 * estimator written as ONNX.
 */
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

    /** The class that writes ONNX (cuwire-onnx), looked up by name: the module is built only where ONNX's proto is. */
    static final String ONNX_EXPORT = "io.cuwire.onnx.OnnxExport";

    /**
     * Builds {@code file}'s estimator on the host (float64, as the file holds it; the ONNX model is float32) and writes
     * it as an ONNX model to {@code onnx}, replacing it.
     */
    static int exportOnnx(Path file, Path onnx, PrintStream out, PrintStream err) {
        MethodHandle toBytes;
        try {
            toBytes = MethodHandles.publicLookup()
                    .findStatic(
                            Class.forName(ONNX_EXPORT),
                            "toBytes",
                            MethodType.methodType(byte[].class, Estimator.class));
        } catch (ClassNotFoundException | NoSuchMethodException | IllegalAccessException e) {
            err.println("cuwire model export: ONNX export needs cuwire-onnx (io.cuwire:cuwire-onnx) on the class path,"
                    + " which this cuwire was built without (" + ONNX_EXPORT + ": " + e + ")");
            return Main.FAILED;
        }
        try {
            ModelFile f = ModelFile.read(file);
            byte[] model;
            String what;
            try (BufferAllocator<?> mem = BufferAllocator.host("cuwire-model-export", BufferAllocator.UNLIMITED);
                    Estimator e = f.toEstimator(mem, DType.FLOAT64)) {
                model = (byte[]) toBytes.invokeExact(e);
                what = e.toString();
            }
            Files.write(onnx, model);
            out.println("wrote " + onnx + " (" + model.length + " bytes): ONNX model of " + what + " from "
                    + f.producer() + "; input X float32 (N, features)");
            return Main.OK;
        } catch (ModelFileException | IOException | IllegalArgumentException e) {
            err.println("cuwire model export: " + file + ": " + e.getMessage());
            return Main.FAILED;
        } catch (RuntimeException e) {
            // OnnxExportException (an estimator without an ONNX form, a model too large), named by its class
            err.println("cuwire model export: " + file + ": " + e.getClass().getSimpleName() + ": " + e.getMessage());
            return Main.FAILED;
        } catch (Error e) {
            throw e;
        } catch (Throwable t) {
            throw new IllegalStateException("ONNX export failed: " + t, t);
        }
    }
}
