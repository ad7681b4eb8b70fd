package io.cuwire.memory;

import java.util.SplittableRandom;
import org.junit.jupiter.api.TestInfo;

/**
 * Randomness for tests with a printed, reproducible seed: every call prints the seed, and
 * {@code -Dcuwire.test.seed=N} replays a run.
 */
public final class TestRandom {
    /** System property that fixes the seed of every randomized test. */
    public static final String SEED_PROPERTY = "cuwire.test.seed";

    private TestRandom() {
    }

    /** A generator for the running test, its seed printed to standard output. */
    public static SplittableRandom create(TestInfo info) {
        long seed = Long.getLong(SEED_PROPERTY, System.nanoTime() ^ info.getDisplayName().hashCode());
        System.out.println("[cuwire] " + info.getTestClass().map(Class::getSimpleName).orElse("?") + "."
                + info.getTestMethod().map(m -> m.getName()).orElse("?") + " seed=" + seed
                + " (replay with -D" + SEED_PROPERTY + "=" + seed + ")");
        return new SplittableRandom(seed);
    }

    /** {@code n} random bytes. */
    public static byte[] bytes(SplittableRandom random, int n) {
        byte[] b = new byte[n];
        random.nextBytes(b);
        return b;
    }
}
