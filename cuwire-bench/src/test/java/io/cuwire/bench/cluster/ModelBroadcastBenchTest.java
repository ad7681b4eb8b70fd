package io.cuwire.bench.cluster;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.cluster.BroadcastOptions.Strategy;
import java.util.List;
import org.junit.jupiter.api.Test;

class ModelBroadcastBenchTest {
    @Test
    void shouldPlaceWorkersOnDevicesOneToNWhenTheHostHasNPlusOne() {
        assertArrayEquals(new int[] {1, 2, 3, 4, 5, 6, 7}, ModelBroadcastBench.placement(7, 8));
        assertArrayEquals(new int[] {1}, ModelBroadcastBench.placement(1, 2));
    }

    @Test
    void shouldSpreadWorkersOverTheDevicesButZeroWhenThereAreFewer() {
        assertArrayEquals(new int[] {1, 1, 1}, ModelBroadcastBench.placement(3, 2));
        assertArrayEquals(new int[] {1, 2, 3, 1, 2, 3, 1}, ModelBroadcastBench.placement(7, 4));
        assertArrayEquals(new int[] {0, 0}, ModelBroadcastBench.placement(2, 1));
    }

    @Test
    void shouldDefaultToEachInTurnForOneWorkerAndToEveryStrategyForMore() {
        ModelBroadcastBench.Options one = ModelBroadcastBench.Options.parse();
        assertEquals(1, one.workers());
        assertEquals(List.of(1L << 30), one.sizes());
        assertEquals(List.of(Strategy.EACH_IN_TURN), one.strategies());
        ModelBroadcastBench.Options seven =
                ModelBroadcastBench.Options.parse("--workers", "7", "--sizes", "1MiB,64MiB,1GiB,8GiB");
        assertEquals(List.of(Strategy.EACH_IN_TURN, Strategy.CHAIN, Strategy.TREE), seven.strategies());
        assertEquals(List.of(1L << 20, 64L << 20, 1L << 30, 8L << 30), seven.sizes());
    }

    @Test
    void shouldKeepSizeAsOneSizeAndStrategiesInTheGivenOrder() {
        ModelBroadcastBench.Options o =
                ModelBroadcastBench.Options.parse("--size", "16MiB", "--workers", "3", "--strategies", "tree,each");
        assertEquals(List.of(16L << 20), o.sizes());
        assertEquals(List.of(Strategy.TREE, Strategy.EACH_IN_TURN), o.strategies());
        assertEquals("tree", ModelBroadcastBench.name(o.strategies().getFirst()));
        assertEquals(4L << 20, o.chunkBytes(), "the cluster's default chunk");
        assertEquals(
                64L << 20, ModelBroadcastBench.Options.parse("--chunk", "64MiB").chunkBytes());
    }

    @Test
    void shouldRefuseBadOptionsNamingTheFlagAndTheValue() {
        assertRefused(
                "Invalid value for option '--sizes'",
                "1000 (expected: a multiple of 256 bytes, whole rows of " + "64 float32)",
                "--sizes",
                "1MiB,1000");
        assertRefused(
                "Invalid value for option '--strategies'",
                "unknown strategy 'star' (expected: each, chain or " + "tree)",
                "--strategies",
                "each,star");
        assertRefused(
                "--strategies [chain, chain]", "(expected: each strategy at most once)", "--strategies", "chain,chain");
        assertRefused("--workers 0", "(expected: >= 1)", "--workers", "0");
        assertRefused("Invalid value for option '--workers'", "'many' is not an int", "--workers", "many");
        assertRefused("--chunk 1024", "(expected: at least 4KiB)", "--chunk", "1KiB");
        assertRefused("Unknown options: '--sise', '1GiB'", "", "--sise", "1GiB");
    }

    private static void assertRefused(String start, String end, String... args) {
        String message = assertThrows(IllegalArgumentException.class, () -> ModelBroadcastBench.Options.parse(args))
                .getMessage();
        assertTrue(message.startsWith(start) && message.endsWith(end), message);
    }
}
