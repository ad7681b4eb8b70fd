package io.cuwire.spark.ml;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import io.cuwire.ml.Estimator;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.Serialized;
import io.cuwire.spark.SparkCluster;
import io.cuwire.spark.internal.FrameStreams;
import io.cuwire.spark.internal.Node;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Proxy;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.apache.spark.ml.param.Params;
import org.apache.spark.ml.param.ParamsSuite$;
import org.apache.spark.ml.util.DefaultReadWriteTest;
import org.apache.spark.ml.util.MLTestingUtils$;
import org.apache.spark.ml.util.MLWritable;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.scalatest.Assertions;
import scala.runtime.BoxedUnit;

/**
 * MLlib's contract, checked by Spark's own ML test utilities from {@code spark-mllib_2.13} 4.1.0's test jar (Maven
 * Central has none for 4.2.0; they run against 4.2.0 as they are): {@code ParamsSuite.checkParams} on every stage
 * and model, {@code MLTestingUtils.checkCopyAndUids}, {@code DefaultReadWriteTest.testDefaultReadWrite} (with its
 * save-to-local check) on every stage and model, and {@code MLTestingUtils.checkNumericTypes} on every stage with
 * labels: the same model from labels of every numeric type, and MLlib's message for a string label.
 */
@ExtendWith(SparkCluster.class)
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class SparkMlContractTest {
    /**
     * Spark's {@code DefaultReadWriteTest} trait, saving under {@code dir}: a proxy that answers {@code tempDir} and
     * runs the trait's own methods, and ScalaTest's assertions it calls on its suite.
     */
    static DefaultReadWriteTest readWriteTest(Path dir) {
        InvocationHandler h = (proxy, method, args) -> {
            if (method.getName().equals("tempDir") && method.getParameterCount() == 0) {
                return dir.toFile();
            }
            if (method.isDefault()) {
                return InvocationHandler.invokeDefault(proxy, method, args);
            }
            throw new UnsupportedOperationException("the read-write check called " + method);
        };
        return (DefaultReadWriteTest) Proxy.newProxyInstance(
                SparkMlContractTest.class.getClassLoader(),
                new Class<?>[] {DefaultReadWriteTest.class, Assertions.class},
                h);
    }

    /** Spark's read-write check of {@code instance}: save, refuse to save again, overwrite, read, load, params. */
    static <T extends Params & MLWritable> void checkReadWrite(T instance, Path dir) {
        readWriteTest(dir).testDefaultReadWrite(instance, true, true);
    }

    @Test
    void shouldPassSparksParamsCopyAndReadWriteChecksWithEveryStageAndModel(@TempDir Path dir) {
        Dataset<Row> df = SparkMlLifetimeTest.frame();
        for (Supplier<CuwireEstimator<?, ?, ?>> s : SparkMlLifetimeTest.stages()) {
            checkStageAndModel(s.get(), df, dir);
        }
    }

    private static void checkStageAndModel(CuwireEstimator<?, ?, ?> stage, Dataset<Row> df, Path dir) {
        ParamsSuite$.MODULE$.checkParams(stage);
        checkReadWrite(stage, dir);
        CuwireModel<?> model = stage.fit(df);
        ParamsSuite$.MODULE$.checkParams(model);
        MLTestingUtils$.MODULE$.checkCopyAndUids(stage, model);
        checkReadWrite(model, dir);
    }

    @Test
    void shouldTakeEveryNumericLabelTypeInEveryStageWithLabels() {
        List<Supplier<CuwireEstimator<?, ?, ?>>> stages = SparkMlLifetimeTest.stages();
        for (Supplier<CuwireEstimator<?, ?, ?>> s : stages) {
            if (s.get() instanceof CuwirePredictor<?, ?, ?> p) {
                checkNumericTypes(
                        p, p instanceof CuwireClassifier<?, ?, ?> || p instanceof CuwireRandomForestClassifier);
            }
        }
    }

    /** Spark's check: labels of every numeric type give the same fitted state; a string label is refused. */
    private static <E extends Estimator, S extends CuwirePredictor<E, S, M>, M extends CuwireModel<M>>
            void checkNumericTypes(CuwirePredictor<E, S, M> stage, boolean classification) {
        MLTestingUtils$.MODULE$.checkNumericTypes(stage, SparkCluster.session(), classification, (M a, M b) -> {
            assertArrayEquals(fittedBytes(a), fittedBytes(b), stage + ": the same model from every label type");
            return BoxedUnit.UNIT;
        });
    }

    /** The fitted estimator of {@code m} as cuwire bytes (header and frames). */
    static byte[] fittedBytes(CuwireModel<?> m) {
        Node node = Node.current();
        try (Serialized s = node.registry().serialize(m.estimator(), Family.CUDA, Family.HOST)) {
            return FrameStreams.toBytes(s, node.hostMemory());
        }
    }
}
