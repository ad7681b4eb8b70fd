package io.cuwire.onnx.internal;

import com.google.protobuf.ByteString;
import io.cuwire.onnx.internal.proto.OnnxMl.AttributeProto;
import io.cuwire.onnx.internal.proto.OnnxMl.GraphProto;
import io.cuwire.onnx.internal.proto.OnnxMl.ModelProto;
import io.cuwire.onnx.internal.proto.OnnxMl.NodeProto;
import io.cuwire.onnx.internal.proto.OnnxMl.OperatorSetIdProto;
import io.cuwire.onnx.internal.proto.OnnxMl.TensorProto;
import io.cuwire.onnx.internal.proto.OnnxMl.TensorShapeProto;
import io.cuwire.onnx.internal.proto.OnnxMl.TypeProto;
import io.cuwire.onnx.internal.proto.OnnxMl.ValueInfoProto;
import java.util.ArrayList;
import java.util.List;

/**
 * Builds one ONNX graph over the generated protobuf classes: initializers, nodes with their attributes, the inputs and
 * outputs, and the model around them. Node outputs get fresh names ({@code name_1}, …) unless named.
 */
public final class OnnxGraph {
    /** The ONNX IR version written (ONNX 1.12). */
    public static final long IR_VERSION = 8;
    /** The default domain's opset. */
    public static final long OPSET = 17;
    /** The {@code ai.onnx.ml} domain's opset. */
    public static final long ML_OPSET = 3;
    /** The domain of the classical ML operators. */
    public static final String ML = "ai.onnx.ml";
    /** The symbolic batch dimension of inputs and outputs. */
    public static final String BATCH = "N";

    private final GraphProto.Builder graph = GraphProto.newBuilder();
    private int fresh;

    /** An empty graph named {@code name}. */
    public OnnxGraph(String name) {
        graph.setName(name);
    }

    /** Declares the float32 input {@code name} of shape (N, features). */
    public String floatInput(String name, long features) {
        graph.addInput(value(name, TensorProto.DataType.FLOAT, -1, features));
        return name;
    }

    /** Declares the graph output {@code name}: the element type and the shape (-1 for the batch dimension). */
    public void output(String name, TensorProto.DataType type, long... dims) {
        graph.addOutput(value(name, type, dims));
    }

    private static ValueInfoProto value(String name, TensorProto.DataType type, long... dims) {
        TensorShapeProto.Builder shape = TensorShapeProto.newBuilder();
        for (long d : dims) {
            shape.addDim(
                    d < 0
                            ? TensorShapeProto.Dimension.newBuilder().setDimParam(BATCH)
                            : TensorShapeProto.Dimension.newBuilder().setDimValue(d));
        }
        TypeProto.Tensor.Builder tensor =
                TypeProto.Tensor.newBuilder().setElemType(type.getNumber()).setShape(shape);
        return ValueInfoProto.newBuilder()
                .setName(name)
                .setType(TypeProto.newBuilder().setTensorType(tensor))
                .build();
    }

    /** A float32 constant of shape {@code dims}. */
    public String floats(String name, float[] data, long... dims) {
        TensorProto.Builder t = constant(name, TensorProto.DataType.FLOAT, data.length, dims);
        for (float v : data) {
            t.addFloatData(v);
        }
        graph.addInitializer(t);
        return name;
    }

    /** An int64 constant of shape {@code dims}. */
    public String int64s(String name, long[] data, long... dims) {
        TensorProto.Builder t = constant(name, TensorProto.DataType.INT64, data.length, dims);
        for (long v : data) {
            t.addInt64Data(v);
        }
        graph.addInitializer(t);
        return name;
    }

    /** A constant's name, type and shape, after checking that {@code length} values fill the shape. */
    private static TensorProto.Builder constant(String name, TensorProto.DataType type, int length, long... dims) {
        checkSize(name, length, dims);
        TensorProto.Builder t = TensorProto.newBuilder().setName(name).setDataType(type.getNumber());
        for (long d : dims) {
            t.addDims(d);
        }
        return t;
    }

