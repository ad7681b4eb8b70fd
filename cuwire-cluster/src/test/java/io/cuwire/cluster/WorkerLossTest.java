package io.cuwire.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

class WorkerLossTest {
    @Test
    @Timeout(value = 90, unit = TimeUnit.SECONDS)
    void aKilledWorkerShouldFailPendingAndLaterCallsWithWorkerLostWhileTheOthersGoOn() throws Exception {
        try (LocalCluster cluster = LocalCluster.builder().workers(2)
                .heartbeat(Duration.ofMillis(500), Duration.ofSeconds(5)).start()) {
            Client client = cluster.client();
            CompletableFuture<Object> pending = client.call(1, TestTasks.SLEEP, 60_000L);
            Thread.sleep(200);
            long killed = System.nanoTime();
            cluster.processOf(1).destroyForcibly();
            ExecutionException e = assertThrows(ExecutionException.class, () -> pending.get(10, TimeUnit.SECONDS));
            WorkerLostException lost = assertInstanceOf(WorkerLostException.class, e.getCause());
            assertEquals(1, lost.worker());
            assertTrue(System.nanoTime() - killed < Duration.ofSeconds(10).toNanos());
            assertTrue(!client.isAlive(1));

            ExecutionException later = assertThrows(ExecutionException.class,
                    () -> client.call(1, TestTasks.DEVICE).get(1, TimeUnit.SECONDS));
            assertInstanceOf(WorkerLostException.class, later.getCause());
            assertEquals(0L, client.call(0, TestTasks.DEVICE).get(10, TimeUnit.SECONDS));
            assertEquals(1, client.broadcast(new io.cuwire.ml.linear.LinearRegression(), BroadcastOptions.DEFAULT)
                    .sent(), "the broadcast goes to the live worker");
        }
    }

    @Test
    @Timeout(value = 30, unit = TimeUnit.SECONDS)
    void shouldRefuseATransportThisBuildDoesNotHave() {
        ClusterException e = assertThrows(ClusterException.class,
                () -> LocalCluster.builder().workers(1).transport("carrier-pigeon").start());
        assertTrue(e.getMessage().contains("carrier-pigeon"), e.getMessage());
    }
}
