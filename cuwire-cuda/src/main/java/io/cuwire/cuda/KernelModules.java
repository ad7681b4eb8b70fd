package io.cuwire.cuda;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.function.IntFunction;
import java.util.function.IntToLongFunction;

/**
 * The driver side of {@link KernelModule} and {@link Kernel}: reading a fatbin resource into native memory that lives
 * as long as the process, loading it into a device's context, resolving a function and packing the
 * {@code kernelParams} of {@code cuLaunchKernel}. Thread-safe (stateless).
 */
final class KernelModules {
    private KernelModules() {}

    /** The message when fatbin {@code resource}, built by Maven module {@code builtBy}, is not on the class path. */
    public static String missingResourceMessage(String resource, String builtBy) {
        return "kernel fatbin resource " + resource + " is not on the class path: this " + builtBy + " was built"
                + " without nvcc (the Maven profile 'nvcc' compiles its src/main/cuda only where"
                + " /usr/local/cuda/bin/nvcc exists); rebuild it on a machine with the CUDA toolkit";
    }

    /**
     * The fatbin {@code resource} from {@code loader}'s class path, in native memory that lives as long as the process.
     *
     * @throws CudaException with {@link #missingResourceMessage} when the resource is not there
     */
    public static MemorySegment readImage(ClassLoader loader, String resource, String builtBy) {
        byte[] bytes;
        try (InputStream in = loader.getResourceAsStream(resource)) {
            if (in == null) {
                throw new CudaException(missingResourceMessage(resource, builtBy), null);
            }
            bytes = in.readAllBytes();
        } catch (IOException e) {
            throw new CudaException("cannot read kernel fatbin resource " + resource + ": " + e, e);
        }
        MemorySegment segment = Arena.global().allocate(bytes.length + 1L, 64);
        MemorySegment.copy(bytes, 0, segment, JAVA_BYTE, 0, bytes.length);
        return segment;
    }

    /** {@code cuModuleLoadData} of {@code image} on {@code device}; {@code what} names it in errors. */
    public static MemorySegment load(CudaDevice device, MemorySegment image, String what) {
        return Driver.moduleLoadData(device, image, what);
    }

    /** The function {@code name} of {@code module}, loaded on {@code device}. */
    public static MemorySegment function(CudaDevice device, MemorySegment module, String name) {
        return Driver.moduleGetFunction(device, module, name);
    }

    /**
     * Launches {@code function} as {@code blocks} blocks of {@code block} threads on {@code stream} with {@code count}
     * arguments: argument {@code i} of C type {@code kind.apply(i)} and raw bits {@code bits.applyAsLong(i)}.
     */
    public static void launch(
            CudaDevice device,
            MemorySegment function,
            String name,
            int blocks,
            int block,
            CudaStream stream,
            int count,
            IntFunction<KernelParam> kind,
            IntToLongFunction bits) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment params = parameters(arena, count, kind, bits);
            Driver.launchKernel(device, function, name, blocks, block, 0, stream.handle(), params);
        }
    }

    /**
     * The {@code kernelParams} array of {@code cuLaunchKernel}: one pointer per argument, to a copy of the argument's
     * bits in its C size (8 bytes for {@code int64_t}, {@code double} and pointers, 4 for {@code int32_t} and
     * {@code float}).
     */
    static MemorySegment parameters(Arena arena, int count, IntFunction<KernelParam> kind, IntToLongFunction bits) {
        MemorySegment params = arena.allocate(ADDRESS, Math.max(1, count));
        for (int i = 0; i < count; i++) {
            long v = bits.applyAsLong(i);
            MemorySegment value = kind.apply(i).byteSize() == Long.BYTES
                    ? arena.allocateFrom(JAVA_LONG, v)
                    : arena.allocateFrom(JAVA_INT, (int) v);
            params.setAtIndex(ADDRESS, i, value);
        }
        return params;
    }
}
