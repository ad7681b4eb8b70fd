package io.cuwire.bench.spark;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * Whether Spark is on the class path, asked before a Spark benchmark's classes load: {@code cuwire-bench} declares
 * Spark {@code provided}, so the GPU bundle and {@code cuwire-cli}'s class path carry the benchmarks without it. No
 * Spark class is referenced here.
 */
public final class SparkClassPath {
    /** One class of each Spark artifact the Spark benchmarks load, with the artifact. */
    static final List<String[]> NEEDED = List.of(
            new String[] {"org.apache.spark.SparkContext", "spark-core_2.13"},
            new String[] {"org.apache.spark.sql.SparkSession", "spark-sql_2.13"},
            new String[] {"org.apache.spark.ml.regression.LinearRegression", "spark-mllib_2.13"},
            new String[] {"scala.collection.immutable.Seq", "scala-library 2.13"});

    private SparkClassPath() {}

    /** Why the Spark benchmarks cannot run with this class's loader, or empty when they can. */
    public static Optional<String> missing() {
        return missing(SparkClassPath.class.getClassLoader());
    }

    /**
     * Why the Spark benchmarks cannot run with {@code loader}: the artifacts (and one class of each) it cannot load,
     * or empty when it loads them all.
     */
    public static Optional<String> missing(ClassLoader loader) {
        List<String> absent = new ArrayList<>();
        for (String[] c : NEEDED) {
            try {
                Class.forName(c[0], false, loader);
            } catch (ClassNotFoundException | LinkageError e) {
                absent.add(c[1] + " (" + c[0] + ")");
            }
        }
        return absent.isEmpty()
                ? Optional.empty()
                : Optional.of("needs Apache Spark " + "4.2 on the class path, and it lacks " + String.join(", ", absent)
                        + ": run it with ./cuwire bench (which adds cuwire-bench/target/spark/lib) or from the Spark "
                        + "bundle (build/spark-bundle.sh), not from the GPU bundle");
    }
}
