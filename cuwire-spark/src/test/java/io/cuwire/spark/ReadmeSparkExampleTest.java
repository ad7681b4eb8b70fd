package io.cuwire.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.cuwire.spark.ml.CuwireLinearRegression;
import io.cuwire.spark.ml.CuwireLinearRegressionModel;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.spark.ml.Pipeline;
import org.apache.spark.ml.PipelineModel;
import org.apache.spark.ml.PipelineStage;
import org.apache.spark.ml.feature.VectorAssembler;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/** The README's "On Spark" example, verbatim between the markers: it compiles and runs on the local cluster. */
@ExtendWith(SparkCluster.class)
class ReadmeSparkExampleTest {
    private static final Path SOURCE = Path.of("src/test/java/io/cuwire/spark/ReadmeSparkExampleTest.java");
    private static final Path README = Path.of("../README.md");

    @Test
    @Timeout(value = 3, unit = TimeUnit.MINUTES)
    void shouldFitSaveLoadAndPredictAsTheReadmeShows(@TempDir Path dir) throws IOException {
        String path = dir.resolve("model").toString();
        // README begin
        SparkSession spark = SparkSession.builder()
                .config("spark.plugins", "io.cuwire.spark.CuwirePlugin") // a cuwire endpoint in every executor
                .getOrCreate();
        Dataset<Row> train = spark.range(0, 10_000)
                .selectExpr(
                        "cast(id % 17 as double) as x0",
                        "cast(id % 13 as double) as x1", "cast(2 * (id % 17) - (id % 13) + 3 as double) as y");
        VectorAssembler features =
                new VectorAssembler().setInputCols(new String[] {"x0", "x1"}).setOutputCol("features");
        Pipeline pipeline =
                new Pipeline().setStages(new PipelineStage[] {features, new CuwireLinearRegression().setLabelCol("y")});
        PipelineModel model = pipeline.fit(train); // partial statistics in the executors, merged on the driver
        model.write().overwrite().save(path); // the fitted state as a cuwire header plus frames
        PipelineModel loaded = PipelineModel.load(path);
        Row first = loaded.transform(train).select("x0", "x1", "prediction").first(); // each executor fetches once
        ((CuwireLinearRegressionModel) model.stages()[1]).close(); // optional: released once nothing holds it
        ((CuwireLinearRegressionModel) loaded.stages()[1]).close();
        // README end
        assertEquals(2 * first.getDouble(0) - first.getDouble(1) + 3, first.getDouble(2), 1e-6);
    }

    @Test
    void shouldBeTheCodeTheReadmeShows() throws IOException {
        org.junit.jupiter.api.Assumptions.assumeTrue(
                Files.exists(SOURCE) && Files.exists(README),
                "compares source files: runs from the cuwire-spark module of a checkout");
        assertEquals(
                block(Files.readAllLines(SOURCE, StandardCharsets.UTF_8), "// README begin", "// README end"),
                block(Files.readAllLines(README, StandardCharsets.UTF_8), "```java", "```", "## On Spark"));
    }

    /** The stripped, non-blank lines between {@code begin} and {@code end} (after the line {@code after}, if any). */
    private static List<String> block(List<String> lines, String begin, String end, String... after) {
        List<String> out = new ArrayList<>();
        boolean seen = after.length == 0;
        boolean in = false;
        for (String line : lines) {
            String s = line.strip();
            if (!seen) {
                seen = s.equals(after[0]);
            } else if (!in) {
                in = s.equals(begin);
            } else if (s.equals(end)) {
                return out;
            } else if (!s.isEmpty()) {
                out.add(s);
            }
        }
        return out;
    }
}
