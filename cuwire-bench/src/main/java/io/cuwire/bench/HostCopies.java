package io.cuwire.bench;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.DType;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import java.lang.foreign.MemorySegment;

/**
 * What a Kryo or Fory user writes to carry an {@link NdArray}: its bytes copied to a heap array through the
 * {@link CopyEngine} (counted as device-to-host), and back into new memory of a target allocator.
 */
final class HostCopies {
    private HostCopies() {}

    static byte[] toHeap(NdArray a) {
        if (a.byteSize() > NdArray.MAX_ARRAY_LENGTH) {
            throw new IllegalStateException(a + " has " + a.byteSize() + " bytes, more than a Java byte[] holds "
                    + "(the JVM's 2 GiB array limit)");
        }
        byte[] bytes = new byte[(int) a.byteSize()];
        CopyEngine.copyToSegment(a.buffer(), 0, MemorySegment.ofArray(bytes));
        return bytes;
    }

    static NdArray fromHeap(BufferAllocator<?> target, DType dtype, Order order, long[] shape, byte[] bytes) {
        NdArray a = NdArray.empty(target, dtype, order, shape);
        try {
            if (a.byteSize() != bytes.length) {
                throw new IllegalArgumentException(bytes.length + " bytes for " + a);
            }
            CopyEngine.copyFromSegment(MemorySegment.ofArray(bytes), a.buffer(), 0);
            return a;
        } catch (RuntimeException | Error e) {
            a.close();
            throw e;
        }
    }
}
