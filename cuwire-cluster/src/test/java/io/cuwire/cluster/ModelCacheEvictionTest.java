package io.cuwire.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.cuwire.memory.Devices;
import io.cuwire.memory.NdArray;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A worker whose device is full evicts the least recently used model that no running task holds instead of failing
 * the next broadcast, and names what holds the device when nothing can be evicted. One worker process on an emulated
 * device of 64 MiB ({@code -Dcuwire.emulated.memoryBytes} for the worker only); models of 24 MiB, so two fit and a
 * third needs room. {@code DevicePressureGpuTest} fills a real GPU instead.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ModelCacheEvictionTest {
    private static final long MIB = 1L << 20;
    private static final int ELEMENTS = (int) (24 * MIB / Float.BYTES);

    private static NdArray model(Client client, float value) {
        float[] v = new float[ELEMENTS];
        Arrays.fill(v, value);
        return NdArray.fromArray(client.memory(), v, ELEMENTS);
    }

    private static double sum(Client client, ModelHandle h) {
        return client.call(0, TestTasks.SUM, h).join();
    }

    @Test
    void shouldEvictTheLeastRecentlyUsedIdleModelToFitABroadcastAndNeverOneInUse(@TempDir Path dir) throws Exception {
        assumeTrue(
                Devices.platform().equals("emulated"),
                "plays a small device with the emulated one; on a GPU " + "DevicePressureGpuTest fills the device");
        try (LocalCluster cluster = LocalCluster.builder()
                        .workers(1)
                        .jvmOptions(List.of("-Dcuwire.emulated.memoryBytes=" + 64 * MIB))
                        .start();
                NdArray a = model(cluster.client(), 1);
                NdArray b = model(cluster.client(), 2);
                NdArray c = model(cluster.client(), 3);
                NdArray big = model(cluster.client(), 4)) {
            Client client = cluster.client();
            ModelHandle ha = client.broadcast(a);
            ModelHandle hb = client.broadcast(b);
            assertEquals(ELEMENTS, sum(client, ha), "a task used a after b was cached: b is the least recently used");

            BroadcastResult rc = client.broadcast(c, BroadcastOptions.DEFAULT);
            assertEquals(1, rc.sent(), "48 MiB of 64 held: c fits once one model goes");
            assertEquals(3.0 * ELEMENTS, sum(client, rc.handle()));
            WorkerStats stats = client.workerStats(0).join();
            assertEquals(1, stats.evictedModels());
            assertEquals(2, stats.models());

            CompletionException gone = assertThrows(CompletionException.class, () -> sum(client, hb));
            assertInstanceOf(RemoteTaskException.class, gone.getCause());
            assertTrue(
                    gone.getCause()
                            .getMessage()
                            .contains(hb + " is not in worker 0's cache (cached: none): it was "
                                    + "evicted to make room in the device's memory; broadcast it again"),
                    gone.getCause().getMessage());
            BroadcastResult again = client.broadcast(a, BroadcastOptions.DEFAULT);
            assertEquals(0, again.sent(), "a was used more recently than b, and stayed");
            assertEquals(1, again.cacheHits());

            // c held by a running task, a cached and idle: a model of 24 MiB evicts a, never c.
            Path hold = dir.resolve("hold");
            CompletableFuture<Object> holding = client.call(0, TestTasks.HOLD, rc.handle(), hold.toString());
            awaitFile(Path.of(hold + ".held"));
            BroadcastResult rb = client.broadcast(b, BroadcastOptions.DEFAULT);
            assertEquals(1, rb.sent());
            assertEquals(2.0 * ELEMENTS, sum(client, rb.handle()));
            assertEquals(2, client.workerStats(0).join().evictedModels());

            // c in use, b idle: 48 MiB more cannot fit even with b gone (24 + 48 > 64). Chunked, the broadcast fails
            // with the worker's message, which names what holds the device.
            int wideElements = (int) (48 * MIB / Float.BYTES);
            try (NdArray wide = NdArray.fromArray(client.memory(), new float[wideElements], wideElements)) {
                RuntimeException e = assertThrows(
                        RuntimeException.class,
                        () -> client.broadcast(
                                wide, BroadcastOptions.DEFAULT.strategy(BroadcastOptions.Strategy.CHAIN)));
                String m = e.getMessage();
                assertTrue(
                        m.contains("emulated device 0 cannot allocate 50331648 bytes: 25165824 of 67108864 "
                                + "allocated"),
                        m);
                assertTrue(m.contains("memory of emulated0 (cuwire emulated device (shared memory in "), m);
                assertTrue(m.contains("- allocator 'worker-0-device': 25165824 bytes, 1 open buffer(s) of its own"), m);
                assertTrue(
                        m.contains("- model cache of worker 0: 1 model(s), 25165824 bytes of device frames, 1 in "
                                + "use by running tasks (never evicted), 0 evictable; 3 evicted so far"),
                        m);
            }
            Files.createFile(Path.of(hold + ".release"));
            holding.get(60, TimeUnit.SECONDS);
            assertEquals(3.0 * ELEMENTS, sum(client, rc.handle()), "the model in use stayed whole");
            assertTrue(client.isAlive(0));
            assertEquals(
                    ELEMENTS * 4.0,
                    client.call(0, TestTasks.SUM, client.broadcast(big)).join(),
                    "and the cache takes models again");
        }
    }

    private static void awaitFile(Path file) throws InterruptedException {
        for (int i = 0; i < 6_000 && !Files.exists(file); i++) {
            Thread.sleep(10);
        }
        assertTrue(Files.exists(file), file + " never appeared");
    }
}
