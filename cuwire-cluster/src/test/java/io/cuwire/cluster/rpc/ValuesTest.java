package io.cuwire.cluster.rpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.NdArray;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ValuesTest {
    /**
     * 60 levels of lists, each holding the level below twice, over one array: 2^60 paths to it. Closing walks each
     * list once and closes the array once (the walk before visited every path, for ever).
     */
    @Test
    void shouldCloseAValueThatSharesContainersOnceAndQuickly() {
        try (BufferAllocator<HostBuffer> host = BufferAllocator.host("values-host", 1 << 20)) {
            NdArray array = NdArray.fromArray(host, new float[16], 16);
            Object level = new ArrayList<>(List.of(array));
            for (int i = 0; i < 60; i++) {
                level = i % 3 == 0
                        ? new Object[] {level, level}
                        : i % 3 == 1 ? Map.of(1, level, 2, level) : new ArrayList<>(List.of(level, level));
            }
            Object value = level;
            assertTimeoutPreemptively(Duration.ofSeconds(20), () -> Values.close(value));
            assertFalse(array.isOpen());
            assertEquals(0, host.allocatedBytes());
        }
    }
}
