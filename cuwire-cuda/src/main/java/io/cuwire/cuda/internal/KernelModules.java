package io.cuwire.cuda.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_DOUBLE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.cuwire.cuda.CudaException;
import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * cuwire's kernels: the fatbin resource {@value #RESOURCE} (built from {@code src/main/cuda} by nvcc), loaded with
 * {@code cuModuleLoadData} once per device on first use and kept for the life of the process, like the device.
 * Launches are one-dimensional grid-stride loops of {@value #BLOCK} threads per block. Thread-safe.
 */
public final class KernelModules {
    /** The fatbin's class path resource. */
    public static final String RESOURCE = "io/cuwire/cuda/kernels.fatbin";
    /** What the fatbin holds, for messages. */
    public static final String TARGETS = "sm_80, sm_90, compute_90 PTX";

    /** Threads per block of every launch. */
    public static final int BLOCK = 256;
    /** The most blocks of a launch. */
    public static final long MAX_GRID = 65_535;

    private static final Map<CudaDevice, Module> MODULES = new ConcurrentHashMap<>();
    private static volatile MemorySegment image;

    private KernelModules() {
    }

    /** A device's loaded module and its resolved functions. */
    private record Module(MemorySegment handle, Map<String, MemorySegment> functions) {
    }

    /** The message when the fatbin is not on the class path. */
    public static String missingResourceMessage() {
        return "kernel fatbin resource " + RESOURCE + " is not on the class path: this cuwire-cuda was built without"
                + " nvcc (the Maven profile 'nvcc' compiles src/main/cuda only where /usr/local/cuda/bin/nvcc exists);"
                + " rebuild it on a machine with the CUDA toolkit";
    }

    private static MemorySegment image() {
        MemorySegment img = image;
        if (img == null) {
            synchronized (KernelModules.class) {
                img = image;
                if (img == null) {
                    img = readImage(KernelModules.class.getClassLoader());
                    image = img;
                }
            }
        }
        return img;
    }

    /**
     * The fatbin from {@code loader}'s class path, in native memory that lives as long as the process.
     *
     * @throws CudaException with {@link #missingResourceMessage()} when the resource is not there
     */
    static MemorySegment readImage(ClassLoader loader) {
        byte[] bytes;
        try (InputStream in = loader.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                throw new CudaException(missingResourceMessage(), null);
            }
            bytes = in.readAllBytes();
        } catch (IOException e) {
            throw new CudaException("cannot read kernel fatbin resource " + RESOURCE + ": " + e, e);
        }
        MemorySegment segment = Arena.global().allocate(bytes.length + 1L, 64);
        MemorySegment.copy(bytes, 0, segment, JAVA_BYTE, 0, bytes.length);
        return segment;
    }

    private static Module module(CudaDevice device) {
        return MODULES.computeIfAbsent(device, d -> {
            MemorySegment img = image();
            MemorySegment handle = Driver.moduleLoadData(d, img, RESOURCE + " (" + TARGETS + ") on " + d + " (sm_"
                    + d.computeCapability() + ")");
            return new Module(handle, new ConcurrentHashMap<>());
        });
    }

    private static MemorySegment function(CudaDevice device, String name) {
        Module m = module(device);
        return m.functions().computeIfAbsent(name, n -> Driver.moduleGetFunction(device, m.handle(), n));
    }

    /**
     * Launches kernel {@code name} on {@code stream} with enough threads for {@code work} items (nothing when
     * {@code work} is 0). Arguments are {@link Long} ({@code int64_t} or a device pointer), {@link Integer},
     * {@link Float} or {@link Double}, in the kernel's order.
     */
    public static void launch(CudaStream stream, String name, long work, Object... args) {
        if (work <= 0) {
            return;
        }
        launchBlocks(stream, name, grid(work), args);
    }

    /** The blocks {@link #launch} uses for {@code work} items: one item a thread, at most {@value #MAX_GRID}. */
    public static int grid(long work) {
        return (int) Math.max(1, Math.min(MAX_GRID, (work + BLOCK - 1) / BLOCK));
    }

    /**
     * Launches kernel {@code name} on {@code stream} as exactly {@code blocks} blocks of {@value #BLOCK} threads, for
     * kernels whose results are per block (reductions). Arguments as for {@link #launch}.
     */
    public static void launchBlocks(CudaStream stream, String name, int blocks, Object... args) {
        if (blocks < 1 || blocks > MAX_GRID) {
            throw new IllegalArgumentException("kernel " + name + " blocks: " + blocks + " (expected: 1 <= blocks <= "
                    + MAX_GRID + ")");
        }
        CudaDevice device = stream.cudaDevice();
        MemorySegment function = function(device, name);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment params = parameters(arena, name, args);
            Driver.launchKernel(device, function, name, blocks, BLOCK, 0, stream.handle(), params);
        }
    }

    /**
     * The {@code kernelParams} array of {@code cuLaunchKernel}: one pointer per argument, to a copy of the argument
     * of its C size (8 bytes for {@link Long} and {@link Double}, 4 for {@link Integer} and {@link Float}).
     */
    static MemorySegment parameters(Arena arena, String name, Object... args) {
        MemorySegment params = arena.allocate(ADDRESS, Math.max(1, args.length));
        for (int i = 0; i < args.length; i++) {
            MemorySegment value = switch (args[i]) {
                case Long v -> arena.allocateFrom(JAVA_LONG, v);
                case Integer v -> arena.allocateFrom(JAVA_INT, v);
                case Float v -> arena.allocateFrom(JAVA_FLOAT, v);
                case Double v -> arena.allocateFrom(JAVA_DOUBLE, v);
                case null -> throw new IllegalArgumentException("kernel " + name + " argument " + i + ": null");
                default -> throw new IllegalArgumentException("kernel " + name + " argument " + i + ": "
                        + args[i].getClass().getName() + " (expected: Long, Integer, Float or Double)");
            };
            params.setAtIndex(ADDRESS, i, value);
        }
        return params;
    }
}
