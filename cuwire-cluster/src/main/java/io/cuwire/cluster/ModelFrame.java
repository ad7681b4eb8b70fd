package io.cuwire.cluster;

import io.cuwire.memory.Buffer;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.MemoryKind;
import io.cuwire.serialize.Frame;
import io.cuwire.serialize.ReadContext;
import io.cuwire.serialize.Serializer;
import io.cuwire.serialize.WireType;
import io.cuwire.serialize.WriteContext;

/**
 * One frame of a model sent whole ({@link WorkerRequest.CacheModel}): the buffer travels as a frame as it
 * is (a device buffer stays a device frame), and the receiver gets the buffer the transport allocated for it, to
 * own: the worker rebuilds the model from the header and these buffers, as it does a chunked broadcast's assembly.
 * Closing it closes the buffer (on the sender, a frame of the model's serialized form, closing does nothing: see
 * {@link #borrowed}).
 *
 * @param buffer the frame's bytes
 * @param owned whether closing it closes {@code buffer}
 */
@WireType("cuwire.cluster.ModelFrame")
record ModelFrame(Buffer buffer, boolean owned) implements AutoCloseable {
    /** A frame of a serialized value that stays that value's: closing the {@code ModelFrame} leaves it open. */
    public static ModelFrame borrowed(Buffer buffer) {
        return new ModelFrame(buffer, false);
    }

    @Override
    public void close() {
        if (owned) {
            buffer.close();
        }
    }

    /** Writes the buffer as a frame; reads the received frame into a buffer of its own (copied if it is shared). */
    static final class FrameSerializer implements Serializer<ModelFrame> {
        @Override
        public void write(WriteContext out, ModelFrame value) {
            out.put("f", out.frame(value.buffer()));
        }

        @Override
        public ModelFrame read(ReadContext in) {
            Frame f = in.takeFrame("f");
            if (f.owned()) {
                return new ModelFrame(f.buffer(), true);
            }
            // another value's memory (a transport that hands frames over): a copy of its own, in the same kind
            Buffer copy = f.kind() == MemoryKind.DEVICE
                    ? in.target().device().allocate(f.length())
                    : in.target().host().allocate(f.length());
            try {
                CopyEngine.copy(f.buffer(), copy);
            } catch (RuntimeException e) {
                copy.close();
                throw e;
            }
            return new ModelFrame(copy, true);
        }
    }
}
