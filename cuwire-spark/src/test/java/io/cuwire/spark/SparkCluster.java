package io.cuwire.spark;

import java.time.Duration;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * One Spark application for every test class of the run: {@code local-cluster[2,1,1024]}, two executor JVMs on the
 * emulated device, with the cuwire plugin and Kryo as Spark's serializer (the system property
 * {@code cuwire.spark.executorMemoryMb} changes the executors' memory, for the benchmark); started by the first
 * class that needs it (10–40 s on two cores) and stopped when the run ends. Executors take the test class path, so
 * no Spark distribution is needed.
 */
public final class SparkCluster implements BeforeAllCallback {
    /** The executors of the shared application. */
    public static final int EXECUTORS = 2;

    private static SparkSession session;

    @Override
    public void beforeAll(ExtensionContext context) {
        context.getRoot().getStore(ExtensionContext.Namespace.GLOBAL).computeIfAbsent(SparkCluster.class, k ->
                (AutoCloseable) SparkCluster::stop);
        session();
    }

    /** The shared session, started on first use. */
    public static synchronized SparkSession session() {
        if (session == null) {
            session = SparkSession.builder()
                    .appName("cuwire-spark-tests")
                    .master("local-cluster[" + EXECUTORS + ",1,"
                            + Integer.getInteger("cuwire.spark.executorMemoryMb", 1024) + "]")
                    .config("spark.serializer", "org.apache.spark.serializer.KryoSerializer")
                    .config("spark.kryoserializer.buffer.max", "1g")
                    .config("spark.plugins", CuwirePlugin.class.getName())
                    .config("spark.executor.extraClassPath", System.getProperty("java.class.path"))
                    .config("spark.executor.extraJavaOptions", "--enable-native-access=ALL-UNNAMED")
                    .config("spark.executorEnv.SPARK_SCALA_VERSION", "2.13")
                    .config("spark.executorEnv.SPARK_TESTING", "1")
                    .config("spark.driver.host", "127.0.0.1")
                    .config("spark.driver.bindAddress", "127.0.0.1")
                    .config("spark.ui.enabled", "false")
                    .config("spark.task.maxFailures", "4")
                    .config("spark.sql.shuffle.partitions", "4")
                    .getOrCreate();
            session.sparkContext().setLogLevel("WARN");
            CuwireSpark.awaitExecutors(EXECUTORS, Duration.ofMinutes(3));
        }
        return session;
    }

    private static synchronized void stop() {
        if (session != null) {
            session.stop();
            session = null;
        }
    }
}
