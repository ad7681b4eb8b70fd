package io.cuwire.cuda;

import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.DeviceStream;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A module of CUDA kernels: a fatbin class path resource (compiled by nvcc at build time, e.g. sm_80, sm_90 and
 * compute_90 PTX), read on first use and loaded with {@code cuModuleLoadData} once per device, kept for the life of
 * the process like the device. A module that is not on the class path (a build without nvcc) fails its first launch
 * with a {@link CudaException} naming the resource and how to build it. Its {@link Kernel}s are declared with their
 * signatures ({@link #kernel}). Launches are one-dimensional grids of {@value #BLOCK}-thread blocks. Thread-safe.
 */
public final class KernelModule {
    /** Threads per block of every launch. */
    public static final int BLOCK = 256;
    /** The most blocks of a launch. */
    public static final int MAX_GRID = 65_535;

    private final ClassLoader loader;
    private final String resource;
    private final String targets;
    private final String builtBy;
    private final Map<CudaDevice, MemorySegment> loaded = new ConcurrentHashMap<>();
    private volatile MemorySegment image;

    private KernelModule(ClassLoader loader, String resource, String targets, String builtBy) {
        this.loader = loader;
        this.resource = resource;
        this.targets = targets;
        this.builtBy = builtBy;
    }

    /**
     * The module in class path resource {@code resource} of {@code loader}; nothing is read until the first launch.
     * Keep the resource outside any package directory (cuwire's are under {@code META-INF/cuwire/}): in a named
     * module a resource in a package is encapsulated, and {@code loader} would not find it on the module path.
     *
     * @param targets what the fatbin holds, for messages ({@code sm_80, sm_90, compute_90 PTX})
     * @param builtBy the Maven module whose build makes it, for the message when it is missing
     */
    public static KernelModule of(ClassLoader loader, String resource, String targets, String builtBy) {
        return new KernelModule(loader, resource, targets, builtBy);
    }

    /** The fatbin's class path resource. */
    public String resource() {
        return resource;
    }

    /** The kernel {@code name} of this module, taking parameters of {@code signature}'s C types. */
    public Kernel kernel(String name, KernelParam... signature) {
        return new Kernel(this, name, List.of(signature));
    }

    /** The message of the launch that finds no fatbin on the class path. */
    public String missingResourceMessage() {
        return KernelModules.missingResourceMessage(resource, builtBy);
    }

    /** The blocks {@link Kernel#launch} uses for {@code work} items: one item a thread, at most {@value #MAX_GRID}. */
    public static int grid(long work) {
        return (int) Math.max(1, Math.min(MAX_GRID, (work + BLOCK - 1) / BLOCK));
    }

    /** The multiprocessors of the device of CUDA {@code stream}, for kernels that size their grid by them. */
    public static int multiprocessors(DeviceStream stream) {
        return CudaStream.of(stream).cudaDevice().multiprocessors();
    }

    /** Whether the first byte of CUDA {@code buffer} is at a device address that is a multiple of {@code bytes}. */
    public static boolean aligned(DeviceBuffer buffer, int bytes) {
        return CudaDevice.pointer(buffer, 0) % bytes == 0;
    }

    MemorySegment function(CudaDevice device, String name) {
        MemorySegment module = loaded.computeIfAbsent(
                device,
                d -> KernelModules.load(
                        d, image(), resource + " (" + targets + ") on " + d + " (sm_" + d.computeCapability() + ")"));
        return KernelModules.function(device, module, name);
    }

    private MemorySegment image() {
        MemorySegment img = image;
        if (img == null) {
            synchronized (this) {
                img = image;
                if (img == null) {
                    img = KernelModules.readImage(loader, resource, builtBy);
                    image = img;
                }
            }
        }
        return img;
    }

    @Override
    public String toString() {
        return "kernel module " + resource + " (" + targets + ")";
    }
}
