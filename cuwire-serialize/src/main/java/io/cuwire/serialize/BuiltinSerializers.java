package io.cuwire.serialize;

import io.cuwire.memory.Buffer;
import io.cuwire.memory.CooMatrix;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.CscMatrix;
import io.cuwire.memory.CsrMatrix;
import io.cuwire.memory.DType;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.MemoryKind;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;

/** What every registry starts with: {@link NdArray} and the sparse matrices, in {@code cuda} and {@code host}. */
final class BuiltinSerializers {
    private BuiltinSerializers() {}

    static void registerAll(TypeRegistry registry) {
        registry.register(NdArray.class, NdArrayRuns.REGISTERED_NAME);
        registry.register(CsrMatrix.class, "cuwire.csr");
        registry.register(CscMatrix.class, "cuwire.csc");
        registry.register(CooMatrix.class, "cuwire.coo");
        registry.register(OpaqueBlob.class, "cuwire.blob");
        for (Family family : new Family[] {Family.CUDA, Family.HOST}) {
            registry.register(NdArray.class, family, new NdArraySerializer());
            registry.register(OpaqueBlob.class, family, new BlobSerializer());
            registry.register(CsrMatrix.class, family, new Serializer<CsrMatrix>() {
                @Override
                public void write(WriteContext out, CsrMatrix m) {
                    writeSparse(out, m.rows(), m.cols(), m.indptr(), m.indices(), m.data());
                }

                @Override
                public CsrMatrix read(ReadContext in) {
                    NdArray[] parts = readSparse(in);
                    return new CsrMatrix(in.getLong("rows"), in.getLong("cols"), parts[0], parts[1], parts[2]);
                }
            });
            registry.register(CscMatrix.class, family, new Serializer<CscMatrix>() {
                @Override
                public void write(WriteContext out, CscMatrix m) {
                    writeSparse(out, m.rows(), m.cols(), m.indptr(), m.indices(), m.data());
                }

                @Override
                public CscMatrix read(ReadContext in) {
                    NdArray[] parts = readSparse(in);
                    return new CscMatrix(in.getLong("rows"), in.getLong("cols"), parts[0], parts[1], parts[2]);
                }
            });
            registry.register(CooMatrix.class, family, new Serializer<CooMatrix>() {
                @Override
                public void write(WriteContext out, CooMatrix m) {
                    writeSparse(out, m.rows(), m.cols(), m.row(), m.col(), m.data());
                }

                @Override
                public CooMatrix read(ReadContext in) {
                    NdArray[] parts = readSparse(in);
                    return new CooMatrix(in.getLong("rows"), in.getLong("cols"), parts[0], parts[1], parts[2]);
                }
            });
        }
    }

    private static void writeSparse(WriteContext out, long rows, long cols, NdArray a, NdArray b, NdArray c) {
        out.put("rows", rows).put("cols", cols);
        out.writeValue("a", a).writeValue("b", b).writeValue("c", c);
    }

    private static NdArray[] readSparse(ReadContext in) {
        NdArray[] parts = new NdArray[3];
        try {
            parts[0] = in.readValue("a", NdArray.class);
            parts[1] = in.readValue("b", NdArray.class);
            parts[2] = in.readValue("c", NdArray.class);
            if (parts[0] == null || parts[1] == null || parts[2] == null) {
                throw new MalformedHeaderException("sparse matrix with a nil component at " + in.path());
            }
            return parts;
        } catch (RuntimeException e) {
            for (NdArray p : parts) {
                if (p != null && p.isOpen()) {
                    p.close();
                }
            }
            throw e;
        }
    }

    /**
     * An {@link NdArray}: dtype, order, shape and where it lived in the header; its bytes as one frame. In the
     * {@code cuda} family the frame is the array's own buffer, wherever it lives; in the {@code host} family a device
     * array is copied to a host frame and rebuilt on the receiver's device.
     */
    static final class NdArraySerializer implements Serializer<NdArray> {
        @Override
        public void write(WriteContext out, NdArray a) {
            a.checkOpen();
            out.put("dtype", a.dtype().wireName());
            out.put("order", a.order().name());
            java.util.List<Object> shape = new java.util.ArrayList<>(a.rank());
            for (long d : a.shape()) {
                shape.add(d);
            }
            out.put("shape", shape);
            writeFrame(out, a.buffer());
        }

        @Override
        public NdArray read(ReadContext in) {
            DType dtype;
            Order order;
            MemoryKind mem;
            try {
                dtype = DType.byName(in.getString("dtype"));
                order = Order.valueOf(in.getString("order"));
                mem = MemoryKind.valueOf(in.getString("mem"));
            } catch (IllegalArgumentException e) {
                throw new MalformedHeaderException("bad ndarray description at " + in.path() + ": " + e.getMessage());
            }
            long[] shape = in.getLongs("shape");
            if (shape.length > NdArray.MAX_RANK) {
                throw new MalformedHeaderException("ndarray of rank " + shape.length + " at " + in.path());
            }
            return array(in.decoder(), in.takeFrame("fr"), dtype, order, shape, mem);
        }
    }

