package io.cuwire.spark.connect;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.ArrowStreamReader;
import org.apache.spark.connect.proto.Command;
import org.apache.spark.connect.proto.ConfigRequest;
import org.apache.spark.connect.proto.DataType;
import org.apache.spark.connect.proto.ExecutePlanRequest;
import org.apache.spark.connect.proto.ExecutePlanResponse;
import org.apache.spark.connect.proto.Expression;
import org.apache.spark.connect.proto.Fetch;
import org.apache.spark.connect.proto.MlCommand;
import org.apache.spark.connect.proto.MlCommandResult;
import org.apache.spark.connect.proto.MlOperator;
import org.apache.spark.connect.proto.MlParams;
import org.apache.spark.connect.proto.MlRelation;
import org.apache.spark.connect.proto.ObjectRef;
import org.apache.spark.connect.proto.Plan;
import org.apache.spark.connect.proto.Project;
import org.apache.spark.connect.proto.Relation;
import org.apache.spark.connect.proto.SQL;
import org.apache.spark.connect.proto.SparkConnectServiceGrpc;
import org.apache.spark.connect.proto.UserContext;
import org.sparkproject.connect.grpc.ManagedChannel;
import org.sparkproject.connect.grpc.netty.NettyChannelBuilder;

/**
 * A Spark Connect client of its own JVM that speaks ML over gRPC as PySpark's {@code pyspark.ml} does: it sets the
 * ML backend plugin in its session ({@code Config}), fits estimators by class name ({@code ExecutePlan} of an
 * {@code MlCommand.Fit} over an SQL relation through Spark's {@code VectorAssembler}, itself an
 * {@code MlRelation.Transform} of a transformer by name), reads a model attribute ({@code MlCommand.Fetch}) and
 * transforms with the fitted model's reference ({@code MlRelation.Transform}), decoding the rows from the Arrow
 * batches the server streams back. It uses only the Connect protocol's generated classes and their gRPC stub (the
 * server jar's, with its shaded gRPC and protobuf): no Spark session in this JVM.
 *
 * <p>Arguments: the server's port, the SQL query of the rows (columns {@code id}, {@code label} and the features),
 * the features' columns (comma-separated), then estimators: a class name and the model attributes to fetch (numbers
 * or booleans), {@code NAME:ATTRIBUTE:…}. Prints per estimator {@code fit NAME MODEL_ID},
 * {@code attribute NAME ATTRIBUTE VALUE}, {@code prediction NAME ID VALUE} for every row and, once it has deleted the
 * model ({@code MlCommand.Delete}), {@code deleted NAME after MS ms}; then {@code done}.
 */
public final class GrpcMlClient {
    private final SparkConnectServiceGrpc.SparkConnectServiceBlockingStub stub;
    private final String session = UUID.randomUUID().toString();
    private final UserContext user =
            UserContext.newBuilder().setUserId("cuwire-test").build();

    private GrpcMlClient(ManagedChannel channel) {
        this.stub = SparkConnectServiceGrpc.newBlockingStub(channel);
    }

    public static void main(String[] args) throws IOException {
        long start = System.nanoTime();
        ManagedChannel channel = NettyChannelBuilder.forAddress("127.0.0.1", Integer.parseInt(args[0]))
                .usePlaintext()
                .maxInboundMessageSize(64 << 20)
                .build();
        try {
            GrpcMlClient client = new GrpcMlClient(channel);
            client.set("spark.connect.ml.backend.classes", "io.cuwire.spark.connect.CuwireMlBackend");
            Relation rows = assembled(args[1], args[2].split(","));
            for (int i = 3; i < args.length; i++) {
                String[] nameAndAttributes = args[i].split(":");
                String name = nameAndAttributes[0];
                String model = client.fit(name, rows);
                System.out.println("fit " + name + " " + model);
                for (int a = 1; a < nameAndAttributes.length; a++) {
                    Expression.Literal v = client.fetch(model, nameAndAttributes[a]);
                    System.out.println("attribute " + name + " " + nameAndAttributes[a] + " " + text(v));
                }
                client.predictions(model, rows)
                        .forEach((id, p) -> System.out.println("prediction " + name + " " + id + " " + p));
                // as PySpark when a model is garbage: the server's cache drops it
                client.command(MlCommand.newBuilder()
                        .setDelete(MlCommand.Delete.newBuilder()
                                .addObjRefs(ObjectRef.newBuilder().setId(model)))
                        .build());
                System.out.println("deleted " + name + " after " + (System.nanoTime() - start) / 1_000_000 + " ms");
            }
            System.out.println("done");
        } finally {
            channel.shutdownNow();
        }
    }

