package io.cuwire.spark.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.spark.ConnectMl;
import io.cuwire.spark.SparkCluster;
import io.cuwire.spark.ml.CuwireLinearRegression;
import io.cuwire.spark.ml.CuwireLinearRegressionModel;
import io.cuwire.test.ChildJvm;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.apache.spark.ml.feature.VectorAssembler;
import org.apache.spark.ml.regression.RandomForestRegressionModel;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.connect.service.SparkConnectService$;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A real Spark Connect client over gRPC: the Connect server ({@code spark-connect_2.13}'s
 * {@code SparkConnectService}) runs in this JVM on the shared cluster, on an ephemeral loopback port, and
 * {@link GrpcMlClient}, in a JVM of its own, sets the cuwire backend plugin in its session and fits cuwire's
 * {@code CuwireLinearRegression} (found by the server's {@code ServiceLoader} discovery) and Spark's own
 * {@code LinearRegression} (which the plugin maps onto cuwire's) on rows of {@code spark.range}, then transforms with
 * each fitted model's reference and reads the predictions from the Arrow batches; then Spark's
 * {@code RandomForestRegressor} with its defaults, which the plugin grows on cuwire's forest. What the client received
 * is held to this JVM's own fits of the same rows (the linear ones by cuwire's stage, the forest by the plugin as the
 * server's handlers call it: its node count and every prediction). (The client cannot share this JVM: the Connect
 * client jar and the server jar carry the same protocol classes over different shaded protobufs; the client uses the
 * server jar's.)
 */
@ExtendWith(SparkCluster.class)
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class SparkConnectGrpcTest {
    private static final int ROWS = 40;
    /** y = 1 + 2 x0 - x1 + 0.5 x2 + a deterministic wobble, over features that are not collinear. */
    private static final String QUERY = "SELECT id, x0, x1, x2, 1 + 2 * x0 - x1 + 0.5 * x2 + 0.1 * sin(id * 1.7)"
            + " AS label FROM (SELECT id, CAST(id AS DOUBLE) / 10 AS x0, cos(id) AS x1, (id % 7) / 3.0 AS x2"
            + " FROM range(" + ROWS + "))";

    /** Spark's forest, which the plugin grows on cuwire's (its defaults: 20 trees of depth 5, 32 bins). */
    private static final String FOREST = "org.apache.spark.ml.regression.RandomForestRegressor";

    @Test
    void shouldFitAndTransformThroughARealConnectClientOverGrpc() throws Exception {
        SparkConf conf = SparkEnv.get().conf();
        conf.set("spark.connect.grpc.binding.address", "127.0.0.1");
        conf.set("spark.connect.grpc.binding.port", "0");
        SparkConnectService$ server = SparkConnectService$.MODULE$;
        server.start(SparkCluster.session().sparkContext());
        List<String> lines;
        try (ChildJvm client = ChildJvm.builder(GrpcMlClient.class)
                .jvmOptions(
                        "-Xmx384m",
                        "--add-opens=java.base/java.nio=ALL-UNNAMED",
                        "--sun-misc-unsafe-memory-access=allow",
                        "-Dio.netty.tryReflectionSetAccessible=true")
                .args(
                        Integer.toString(server.localPort()),
                        QUERY,
                        "x0,x1,x2",
                        "io.cuwire.spark.ml.CuwireLinearRegression",
                        "org.apache.spark.ml.regression.LinearRegression:intercept:hasSummary",
                        FOREST + ":totalNumNodes:getNumTrees")
                .start()) {
            int exit = client.awaitExit(Duration.ofSeconds(90));
            assertEquals(0, exit, client.output());
            lines = client.lines();
            lines.stream().filter(l -> !l.startsWith("prediction ")).forEach(System.out::println);
        } finally {
            server.stop(scala.Option.empty(), scala.Option.empty());
            conf.remove("spark.connect.grpc.binding.port");
            conf.remove("spark.connect.grpc.binding.address");
        }
        assertEquals("done", lines.getLast(), String.join("\n", lines));

        // this JVM's cuwire fit of the same rows
        Dataset<Row> rows = new VectorAssembler()
                .setInputCols(new String[] {"x0", "x1", "x2"})
                .setOutputCol("features")
                .transform(SparkCluster.session().sql(QUERY));
        try (CuwireLinearRegressionModel local = new CuwireLinearRegression().fit(rows)) {
            Map<Long, Double> expected = new TreeMap<>();
            for (Row r : local.transform(rows).select("id", "prediction").collectAsList()) {
                expected.put(r.getLong(0), r.getDouble(1));
            }
            assertEquals(ROWS, expected.size());
            for (String estimator : List.of(
                    "io.cuwire.spark.ml.CuwireLinearRegression", "org.apache.spark.ml.regression.LinearRegression")) {
                Map<Long, Double> received = new TreeMap<>();
                for (String line : prefixed(lines, "prediction " + estimator + " ")) {
                    String[] idAndValue = line.split(" ");
                    received.put(Long.parseLong(idAndValue[0]), Double.parseDouble(idAndValue[1]));
                }
                assertEquals(expected.keySet(), received.keySet(), estimator);
                for (long id : expected.keySet()) {
                    assertEquals(expected.get(id), received.get(id), 1e-9, estimator + " row " + id);
                }
            }
            // Spark's estimator, mapped: cuwire's fit (Spark's own would leave a training summary), read by the client
            String spark = "attribute org.apache.spark.ml.regression.LinearRegression ";
            assertEquals(local.intercept(), Double.parseDouble(value(lines, spark + "intercept ")), 1e-9);
            assertEquals("false", value(lines, spark + "hasSummary "));
            assertTrue(
                    Math.abs(local.intercept() - 1) < 0.2, "the fit found the rows' intercept: " + local.intercept());
        }

        // Spark's forest over gRPC against the same estimator fitted in this JVM through the plugin, as the server's
        // handlers fit it: the same trees (cuwire's, grown for Spark's defaults), the same predictions
        ConnectMl c = ConnectMl.session(
                SparkCluster.session(), Map.of("spark.connect.ml.backend.classes", CuwireMlBackend.class.getName()));
        c.table("grpc_rows", rows);
        String id = c.fit(FOREST, Map.of(), "grpc_rows");
        RandomForestRegressionModel forest = assertInstanceOf(RandomForestRegressionModel.class, c.cached(id));
        assertEquals(CuwireBackedRandomForestRegressor.class, forest.parent().getClass());
        String attributes = "attribute " + FOREST + " ";
        assertEquals(forest.totalNumNodes(), Integer.parseInt(value(lines, attributes + "totalNumNodes ")));
        assertEquals(forest.getNumTrees(), Integer.parseInt(value(lines, attributes + "getNumTrees ")));
        Map<Long, Double> received = new TreeMap<>();
        for (String line : prefixed(lines, "prediction " + FOREST + " ")) {
            String[] idAndValue = line.split(" ");
            received.put(Long.parseLong(idAndValue[0]), Double.parseDouble(idAndValue[1]));
        }
        List<Row> here = c.transform(id, "grpc_rows")
                .select("id", "prediction")
                .orderBy("id")
                .collectAsList();
        assertEquals(ROWS, here.size());
        assertEquals(ROWS, received.size());
        double spread = 0;
        for (Row r : here) {
            assertEquals(r.getDouble(1), received.get(r.getLong(0)), 1e-12, "forest row " + r.getLong(0));
            spread += Math.abs(r.getDouble(1) - here.getFirst().getDouble(1));
        }
        assertTrue(spread > 0, "a forest that predicts one value for every row proves nothing");
        c.holder().mlCache().clear();
    }

    private static List<String> prefixed(List<String> lines, String prefix) {
        List<String> out = new ArrayList<>();
        for (String l : lines) {
            if (l.startsWith(prefix)) {
                out.add(l.substring(prefix.length()));
            }
        }
        return out;
    }

    private static String value(List<String> lines, String prefix) {
        List<String> found = prefixed(lines, prefix);
        assertEquals(1, found.size(), prefix + " in\n" + String.join("\n", lines));
        return found.getFirst();
    }
}
