package io.cuwire.memory.internal;

import io.cuwire.memory.AllocationLimitException;
import io.cuwire.memory.Device;
import io.cuwire.memory.InvalidHandleException;
import io.cuwire.memory.spi.DeviceUnavailableException;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The emulated device platform: devices whose memory is host memory in shared-memory files, so that another process
 * maps a buffer by its handle (the stand-in for CUDA IPC). Copies go through the same
 * {@link io.cuwire.memory.CopyEngine} paths and counters as on CUDA.
 *
 * <h2>Files</h2>
 * A device's allocations of at most 1 MiB are blocks (powers of two from 256 bytes, as the CUDA pool rounds
 * them) carved out of shared slabs of 4 MiB, one file and one mapping per slab, as a real device pool carves small
 * allocations out of larger ones; a larger allocation has a file of its own. The files are created {@code 0600},
 * named by the digest of a random token that only their handles carry, and opened from a handle only inside this
 * platform's directory, without following links, when they are regular files of this user that hold the handle's
 * range. A file goes when its last allocation is freed; files left behind
 * by processes that died are removed when a platform opens. The platform keeps at most {@value #MAX_MAPPINGS} files
 * mapped at once (its own and imported), and refuses more with an
 * {@link io.cuwire.memory.AllocationLimitException}: every mapping is one of the kernel's memory maps of this
 * process, whose number {@code vm.max_map_count} bounds (65,530 by default; past it the JVM itself cannot map and
 * dies).
 *
 * <p>System properties: {@value #DEVICES_PROPERTY} (number of devices, default 2, so peer paths run in CI),
 * {@value #MEMORY_PROPERTY} (bytes per device; default: the size of the shared-memory file system),
 * {@value #DIR_PROPERTY} (where the files go; default {@code /dev/shm}, else the temporary directory). Processes that
 * share device memory must use the same directory.
 */
public final class EmulatedPlatform {
    public static final String NAME = "emulated";
    public static final String DEVICES_PROPERTY = "cuwire.emulated.devices";
    public static final String MEMORY_PROPERTY = "cuwire.emulated.memoryBytes";
    public static final String DIR_PROPERTY = "cuwire.emulated.dir";
    static final String FILE_PREFIX = "cuwire-emu-";
    /** The most shared-memory files a platform keeps mapped at once. */
    static final int MAX_MAPPINGS = 16_384;

    private final Path directory;
    private final List<Device> devices;
    private final int maxMappings;
    private final AtomicInteger mappings = new AtomicInteger();
    private volatile UserPrincipal owner;
    private volatile FileStore fileStore;

    private EmulatedPlatform(Path directory, int count, long memoryBytes, int maxMappings) {
        this.directory = directory;
        this.maxMappings = maxMappings;
        List<Device> list = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            list.add(new EmulatedDevice(this, i, memoryBytes));
        }
        this.devices = List.copyOf(list);
    }

    /** A platform configured by the system properties above. */
    public static EmulatedPlatform fromSystemProperties() throws DeviceUnavailableException {
        int count = Integer.getInteger(DEVICES_PROPERTY, 2);
        if (count < 1) {
            throw new DeviceUnavailableException("-D" + DEVICES_PROPERTY + "=" + count + " (expected: >= 1)");
        }
        Path dir = Path.of(System.getProperty(DIR_PROPERTY, Files.isDirectory(Path.of("/dev/shm"))
                ? "/dev/shm" : System.getProperty("java.io.tmpdir")));
        long memory;
        try {
            memory = Long.getLong(MEMORY_PROPERTY, Files.getFileStore(dir).getTotalSpace());
        } catch (IOException e) {
            throw new DeviceUnavailableException("cannot use " + dir + " for emulated device memory: " + e, e);
        }
        return create(dir, count, memory);
    }

    /** A platform of {@code count} devices of {@code memoryBytes} each, keeping its files in {@code directory}. */
    public static EmulatedPlatform create(Path directory, int count, long memoryBytes) {
        return create(directory, count, memoryBytes, MAX_MAPPINGS);
    }

    /** As {@link #create(Path, int, long)}, keeping at most {@code maxMappings} files mapped (for tests). */
    static EmulatedPlatform create(Path directory, int count, long memoryBytes, int maxMappings) {
        removeStaleFiles(directory);
        return new EmulatedPlatform(directory, count, memoryBytes, maxMappings);
    }

    public List<Device> devices() {
        return devices;
    }

    Path directory() {
        return directory;
    }

    /**
     * Counts one more mapped file.
     *
     * @throws AllocationLimitException if the platform holds its most already
     */
    void reserveMapping() {
        if (mappings.incrementAndGet() > maxMappings) {
            mappings.decrementAndGet();
            throw new AllocationLimitException("the emulated platform has " + maxMappings + " shared-memory files "
                    + "mapped, the most it keeps (each is one of this process's memory maps, which vm.max_map_count "
                    + "bounds)");
        }
    }

    /** Counts one mapped file less. */
    void releaseMapping() {
        mappings.decrementAndGet();
    }

    /** Bytes free for new files in the directory (0 if it cannot be asked). */
    long usableSpace() {
        try {
            FileStore store = fileStore;
            if (store == null) {
                store = Files.getFileStore(directory);
                fileStore = store;
            }
            return store.getUsableSpace();
        } catch (IOException e) {
            return 0;
        }
    }

    /** Files mapped now, this platform's and imported ones. */
    int mappedFiles() {
        return mappings.get();
    }

    /**
     * The user that owns the files this process creates: the only owner whose files a handle may open. Found once, by
     * creating a file in the directory (named as this process's files are, so that it goes with them if this process
     * dies before it deleted it).
     *
     * @throws InvalidHandleException if it cannot be found
     */
    UserPrincipal owner() {
        UserPrincipal o = owner;
        if (o == null) {
            try {
                String prefix = FILE_PREFIX + ProcessHandle.current().pid() + "-owner-";
                Path probe = Files.createTempFile(directory, prefix, "", PosixFilePermissions.asFileAttribute(
                        EnumSet.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE)));
                try {
                    o = Files.getOwner(probe, LinkOption.NOFOLLOW_LINKS);
                } finally {
                    Files.deleteIfExists(probe);
                }
            } catch (IOException | UnsupportedOperationException e) {
                throw new InvalidHandleException("cannot find the owner of files made in " + directory + ", so no "
                        + "handle can be checked: " + e, e);
            }
            owner = o;
        }
        return o;
    }

    Device device(int ordinal) {
        if (ordinal < 0 || ordinal >= devices.size()) {
            throw new InvalidHandleException("emulated device ordinal: " + ordinal + " (expected: 0 <= ordinal < "
                    + devices.size() + ")");
        }
        return devices.get(ordinal);
    }

    private static void removeStaleFiles(Path directory) {
        try (DirectoryStream<Path> files = Files.newDirectoryStream(directory, FILE_PREFIX + "*")) {
            for (Path file : files) {
                String rest = file.getFileName().toString().substring(FILE_PREFIX.length());
                int dash = rest.indexOf('-');
                if (dash <= 0) {
                    continue;
                }
                try {
                    long pid = Long.parseLong(rest.substring(0, dash));
                    if (ProcessHandle.of(pid).isEmpty()) {
                        Files.deleteIfExists(file);
                    }
                } catch (NumberFormatException | IOException ignored) {
                    // not ours, or gone already
                }
            }
        } catch (IOException ignored) {
            // the directory is unreadable: allocations will report it
        }
    }
}
