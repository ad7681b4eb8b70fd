package io.cuwire.bench.spark;

import io.cuwire.spark.CuwirePlugin;
import io.cuwire.spark.CuwireSpark;
import java.time.Duration;
import java.util.List;
import org.apache.spark.sql.SparkSession;

/**
 * The Spark application every Spark benchmark runs in: the cuwire plugin, Kryo as Spark's serializer, the executors
 * on this JVM's class path (one host: the driver's jars are where the executors can read them) with the options the
 * cuwire jars need, then the benchmark's {@code --conf} settings, which win. For {@code local-cluster[...]} (no Spark
 * distribution) the executors get {@code SPARK_SCALA_VERSION} and {@code SPARK_TESTING}, as cuwire-spark's tests do.
 */
final class SparkBenchSession {
    private SparkBenchSession() {}

    /**
     * Starts the application and waits up to 5 minutes for {@code executors} executors' cuwire endpoints.
     *
     * @throws IllegalStateException if they did not register in time (the session is stopped)
     */
    static SparkSession start(String app, String master, List<String> conf, int executors) {
        SparkSession.Builder b = SparkSession.builder()
                .appName(app)
                .master(master)
                .config("spark.plugins", CuwirePlugin.class.getName())
                .config("spark.serializer", "org.apache.spark.serializer.KryoSerializer")
                .config("spark.kryoserializer.buffer.max", "1g")
                .config("spark.executor.extraClassPath", System.getProperty("java.class.path"))
                .config(
                        "spark.executor.extraJavaOptions",
                        "--enable-native-access=ALL-UNNAMED --add-modules=jdk.incubator.vector")
                .config("spark.driver.host", "127.0.0.1")
                .config("spark.driver.bindAddress", "127.0.0.1")
                .config("spark.ui.enabled", "false");
        if (master.startsWith("local-cluster[")) {
            b.config("spark.executorEnv.SPARK_SCALA_VERSION", "2.13").config("spark.executorEnv.SPARK_TESTING", "1");
        }
        for (String c : conf) {
            int eq = c.indexOf('=');
            b.config(c.substring(0, eq), c.substring(eq + 1));
        }
        SparkSession spark = b.getOrCreate();
        spark.sparkContext().setLogLevel("WARN");
        try {
            CuwireSpark.awaitExecutors(executors, Duration.ofMinutes(5));
        } catch (RuntimeException e) {
            spark.stop();
            throw e;
        }
        return spark;
    }
}
