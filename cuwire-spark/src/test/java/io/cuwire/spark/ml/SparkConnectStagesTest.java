package io.cuwire.spark.ml;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.spark.ConnectMl;
import io.cuwire.spark.SparkCluster;
import io.cuwire.spark.TestFrames;
import java.io.IOException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.spark.ml.Estimator;
import org.apache.spark.ml.Model;
import org.apache.spark.ml.Transformer;
import org.apache.spark.ml.util.MLReader;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.connect.ml.MLUtils$;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;
import scala.jdk.javaapi.CollectionConverters;

/**
 * cuwire's stages under Spark Connect's ML server code (the server's {@code MLUtils} and {@code MLHandler}, in this
 * JVM over the shared cluster; see {@link ConnectMl} for what is left out): every public stage is found by the
 * server's {@code ServiceLoader} discovery; a client's fit and transform of a cuwire stage give the classic fit's
 * predictions; and a model the session's cache offloads to disk comes back from it without device memory until it is
 * used, then predicts as before.
 */
@ExtendWith(SparkCluster.class)
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class SparkConnectStagesTest {
    private static final int ROWS = 2000;

    @Test
    void shouldFindEveryPublicStageThroughTheServersServiceLoaderDiscovery() throws Exception {
        List<Class<?>> stages = stageClasses();
        Set<String> estimators = new TreeSet<>();
        Set<String> models = new TreeSet<>();
        for (Class<?> c : stages) {
            if (Estimator.class.isAssignableFrom(c)) {
                estimators.add(c.getName());
            } else if (Model.class.isAssignableFrom(c)) {
                models.add(c.getName());
            }
        }
        assertTrue(estimators.size() >= 13 && models.size() >= 8, estimators + " " + models);
        Set<String> found =
                CollectionConverters.asJava(
                                MLUtils$.MODULE$.loadOperators(Estimator.class).keySet())
                        .stream()
                        .collect(java.util.stream.Collectors.toCollection(TreeSet::new));
        assertTrue(found.containsAll(estimators), "not discovered: " + minus(estimators, found));
        Set<String> transformers = new TreeSet<>(CollectionConverters.asJava(
                MLUtils$.MODULE$.loadOperators(Transformer.class).keySet()));
        assertTrue(transformers.containsAll(models), "not discovered: " + minus(models, transformers));
        for (String name : estimators) {
            // what the server calls to make a client's estimator
            Object e = Class.forName(name).getConstructor(String.class).newInstance("connect_uid");
            assertEquals("connect_uid", ((Estimator<?>) e).uid());
        }
        for (String name : models) {
            // what the cache calls to reload an offloaded model
            Method read = Class.forName(name).getMethod("read");
            assertTrue(Modifier.isStatic(read.getModifiers()), name);
            assertInstanceOf(MLReader.class, read.invoke(null), name);
        }
    }

    @Test
    void shouldFailToUseAModelMadeWithItsNoArgumentConstructor() {
        CuwireLinearRegressionModel m = new CuwireLinearRegressionModel();
        IllegalStateException e = assertThrows(IllegalStateException.class, m::coefficients);
        assertTrue(e.getMessage().contains("no-argument constructor"), e.getMessage());
        m.close();
    }

    @Test
    void shouldFitAndTransformACuwireStageAsAConnectClientDoes() {
        Data d = data();
        ConnectMl c = ConnectMl.session(SparkCluster.session(), Map.of());
        c.table("train", d.frame);
        String id = c.fit(
                CuwireLinearRegression.class.getName(),
                Map.of("regParam", 0.1, "standardization", false, "featuresCol", "features"),
                "train");
        Object cached = c.cached(id);
        CuwireLinearRegressionModel model = assertInstanceOf(CuwireLinearRegressionModel.class, cached);
        assertEquals(0.1, model.parent().getOrDefault(model.parent().getParam("regParam")));
        double[] viaConnect = predictions(c.transform(id, "train"));
        try (CuwireLinearRegressionModel classic = new CuwireLinearRegression()
                .setRegParam(0.1)
                .setStandardization(false)
                .fit(d.frame)) {
            assertArrayEquals(predictions(classic.transform(d.frame)), viaConnect, 1e-9);
        }
        assertEquals(1, c.holder().mlCache().clear());
    }

    @Test
    void shouldReloadAnOffloadedModelWithoutDeviceMemoryUntilItIsUsed() throws IOException {
        Data d = data();
        // maxInMemorySize 0: the cache keeps no model in memory, each one is offloaded to the driver's disk at once
        ConnectMl c = ConnectMl.session(
                SparkCluster.session(),
                Map.of(
                        "spark.connect.session.connectML.mlCache.memoryControl.enabled", "true",
                        "spark.connect.session.connectML.mlCache.memoryControl.maxInMemorySize", "0"));
        c.table("train", d.frame);
        String id = c.fit(CuwireLinearRegression.class.getName(), Map.of(), "train");
        assertNull(c.holder().mlCache().cachedModel().get(id), "the model stayed in memory: nothing was offloaded");
        Path saved = c.holder().mlCache().getModelOffloadingPath(id);
        assertTrue(Files.isRegularFile(saved.resolve("cuwire/model.cuwire")), saved + " holds no cuwire frames");

        CuwireLinearRegressionModel reloaded = assertInstanceOf(CuwireLinearRegressionModel.class, c.cached(id));
        assertFalse(reloaded.isLoaded(), "the reload took device memory before the model was used");
        long size = reloaded.estimatedSize();
        assertEquals(Files.size(saved.resolve("cuwire/model.cuwire")), size);
        assertFalse(reloaded.isLoaded(), "sizing the reloaded model read it into device memory");

        double[] reloadedPredictions = predictions(reloaded.transform(d.frame));
        assertTrue(reloaded.isLoaded());
        double[] viaConnect = predictions(c.transform(id, "train"));
        try (CuwireLinearRegressionModel classic = new CuwireLinearRegression().fit(d.frame)) {
            double[] expected = predictions(classic.transform(d.frame));
            assertArrayEquals(expected, reloadedPredictions, 1e-9);
            assertArrayEquals(expected, viaConnect, 1e-9);
            // a fitted model's size is its serialized estimator's, a little less than the file (which adds a magic)
            long fitted = classic.estimatedSize();
            assertTrue(fitted > 0 && fitted <= size && size - fitted < 64, fitted + " against " + size);
        }
        reloaded.close();
        c.holder().mlCache().clear();
    }

    // ---------------------------------------------------------------- helpers

    private record Data(Dataset<Row> frame) {}

    /** y = x·w + 1 + noise over 4 features, {@value #ROWS} rows. */
    private static Data data() {
        return new Data(TestFrames.linear("SparkConnectStagesTest", ROWS, 0.1, 4));
    }

    private static double[] predictions(Dataset<Row> transformed) {
        return SparkMlStagesTest.predictions(transformed, "prediction");
    }

    private static Set<String> minus(Set<String> a, Set<String> b) {
        Set<String> out = new TreeSet<>(a);
        out.removeAll(b);
        return out;
    }

    /** The public, concrete classes of io.cuwire.spark.ml and io.cuwire.spark.connect, from the compiled classes. */
    private static List<Class<?>> stageClasses() throws IOException, URISyntaxException, ClassNotFoundException {
        Path root = Path.of(CuwireModel.class
                .getProtectionDomain()
                .getCodeSource()
                .getLocation()
                .toURI());
        List<Class<?>> out = new ArrayList<>();
        for (String pkg : List.of("io/cuwire/spark/ml", "io/cuwire/spark/connect")) {
            try (Stream<Path> files = Files.list(root.resolve(pkg))) {
                for (Path f : files.toList()) {
                    String n = f.getFileName().toString();
                    if (n.endsWith(".class") && !n.contains("$")) {
                        Class<?> c = Class.forName(pkg.replace('/', '.') + "." + n.substring(0, n.length() - 6));
                        if (Modifier.isPublic(c.getModifiers()) && !Modifier.isAbstract(c.getModifiers())) {
                            out.add(c);
                        }
                    }
                }
            }
        }
        return out;
    }
}
