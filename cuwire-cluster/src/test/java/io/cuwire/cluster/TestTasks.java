package io.cuwire.cluster;

import io.cuwire.memory.NdArray;
import io.cuwire.ml.ComputeBackends;
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
    }
}