    /** Sets {@code key} in this client's session, as {@code SparkSession.builder.remote(...).config(key, value)}. */
    private void set(String key, String value) {
        stub.config(ConfigRequest.newBuilder()
                .setSessionId(session)
                .setUserContext(user)
                .setOperation(ConfigRequest.Operation.newBuilder()
                        .setSet(ConfigRequest.Set.newBuilder()
                                .addPairs(org.apache.spark.connect.proto.KeyValue.newBuilder()
                                        .setKey(key)
                                        .setValue(value))))
                .build());
    }

    /** {@code VectorAssembler(inputCols=columns, outputCol="features").transform(spark.sql(query))}. */
    private static Relation assembled(String query, String[] columns) {
        Expression.Literal.Array.Builder names = Expression.Literal.Array.newBuilder();
        for (String c : columns) {
            names.addElements(Expression.Literal.newBuilder().setString(c));
        }
        DataType strings = DataType.newBuilder()
                .setArray(DataType.Array.newBuilder()
                        .setElementType(DataType.newBuilder().setString(DataType.String.getDefaultInstance()))
                        .setContainsNull(false))
                .build();
        MlParams params = MlParams.newBuilder()
                .putParams(
                        "inputCols",
                        Expression.Literal.newBuilder()
                                .setArray(names)
                                .setDataType(strings)
                                .build())
                .putParams(
                        "outputCol",
                        Expression.Literal.newBuilder().setString("features").build())
                .build();
        return Relation.newBuilder()
                .setMlRelation(MlRelation.newBuilder()
                        .setTransform(MlRelation.Transform.newBuilder()
                                .setTransformer(operator(
                                        "org.apache.spark.ml.feature.VectorAssembler",
                                        MlOperator.OperatorType.OPERATOR_TYPE_TRANSFORMER))
                                .setParams(params)
                                .setInput(Relation.newBuilder()
                                        .setSql(SQL.newBuilder().setQuery(query)))))
                .build();
    }

    private static MlOperator operator(String name, MlOperator.OperatorType type) {
        return MlOperator.newBuilder()
                .setName(name)
                .setUid("client_" + UUID.randomUUID().toString().substring(0, 8))
                .setType(type)
                .build();
    }

    /** {@code estimator.fit(rows)} with the estimator's defaults: the model's reference. */
    private String fit(String estimator, Relation rows) {
        MlCommand fit = MlCommand.newBuilder()
                .setFit(MlCommand.Fit.newBuilder()
                        .setEstimator(operator(estimator, MlOperator.OperatorType.OPERATOR_TYPE_ESTIMATOR))
                        .setParams(MlParams.getDefaultInstance())
                        .setDataset(rows))
                .build();
        return command(fit).getOperatorInfo().getObjRef().getId();
    }

    /** A number or boolean literal as text: integers as integers, so that counts read back exactly. */
    private static String text(Expression.Literal v) {
        return switch (v.getLiteralTypeCase()) {
            case BOOLEAN -> Boolean.toString(v.getBoolean());
            case INTEGER -> Integer.toString(v.getInteger());
            case LONG -> Long.toString(v.getLong());
            case DOUBLE -> Double.toString(v.getDouble());
            case FLOAT -> Float.toString(v.getFloat());
            default -> throw new IllegalStateException("a literal of " + v.getLiteralTypeCase() + ": " + v);
        };
    }

