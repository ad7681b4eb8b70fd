package io.cuwire.spark;

import java.util.Map;
import java.util.UUID;
import org.apache.spark.connect.proto.Expression;
import org.apache.spark.connect.proto.Fetch;
import org.apache.spark.connect.proto.MlCommand;
import org.apache.spark.connect.proto.MlCommandResult;
import org.apache.spark.connect.proto.MlOperator;
import org.apache.spark.connect.proto.MlParams;
import org.apache.spark.connect.proto.MlRelation;
import org.apache.spark.connect.proto.ObjectRef;
import org.apache.spark.connect.proto.Read;
import org.apache.spark.connect.proto.Relation;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connect.ml.MLHandler$;
import org.apache.spark.sql.connect.service.SessionHolder;
import org.apache.spark.sql.connect.service.SessionHolder$;

/**
 * Spark Connect's ML server code, driven as a Connect client drives it: the test builds the client's protocol
 * messages ({@code MlCommand.Fit}, {@code MlRelation.Transform}, {@code Fetch}) and hands them to the server's
 * {@code MLHandler} in a session of its own ({@code SessionHolder}), which finds the estimator (through the ML
 * backend plugins and {@code ServiceLoader}), sets the params from their literals, fits, caches the model in the
 * session's {@code MLCache} and transforms. What it leaves out is the gRPC hop and the client's own code: no Connect
 * client that speaks ML runs here (PySpark cannot be installed; the JVM client has no ML API).
 */
public final class ConnectMl {
    private final SessionHolder holder;

    private ConnectMl(SessionHolder holder) {
        this.holder = holder;
    }

    /**
     * A Connect session over a new session of {@code spark} (its own SQL conf and temporary views) with
     * {@code conf} set: what a Connect client's session is on the server.
     */
    public static ConnectMl session(SparkSession spark, Map<String, String> conf) {
        org.apache.spark.sql.classic.SparkSession s = (org.apache.spark.sql.classic.SparkSession) spark.newSession();
        conf.forEach((k, v) -> s.conf().set(k, v));
        return new ConnectMl(
                SessionHolder$.MODULE$.apply("cuwire-test", UUID.randomUUID().toString(), s));
    }

    /** The server's session holder (its session, its model cache). */
    public SessionHolder holder() {
        return holder;
    }

    /** The session the server runs this client's plans in. */
    public SparkSession spark() {
        return holder.session();
    }

    /** Registers {@code df} as the temporary view {@code name}, for relations that read it. */
    public void table(String name, Dataset<Row> df) {
        spark().createDataFrame(df.rdd(), df.schema()).createOrReplaceTempView(name);
    }

    /** A relation reading the temporary view {@code name}, as a client's {@code spark.table(name)}. */
    public static Relation read(String name) {
        return Relation.newBuilder()
                .setRead(Read.newBuilder()
                        .setNamedTable(Read.NamedTable.newBuilder().setUnparsedIdentifier(name)))
                .build();
    }

    /**
     * Fits the estimator {@code className} with {@code params} on view {@code table}, as a client's
     * {@code estimator.fit(df)}: the cached model's id.
     */
    public String fit(String className, Map<String, Object> params, String table) {
        MlCommand fit = MlCommand.newBuilder()
                .setFit(MlCommand.Fit.newBuilder()
                        .setEstimator(MlOperator.newBuilder()
                                .setName(className)
                                .setUid("connect_"
                                        + UUID.randomUUID().toString().substring(0, 8))
                                .setType(MlOperator.OperatorType.OPERATOR_TYPE_ESTIMATOR))
                        .setParams(params(params))
                        .setDataset(read(table)))
                .build();
        MlCommandResult result = MLHandler$.MODULE$.handleMlCommand(holder, fit);
        return result.getOperatorInfo().getObjRef().getId();
    }

    /** The cached model {@code id} applied to view {@code table}, as a client's {@code model.transform(df)}. */
    public Dataset<Row> transform(String id, String table) {
        MlRelation transform = MlRelation.newBuilder()
                .setTransform(MlRelation.Transform.newBuilder()
                        .setObjRef(ObjectRef.newBuilder().setId(id))
                        .setInput(read(table)))
                .build();
        return MLHandler$.MODULE$.transformMLRelation(transform, holder);
    }

    /** Attribute {@code method} of cached model {@code id}, as a client's {@code model.coefficients}. */
    public Expression.Literal fetch(String id, String method) {
        MlCommand fetch = MlCommand.newBuilder()
                .setFetch(Fetch.newBuilder()
                        .setObjRef(ObjectRef.newBuilder().setId(id))
                        .addMethods(Fetch.Method.newBuilder().setMethod(method)))
                .build();
        return MLHandler$.MODULE$.handleMlCommand(holder, fetch).getParam();
    }

    /** The cached object {@code id}, as the server's handlers get it (reloading an offloaded model). */
    public Object cached(String id) {
        return holder.mlCache().get(id);
    }

    private static MlParams params(Map<String, Object> params) {
        MlParams.Builder b = MlParams.newBuilder();
        params.forEach((name, v) -> {
            Expression.Literal.Builder l = Expression.Literal.newBuilder();
            switch (v) {
                case Double d -> l.setDouble(d);
                case Integer i -> l.setInteger(i);
                case Long n -> l.setLong(n);
                case Boolean z -> l.setBoolean(z);
                case String s -> l.setString(s);
                default -> throw new IllegalArgumentException("no literal for " + v);
            }
            b.putParams(name, l.build());
        });
        return b.build();
    }
}
