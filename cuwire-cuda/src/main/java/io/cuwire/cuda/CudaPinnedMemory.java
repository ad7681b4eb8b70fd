package io.cuwire.cuda;

import io.cuwire.memory.AllocationLimitException;
import io.cuwire.memory.Buffer;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.MemoryKind;
import io.cuwire.memory.MemoryResource;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Page-locked host memory from {@code cuMemHostAlloc} (portable: usable with every device's context). Each buffer's
 * segment lives in its own shared arena, whose closing frees the memory with {@code cuMemFreeHost}; using the
 * segment after {@code close()} fails. Thread-safe.
 */
final class CudaPinnedMemory implements MemoryResource<HostBuffer> {
    private final CudaDevice device;

    CudaPinnedMemory(CudaDevice device) {
        this.device = device;
    }

    @Override
    public MemoryKind kind() {
        return MemoryKind.PINNED;
    }

    @Override
    public int deviceOrdinal() {
        return Buffer.HOST_ORDINAL;
    }

    @Override
    @SuppressWarnings("restricted") // the address and size come from cuMemHostAlloc
    public HostBuffer allocate(long bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("bytes: " + bytes + " (expected: >= 0)");
        }
        Arena arena = Arena.ofShared();
        if (bytes == 0) {
            return HostBuffer.owning(MemoryKind.PINNED, arena.allocate(0), arena::close);
        }
        MemorySegment address;
        try {
            address = Driver.memHostAlloc(device, bytes, Driver.CU_MEMHOSTALLOC_PORTABLE);
        } catch (CudaException e) {
            arena.close();
            if (e.result() == Driver.CUDA_ERROR_OUT_OF_MEMORY) {
                throw new AllocationLimitException(
                        describe() + " cannot allocate " + bytes + " bytes: " + e.getMessage(), e);
            }
            throw e;
        }
        MemorySegment segment = address.reinterpret(bytes, arena, this::free);
        return HostBuffer.owning(MemoryKind.PINNED, segment, arena::close);
    }

    private void free(MemorySegment address) {
        Driver.memFreeHost(device, address);
    }

    @Override
    public String describe() {
        return "PINNED (cuMemHostAlloc via " + device + ")";
    }
}
