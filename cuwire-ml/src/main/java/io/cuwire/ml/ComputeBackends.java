package io.cuwire.ml;

import io.cuwire.memory.Device;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.NdArray;
import io.cuwire.ml.internal.CpuBackend;
import io.cuwire.ml.internal.CpuParallel;
import io.cuwire.ml.spi.BackendProvider;
import java.util.Map;
import java.util.ServiceLoader;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Picks the backend by where the data lives: host and pinned memory and the emulated device compute on the pure-Java
 * CPU backend (internal to cuwire-ml); any other device platform on the backend its {@link BackendProvider} gives
 * (found with {@link ServiceLoader}, once per device). A device with no provider is an error naming the platform: there
 * is no silent fallback from a GPU to the CPU.
 */
public final class ComputeBackends {
    private static final Map<Device, ComputeBackend> BY_DEVICE = new ConcurrentHashMap<>();

    private ComputeBackends() {}

    /** The backend that computes where {@code a} lives. */
    public static ComputeBackend forArray(NdArray a) {
        a.checkOpen();
        if (a.kind().isHostAccessible()) {
            return CpuBackend.instance();
        }
        return forDevice(((DeviceBuffer) a.buffer()).device());
    }

    /** The backend for {@code device}. */
    public static ComputeBackend forDevice(Device device) {
        if (device.platform().equals("emulated")) {
            return CpuBackend.instance();
        }
        return BY_DEVICE.computeIfAbsent(device, ComputeBackends::open);
    }

    /**
     * The threads the CPU backend computes on when called from a thread outside any fork-join pool: the
     * {@code cuwire.ml.cpuThreads} system property when set, else {@link Runtime#availableProcessors()}, or what
     * {@link #setCpuThreads} set last. Called from a fork-join worker thread (a Spark task that runs its work in a
     * pool of {@code spark.task.cpus} threads, or any caller's own pool), the backend computes in that pool instead.
     * Results do not depend on the threads.
     */
    public static int cpuThreads() {
        return CpuParallel.threads();
    }

    /**
     * Sets the threads of {@link #cpuThreads()} for the operations that start afterwards.
     *
     * @throws IllegalArgumentException if {@code threads < 1}
     */
    public static void setCpuThreads(int threads) {
        CpuParallel.setThreads(threads);
    }

    private static ComputeBackend open(Device device) {
        for (BackendProvider p : ServiceLoader.load(BackendProvider.class, ComputeBackends.class.getClassLoader())) {
            if (p.platform().equals(device.platform())) {
                return p.open(device);
            }
        }
        throw new IllegalStateException("no compute backend for device " + device + " of platform '"
                + device.platform() + "': put the cuwire module that provides one (an io.cuwire.ml.spi."
                + "BackendProvider for '" + device.platform() + "') on the class path");
    }
}
