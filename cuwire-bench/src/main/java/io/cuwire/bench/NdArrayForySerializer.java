package io.cuwire.bench;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DType;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import org.apache.fory.config.Config;
import org.apache.fory.context.ReadContext;
import org.apache.fory.context.WriteContext;
import org.apache.fory.memory.MemoryBuffer;
import org.apache.fory.serializer.Serializer;

/** A Fory serializer for {@link NdArray}: description, then the bytes copied to the heap; rebuilt in {@code target}. */
final class NdArrayForySerializer extends Serializer<NdArray> {
    private final BufferAllocator<?> target;

    NdArrayForySerializer(Config config, BufferAllocator<?> target) {
        super(config, NdArray.class);
        this.target = target;
    }

    @Override
    public void write(WriteContext ctx, NdArray a) {
        MemoryBuffer out = ctx.getBuffer();
        out.writeByte(a.dtype().ordinal());
        out.writeByte(a.order().ordinal());
        long[] shape = a.shape();
        out.writeVarUInt32(shape.length);
        for (long d : shape) {
            out.writeInt64(d);
        }
        out.writeBytesWithSize(HostCopies.toHeap(a));
    }

    @Override
    public NdArray read(ReadContext ctx) {
        MemoryBuffer in = ctx.getBuffer();
        DType dtype = DType.values()[in.readByte()];
        Order order = Order.values()[in.readByte()];
        long[] shape = new long[in.readVarUInt32()];
        for (int i = 0; i < shape.length; i++) {
            shape[i] = in.readInt64();
        }
        return HostCopies.fromHeap(target, dtype, order, shape, in.readBytesAndSize());
    }
}