    private static void checkSize(String name, int length, long... dims) {
        long n = 1;
        for (long d : dims) {
            n *= d;
        }
        if (n != length) {
            throw new IllegalArgumentException(
                    "constant " + name + " has " + length + " values (expected: " + n + " for its shape)");
        }
    }

    /** A node of the default domain with one output, named freshly; returns the output's name. */
    public String node(String op, List<String> inputs, AttributeProto... attributes) {
        return node(op, "", inputs, List.of(op.toLowerCase() + "_" + ++fresh), attributes)
                .getFirst();
    }

    /** A node of {@code domain} with the outputs named; returns them. */
    public List<String> node(
            String op, String domain, List<String> inputs, List<String> outputs, AttributeProto... attributes) {
        NodeProto.Builder n = NodeProto.newBuilder()
                .setOpType(op)
                .setDomain(domain)
                .setName(op + "_" + ++fresh)
                .addAllInput(inputs)
                .addAllOutput(outputs);
        for (AttributeProto a : attributes) {
            n.addAttribute(a);
        }
        graph.addNode(n);
        return outputs;
    }

    /** Renames {@code value} to {@code name} (an Identity node), to be a graph output. */
    public String named(String value, String name) {
        return node("Identity", "", List.of(value), List.of(name)).getFirst();
    }

    /** The model: this graph with the IR version, the opsets and the producer. */
    public byte[] toBytes(String producerVersion, String doc) {
        ModelProto model = ModelProto.newBuilder()
                .setIrVersion(IR_VERSION)
                .addOpsetImport(OperatorSetIdProto.newBuilder().setDomain("").setVersion(OPSET))
                .addOpsetImport(OperatorSetIdProto.newBuilder().setDomain(ML).setVersion(ML_OPSET))
                .setProducerName("cuwire")
                .setProducerVersion(producerVersion)
                .setDocString(doc)
                .setGraph(graph)
                .build();
        return model.toByteArray();
    }

    // ---------------------------------------------------------------- attributes

    /** An int attribute. */
    public static AttributeProto attr(String name, long v) {
        return AttributeProto.newBuilder()
                .setName(name)
                .setType(AttributeProto.AttributeType.INT)
                .setI(v)
                .build();
    }

    /** A float attribute. */
    public static AttributeProto attr(String name, float v) {
        return AttributeProto.newBuilder()
                .setName(name)
                .setType(AttributeProto.AttributeType.FLOAT)
                .setF(v)
                .build();
    }

    /** A string attribute. */
    public static AttributeProto attr(String name, String v) {
        return AttributeProto.newBuilder()
                .setName(name)
                .setType(AttributeProto.AttributeType.STRING)
                .setS(ByteString.copyFromUtf8(v))
                .build();
    }

    /** An ints attribute. */
    public static AttributeProto ints(String name, long[] v) {
        AttributeProto.Builder a = AttributeProto.newBuilder().setName(name).setType(AttributeProto.AttributeType.INTS);
        for (long x : v) {
            a.addInts(x);
        }
        return a.build();
    }

    /** A floats attribute. */
    public static AttributeProto floats(String name, float[] v) {
        AttributeProto.Builder a =
                AttributeProto.newBuilder().setName(name).setType(AttributeProto.AttributeType.FLOATS);
        for (float x : v) {
            a.addFloats(x);
        }
        return a.build();
    }

    /** A strings attribute. */
    public static AttributeProto strings(String name, List<String> v) {
        AttributeProto.Builder a =
                AttributeProto.newBuilder().setName(name).setType(AttributeProto.AttributeType.STRINGS);
        List<ByteString> bytes = new ArrayList<>(v.size());
        for (String s : v) {
            bytes.add(ByteString.copyFromUtf8(s));
        }
        a.addAllStrings(bytes);
        return a.build();
    }
}
