package io.cuwire.cuda;

import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * One {@code extern "C"} kernel of a {@link KernelModule}, with its declared signature: every launch checks that its
 * {@link KernelArgs} have exactly these C types, then enqueues the kernel with {@code cuLaunchKernel} on the
 * arguments' stream and returns (the results are there after the stream's next {@code synchronize()}; the buffers
 * must stay open until then). The function is resolved once per device, on its first launch there. Thread-safe.
 */
public final class Kernel {
    private final KernelModule module;
    private final String name;
    private final List<KernelParam> signature;
    private final Map<CudaDevice, MemorySegment> functions = new ConcurrentHashMap<>();

    Kernel(KernelModule module, String name, List<KernelParam> signature) {
        this.module = module;
        this.name = name;
        this.signature = signature;
    }

    /** The kernel's C name. */
    public String name() {
        return name;
    }

    /** The C types of its parameters, in order. */
    public List<KernelParam> signature() {
        return signature;
    }

    /**
     * Launches with enough blocks of {@value KernelModule#BLOCK} threads for {@code work} items, one a thread, at most
     * {@value KernelModule#MAX_GRID} blocks ({@link KernelModule#grid}); nothing when {@code work} is 0 or less. The
     * kernels are grid-stride loops, so any grid covers any amount of work.
     *
     * @throws IllegalArgumentException when the arguments' types are not the signature's
     * @throws CudaException when the module cannot be loaded or the driver refuses the launch
     */
    public void launch(long work, KernelArgs args) {
        check(args);
        if (work > 0) {
            enqueue(KernelModule.grid(work), args);
        }
    }

    /**
     * Launches exactly {@code blocks} blocks of {@value KernelModule#BLOCK} threads, for kernels whose results are per
     * block (reductions) or that plan their own grid.
     *
     * @throws IllegalArgumentException when {@code blocks} is outside {@code [1, MAX_GRID]} or the arguments' types
     *     are not the signature's
     * @throws CudaException when the module cannot be loaded or the driver refuses the launch
     */
    public void launchBlocks(int blocks, KernelArgs args) {
        if (blocks < 1 || blocks > KernelModule.MAX_GRID) {
            throw new IllegalArgumentException("kernel " + name + " blocks: " + blocks + " (expected: 1 <= blocks <= "
                    + KernelModule.MAX_GRID + ")");
        }
        check(args);
        enqueue(blocks, args);
    }

    private void check(KernelArgs args) {
        List<KernelParam> kinds = args.kinds();
        if (!kinds.equals(signature)) {
            throw new IllegalArgumentException(
                    "kernel " + name + ": arguments " + kinds + " (expected: " + signature + ")");
        }
    }

    private void enqueue(int blocks, KernelArgs args) {
        CudaDevice device = args.cudaStream().cudaDevice();
        MemorySegment function = functions.computeIfAbsent(device, d -> module.function(d, name));
        KernelModules.launch(
                device,
                function,
                name,
                blocks,
                KernelModule.BLOCK,
                args.cudaStream(),
                args.size(),
                args::kind,
                args::value);
    }

    @Override
    public String toString() {
        return name + signature;
    }
}
