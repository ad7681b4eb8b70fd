package io.cuwire.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.CopyDirection;
import io.cuwire.memory.CopyEngine;
import io.cuwire.memory.TransferScope;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** A smoke test: each benchmark method round-trips a small model and leaves nothing open (JMH does not run here). */
class SerializationBenchmarkTest {
    @ParameterizedTest
    @ValueSource(strings = {"cudaFamily", "hostFamily", "jdkSerialization", "kryo", "fory"})
    void shouldRoundTripTheModelAndCloseEverything(String method) {
        SerializationBenchmark bench = new SerializationBenchmark();
        bench.arraySize = 4096;
        bench.setUp(method);
        try (TransferScope scope = CopyEngine.openScope(method)) {
            try (BenchModel back = bench.roundTrip(method)) {
                assertTrue(back.fitted);
                assertEquals(8, back.nClusters);
            }
            long arrayBytes = 2 * bench.arraySize;
            long expected = method.equals("cudaFamily") ? 0 : arrayBytes;
            assertEquals(expected, scope.bytes(CopyDirection.D2H), method + " device-to-host bytes");
            assertEquals(expected, scope.bytes(CopyDirection.H2D), method + " host-to-device bytes");
        } finally {
            bench.tearDown();
        }
    }
}
