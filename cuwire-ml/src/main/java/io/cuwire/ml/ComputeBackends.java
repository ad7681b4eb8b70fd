package io.cuwire.ml;

import io.cuwire.memory.Device;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.NdArray;
import io.cuwire.ml.spi.BackendProvider;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.ServiceLoader;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Picks the backend by where the data lives: every device platform computes on the backend its {@link BackendProvider}
 * gives (found with {@link ServiceLoader}, once per device), host and pinned memory on the one backend a provider gives
 * for host memory ({@link BackendProvider#hostBackend()}). cuwire-ml's own provider gives its pure-Java CPU backend
 * for both host memory and the emulated device. A device with no provider is an error naming the platform: there is
 * no silent fallback from a GPU to the CPU.
 */
public final class ComputeBackends {
    private static final Map<Device, ComputeBackend> BY_DEVICE = new ConcurrentHashMap<>();

    private ComputeBackends() {}

    /** The backend that computes where {@code a} lives. */
    public static ComputeBackend forArray(NdArray a) {
        a.checkOpen();
        if (a.kind().isHostAccessible()) {
            return Host.BACKEND;
        }
        return forDevice(((DeviceBuffer) a.buffer()).device());
    }

    /** The backend for {@code device}. */
    public static ComputeBackend forDevice(Device device) {
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
        return CpuThreads.threads;
    }

    /**
     * Sets the threads of {@link #cpuThreads()} for the operations that start afterwards.
     *
     * @throws IllegalArgumentException if {@code threads < 1}
     */
    public static void setCpuThreads(int threads) {
        if (threads < 1) {
            throw new IllegalArgumentException("CPU backend threads: " + threads + " (expected: >= 1)");
        }
        CpuThreads.threads = threads;
    }

    private static ComputeBackend open(Device device) {
        for (BackendProvider p : providers()) {
            if (p.platform().equals(device.platform())) {
                return p.open(device);
            }
        }
        throw new IllegalStateException("no compute backend for device " + device + " of platform '"
                + device.platform() + "': put the cuwire module that provides one (an io.cuwire.ml.spi."
                + "BackendProvider for '" + device.platform() + "') on the class path");
    }

    private static ServiceLoader<BackendProvider> providers() {
        return ServiceLoader.load(BackendProvider.class, ComputeBackends.class.getClassLoader());
    }

    /** The backend for host memory, found on first use: the one that a provider gives. */
    private static final class Host {
        static final ComputeBackend BACKEND = find();

        private static ComputeBackend find() {
            List<String> givers = new ArrayList<>();
            ComputeBackend backend = null;
            for (BackendProvider p : providers()) {
                Optional<ComputeBackend> b = p.hostBackend();
                if (b.isPresent()) {
                    backend = b.get();
                    givers.add(p.getClass().getName());
                }
            }
            if (givers.isEmpty()) {
                throw new IllegalStateException(
                        "no compute backend for host memory: no io.cuwire.ml.spi.BackendProvider"
                                + " gives one (cuwire-ml's META-INF/services/io.cuwire.ml.spi.BackendProvider names the CPU "
                                + "backend's; a jar that merges cuwire's jars must merge their service files)");
            }
            if (givers.size() > 1) {
                throw new IllegalStateException("compute backends for host memory from " + givers.size() + " providers "
                        + givers + " (expected: one, cuwire-ml's CPU backend)");
            }
            return backend;
        }
    }

    /** The CPU backend's threads, read from the system property on first use. */
    private static final class CpuThreads {
        static final String PROPERTY = "cuwire.ml.cpuThreads";
        static volatile int threads = fromProperty();

        private static int fromProperty() {
            String v = System.getProperty(PROPERTY);
            if (v == null || v.isBlank()) {
                return Runtime.getRuntime().availableProcessors();
            }
            try {
                int n = Integer.parseInt(v.strip());
                if (n >= 1) {
                    return n;
                }
            } catch (NumberFormatException e) {
                // reported below
            }
            throw new IllegalArgumentException("-D" + PROPERTY + "=" + v + " (expected: an integer >= 1)");
        }
    }
}
