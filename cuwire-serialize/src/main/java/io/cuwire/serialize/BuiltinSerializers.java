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
    private BuiltinSerializers() {
    }

    static void registerAll(TypeRegistry registry) {
        registry.register(NdArray.class, "cuwire.ndarray");
        registry.register(CsrMatrix.class, "cuwire.csr");
        registry.register(CscMatrix.class, "cuwire.csc");
        registry.register(CooMatrix.class, "cuwire.coo");
        for (Family family : new Family[] {Family.CUDA, Family.HOST}) {
            registry.register(NdArray.class, family, new NdArraySerializer());
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
            out.put("mem", a.kind().name());
            if (out.family() == Family.HOST && a.kind() == MemoryKind.DEVICE) {
                out.put("fr", out.hostCopyFrame(a.buffer()));
            } else {
                out.put("fr", out.frame(a.buffer()));
            }
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
            long elements = 1;
            for (long d : shape) {
                if (d < 0) {
                    throw new MalformedHeaderException("negative dimension " + d + " at " + in.path());
                }
                elements = Math.multiplyHigh(elements, d) != 0 ? -1 : elements * d;
                if (elements < 0) {
                    throw new MalformedHeaderException("ndarray size overflows at " + in.path());
                }
            }
            Frame frame = in.takeFrame("fr");
            if (Math.multiplyHigh(elements, dtype.byteSize()) != 0 || elements * dtype.byteSize() != frame.length()) {
                throw new MalformedHeaderException(dtype.wireName() + " " + java.util.Arrays.toString(shape)
                        + " does not fill a frame of " + frame.length() + " bytes at " + in.path());
            }
            Buffer buffer = frame.buffer();
            if (mem == MemoryKind.DEVICE && buffer.kind() != MemoryKind.DEVICE) {
                DeviceBuffer rebuilt = in.target().device().allocate(frame.length());
                try {
                    CopyEngine.copy(buffer, rebuilt);
                } catch (RuntimeException e) {
                    rebuilt.close();
                    throw e;
                }
                if (frame.owned()) {
                    buffer.close();
                }
                return NdArray.adopt(rebuilt, dtype, order, shape);
            }
            return frame.owned() ? NdArray.adopt(buffer, dtype, order, shape)
                    : NdArray.view(buffer, 0, dtype, order, shape);
        }
    }
}
