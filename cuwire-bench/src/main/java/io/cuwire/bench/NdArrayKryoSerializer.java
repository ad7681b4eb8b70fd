package io.cuwire.bench;

import com.esotericsoftware.kryo.Kryo;
import com.esotericsoftware.kryo.Serializer;
import com.esotericsoftware.kryo.io.Input;
import com.esotericsoftware.kryo.io.Output;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DType;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;

/** A Kryo serializer for {@link NdArray}: description, then the bytes copied to the heap; rebuilt in {@code target}. */
final class NdArrayKryoSerializer extends Serializer<NdArray> {
    private final BufferAllocator<?> target;

    NdArrayKryoSerializer(BufferAllocator<?> target) {
        this.target = target;
    }

    @Override
    public void write(Kryo kryo, Output out, NdArray a) {
        out.writeByte(a.dtype().ordinal());
        out.writeByte(a.order().ordinal());
        long[] shape = a.shape();
        out.writeVarInt(shape.length, true);
        for (long d : shape) {
            out.writeVarLong(d, true);
        }
        byte[] bytes = HostCopies.toHeap(a);
        out.writeVarInt(bytes.length, true);
        out.writeBytes(bytes);
    }

    @Override
    public NdArray read(Kryo kryo, Input in, Class<? extends NdArray> type) {
        DType dtype = DType.values()[in.readByte()];
        Order order = Order.values()[in.readByte()];
        long[] shape = new long[in.readVarInt(true)];
        for (int i = 0; i < shape.length; i++) {
            shape[i] = in.readVarLong(true);
        }
        byte[] bytes = in.readBytes(in.readVarInt(true));
        return HostCopies.fromHeap(target, dtype, order, shape, bytes);
    }
}
