package io.cuwire.memory.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.cuwire.test.ChildJvm;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Emulated device memory on real small file systems, mounted in a user and mount namespace of a child JVM
 * ({@code unshare -Urm}, no root needed). A 16 MiB tmpfs (a container's {@code /dev/shm} in small) runs full:
 * without the reservation before mapping, the third 6 MiB allocation maps a sparse file that the tmpfs cannot back,
 * and writing it faults ({@code SIGBUS}; on JDK 25 an {@link InternalError}); with it, the allocation is refused with
 * a message that says what to set. Both ways of reserving are run: {@code posix_fallocate} (native access enabled)
 * and writing zeros (not enabled). And a 64 MiB tmpfs over {@code /dev/shm}, as Docker gives a container, makes the
 * default configuration use the temporary directory. Skipped, with the reason, where user namespaces are not allowed
 * (some containers, hardened kernels).
 */
class ShmFullTest {
    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final String MIB_6 = Long.toString(6L << 20);

    @Test
    void shouldRefuseTheAllocationThatTheFileSystemCannotHoldThroughPosixFallocate(@TempDir Path mount)
            throws Exception {
        List<String> out = runChild(mount, true);
        assertEquals("method posix_fallocate", out.getFirst());
        assertRefusedAfterTwo(out, "posix_fallocate: ENOSPC");
    }

    @Test
    void shouldRefuseTheAllocationThatTheFileSystemCannotHoldByWritingZeros(@TempDir Path mount) throws Exception {
        List<String> out = runChild(mount, false);
        assertEquals("method zeros", out.getFirst());
        assertRefusedAfterTwo(out, "No space left on device");
    }

    /**
     * A Docker-sized {@code /dev/shm} (a 64 MiB tmpfs mounted over it in the child's namespace) and no directory set:
     * the files go to the temporary directory, and 128 MiB of device memory is written whole.
     */
    @Test
    void shouldPutTheFilesInTheTemporaryDirectoryWhenDevShmIsDockersDefault(@TempDir Path tmp) throws Exception {
        assumeUserNamespaces();
        String script = "mount -t tmpfs -o size=64m cuwire-test /dev/shm && exec \"$@\"";
        String out;
        try (ChildJvm child = ChildJvm.builder(SmallShmChild.class)
                .wrapper("/usr/bin/unshare", "-Urm", "sh", "-c", script, "sh")
                .withoutInheritedProperties()
                .property("java.io.tmpdir", tmp.toString())
                .property("cuwire.device.platform", "emulated")
                .args(Long.toString(128L << 20))
                .start()) {
            int exit = child.awaitExit(WAIT);
            out = child.output();
            assertEquals(0, exit, out);
        }
        assertTrue(out.contains("device cuwire emulated device (shared memory in " + tmp + ")"), out);
        assertTrue(out.contains("written 134217728"), out);
        assertTrue(
                out.contains("cuwire emulated device memory in " + tmp + ": the temporary directory, because "
                        + "/dev/shm is a file system of 67108864 bytes, less than the 1073741824 cuwire asks of it"),
                out);
    }

    private static void assertRefusedAfterTwo(List<String> out, String cause) {
        assertEquals(List.of("allocated 1", "allocated 2"), out.subList(1, 3), String.join("\n", out));
        String refused = out.get(3);
        assertTrue(
                refused.startsWith("refused emulated device 0 cannot allocate 6291456 bytes: a shared-memory file "
                        + "of 6291456 bytes does not fit in "),
                refused);
        assertTrue(refused.contains(cause), refused);
        assertTrue(refused.contains("--shm-size"), refused);
        assertTrue(
                refused.contains(
                        "-D" + EmulatedPlatform.DIR_PROPERTY + "=<dir> or " + EmulatedPlatform.DIR_ENV + "=<dir>"),
                refused);
        assertEquals(4, out.size(), String.join("\n", out));
    }

    /** Skips the test, with the reason, unless this user may make user and mount namespaces. */
    private static void assumeUserNamespaces() throws IOException, InterruptedException {
        assumeTrue(Files.isExecutable(Path.of("/usr/bin/unshare")), "no /usr/bin/unshare");
        Process probe = new ProcessBuilder("/usr/bin/unshare", "-Urm", "true")
                .redirectErrorStream(true)
                .start();
        String why = new String(probe.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        assumeTrue(
                probe.waitFor(10, TimeUnit.SECONDS) && probe.exitValue() == 0,
                () -> "user namespaces are not allowed here (unshare -Urm true: " + why + ")");
    }

    private static List<String> runChild(Path mount, boolean nativeAccess) throws IOException, InterruptedException {
        assumeUserNamespaces();
        String script = "mount -t tmpfs -o size=16m cuwire-test \"$0\" && exec \"$@\"";
        ChildJvm.Builder builder = ChildJvm.builder(ShmFullChild.class)
                .wrapper("/usr/bin/unshare", "-Urm", "sh", "-c", script, mount.toString())
                .withoutInheritedProperties()
                .args(mount.toString(), MIB_6);
        if (!nativeAccess) {
            builder.withoutNativeAccess();
        }
        try (ChildJvm child = builder.start()) {
            int exit = child.awaitExit(WAIT);
            List<String> lines = child.lines().stream()
                    .filter(l -> !l.startsWith("WARNING:"))
                    .toList();
            assertEquals(0, exit, String.join("\n", lines));
            return lines;
        }
    }
}
