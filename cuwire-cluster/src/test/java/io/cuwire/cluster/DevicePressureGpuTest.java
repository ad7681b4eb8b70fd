package io.cuwire.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.cuda.Cuda;
import io.cuwire.cuda.CudaTestSupport;
import io.cuwire.memory.AllocationLimitException;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.NdArray;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A real GPU filled to the brim: one worker on device 0 caches two models, then this process (the client, on the same
 * device) allocates until the driver refuses. The next broadcast succeeds by evicting the least recently used model;
 * with the only other model held by a running task, a larger broadcast fails with the worker's message naming what
 * holds the device. The emulated run of the same policy is {@link ModelCacheEvictionTest}.
 */
@Tag("gpu")
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class DevicePressureGpuTest {
    private static final long MIB = 1L << 20;
    private static final int ELEMENTS = (int) (256 * MIB / Float.BYTES);

    private static NdArray model(BufferAllocator<DeviceBuffer> mem, int elements, float value) {
        float[] v = new float[elements];
        Arrays.fill(v, value);
        return NdArray.fromArray(mem, v, elements);
    }

    /**
     * Allocates from {@code mem} until the device refuses even 2 MiB, then gives back the last (smallest) pieces until
     * 64 MiB are free again — room for the driver's own needs (streams, IPC openings), far from a model's 256 MiB.
     * The caller closes what it got.
     */
    private static List<DeviceBuffer> fill(BufferAllocator<DeviceBuffer> mem) {
        List<DeviceBuffer> filler = new ArrayList<>();
        for (long chunk = 1L << 30; chunk >= 2 * MIB; ) {
            try {
                filler.add(mem.allocate(chunk));
            } catch (AllocationLimitException e) {
                chunk /= 2;
            }
        }
        while (!filler.isEmpty() && Devices.get(0).freeMemory() < 64 * MIB) {
            filler.removeLast().close();
            Cuda.trimPool(Devices.get(0));
        }
        return filler;
    }

    @Test
    void shouldBroadcastIntoAFullDeviceByEvictingAndNameTheHoldersWhenNothingCanGo(@TempDir Path dir) throws Exception {
        CudaTestSupport.assumeCuda();
        try (LocalCluster cluster = LocalCluster.builder().workers(1).devices(0).start()) {
            Client client = cluster.client();
            BufferAllocator<DeviceBuffer> mem = client.memory();
            List<DeviceBuffer> filler = new ArrayList<>();
            try (NdArray a = model(mem, ELEMENTS, 1);
                    NdArray b = model(mem, ELEMENTS, 2);
                    NdArray c = model(mem, ELEMENTS, 3);
                    NdArray d = model(mem, 2 * ELEMENTS, 4)) {
                ModelHandle ha = client.broadcast(a);
                ModelHandle hb = client.broadcast(b);
                assertEquals(2.0 * ELEMENTS, client.call(0, TestTasks.SUM, hb).join(), "b used last: a goes first");

                filler.addAll(fill(mem));
                long free = Devices.get(0).freeMemory();
                assertTrue(free < 256 * MIB, "the device is full: " + free + " bytes free");

                BroadcastResult rc = client.broadcast(c, BroadcastOptions.DEFAULT);
                assertEquals(1, rc.sent());
                assertEquals(
                        3.0 * ELEMENTS,
                        client.call(0, TestTasks.SUM, rc.handle()).join());
                assertTrue(client.workerStats(0).join().evictedModels() >= 1);
                CompletionException gone = assertThrows(
                        CompletionException.class,
                        () -> client.call(0, TestTasks.SUM, ha).join());
                assertTrue(
                        gone.getCause().getMessage().contains("it was evicted to make room in the device's memory"),
                        gone.getCause().getMessage());

                Path hold = dir.resolve("hold");
                CompletableFuture<Object> holding = client.call(0, TestTasks.HOLD, rc.handle(), hold.toString());
                for (int i = 0; i < 6_000 && !Files.exists(Path.of(hold + ".held")); i++) {
                    Thread.sleep(10);
                }
                assertTrue(Files.exists(Path.of(hold + ".held")), "the task holds c");
                RuntimeException e = assertThrows(
                        RuntimeException.class,
                        () -> client.broadcast(d, BroadcastOptions.DEFAULT.strategy(BroadcastOptions.Strategy.CHAIN)));
                String m = e.getMessage();
                assertTrue(m.contains("cannot allocate 536870912 bytes"), m);
                assertTrue(m.contains("memory of cuda0 ("), m);
                assertTrue(m.contains("- allocator 'worker-0-device': "), m);
                assertTrue(m.contains("- CUDA memory pool of cuda0: "), m);
                assertTrue(
                        m.contains("- model cache of worker 0: 1 model(s), 268435456 bytes of device frames, 1 in "
                                + "use by running tasks (never evicted), 0 evictable"),
                        m);

                Files.createFile(Path.of(hold + ".release"));
                holding.get(60, TimeUnit.SECONDS);
                assertEquals(
                        3.0 * ELEMENTS,
                        client.call(0, TestTasks.SUM, rc.handle()).join());
                assertTrue(client.isAlive(0));
            } finally {
                filler.forEach(DeviceBuffer::close);
                Cuda.trimPool(Devices.get(0));
            }
        }
    }
}
