package io.cuwire.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DType;
import io.cuwire.memory.NdArray;
import io.cuwire.ml.Estimator;
import io.cuwire.ml.linear.Ridge;
import io.cuwire.ml.modelfile.ModelFile;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code cuwire model ...}, run in-process as {@link MainTest} runs the command line. */
class ModelCommandTest {
    @TempDir
    Path dir;

    private Path ridgeFile() throws IOException {
        Path p = dir.resolve("ridge.cwm");
        try (BufferAllocator<?> mem = BufferAllocator.host("cli-test", BufferAllocator.UNLIMITED);
                Ridge r =
                        new Ridge().alpha(0.5).adoptFitted(NdArray.fromArray(mem, new double[] {1, -2, 3}, 3), 0.25)) {
            ModelFile.of(r).write(p);
        }
        return p;
    }

    @Test
    void shouldInspectAModelFilePrintingEstimatorParamsAndArrays() throws IOException {
        MainTest.Result r = MainTest.run("model", "inspect", ridgeFile().toString());
        assertEquals(Main.OK, r.exitCode(), r.err());
        assertTrue(r.out().contains("estimator  Ridge"), r.out());
        assertTrue(r.out().contains("\"alpha\": 0.5"), r.out());
        assertTrue(r.out().matches("(?s).*coef_ +float64 +\\(3,\\) +min -2.0  max 3.0.*"), r.out());
    }

    @Test
    void shouldImportAModelFileAndRefuseABrokenOneNamingTheField() throws IOException {
        Path p = ridgeFile();
        MainTest.Result ok = MainTest.run("model", "import", p.toString(), "--dtype", "float32");
        assertEquals(Main.OK, ok.exitCode(), ok.err());
        assertTrue(
                ok.out()
                        .startsWith("imported Ridge(fitIntercept=true, alpha=0.5, fitted) from cuwire on host as "
                                + "float32"),
                ok.out());
        byte[] raw = Files.readAllBytes(p);
        String text =
                new String(raw, StandardCharsets.ISO_8859_1).replace("\"format_version\": 1", "\"format_version\": 9");
        Files.write(p, text.getBytes(StandardCharsets.ISO_8859_1));
        MainTest.Result bad = MainTest.run("model", "import", p.toString());
        assertEquals(Main.FAILED, bad.exitCode());
        assertTrue(
                bad.err().contains("format_version: 9 (expected: 1; the file is newer than this reader)"), bad.err());
    }

    @Test
    void shouldPrintThePythonHelper() {
        MainTest.Result r = MainTest.run("model", "python-helper");
        assertEquals(Main.OK, r.exitCode(), r.err());
        assertTrue(r.out().contains("def save(est, path):"), r.out());
    }

    @Test
    void shouldExportAModelFileAsTheOnnxModelOnnxExportWritesOrSayWhatIsMissing() throws Exception {
        Path p = ridgeFile();
        Path onnx = dir.resolve("ridge.onnx");
        MainTest.Result r = MainTest.run("model", "export", p.toString(), "--onnx", onnx.toString());
        Class<?> export;
        try {
            export = Class.forName(ModelCommand.ONNX_EXPORT);
        } catch (ClassNotFoundException e) {
            // built without cuwire-onnx (no ONNX proto on this machine): the command names the module
            assertEquals(Main.FAILED, r.exitCode(), r.out());
            assertTrue(r.err().contains("ONNX export needs cuwire-onnx (io.cuwire:cuwire-onnx)"), r.err());
            assertTrue(Files.notExists(onnx));
            return;
        }
        assertEquals(Main.OK, r.exitCode(), r.err());
        assertTrue(r.out().startsWith("wrote " + onnx + " ("), r.out());
        assertTrue(r.out().contains("ONNX model of Ridge(fitIntercept=true, alpha=0.5, fitted) from cuwire"), r.out());
        // the same bytes as OnnxExport writes for the estimator the file holds
        byte[] expected;
        try (BufferAllocator<?> mem = BufferAllocator.host("cli-test", BufferAllocator.UNLIMITED);
                Estimator e = ModelFile.read(p).toEstimator(mem, DType.FLOAT64)) {
            expected = (byte[]) export.getMethod("toBytes", Estimator.class).invoke(null, e);
        }
        assertArrayEquals(expected, Files.readAllBytes(onnx));

        MainTest.Result noOut = MainTest.run("model", "export", p.toString());
        assertEquals(Main.USAGE, noOut.exitCode());
        assertTrue(noOut.err().contains("--onnx OUT is needed"), noOut.err());
    }
}
