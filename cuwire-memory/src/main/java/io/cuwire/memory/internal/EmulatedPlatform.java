package io.cuwire.memory.internal;

import io.cuwire.memory.Device;
import io.cuwire.memory.spi.DeviceUnavailableException;
import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The emulated device platform: devices whose memory is host memory in shared-memory files, one file per
 * allocation, so that another process maps a buffer by its file name (the stand-in for CUDA IPC). Copies go through
 * the same {@link io.cuwire.memory.CopyEngine} paths and counters as on CUDA.
 *
 * <p>System properties: {@value #DEVICES_PROPERTY} (number of devices, default 2, so peer paths run in CI),
 * {@value #MEMORY_PROPERTY} (bytes per device; default: the size of the shared-memory file system),
 * {@value #DIR_PROPERTY} (where the files go; default {@code /dev/shm}, else the temporary directory).
 * Files left behind by processes that died are removed when a platform opens.
 */
public final class EmulatedPlatform {
    public static final String NAME = "emulated";
    public static final String DEVICES_PROPERTY = "cuwire.emulated.devices";
    public static final String MEMORY_PROPERTY = "cuwire.emulated.memoryBytes";
    public static final String DIR_PROPERTY = "cuwire.emulated.dir";
    static final String FILE_PREFIX = "cuwire-emu-";

    private final Path directory;
    private final List<Device> devices;
    private final AtomicLong sequence = new AtomicLong();

    private EmulatedPlatform(Path directory, int count, long memoryBytes) {
        this.directory = directory;
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
        removeStaleFiles(directory);
        return new EmulatedPlatform(directory, count, memoryBytes);
    }

    public List<Device> devices() {
        return devices;
    }

    Path directory() {
        return directory;
    }

    Path newFile(int ordinal) {
        return directory.resolve(FILE_PREFIX + ProcessHandle.current().pid() + "-" + ordinal + "-"
                + sequence.incrementAndGet());
    }

    Device device(int ordinal) {
        if (ordinal < 0 || ordinal >= devices.size()) {
            throw new IllegalArgumentException("emulated device ordinal: " + ordinal + " (expected: 0 <= ordinal < "
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
