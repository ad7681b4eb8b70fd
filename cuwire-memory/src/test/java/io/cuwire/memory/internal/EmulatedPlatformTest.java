package io.cuwire.memory.internal;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.AllocationLimitException;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.Device;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class EmulatedPlatformTest {
    @Test
    void shouldRemoveFilesLeftByDeadProcessesAndKeepThoseOfLiveOnes(@TempDir Path dir) throws Exception {
        Process gone = new ProcessBuilder("true").start();
        assertTrue(gone.waitFor(10, TimeUnit.SECONDS));
        Path stale = Files.createFile(dir.resolve(EmulatedPlatform.FILE_PREFIX + gone.pid() + "-0-1"));
        Path live = Files.createFile(dir.resolve(
                EmulatedPlatform.FILE_PREFIX + ProcessHandle.current().pid() + "-0-1"));
        Path other = Files.createFile(dir.resolve("unrelated"));
        Path staleSlab = Files.createFile(dir.resolve(ShmFile.name(gone.pid(), new byte[16])));
        EmulatedPlatform.create(dir, 1, 1 << 20);
        assertFalse(Files.exists(stale), "a dead process's file is removed");
        assertFalse(Files.exists(staleSlab));
        assertTrue(Files.exists(live));
        assertTrue(Files.exists(other));
    }

    @Test
    void shouldCarveSmallAllocationsOutOfSharedSlabsAndGiveLargeOnesAFileEach(@TempDir Path dir) throws Exception {
        Device device = EmulatedPlatform.create(dir, 2, 64 << 20).devices().get(1);
        assertEquals(1, device.ordinal());
        try (BufferAllocator<DeviceBuffer> alloc = device.newAllocator("files", BufferAllocator.UNLIMITED)) {
            List<DeviceBuffer> small = new ArrayList<>();
            for (int i = 0; i < 100; i++) {
                small.add(alloc.allocate(1000));
            }
            assertEquals(1, files(dir), "100 blocks of 1 KiB share one slab");
            assertEquals((64 << 20) - 100 * 1024, device.freeMemory(), "a block counts its rounded size");
            assertEquals(device.exportAllocation(small.get(0)), device.exportAllocation(small.get(99)));
            assertEquals(
                    EmulatedDevice.SLAB_BYTES,
                    device.exportAllocation(small.get(0)).length());
            DeviceBuffer large = alloc.allocate(3 << 20);
            assertEquals(2, files(dir), "a large allocation has its own file");
            assertEquals(3 << 20, device.exportAllocation(large).length());
            large.close();
            assertEquals(1, files(dir));
            for (DeviceBuffer b : small) {
                b.close();
            }
            assertEquals(0, files(dir), "a slab goes with its last block");
            assertEquals(64 << 20, device.freeMemory());
        }
    }

    /** Issue 15, finding 2: one message of 65,536 one-byte device frames made a file and a mapping per frame. */
    @Test
    void shouldServe65536OneByteAllocationsFromAFewSharedFilesAndLeaveNoneAfterwards(@TempDir Path dir)
            throws Exception {
        Device device = EmulatedPlatform.create(dir, 1, 1L << 30).devices().getFirst();
        List<DeviceBuffer> frames = new ArrayList<>(65_536);
        try (BufferAllocator<DeviceBuffer> alloc = device.newAllocator("frames", BufferAllocator.UNLIMITED)) {
            try {
                for (int i = 0; i < 65_536; i++) {
                    frames.add(alloc.allocate(1));
                    if (i == 1024) {
                        assertEquals(1, files(dir), "1,025 one-byte allocations in one slab");
                    }
                }
                assertEquals(4, files(dir), "65,536 blocks of 256 bytes fill 4 slabs of 4 MiB");
            } finally {
                for (DeviceBuffer b : frames) {
                    b.close();
                }
            }
            assertEquals(0, alloc.allocatedBytes());
        }
        assertEquals(0, files(dir));
    }

    @Test
    void shouldReuseAFreedLargeFileZeroedWhenItKeepsFreedFilesAndDeleteItWhenItDoesNot(@TempDir Path dir)
            throws Exception {
        Device keeping = EmulatedPlatform.createCaching(dir, 1, 64 << 20, 8 << 20)
                .devices()
                .getFirst();
        try (BufferAllocator<DeviceBuffer> alloc = keeping.newAllocator("kept", BufferAllocator.UNLIMITED)) {
            Object first;
            try (DeviceBuffer a = alloc.allocate(3 << 20)) {
                CopyEngine.copyFromSegment(MemorySegment.ofArray(new byte[] {7, 7, 7}), a, 0);
                first = keeping.exportAllocation(a);
            }
            assertEquals(1, files(dir), "the freed file is kept");
            try (DeviceBuffer b = alloc.allocate((3 << 20) - 4096)) {
                assertEquals(first, keeping.exportAllocation(b), "a request it fits takes the kept file");
                byte[] back = new byte[3];
                CopyEngine.copyToSegment(b, 0, MemorySegment.ofArray(back));
                assertArrayEquals(new byte[3], back, "reused memory reads as zero, as a new file does");
                try (DeviceBuffer c = alloc.allocate(3 << 20)) {
                    assertTrue(c.isOpen());
                    assertEquals(2, files(dir), "a second request while the kept file is in use makes its own");
                }
                try (DeviceBuffer big = alloc.allocate(7 << 20)) {
                    assertTrue(big.isOpen());
                    assertEquals(3, files(dir), "no kept file of 7 MiB to 14 MiB: a file of its own");
                }
            }
            assertEquals(2, files(dir), "8 MiB kept at most: two files of 3 MiB, the 7 MiB one deleted");
        }
        Path other = Files.createDirectory(dir.resolve("not-keeping"));
        Device plain = EmulatedPlatform.create(other, 1, 64 << 20).devices().getFirst();
        try (BufferAllocator<DeviceBuffer> alloc = plain.newAllocator("plain", BufferAllocator.UNLIMITED)) {
            alloc.allocate(3 << 20).close();
            assertEquals(0, files(other), "by default a freed file goes at once");
        }
    }

    @Test
    void shouldMakeFilesThatOnlyTheirOwnerCanReadOrWrite(@TempDir Path dir) throws Exception {
        Device device = EmulatedPlatform.create(dir, 1, 64 << 20).devices().getFirst();
        try (BufferAllocator<DeviceBuffer> alloc = device.newAllocator("modes", BufferAllocator.UNLIMITED);
                DeviceBuffer small = alloc.allocate(10);
                DeviceBuffer large = alloc.allocate(2 << 20)) {
            assertEquals(2, files(dir));
            try (Stream<Path> list = Files.list(dir)) {
                for (Path file : list.toList()) {
                    assertEquals(
                            EnumSet.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE),
                            Files.getPosixFilePermissions(file),
                            file + " is 0600");
                }
            }
            assertTrue(small.isOpen() && large.isOpen());
        }
    }

    @Test
    void shouldZeroAFreedBlockBeforeItServesAgain(@TempDir Path dir) {
        Device device = EmulatedPlatform.create(dir, 1, 64 << 20).devices().getFirst();
        try (BufferAllocator<DeviceBuffer> alloc = device.newAllocator("zero", BufferAllocator.UNLIMITED);
                DeviceBuffer keepsTheSlab = alloc.allocate(300)) {
            DeviceBuffer first = alloc.allocate(300);
            long offset = device.allocationOffset(first);
            CopyEngine.copyFromSegment(MemorySegment.ofArray(new byte[] {1, 2, 3}), first, 0);
            first.close();
            try (DeviceBuffer again = alloc.allocate(300)) {
                assertEquals(offset, device.allocationOffset(again), "the freed block serves again");
                byte[] back = new byte[3];
                CopyEngine.copyToSegment(again, 0, MemorySegment.ofArray(back));
                assertArrayEquals(new byte[3], back);
            }
            assertTrue(keepsTheSlab.isOpen());
        }
    }

    @Test
    void shouldRefuseToMapMoreFilesThanItsBoundAndMapAgainOnceOneGoes(@TempDir Path dir) throws IOException {
        EmulatedPlatform platform = EmulatedPlatform.create(dir, 1, 1L << 30, 3);
        Device device = platform.devices().getFirst();
        try (BufferAllocator<DeviceBuffer> alloc = device.newAllocator("bound", BufferAllocator.UNLIMITED)) {
            DeviceBuffer a = alloc.allocate(2 << 20);
            DeviceBuffer b = alloc.allocate(2 << 20);
            DeviceBuffer c = alloc.allocate(10);
            AllocationLimitException e = assertThrows(AllocationLimitException.class, () -> alloc.allocate(2 << 20));
            assertEquals(
                    "emulated device 0 cannot allocate 2097152 bytes: the emulated platform has 3 shared-memory "
                            + "files mapped, the most it keeps (each is one of this process's memory maps, which "
                            + "vm.max_map_count bounds)",
                    e.getMessage().lines().findFirst().orElseThrow());
            assertEquals(3, platform.mappedFiles());
            assertEquals((4 << 20) + 10, alloc.allocatedBytes(), "the refused allocation is not counted");
            a.close();
            alloc.allocate(2 << 20).close();
            b.close();
            c.close();
            assertEquals(0, platform.mappedFiles());
        }
        assertEquals(0, files(dir));
    }

    @Test
    void shouldRefuseAllocationsPastTheDevicesMemory(@TempDir Path dir) {
        Device device = EmulatedPlatform.create(dir, 1, 4096).devices().get(0);
        try (BufferAllocator<DeviceBuffer> alloc = device.newAllocator("small", BufferAllocator.UNLIMITED);
                DeviceBuffer b = alloc.allocate(4000)) {
            AllocationLimitException e = assertThrows(AllocationLimitException.class, () -> alloc.allocate(100));
            assertTrue(e.getMessage().contains("emulated device 0 cannot allocate 100 bytes"), e.getMessage());
            assertEquals(4000, b.byteSize());
        }
    }

    @Test
    void shouldPutTheFilesInDevShmOnlyWhenItIsLargeEnoughElseInTheTemporaryDirectory() {
        Path shm = Path.of("/dev/shm");
        Path tmp = Path.of("/tmp");
        long docker = 64L << 20;
        EmulatedPlatform.Directory small = EmulatedPlatform.chooseDirectory(null, null, shm, docker, tmp, null);
        assertEquals(tmp, small.path());
        assertTrue(small.fallback());
        assertEquals(
                "the temporary directory, because /dev/shm is a file system of 67108864 bytes, less than the "
                        + "1073741824 cuwire asks of it (for Docker, --shm-size makes it larger; -Dcuwire.emulated.dir or "
                        + "CUWIRE_EMULATED_DIR chooses a directory)",
                small.origin());
        assertEquals(
                new EmulatedPlatform.Directory(shm, "the default", false),
                EmulatedPlatform.chooseDirectory(null, null, shm, EmulatedPlatform.MIN_SHM_BYTES, tmp, null));
        assertEquals(
                shm,
                EmulatedPlatform.chooseDirectory(null, null, shm, docker, tmp, 32L << 20)
                        .path(),
                "the memory asked for fits");
        assertTrue(EmulatedPlatform.chooseDirectory(null, null, shm, docker, tmp, 128L << 20)
                .origin()
                .contains("less than the 134217728 of -Dcuwire.emulated.memoryBytes"));
        assertEquals(
                "the temporary directory, because /dev/shm is not there (for Docker, --shm-size makes it "
                        + "larger; -Dcuwire.emulated.dir or CUWIRE_EMULATED_DIR chooses a directory)",
                EmulatedPlatform.chooseDirectory(null, null, shm, -1, tmp, null).origin());
        assertEquals(
                new EmulatedPlatform.Directory(Path.of("/data/emu"), "set by CUWIRE_EMULATED_DIR", false),
                EmulatedPlatform.chooseDirectory(" ", "/data/emu", shm, docker, tmp, null));
        assertEquals(
                new EmulatedPlatform.Directory(Path.of("/x"), "set by -Dcuwire.emulated.dir", false),
                EmulatedPlatform.chooseDirectory("/x", "/data/emu", shm, docker, tmp, null),
                "the property wins");
    }

    /**
     * A file system with less room than an allocation (as a container's 64 MiB {@code /dev/shm} has, played here by
     * the room the platform is told of): refused before any file is made, saying what to set; nothing is left behind.
     * {@link ShmFullTest} fills a real tmpfs.
     */
    @Test
    void shouldRefuseAFileLargerThanTheRoomLeftSayingWhatToSet(@TempDir Path dir) throws IOException {
        long room = 5L << 20;
        EmulatedPlatform platform =
                EmulatedPlatform.create(dir, 1, 1L << 30, EmulatedPlatform.MAX_MAPPINGS, () -> room);
        Device device = platform.devices().getFirst();
        try (BufferAllocator<DeviceBuffer> alloc = device.newAllocator("room", BufferAllocator.UNLIMITED);
                DeviceBuffer fits = alloc.allocate(4L << 20)) {
            AllocationLimitException e = assertThrows(AllocationLimitException.class, () -> alloc.allocate(6L << 20));
            String first = e.getMessage().lines().findFirst().orElseThrow();
            assertEquals(
                    "emulated device 0 cannot allocate 6291456 bytes: a shared-memory file of 6291456 bytes does "
                            + "not fit in " + dir
                            + " (5242880 bytes free there; the directory is given by the caller): give "
                            + "the emulated device's files more room (a Docker container's /dev/shm is 64 MiB unless it runs "
                            + "with --shm-size, e.g. --shm-size=8g) or put them on a larger file system with "
                            + "-Dcuwire.emulated.dir=<dir> or CUWIRE_EMULATED_DIR=<dir> (every process that shares device "
                            + "memory must use the same directory)",
                    first);
            assertTrue(e.getMessage().contains("\n  - allocator 'room': 4194304 bytes"), e.getMessage());
            assertEquals(1, files(dir), "no file made for the refused allocation");
            assertEquals(1, platform.mappedFiles());
            assertEquals(4L << 20, alloc.allocatedBytes());
            assertEquals(4L << 20, fits.byteSize());
        }
        assertEquals(0, files(dir));
        assertEquals(0, platform.mappedFiles());
    }

    @Test
    void shouldChooseThePlatformOnceForTheProcess() {
        Devices.Selection first = Devices.selection();
        assertSame(first, Devices.selection());
        assertEquals(first.devices().size(), Devices.all().size());
        assertThrows(
                IllegalArgumentException.class,
                () -> Devices.get(first.devices().size()));
    }

    static long files(Path dir) throws IOException {
        try (Stream<Path> list = Files.list(dir)) {
            return list.count();
        }
    }
}
