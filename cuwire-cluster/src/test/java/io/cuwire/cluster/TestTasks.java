package io.cuwire.cluster;

import io.cuwire.memory.NdArray;
import io.cuwire.ml.ComputeBackends;
import io.cuwire.ml.cluster.KMeans;
import io.cuwire.ml.neighbors.NearestNeighbors;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.ReadContext;
import io.cuwire.serialize.Serializer;
import io.cuwire.serialize.TypeRegistry;
import io.cuwire.serialize.WriteContext;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import javax.management.JMException;
import javax.management.MBeanServer;
import javax.management.ObjectName;

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
    /**
     * {@code ()}: after a {@link System#gc()}, the worker JVM's {@code direct} and {@code mapped} buffer pools
     * ({@link BufferPoolMXBean}): {@code [direct count, direct bytes used, mapped count, mapped bytes used]}.
     */
    static final TaskType<Object> POOLS = TaskType.of("test.pools", Object.class);
    /**
     * {@code ()}: after a {@link System#gc()}, the worker JVM's heap and non-heap memory ({@link MemoryMXBean}):
     * {@code [heap used, heap committed, non-heap committed]} in bytes.
     */
    static final TaskType<Object> HEAP = TaskType.of("test.heap", Object.class);
    /** {@code (anything ...)}: nil; the worker closes the arguments (a decoder entry that stores nothing). */
    static final TaskType<Object> DROP = TaskType.of("test.drop", Object.class);
    /**
     * {@code ()}: asks a JaCoCo agent started with {@code jmx=true} in the worker to write what it recorded so far
     * (a worker halts, so the agent's own dump at exit never runs); whether there was one.
     */
    static final TaskType<Boolean> COVERAGE_DUMP = TaskType.of("test.coverage-dump", Boolean.class);
    /** {@code (NdArray)}: the sum of its elements (float32), as a double. */
    static final TaskType<Double> SUM = TaskType.of("test.sum", Double.class);
    /**
     * {@code (value, String path)}: holds its argument (a cached model, say) until the file {@code path + ".release"}
     * exists (at most a minute), having made {@code path + ".held"} once it holds it; returns nil.
     */
    static final TaskType<Object> HOLD = TaskType.of("test.hold", Object.class);

    /** {@code (CountedModel)}: the sum of its weights (float64). */
    static final TaskType<Double> COUNTED_SUM = TaskType.of("test.counted-sum", Double.class);
    /** How often this JVM serialized a {@link CountedModel}. */
    static final AtomicInteger COUNTED_WRITES = new AtomicInteger();

    /** A model whose serializer counts its calls ({@link #COUNTED_WRITES}): one array, closed with the model. */
    public record CountedModel(NdArray weights) implements AutoCloseable {
        @Override
        public void close() {
            weights.close();
        }
    }

    /** {@link CountedModel}'s serializer in every family but {@code java}: the array as a nested value. */
    static final class CountingSerializer implements Serializer<CountedModel> {
        @Override
        public void write(WriteContext out, CountedModel value) {
            COUNTED_WRITES.incrementAndGet();
            out.writeValue("weights", value.weights());
        }

        @Override
        public CountedModel read(ReadContext in) {
            return new CountedModel(in.readValue("weights", NdArray.class));
        }
    }

    public TestTasks() {}

    @Override
    public void registerTypes(TypeRegistry registry) {
        registry.register(CountedModel.class, "test.counted-model");
        for (Family f : List.of(Family.CUDA, Family.HOST)) {
            registry.register(CountedModel.class, f, new CountingSerializer());
        }
    }

    @Override
    public void register(TaskRegistry registry) {
        registry.register(SCALE, (c, a) -> {
            NdArray x = (NdArray) a.get(0);
            double factor = (Double) a.get(1); // before allocating: a peer's factor may be of any type
            NdArray out = x.copyTo(c.device());
            try {
                ComputeBackends.forArray(out).scale(factor, out);
                return out;
            } catch (RuntimeException | Error e) {
                out.close();
                throw e;
            }
        });
        registry.register(SLEEP, (c, a) -> {
            try {
                Thread.sleep((Long) a.get(0));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return null;
        });
        registry.register(
                CENTERS, (c, a) -> ((KMeans) a.get(0)).clusterCenters().copyTo(c.device()));
        registry.register(FIT_X, (c, a) -> ((NearestNeighbors) a.get(0)).fitX().copyTo(c.device()));
        registry.register(DEVICE, (c, a) -> (long) c.deviceOrdinal());
        registry.register(POOLS, (c, a) -> HostileTarget.bufferPools());
        registry.register(HEAP, (c, a) -> {
            System.gc();
            MemoryMXBean memory = ManagementFactory.getMemoryMXBean();
            return List.of(
                    memory.getHeapMemoryUsage().getUsed(),
                    memory.getHeapMemoryUsage().getCommitted(),
                    memory.getNonHeapMemoryUsage().getCommitted());
        });
        registry.register(DROP, (c, a) -> null);
        registry.register(COVERAGE_DUMP, (c, a) -> dumpCoverage());
        registry.register(SUM, (c, a) -> {
            double sum = 0;
            for (float v : ((NdArray) a.get(0)).toFloatArray()) {
                sum += v;
            }
            return sum;
        });
        registry.register(COUNTED_SUM, (c, a) -> {
            double sum = 0;
            for (double v : ((CountedModel) a.get(0)).weights().toDoubleArray()) {
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

    private static boolean dumpCoverage() {
        MBeanServer server = ManagementFactory.getPlatformMBeanServer();
        try {
            ObjectName jacoco = new ObjectName("org.jacoco:type=Runtime");
            if (!server.isRegistered(jacoco)) {
                return false;
            }
            server.invoke(jacoco, "dump", new Object[] {false}, new String[] {"boolean"});
            return true;
        } catch (JMException e) {
            throw new IllegalStateException("the JaCoCo agent did not write its data: " + e, e);
        }
    }
}
