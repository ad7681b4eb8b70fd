package io.cuwire.memory.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.Device;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.InvalidHandleException;
import io.cuwire.memory.IpcHandle;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 15, finding 6: a peer's handle made the emulated device map any file whose name began with
 * {@code cuwire-emu-}, in any directory, through symbolic links. A handle now opens only a file that an emulated
 * device issued a token for, in the platform's own directory.
 */
class EmulatedHandleTest {
    private static final byte[] SECRET = "the contents of a file no peer may read".getBytes(StandardCharsets.UTF_8);

    @TempDir
    Path dir;

    @TempDir
    Path elsewhere;

    private Device device() {
        return EmulatedPlatform.create(dir, 2, 64 << 20).devices().getFirst();
    }

    /** A handle of the bytes {@code pid} and {@code token} over the whole secret, as a peer could write one. */
    private static IpcHandle forged(long pid, byte[] token) {
        return new IpcHandle(
                EmulatedPlatform.NAME,
                0,
                ByteBuffer.allocate(24).putLong(pid).put(token).array(),
                0,
                SECRET.length);
    }

    @Test
    void shouldOpenAHandleItsPlatformIssuedAndReadTheExportersBytes() {
        Device device = device();
        try (BufferAllocator<DeviceBuffer> alloc = device.newAllocator("export", BufferAllocator.UNLIMITED);
                DeviceBuffer b = alloc.allocate(SECRET.length)) {
            CopyEngine.copyFromSegment(MemorySegment.ofArray(SECRET), b, 0);
            IpcHandle handle = device.exportAllocation(b);
            assertEquals(OptionalLong.of(ProcessHandle.current().pid()), device.exportingProcess(handle));
            try (DeviceBuffer mapped = device.openHandle(device.exportHandle(b))) {
                byte[] back = new byte[SECRET.length];
                CopyEngine.copyToSegment(mapped, 0, MemorySegment.ofArray(back));
                assertArrayEquals(SECRET, back);
            }
        }
    }

    @Test
    void shouldRefuseAHandleThatNamesAPathAsTheOldHandlesDid() throws IOException {
        Path target = Files.write(elsewhere.resolve(EmulatedPlatform.FILE_PREFIX + "secret"), SECRET);
        IpcHandle path = new IpcHandle(
                EmulatedPlatform.NAME, 0, target.toString().getBytes(StandardCharsets.UTF_8), 0, SECRET.length);
        InvalidHandleException e = assertThrows(InvalidHandleException.class, () -> device().openHandle(path));
        assertTrue(e.getMessage().contains("(expected: 24, an emulated handle's pid and token)"), e.getMessage());
    }

    @Test
    void shouldRefuseASymbolicLinkInItsDirectoryUnderTheNameOfAToken() throws IOException {
        Device device = device();
        Path target = Files.write(elsewhere.resolve("secret"), SECRET);
        byte[] token = new byte[16];
        token[0] = 42;
        Path link = Files.createSymbolicLink(dir.resolve(ShmFile.name(4242, token)), target);
        InvalidHandleException e =
                assertThrows(InvalidHandleException.class, () -> device.openHandle(forged(4242, token)));
        assertEquals(forged(4242, token) + " names " + link + ", which is not a regular file", e.getMessage());
        Files.delete(link);
    }

    @Test
    void shouldRefuseAFileOfAnotherUser() throws IOException {
        Device device = device();
        byte[] token = new byte[16];
        token[0] = 7;
        Path file = Files.write(dir.resolve(ShmFile.name(4242, token)), SECRET);
        try {
            Files.setAttribute(file, "unix:uid", 65534);
        } catch (IOException | UnsupportedOperationException e) {
            assumeTrue(false, "cannot give a file to another user here: " + e);
        }
        InvalidHandleException e =
                assertThrows(InvalidHandleException.class, () -> device.openHandle(forged(4242, token)));
        assertTrue(e.getMessage().contains(", not by this process's user"), e.getMessage());
    }

    @Test
    void shouldRefuseATokenThatNoDeviceOfItsDirectoryIssued() {
        Device exporter =
                EmulatedPlatform.create(elsewhere, 1, 64 << 20).devices().getFirst();
        Device importer = device();
        try (BufferAllocator<DeviceBuffer> alloc = exporter.newAllocator("other", BufferAllocator.UNLIMITED);
                DeviceBuffer b = alloc.allocate(4096)) {
            InvalidHandleException e =
                    assertThrows(InvalidHandleException.class, () -> importer.openHandle(exporter.exportHandle(b)));
            assertTrue(
                    e.getMessage().contains("names no allocation of the emulated platform in " + dir), e.getMessage());
        }
        assertThrows(InvalidHandleException.class, () -> importer.openHandle(forged(1, new byte[16])));
    }

    @Test
    void shouldRefuseARangeBeyondTheFileBeforeMappingIt() {
        EmulatedPlatform platform = EmulatedPlatform.create(dir, 1, 64 << 20);
        Device device = platform.devices().getFirst();
        try (BufferAllocator<DeviceBuffer> alloc = device.newAllocator("range", BufferAllocator.UNLIMITED);
                DeviceBuffer b = alloc.allocate(2 << 20)) {
            IpcHandle whole = device.exportAllocation(b);
            IpcHandle past = new IpcHandle(whole.platform(), 0, whole.handle(), 1, whole.length());
            int mapped = platform.mappedFiles();
            InvalidHandleException e = assertThrows(InvalidHandleException.class, () -> device.openHandle(past));
            assertEquals(
                    past + " reaches byte 2097153 of an allocation of 2097152 bytes (expected: offset + length "
                            + "<= 2097152)",
                    e.getMessage());
            assertEquals(mapped, platform.mappedFiles(), "nothing was mapped");
            IpcHandle otherDevice = new IpcHandle(whole.platform(), 5, whole.handle(), 0, whole.length());
            assertThrows(InvalidHandleException.class, () -> device.openHandle(otherDevice));
        }
    }

    @Test
    void shouldRefuseHandlesOfAnotherPlatform() {
        InvalidHandleException e = assertThrows(
                InvalidHandleException.class, () -> device().openHandle(new IpcHandle("cuda", 0, new byte[64], 0, 8)));
        assertTrue(e.getMessage().endsWith("was not made by the emulated platform"), e.getMessage());
    }
}