    /** {@code model.<method>}: the attribute's literal. */
    private Expression.Literal fetch(String model, String method) {
        return command(MlCommand.newBuilder()
                        .setFetch(Fetch.newBuilder()
                                .setObjRef(ObjectRef.newBuilder().setId(model))
                                .addMethods(Fetch.Method.newBuilder().setMethod(method)))
                        .build())
                .getParam();
    }

    private MlCommandResult command(MlCommand ml) {
        MlCommandResult result = null;
        for (ExecutePlanResponse r : execute(Plan.newBuilder()
                .setCommand(Command.newBuilder().setMlCommand(ml))
                .build())) {
            if (r.hasMlCommandResult()) {
                result = r.getMlCommandResult();
            }
        }
        if (result == null) {
            throw new IllegalStateException("no ML command result for " + ml);
        }
        return result;
    }

    /** {@code model.transform(rows).select("id", "prediction").collect()}, as id to prediction. */
    private Map<Long, Double> predictions(String model, Relation rows) throws IOException {
        Relation transformed = Relation.newBuilder()
                .setMlRelation(MlRelation.newBuilder()
                        .setTransform(MlRelation.Transform.newBuilder()
                                .setObjRef(ObjectRef.newBuilder().setId(model))
                                .setInput(rows)))
                .build();
        Relation selected = Relation.newBuilder()
                .setProject(Project.newBuilder()
                        .setInput(transformed)
                        .addExpressions(column("id"))
                        .addExpressions(column("prediction")))
                .build();
        Map<Long, Double> out = new TreeMap<>();
        try (BufferAllocator memory = rootAllocator()) {
            for (ExecutePlanResponse r :
                    execute(Plan.newBuilder().setRoot(selected).build())) {
                if (!r.hasArrowBatch()) {
                    continue;
                }
                try (ArrowStreamReader reader = new ArrowStreamReader(
                        new ByteArrayInputStream(r.getArrowBatch().getData().toByteArray()), memory)) {
                    VectorSchemaRoot batch = reader.getVectorSchemaRoot();
                    while (reader.loadNextBatch()) {
                        BigIntVector ids = (BigIntVector) batch.getVector("id");
                        Float8Vector predictions = (Float8Vector) batch.getVector("prediction");
                        for (int i = 0; i < batch.getRowCount(); i++) {
                            out.put(ids.get(i), predictions.get(i));
                        }
                    }
                }
            }
        }
        return out;
    }

    /**
     * Arrow's root allocator, made by name: its class file's annotations name checker-framework types that are not
     * on the class path, which javac reports (a warning the build fails on) when the class is named in source.
     */
    private static BufferAllocator rootAllocator() {
        try {
            return (BufferAllocator) Class.forName("org.apache.arrow.memory.RootAllocator")
                    .getConstructor()
                    .newInstance();
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("no Arrow root allocator", e);
        }
    }

    private static Expression column(String name) {
        return Expression.newBuilder()
                .setUnresolvedAttribute(
                        Expression.UnresolvedAttribute.newBuilder().setUnparsedIdentifier(name))
                .build();
    }

    /** Every response of {@code plan}'s execution, read to its end. */
    private List<ExecutePlanResponse> execute(Plan plan) {
        Iterator<ExecutePlanResponse> it = stub.executePlan(ExecutePlanRequest.newBuilder()
                .setSessionId(session)
                .setUserContext(user)
                .setOperationId(UUID.randomUUID().toString())
                .setClientType("cuwire-test-grpc")
                .setPlan(plan)
                .build());
        List<ExecutePlanResponse> all = new ArrayList<>();
        it.forEachRemaining(all::add);
        return all;
    }
}
