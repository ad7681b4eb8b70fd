package io.cuwire.spark;

import io.cuwire.test.TestRandom;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.ml.linalg.VectorUDT;
import org.apache.spark.ml.linalg.Vectors;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/** Training frames on the shared cluster ({@link SparkCluster}). */
public final class TestFrames {
    private TestFrames() {}

    /** Rows of {@code id}, {@code features} (an ml vector) and {@code label}, in {@code parts} contiguous slices. */
    public static Dataset<Row> frame(double[][] x, double[] y, int parts) {
        List<Row> rows = new ArrayList<>();
        for (int i = 0; i < x.length; i++) {
            rows.add(RowFactory.create((long) i, Vectors.dense(x[i]), y[i]));
        }
        StructType schema = new StructType(new StructField[] {
            new StructField("id", DataTypes.LongType, false, Metadata.empty()),
            new StructField("features", new VectorUDT(), false, Metadata.empty()),
            new StructField("label", DataTypes.DoubleType, false, Metadata.empty())
        });
        JavaSparkContext jsc =
                JavaSparkContext.fromSparkContext(SparkCluster.session().sparkContext());
        return SparkCluster.session().createDataFrame(jsc.parallelize(rows, parts), schema);
    }

    /**
     * {@code rows} rows of y = x·(1.5, -2, 0.5, 3) + 1 + {@code noise}·N(0, 1) over 4 standard normal features, from
     * the seed named {@code seed}, in {@code parts} slices.
     */
    public static Dataset<Row> linear(String seed, int rows, double noise, int parts) {
        Random r = TestRandom.random(seed);
        double[] w = {1.5, -2, 0.5, 3};
        double[][] x = new double[rows][4];
        double[] y = new double[rows];
        for (int i = 0; i < rows; i++) {
            for (int j = 0; j < 4; j++) {
                x[i][j] = r.nextGaussian();
                y[i] += w[j] * x[i][j];
            }
            y[i] += 1 + noise * r.nextGaussian();
        }
        return frame(x, y, parts);
    }
}
