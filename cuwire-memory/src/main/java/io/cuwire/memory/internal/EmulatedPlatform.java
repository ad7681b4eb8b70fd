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
import java.util.function.LongSupplier;

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
 * <h2>Room for the files</h2>
 * A file's bytes are reserved in its file system before it is mapped ({@link FileSpace#reserve}), so that a file
 * system that runs full refuses the allocation with an {@link io.cuwire.memory.AllocationLimitException} that says
 * what to set, instead of the first write to the mapping faulting ({@code SIGBUS}: the JVM reports an
 * {@link InternalError} at some later copy, or dies in native code). An allocation larger than the room left there is
 * refused before the file is made.
 *
 * <h2>Configuration</h2>
 * System properties: {@value #DEVICES_PROPERTY} (number of devices, default 2, so peer paths run in CI),
 * {@value #MEMORY_PROPERTY} (bytes per device; default: the size of the directory's file system), and
 * {@value #DIR_PROPERTY} (or the environment variable {@value #DIR_ENV}; the property wins) for where the files go.
 * Without either, they go to {@code /dev/shm} when it is a file system of at least {@value #MIN_SHM_BYTES} bytes (or of
 * the {@value #MEMORY_PROPERTY} asked for, when that is set), else to the temporary directory
 * ({@code java.io.tmpdir}): a container's {@code /dev/shm} is 64 MiB unless it is started with {@code --shm-size}.
 * The choice is logged when it is the temporary directory. Processes that share device memory must use the same
 * directory (a cluster's workers get the client's properties).
 */
public final class EmulatedPlatform {
    public static final String NAME = "emulated";
    public static final String DEVICES_PROPERTY = "cuwire.emulated.devices";
    public static final String MEMORY_PROPERTY = "cuwire.emulated.memoryBytes";
    public static final String DIR_PROPERTY = "cuwire.emulated.dir";
    /**
     * System property: the most bytes of freed large allocations (over 1 MiB) each device keeps, zeroed and mapped,
     * for the next allocation of a size they fit, as a CUDA device's memory pool keeps freed blocks; default 0 (a
     * freed file goes at once).
     */
    public static final String CACHE_PROPERTY = "cuwire.emulated.maxCachedBytes";
    /** The environment variable naming the directory when {@value #DIR_PROPERTY} is not set. */
    public static final String DIR_ENV = "CUWIRE_EMULATED_DIR";
    /** The smallest {@code /dev/shm} used by default: a container's 64 MiB would fit no model worth moving. */
    public static final long MIN_SHM_BYTES = 1L << 30;

    static final String FILE_PREFIX = "cuwire-emu-";
    /** The most shared-memory files a platform keeps mapped at once. */
    static final int MAX_MAPPINGS = 16_384;

    private static final Path SHM = Path.of("/dev/shm");
    private static final System.Logger LOG = System.getLogger("io.cuwire.memory.emulated");

    /**
     * Where a platform's files go and why there, for messages.
     *
     * @param path the directory
     * @param origin how it was chosen, e.g. {@code set by -Dcuwire.emulated.dir} or {@code the default}
     * @param fallback whether it is the temporary directory because {@code /dev/shm} is too small or missing
     */
    record Directory(Path path, String origin, boolean fallback) {}

    private final Directory directory;
    private final List<Device> devices;
    private final int maxMappings;
    private final long maxCachedBytes;
    private final LongSupplier usableSpace;
    private final AtomicInteger mappings = new AtomicInteger();
    private volatile UserPrincipal owner;
    private volatile FileStore fileStore;

    private EmulatedPlatform(
            Directory directory,
            int count,
            long memoryBytes,
            int maxMappings,
            LongSupplier usableSpace,
            long maxCachedBytes) {
        this.directory = directory;
        this.maxMappings = maxMappings;
        this.maxCachedBytes = maxCachedBytes;
        this.usableSpace = usableSpace != null ? usableSpace : this::fileStoreUsableSpace;
        List<Device> list = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            list.add(new EmulatedDevice(this, i, memoryBytes));
        }
        this.devices = List.copyOf(list);
    }

    /** A platform configured by the system properties and the environment variable above. */
    public static EmulatedPlatform fromSystemProperties() throws DeviceUnavailableException {
        int count = Integer.getInteger(DEVICES_PROPERTY, 2);
        if (count < 1) {
            throw new DeviceUnavailableException("-D" + DEVICES_PROPERTY + "=" + count + " (expected: >= 1)");
        }
        String memoryProperty = System.getProperty(MEMORY_PROPERTY);
        Long memoryAsked = null;
        if (memoryProperty != null) {
            try {
                memoryAsked = Long.parseLong(memoryProperty.strip());
            } catch (NumberFormatException e) {
                memoryAsked = -1L;
            }
            if (memoryAsked < 0) {
                throw new DeviceUnavailableException(
                        "-D" + MEMORY_PROPERTY + "=" + memoryProperty + " (expected: a " + "number of bytes >= 0)");
            }
        }
        Directory dir = chooseDirectory(
                System.getProperty(DIR_PROPERTY),
                System.getenv(DIR_ENV),
                SHM,
                totalSpace(SHM),
                Path.of(System.getProperty("java.io.tmpdir")),
                memoryAsked);
        if (dir.fallback()) {
            LOG.log(System.Logger.Level.INFO, "cuwire emulated device memory in {0}: {1}", dir.path(), dir.origin());
        }
        long memory;
        try {
            memory = memoryAsked != null
                    ? memoryAsked
                    : Files.getFileStore(dir.path()).getTotalSpace();
        } catch (IOException e) {
            throw new DeviceUnavailableException(
                    "cannot use " + dir.path() + " (" + dir.origin() + ") for emulated " + "device memory: " + e, e);
        }
        long cached = Long.getLong(CACHE_PROPERTY, 0);
        if (cached < 0) {
            throw new DeviceUnavailableException("-D" + CACHE_PROPERTY + "=" + cached + " (expected: bytes >= 0)");
        }
        return new EmulatedPlatform(prepare(dir), count, memory, MAX_MAPPINGS, null, cached);
    }

    /**
     * Where the files go: the property's directory, else the environment variable's, else {@code shm} when its file
     * system holds at least {@code memoryAsked} bytes ({@link #MIN_SHM_BYTES} when not asked), else {@code tmp}.
     *
     * @param shmTotal the size of {@code shm}'s file system, or -1 when it is not a directory that can be asked
     */
    static Directory chooseDirectory(String property, String env, Path shm, long shmTotal, Path tmp, Long memoryAsked) {
        if (property != null && !property.isBlank()) {
            return new Directory(Path.of(property), "set by -D" + DIR_PROPERTY, false);
        }
        if (env != null && !env.isBlank()) {
            return new Directory(Path.of(env), "set by " + DIR_ENV, false);
        }
        long needed = memoryAsked != null ? memoryAsked : MIN_SHM_BYTES;
        if (shmTotal >= needed) {
            return new Directory(shm, "the default", false);
        }
        String why = shmTotal < 0
                ? shm + " is not there"
                : shm + " is a file system of " + shmTotal + " bytes, less " + "than the " + needed
                        + (memoryAsked != null ? " of -D" + MEMORY_PROPERTY : " cuwire asks of it");
        return new Directory(
                tmp,
                "the temporary directory, because " + why + " (for Docker, --shm-size makes it " + "larger; -D"
                        + DIR_PROPERTY + " or " + DIR_ENV + " chooses a directory)",
                true);
    }

    private static long totalSpace(Path dir) {
        try {
            return Files.isDirectory(dir) ? Files.getFileStore(dir).getTotalSpace() : -1;
        } catch (IOException | SecurityException e) {
            return -1;
        }
    }

    /** A platform of {@code count} devices of {@code memoryBytes} each, keeping its files in {@code directory}. */
    public static EmulatedPlatform create(Path directory, int count, long memoryBytes) {
        return create(directory, count, memoryBytes, MAX_MAPPINGS);
    }

    /** As {@link #create(Path, int, long)}, keeping at most {@code maxMappings} files mapped (for tests). */
    static EmulatedPlatform create(Path directory, int count, long memoryBytes, int maxMappings) {
        return create(directory, count, memoryBytes, maxMappings, null);
    }

    /**
     * As {@link #create(Path, int, long, int)}, taking the room left in the directory from {@code usableSpace}
     * instead of its file system ({@code null}: the file system's), for tests that play a file system running full.
     */
    static EmulatedPlatform create(
            Path directory, int count, long memoryBytes, int maxMappings, LongSupplier usableSpace) {
        return new EmulatedPlatform(
                prepare(new Directory(directory, "given by the caller", false)),
                count,
                memoryBytes,
                maxMappings,
                usableSpace,
                0);
    }

    /**
     * As {@link #create(Path, int, long)}, each device keeping up to {@code maxCachedBytes} of freed large
     * allocations for reuse ({@link #CACHE_PROPERTY}).
     */
    static EmulatedPlatform createCaching(Path directory, int count, long memoryBytes, long maxCachedBytes) {
        return new EmulatedPlatform(
                prepare(new Directory(directory, "given by the caller", false)),
                count,
                memoryBytes,
                MAX_MAPPINGS,
                null,
                maxCachedBytes);
    }

    /** The most bytes of freed large allocations each device keeps for reuse. */
    long maxCachedBytes() {
        return maxCachedBytes;
    }

    private static Directory prepare(Directory dir) {
        removeStaleFiles(dir.path());
        return dir;
    }

    public List<Device> devices() {
        return devices;
    }

    Path directory() {
        return directory.path();
    }

    /** How the directory was chosen. */
    String directoryOrigin() {
        return directory.origin();
    }

    /**
     * The message of a refused file of {@code size} bytes: the directory, what was wrong ({@code what}) and what to
     * set.
     */
    String noRoom(long size, String what) {
        return "a shared-memory file of " + size + " bytes does not fit in " + directory.path() + " (" + what
                + "; the directory is " + directory.origin() + "): give the emulated device's files more room (a "
                + "Docker container's /dev/shm is 64 MiB unless it runs with --shm-size, e.g. --shm-size=8g) or put "
                + "them on a larger file system with -D" + DIR_PROPERTY + "=<dir> or " + DIR_ENV + "=<dir> (every "
                + "process that shares device memory must use the same directory)";
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
        return usableSpace.getAsLong();
    }

    private long fileStoreUsableSpace() {
        try {
            FileStore store = fileStore;
            if (store == null) {
                store = Files.getFileStore(directory.path());
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
                Path probe = Files.createTempFile(
                        directory.path(),
                        prefix,
                        "",
                        PosixFilePermissions.asFileAttribute(
                                EnumSet.of(PosixFilePermission.OWNER_READ, PosixFilePermission.OWNER_WRITE)));
                try {
                    o = Files.getOwner(probe, LinkOption.NOFOLLOW_LINKS);
                } finally {
                    Files.deleteIfExists(probe);
                }
            } catch (IOException | UnsupportedOperationException e) {
                throw new InvalidHandleException(
                        "cannot find the owner of files made in " + directory.path() + ", so no handle can be checked: "
                                + e,
                        e);
            }
            owner = o;
        }
        return o;
    }

    Device device(int ordinal) {
        if (ordinal < 0 || ordinal >= devices.size()) {
            throw new InvalidHandleException(
                    "emulated device ordinal: " + ordinal + " (expected: 0 <= ordinal < " + devices.size() + ")");
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
