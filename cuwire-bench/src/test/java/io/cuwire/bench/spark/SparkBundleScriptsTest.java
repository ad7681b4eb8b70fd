package io.cuwire.bench.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Spark bundle's shell scripts (build/spark-bundle): the GPU discovery script's answer to Spark, and the unpack
 * round trip of a small bundle split into parts, checked against its SHA256SUMS, with xz and with Python's lzma in
 * its place. No Spark and no bundle build: each case runs in well under a second.
 */
class SparkBundleScriptsTest {
    private static final Path SCRIPTS = Path.of("../build/spark-bundle");

    /** What a script printed and its exit status. */
    private record Run(int code, String out) {}

    private static Run run(Map<String, String> env, Path dir, String... command) throws Exception {
        ProcessBuilder b = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true);
        b.environment().clear();
        b.environment().putAll(env);
        Process p = b.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "the script ended");
        return new Run(p.exitValue(), out);
    }

    private static Path script(String name) {
        Path s = SCRIPTS.resolve(name).toAbsolutePath().normalize();
        assumeTrue(Files.isExecutable(s), "runs from cuwire-bench in a checkout, with " + s);
        assumeTrue(Files.isExecutable(Path.of("/bin/bash")), "needs bash");
        return s;
    }

    @Test
    void shouldOfferOneGpuAddressPerExecutorSlotWhateverTheHostHas(@TempDir Path dir) throws Exception {
        String discovery = script("bin/gpu-discovery").toString();
        // no nvidia-smi on this PATH: the slots alone decide
        Map<String, String> env = Map.of("PATH", "/usr/bin:/bin", "CUWIRE_GPU_SLOTS", "2");
        assertEquals(new Run(0, "{\"name\":\"gpu\",\"addresses\":[\"0\",\"1\"]}\n"), run(env, dir, discovery));
        Path empty = Files.createDirectories(dir.resolve("bin"));
        Files.createSymbolicLink(empty.resolve("grep"), Path.of("/bin/grep"));
        assertEquals(
                new Run(0, "{\"name\":\"gpu\",\"addresses\":[]}\n"),
                run(Map.of("PATH", empty.toString()), dir, "/bin/bash", discovery),
                "without slots and without nvidia-smi: no GPU");
        Run bad = run(Map.of("PATH", "/usr/bin:/bin", "CUWIRE_GPU_SLOTS", "0"), dir, discovery);
        assertNotEquals(0, bad.code(), bad.out());
        assertTrue(bad.out().contains("CUWIRE_GPU_SLOTS=0 (expected: a count >= 1)"), bad.out());
    }

    /** A tiny bundle in {@code dir/parts}, packed as build/spark-bundle.sh packs one, split into 3 parts. */
    private static Path parts(Path dir) throws Exception {
        Path bundle = Files.createDirectories(dir.resolve("src/cuwire-spark/bin"));
        Files.writeString(bundle.resolve("spark-gpu-run"), "#!/bin/sh\n", StandardCharsets.UTF_8);
        Files.setPosixFilePermissions(bundle.resolve("spark-gpu-run"), PosixFilePermissions.fromString("rwxr-xr-x"));
        StringBuilder text = new StringBuilder("cuwire Spark bundle: test\n");
        Random r = new Random(1);
        for (int i = 0; i < 20_000; i++) {
            text.append(Long.toHexString(r.nextLong())).append('\n'); // incompressible enough for several parts
        }
        Files.writeString(bundle.getParent().resolve("bundle.txt"), text, StandardCharsets.UTF_8);
        Path parts = Files.createDirectories(dir.resolve("parts"));
        Run packed = run(
                Map.of("PATH", "/usr/bin:/bin"),
                dir.resolve("src"),
                "/bin/bash",
                "-c",
                "tar -cf - cuwire-spark | xz -9 | split -b 64k - ../parts/cuwire-spark.tar.xz.part- && cd ../parts "
                        + "&& sha256sum cuwire-spark.tar.xz.part-* > SHA256SUMS && ls cuwire-spark.tar.xz.part-* "
                        + "| wc -l");
        assertEquals(0, packed.code(), packed.out());
        assertTrue(Integer.parseInt(packed.out().strip()) >= 3, "parts: " + packed.out());
        return parts;
    }

    @Test
    void shouldUnpackTheBundleFromItsPartsWithXzOrPythonsLzma(@TempDir Path dir) throws Exception {
        String unpack = script("unpack").toString();
        assumeTrue(Files.isExecutable(Path.of("/usr/bin/xz")), "needs xz to pack the parts");
        Path parts = parts(dir);
        Run withXz = run(Map.of("PATH", "/usr/bin:/bin"), dir, unpack, parts.toString(), "out");
        assertEquals(0, withXz.code(), withXz.out());
        assertTrue(withXz.out().contains("cuwire Spark bundle: test"), withXz.out());
        assertTrue(Files.isExecutable(dir.resolve("out/cuwire-spark/bin/spark-gpu-run")));
        assertEquals(
                Files.readString(dir.resolve("src/cuwire-spark/bundle.txt")),
                Files.readString(dir.resolve("out/cuwire-spark/bundle.txt")));

        // a PATH without xz: Python's lzma decompresses
        Path noXz = Files.createDirectories(dir.resolve("no-xz"));
        for (String tool : List.of("cat", "tar", "sha256sum", "mkdir", "rm", "du", "cut", "head", "python3")) {
            Path t = Path.of("/usr/bin", tool);
            if (Files.exists(t)) {
                Files.createSymbolicLink(noXz.resolve(tool), t);
            }
        }
        assumeTrue(Files.exists(noXz.resolve("python3")), "needs /usr/bin/python3 for the fallback");
        Run withPython = run(Map.of("PATH", noXz.toString()), dir, "/bin/bash", unpack, parts.toString(), "out2");
        assertEquals(0, withPython.code(), withPython.out());
        assertEquals(
                Files.readString(dir.resolve("src/cuwire-spark/bundle.txt")),
                Files.readString(dir.resolve("out2/cuwire-spark/bundle.txt")));
    }

    @Test
    void shouldRefuseAMissingOrDamagedPart(@TempDir Path dir) throws Exception {
        String unpack = script("unpack").toString();
        assumeTrue(Files.isExecutable(Path.of("/usr/bin/xz")), "needs xz to pack the parts");
        Path parts = parts(dir);
        Path second = parts.resolve("cuwire-spark.tar.xz.part-ab");
        byte[] bytes = Files.readAllBytes(second);
        bytes[100] ^= 1;
        Files.write(second, bytes);
        Run damaged = run(Map.of("PATH", "/usr/bin:/bin"), dir, unpack, parts.toString(), "out");
        assertNotEquals(0, damaged.code(), damaged.out());
        assertTrue(damaged.out().contains("unpack: a part is missing or damaged (SHA256SUMS)"), damaged.out());
        Files.delete(second);
        Run missing = run(Map.of("PATH", "/usr/bin:/bin"), dir, unpack, parts.toString(), "out");
        assertNotEquals(0, missing.code(), missing.out());
        assertTrue(missing.out().contains("unpack: a part is missing or damaged (SHA256SUMS)"), missing.out());
    }
}
