package io.cuwire.cluster.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.cluster.ClusterException;
import io.cuwire.serialize.TypeRegistry;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class ModelCacheTest {
    /** A model that counts how often it was closed. */
    static final class Model implements AutoCloseable {
        final AtomicInteger closed = new AtomicInteger();

        @Override
        public void close() {
            closed.incrementAndGet();
        }
    }

    private final ModelCache cache = new ModelCache("worker 7", new TypeRegistry());

    @Test
    void shouldCloseAReplacedVersionOnlyAfterItsLastLease() {
        Model v1 = new Model();
        cache.put(1, 1, v1, () -> {});
        ModelCache.Lease l = cache.acquire(1, 1, "model 1 v1", ClusterException::new);
        cache.put(1, 2, new Model(), () -> {});
        assertEquals(0, v1.closed.get(), "a leased version stays open");
        assertSame(v1, l.value());
        l.close();
        l.close();
        assertEquals(1, v1.closed.get(), "closed once, with its last lease");
        assertFalse(cache.holds(1, 1));
        assertTrue(cache.holds(1, 2));
    }

    @Test
    void shouldRetireAfterTheGivenStepRan() {
        Model v1 = new Model();
        cache.put(1, 1, v1, () -> {});
        int[] closedWhenAcknowledged = {-1};
        cache.put(1, 2, new Model(), () -> closedWhenAcknowledged[0] = v1.closed.get());
        assertEquals(0, closedWhenAcknowledged[0]);
        assertEquals(1, v1.closed.get());
    }

    @Test
    void shouldEvictTheLeastRecentlyUsedModelNoLeaseHolds() {
        Model a = new Model();
        Model b = new Model();
        Model c = new Model();
        cache.put(1, 1, a, () -> {});
        cache.put(2, 1, b, () -> {});
        cache.put(3, 1, c, () -> {});
        ModelCache.Lease held = cache.acquire(1, 1, "model 1 v1", ClusterException::new); // the oldest, but in use
        assertTrue(cache.holds(2, 1)); // a use: 3 is now the least recently used free one
        assertTrue(cache.evictOne(100));
        assertEquals(1, c.closed.get());
        assertEquals(0, a.closed.get() + b.closed.get());
        assertTrue(cache.evictOne(100));
        assertEquals(1, b.closed.get());
        assertFalse(cache.evictOne(100), "the leased model is never evicted");
        assertEquals(2, cache.evictions());
        ClusterException gone =
                assertThrows(ClusterException.class, () -> cache.acquire(3, 1, "model 3 v1", ClusterException::new));
        assertEquals(
                "model 3 v1 is not in worker 7's cache (cached: none): it was evicted to make room in the "
                        + "device's memory; broadcast it again",
                gone.getMessage());
        held.close();
        assertEquals(0, a.closed.get());
        assertTrue(cache.describe().startsWith("model cache of worker 7: 1 model(s), "), cache.describe());
    }

    @Test
    void shouldLoadOnceWhileOthersWaitForThatLoad() throws Exception {
        CountDownLatch loading = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        AtomicInteger loads = new AtomicInteger();
        Model m = new Model();
        CompletableFuture<ModelCache.Lease> first = CompletableFuture.supplyAsync(() -> cache.acquire(5, 3, () -> {
            loads.incrementAndGet();
            loading.countDown();
            await(release);
            return m;
        }));
        assertTrue(loading.await(30, TimeUnit.SECONDS));
        assertNull(cache.awaitAcquire(5, 4, Duration.ZERO), "another version: not held, nothing to wait for");
        CompletableFuture<ModelCache.Lease> second = CompletableFuture.supplyAsync(() -> cache.acquire(5, 3, () -> {
            loads.incrementAndGet();
            return new Model();
        }));
        CompletableFuture<ModelCache.Lease> served =
                CompletableFuture.supplyAsync(() -> cache.awaitAcquire(5, 3, Duration.ofSeconds(30)));
        release.countDown();
        ModelCache.Lease a = first.get(30, TimeUnit.SECONDS);
        ModelCache.Lease b = second.get(30, TimeUnit.SECONDS);
        ModelCache.Lease c = served.get(30, TimeUnit.SECONDS);
        assertEquals(1, loads.get(), "one load for three callers");
        assertSame(m, a.value());
        assertSame(m, b.value());
        assertSame(m, c.value());
        assertTrue(cache.drop(5, 3));
        a.close();
        b.close();
        assertEquals(0, m.closed.get(), "dropped, but one lease is open");
        c.close();
        assertEquals(1, m.closed.get());
    }

    @Test
    void shouldRethrowAFailedLoadAndNotRememberIt() {
        IllegalStateException why = new IllegalStateException("driver gone");
        assertSame(
                why,
                assertThrows(
                        IllegalStateException.class,
                        () -> cache.acquire(9, 1, () -> {
                            throw why;
                        })));
        assertEquals(0, cache.size());
        Model m = new Model();
        assertSame(m, cache.acquire(9, 1, () -> m).value(), "a failed load is not remembered: the next one loads");
    }

    @Test
    void shouldDropOnlyVersionsUpToTheGivenOne() {
        Model m = new Model();
        cache.put(4, 5, m, () -> {});
        assertFalse(cache.drop(4, 4));
        assertTrue(cache.holds(4, 5));
        assertTrue(cache.drop(4, 5));
        assertEquals(1, m.closed.get());
        assertEquals(0, cache.size());
    }

    private static void await(CountDownLatch latch) {
        try {
            assertTrue(latch.await(30, TimeUnit.SECONDS));
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }
}
