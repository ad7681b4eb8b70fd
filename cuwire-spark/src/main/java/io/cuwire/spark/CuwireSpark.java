package io.cuwire.spark;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.spark.internal.Addresses;
import io.cuwire.spark.internal.Node;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.WeakHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * cuwire in a Spark application, on the driver: broadcast models as handles and look at what the endpoints did.
 * Needs the application to run with {@code spark.plugins=io.cuwire.spark.CuwirePlugin}.
 */
public final class CuwireSpark {
    private static final AtomicLong NEXT_ID = new AtomicLong(System.nanoTime() & 0xffff_ffffL);
    private static final Map<Object, long[]> IDS = Collections.synchronizedMap(new WeakHashMap<>());

    private CuwireSpark() {}

    /**
     * Broadcasts {@code model} (an estimator, an {@link io.cuwire.memory.NdArray}, any value the cuwire registry
     * takes): serializes it on the driver for the header the {@link ModelBroadcast#ref() ref} tasks use carries, and
     * again for each fetch the driver answers (device arrays borrowed as device frames, not copied). Broadcasting
     * the same object again gives the same id and the next version. The model must stay open and unchanged until
     * the broadcast is closed.
     *
     * @throws IllegalStateException if this is not the driver of an application with the cuwire plugin
     */
    @SuppressWarnings("unchecked")
    public static <T> ModelBroadcast<T> broadcast(T model) {
        Node node = driver();
        long[] idVersion;
        synchronized (IDS) {
            idVersion = IDS.computeIfAbsent(model, m -> new long[] {NEXT_ID.getAndIncrement(), 0});
            idVersion[1]++;
        }
        byte[] header = node.publish(idVersion[0], idVersion[1], model);
        ModelRef<T> ref =
                new ModelRef<>(idVersion[0], idVersion[1], header, node.addresses(), (Class<T>) model.getClass());
        return new ModelBroadcast<>(ref, node);
    }

    /**
     * The driver endpoint's device memory: where a model should live to travel as device frames (fitted stages put
     * their fitted state here).
     */
    public static BufferAllocator<DeviceBuffer> deviceMemory() {
        return driver().deviceMemory();
    }

    /** The executors' cuwire endpoints by executor id, as they registered: their TCP addresses. */
    public static Map<String, String> executors() {
        Map<String, String> out = new TreeMap<>();
        driver().executors()
                .forEach((id, address) -> out.put(id, Addresses.parse(address).tcp()));
        return out;
    }

    /**
     * Waits until at least {@code count} executors registered their endpoints.
     *
     * @throws IllegalStateException if they did not within {@code timeout}
     */
    public static Map<String, String> awaitExecutors(int count, Duration timeout) {
        long end = System.nanoTime() + timeout.toNanos();
        while (driver().executors().size() < count) {
            if (System.nanoTime() > end) {
                throw new IllegalStateException(driver().executors().size() + " executors registered a cuwire "
                        + "endpoint within " + timeout + " (expected: " + count + ")");
            }
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted", e);
            }
        }
        return executors();
    }

    /** The driver endpoint's counters. */
    public static NodeStats driverStats() {
        return of(driver().stats(false));
    }

    /**
     * Every registered executor's counters, asked over cuwire, in executor-id order (unreachable executors left
     * out); with {@code reset}, the counters are zeroed after reading.
     */
    public static List<NodeStats> executorStats(boolean reset) {
        Node node = driver();
        List<NodeStats> out = new ArrayList<>();
        for (Map.Entry<String, String> e : executors().entrySet()) {
            try {
                out.add(of(node.statsOf(e.getValue(), reset)));
            } catch (RuntimeException ex) {
                // a lost executor: nothing to count
            }
        }
        return out;
    }

    private static NodeStats of(Node.Counters c) {
        return new NodeStats(
                c.executorId(),
                c.address(),
                c.ipcAddress(),
                c.device(),
                c.partialFits(),
                c.scoredRows(),
                c.fetchedFromDriver(),
                c.fetchedFromPeers(),
                c.fetchedBytes(),
                c.fetchedOver(),
                c.fetchStagedBytes(),
                c.servedToPeers(),
                c.redirects(),
                c.evicted(),
                c.cachedModels(),
                c.copyBytes(),
                c.deviceBytes());
    }

    private static Node driver() {
        Node node = Node.current();
        if (!Node.DRIVER.equals(node.executorId())) {
            throw new IllegalStateException(
                    "CuwireSpark works on the driver; this JVM is executor " + node.executorId());
        }
        return node;
    }
}
