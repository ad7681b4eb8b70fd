package io.cuwire.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.cuwire.cluster.TestTasks.CountedModel;
import io.cuwire.memory.DType;
import io.cuwire.ml.MlTesting;
import io.cuwire.serialize.Family;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A broadcast serializes its model once, whichever strategy sends it: the change check's form is what goes out. The
 * model's serializer ({@link TestTasks.CountingSerializer}) counts its calls in this JVM, the client's.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class BroadcastSerializeOnceTest {
    private static LocalCluster cluster;
    private static Client client;

    @BeforeAll
    @Timeout(value = 90, unit = TimeUnit.SECONDS)
    static void start() {
        cluster = LocalCluster.builder().workers(3).start();
        client = cluster.client();
    }

    @AfterAll
    static void stop() {
        cluster.close();
    }

    private static final int N = 40_000; // 320 KB: a frame, not a header value

    /** A model of the weights {@code seed + i}. */
    private static CountedModel model(int seed) {
        double[] w = new double[N];
        for (int i = 0; i < w.length; i++) {
            w[i] = seed + i;
        }
        return new CountedModel(MlTesting.array(client.memory(), DType.FLOAT64, w, w.length));
    }

    /**
     * The serializations that one broadcast of {@code model} (of {@code seed}) with {@code options} makes; checks whom
     * it sent the model to, and that the last worker computes with what it got.
     */
    private static int writes(CountedModel model, int seed, BroadcastOptions options, int sent, int hits) {
        int before = TestTasks.COUNTED_WRITES.get();
        BroadcastResult r = client.broadcast(model, options);
        int made = TestTasks.COUNTED_WRITES.get() - before;
        assertEquals(sent, r.sent(), "workers sent the model to");
        assertEquals(hits, r.cacheHits(), "workers that held it");
        double sum = client.call(2, TestTasks.COUNTED_SUM, r.handle()).join();
        assertEquals((double) N * seed + (double) N * (N - 1) / 2, sum, "worker 2 sums the weights it got");
        return made;
    }

    @Test
    void shouldSerializeTheModelOnceForEachStrategy() {
        int seed = 0;
        for (BroadcastOptions.Strategy s : BroadcastOptions.Strategy.values()) {
            try (CountedModel m = model(seed++)) {
                BroadcastOptions o = BroadcastOptions.DEFAULT.strategy(s).chunkBytes(64 << 10);
                assertEquals(1, writes(m, seed - 1, o, 3, 0), s + ": a new model, sent to all");
                assertEquals(1, writes(m, seed - 1, o, 0, 3), s + ": unchanged, only the check");
            }
        }
    }

    @Test
    void shouldSerializeAHostBroadcastForTheCheckAndTheSend() {
        try (CountedModel m = model(7)) {
            BroadcastOptions o = BroadcastOptions.DEFAULT.family(Family.HOST);
            assertEquals(2, writes(m, 7, o, 3, 0), "the cuda form for the check (no copy), the host form to send");
            assertEquals(1, writes(m, 7, o, 0, 3), "unchanged: only the check");
        }
    }
}
