package io.cuwire.test;

import java.util.Random;
import java.util.SplittableRandom;
import org.junit.jupiter.api.TestInfo;

/**
 * The one source of randomness for tests: fixed by default, so that CI runs the same cases every time, and printed,
 * so that any run can be replayed or widened.
 *
 * <p>A run has a base seed: {@value #DEFAULT_SEED} unless {@code -Dcuwire.test.seed=N} sets another, or
 * {@code -Dcuwire.test.seed=random} draws a fresh one (for exploring beyond CI's cases). Each test's generator is
 * derived from the base seed and the test's name, so one test replays alone ({@code -Dtest=...}) with the base seed
 * its line printed.
 */
public final class TestRandom {
    /** System property that sets the base seed of every randomized test ({@code random}: a fresh one). */
    public static final String SEED_PROPERTY = "cuwire.test.seed";
    /** The base seed when the property is not set. */
    public static final long DEFAULT_SEED = 20261201L;

    private static final long BASE = base();

    private TestRandom() {}

    private static long base() {
        String value = System.getProperty(SEED_PROPERTY);
        if (value == null || value.isBlank()) {
            return DEFAULT_SEED;
        }
        if (value.equals("random")) {
            return System.nanoTime();
        }
        return Long.parseLong(value.strip());
    }

    /** The seed of the test named {@code name} in this run, printed with how to replay it. */
    public static long seed(String name) {
        long seed = mix(BASE ^ mix(name.hashCode()));
        System.out.println("[cuwire] " + name + " seed=" + seed + " (base seed " + BASE + "; replay with -D"
                + SEED_PROPERTY + "=" + BASE + ")");
        return seed;
    }

    /** A generator for the running test. */
    public static SplittableRandom create(TestInfo info) {
        return new SplittableRandom(seed(name(info)));
    }

    /** A {@link Random} for the test named {@code name} (for APIs that take one). */
    public static Random random(String name) {
        return new Random(seed(name));
    }

    /** The running test's name: class, method and display name (parameterized cases differ). */
    public static String name(TestInfo info) {
        return info.getTestClass().map(Class::getSimpleName).orElse("?") + "."
                + info.getTestMethod().map(m -> m.getName()).orElse("?") + " " + info.getDisplayName();
    }

    /** {@code n} random bytes. */
    public static byte[] bytes(SplittableRandom random, int n) {
        byte[] b = new byte[n];
        random.nextBytes(b);
        return b;
    }

    /** SplitMix64's finalizer: spreads the bits of {@code z}. */
    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }
}
