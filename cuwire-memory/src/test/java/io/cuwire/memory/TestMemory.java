package io.cuwire.memory;

import java.util.Random;

/** The memories the array tests run over, and the run's random seed. */
enum TestMemory {
    HOST {
        @Override
        BufferAllocator<?> open(String name) {
            return BufferAllocator.host(name, BufferAllocator.UNLIMITED);
        }
    },
    PINNED {
        @Override
        BufferAllocator<?> open(String name) {
            return Devices.get(0).newPinnedAllocator(name, BufferAllocator.UNLIMITED);
        }
    },
    DEVICE {
        @Override
        BufferAllocator<?> open(String name) {
            return Devices.get(0).newAllocator(name, BufferAllocator.UNLIMITED);
        }
    };

    /** System property overriding the random seed, to rerun a failure. */
    static final String SEED_PROPERTY = "cuwire.test.seed";

    /** The seed of this run, printed once. */
    static final long SEED = seed();

    private static long seed() {
        long seed = Long.getLong(SEED_PROPERTY, System.nanoTime());
        System.out.println("random seed " + seed + " (rerun with -D" + SEED_PROPERTY + "=" + seed + ")");
        return seed;
    }

    /** A random source for one test, derived from the run's seed and the test's name. */
    static Random random(String test) {
        return new Random(SEED ^ test.hashCode());
    }

    /** A new root allocator of this memory; the test closes it. */
    abstract BufferAllocator<?> open(String name);

    /** {@code HOST}, {@code PINNED}, or {@code DEVICE:<platform>0}, as {@link NdArray#toString()} shows it. */
    String location() {
        return this == DEVICE ? "DEVICE:" + Devices.get(0).platform() + "0" : name();
    }
}
