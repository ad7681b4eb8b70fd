package io.cuwire.memory;

import io.cuwire.test.TestRandom;
import java.util.Random;

/** The memories the array tests run over. */
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

    /** A random source for one test ({@link TestRandom}). */
    static Random random(String test) {
        return TestRandom.random("TestMemory." + test);
    }

    /** A new root allocator of this memory; the test closes it. */
    abstract BufferAllocator<?> open(String name);

    /** {@code HOST}, {@code PINNED}, or {@code DEVICE:<platform>0}, as {@link NdArray#toString()} shows it. */
    String location() {
        return this == DEVICE ? "DEVICE:" + Devices.get(0).platform() + "0" : name();
    }
}