    /**
     * The array of {@code dtype}, {@code order} and {@code shape} (rank checked) over a received {@code frame}, which
     * held it in {@code mem} at the sender: the frame itself, or rebuilt on the device ({@link #place}). What a
     * {@code cuwire.ndarray} node decodes to, and each array of a run ({@link NdArrayRuns}).
     *
     * @throws MalformedHeaderException if a dimension is negative or the shape does not fill the frame exactly
     */
    static NdArray array(Decoder decoder, Frame frame, DType dtype, Order order, long[] shape, MemoryKind mem) {
        long elements = 1;
        for (long d : shape) {
            if (d < 0) {
                throw new MalformedHeaderException("negative dimension " + d + " at " + decoder.path());
            }
            elements = Math.multiplyHigh(elements, d) != 0 ? -1 : elements * d;
            if (elements < 0) {
                throw new MalformedHeaderException("ndarray size overflows at " + decoder.path());
            }
        }
        if (Math.multiplyHigh(elements, dtype.byteSize()) != 0 || elements * dtype.byteSize() != frame.length()) {
            throw new MalformedHeaderException(dtype.wireName() + " " + java.util.Arrays.toString(shape)
                    + " does not fill a frame of " + frame.length() + " bytes at " + decoder.path());
        }
        Frame placed = place(decoder, frame, mem);
        return placed.owned()
                ? NdArray.adopt(placed.buffer(), dtype, order, shape)
                : NdArray.view(placed.buffer(), 0, dtype, order, shape);
    }

    /** Whether {@code serializer} is the built-in one of {@link NdArray}s, whose data a run batches. */
    static boolean isArraySerializer(Serializer<?> serializer) {
        return serializer instanceof NdArraySerializer;
    }

    /** Hands {@code buffer} over as it is ({@code cuda}), or a host copy of device memory ({@code host}). */
    static void writeFrame(WriteContext out, Buffer buffer) {
        out.put("mem", buffer.kind().name());
        if (out.family() == Family.HOST && buffer.kind() == MemoryKind.DEVICE) {
            out.put("fr", out.hostCopyFrame(buffer));
        } else {
            out.put("fr", out.frame(buffer));
        }
    }

    /**
     * Puts a received frame where the sender had it: a host frame of what was device memory is rebuilt on the
     * receiver's device (the frame is released); anything else is used as it arrived.
     */
    static Frame place(Decoder decoder, Frame frame, MemoryKind mem) {
        Buffer buffer = frame.buffer();
        if (mem != MemoryKind.DEVICE || buffer.kind() == MemoryKind.DEVICE) {
            return frame;
        }
        DeviceBuffer rebuilt = decoder.target().device().allocate(frame.length());
        try {
            CopyEngine.copy(buffer, rebuilt);
        } catch (RuntimeException e) {
            rebuilt.close();
            throw e;
        }
        decoder.own(rebuilt);
        if (frame.owned()) {
            buffer.close();
        }
        return new Frame(rebuilt, true);
    }

    /** An {@link OpaqueBlob}: format and metadata in the header, the bytes as one frame. */
    static final class BlobSerializer implements Serializer<OpaqueBlob> {
        @Override
        public void write(WriteContext out, OpaqueBlob blob) {
            out.put("format", blob.format());
            out.put("meta", new java.util.LinkedHashMap<>(blob.metadata()));
            writeFrame(out, blob.buffer());
        }

        @Override
        public OpaqueBlob read(ReadContext in) {
            String format = in.getString("format");
            if (!(in.raw("meta") instanceof java.util.Map<?, ?> raw)) {
                throw new MalformedHeaderException("blob without metadata at " + in.path());
            }
            java.util.Map<String, Object> meta = new java.util.LinkedHashMap<>();
            raw.forEach((k, v) -> meta.put((String) k, v));
            MemoryKind mem;
            try {
                mem = MemoryKind.valueOf(in.getString("mem"));
            } catch (IllegalArgumentException e) {
                throw new MalformedHeaderException("bad memory kind at " + in.path());
            }
            Frame placed = place(in.decoder(), in.takeFrame("fr"), mem);
            try {
                return placed.owned()
                        ? OpaqueBlob.adopt(format, meta, placed.buffer())
                        : OpaqueBlob.view(format, meta, placed.buffer());
            } catch (IllegalArgumentException e) {
                if (placed.owned()) {
                    placed.buffer().close();
                }
                throw new MalformedHeaderException("bad blob at " + in.path() + ": " + e.getMessage());
            }
        }
    }
}
