package io.cuwire.spark.ml;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;
import io.cuwire.onnx.OnnxExport;
import io.cuwire.spark.SparkCluster;
import io.cuwire.spark.TestFrames;
import java.io.IOException;
import java.nio.FloatBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.spark.ml.linalg.Vector;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * A Spark model saved as ONNX: {@code OnnxExport.write(model.estimator(), file)} (cuwire-onnx beside cuwire-spark;
 * built where ONNX's protobuf definitions are, as the {@code onnx} profile has it) run by ONNX Runtime for Java gives
 * what the model's transform computed in the executors, within float32 rounding. Compiled only with the {@code onnx}
 * profile (cuwire-spark's pom).
 */
@ExtendWith(SparkCluster.class)
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class CuwireModelOnnxTest {
    /** ONNX Runtime's outputs on {@code rows}, by output name. */
    private static Map<String, Object> onnx(Path model, double[][] rows) throws OrtException {
        int n = rows.length;
        int features = rows[0].length;
        float[] x = new float[n * features];
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < features; j++) {
                x[i * features + j] = (float) rows[i][j];
            }
        }
        OrtEnvironment env = OrtEnvironment.getEnvironment();
        try (OrtSession s = env.createSession(model.toString(), new OrtSession.SessionOptions());
                OnnxTensor input = OnnxTensor.createTensor(env, FloatBuffer.wrap(x), new long[] {n, features});
                OrtSession.Result r = s.run(Map.of("X", input))) {
            return Map.of(
                    "label", r.get("label").orElseThrow().getValue(),
                    "probabilities", r.get("probabilities").orElseThrow().getValue());
        }
    }

    @Test
    void shouldRunAFittedSparkModelInOnnxRuntimeAsItsTransform(@TempDir Path dir) throws IOException, OrtException {
        SparkMlTest.Data d = SparkMlTest.data(SparkCluster.session(), 3, 71);
        // rows that float32 holds exactly: ONNX's input is float32, the Spark model's transform reads doubles
        double[][] x = new double[d.x().length][];
        for (int i = 0; i < x.length; i++) {
            x[i] = new double[d.x()[i].length];
            for (int j = 0; j < x[i].length; j++) {
                x[i][j] = (float) d.x()[i][j];
            }
        }
        Dataset<Row> frame = TestFrames.frame(x, d.y(), 4);
        for (CuwireClassificationModel<?> model : new CuwireClassificationModel<?>[] {
            new CuwireLogisticRegression().setMaxIter(50).fit(frame),
            new CuwireRandomForestClassifier()
                    .setParam("nEstimators", 6)
                    .setParam("maxDepth", 5)
                    .setParam("seed", 9L)
                    .fit(frame)
        }) {
            try (model) {
                String what = model.getClass().getSimpleName();
                Path file = dir.resolve(what + ".onnx");
                OnnxExport.write(model.estimator(), file);
                assertTrue(Files.size(file) > 0, what);
                Map<String, Object> out = onnx(file, x);
                long[] labels = (long[]) out.get("label");
                float[][] proba = (float[][]) out.get("probabilities");
                Dataset<Row> t = model.transform(frame);
                double[] prediction = SparkMlTest.predictions(t, "prediction");
                int n = 0;
                for (Row r : t.select("id", "probability").collectAsList()) {
                    int i = (int) r.getLong(0);
                    double[] p = ((Vector) r.get(1)).toArray();
                    for (int c = 0; c < p.length; c++) {
                        assertEquals(p[c], proba[i][c], 2e-5 * (1 + Math.abs(p[c])), what + " row " + i);
                    }
                    assertEquals(prediction[i], labels[i], 0, what + " label of row " + i);
                    n++;
                }
                assertEquals(SparkMlTest.ROWS, n, what + ": rows compared");
            }
        }
    }
}
