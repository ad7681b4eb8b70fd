package io.cuwire.cluster;

import io.cuwire.memory.NdArray;
import io.cuwire.ml.ComputeBackends;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import io.cuwire.ml.cluster.KMeans;
import io.cuwire.ml.neighbors.NearestNeighbors;

/** Tasks the cluster tests use, on the workers' class path through {@link TaskProvider}. */
public final class TestTasks implements TaskProvider {
    /** {@code (X, Double factor)}: a new array {@code factor * X} on the worker's device. */
    static final TaskType<NdArray> SCALE = TaskType.of("test.scale", NdArray.class);
    /** {@code (Long millis)}: sleeps, returns nil. */
    static final TaskType<Object> SLEEP = TaskType.of("test.sleep", Object.class);
    /** {@code (KMeans)}: a copy of the centers of a (cached) model. */
    static final TaskType<NdArray> CENTERS = TaskType.of("test.centers", NdArray.class);
    /** {@code (NearestNeighbors)}: a copy of the training rows of a (cached) model. */
    static final TaskType<NdArray> FIT_X = TaskType.of("test.fitx", NdArray.class);
    /** {@code ()}: the worker's device ordinal. */
    static final TaskType<Long> DEVICE = TaskType.of("test.device", Long.class);
    /** {@code (NdArray)}: the sum of its elements (float32), as a double. */
    static final TaskType<Double> SUM = TaskType.of("test.sum", Double.class);
    /**
     * {@code (value, String path)}: holds its argument (a cached model, say) until the file {@code path + ".release"}
     * exists (at most a minute), having made {@code path + ".held"} once it holds it; returns nil.
     */
    static final TaskType<Object> HOLD = TaskType.of("test.hold", Object.class);

    public TestTasks() {
    }

    @Override
    public void register(TaskRegistry registry) {
        registry.register(SCALE, (c, a) -> {
            NdArray x = (NdArray) a.get(0);
            NdArray out = x.copyTo(c.device());
            ComputeBackends.forArray(out).scale((Double) a.get(1), out);
            return out;
        });
        registry.register(SLEEP, (c, a) -> {
            try {
                Thread.sleep((Long) a.get(0));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return null;
        });
        registry.register(CENTERS, (c, a) -> ((KMeans) a.get(0)).clusterCenters().copyTo(c.device()));
        registry.register(FIT_X, (c, a) -> ((NearestNeighbors) a.get(0)).fitX().copyTo(c.device()));
        registry.register(DEVICE, (c, a) -> (long) c.deviceOrdinal());
        registry.register(SUM, (c, a) -> {
            double sum = 0;
            for (float v : ((NdArray) a.get(0)).toFloatArray()) {
                sum += v;
            }
            return sum;
        });
        registry.register(HOLD, (c, a) -> {
            Path path = Path.of((String) a.get(1));
            try {
                Files.createFile(Path.of(path + ".held"));
                for (int i = 0; i < 6_000 && !Files.exists(Path.of(path + ".release")); i++) {
                    Thread.sleep(10);
                }
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return null;
        });
    }
}
