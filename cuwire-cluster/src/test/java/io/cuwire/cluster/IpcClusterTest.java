package io.cuwire.cluster;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.cuwire.memory.DType;
import io.cuwire.memory.NdArray;
import io.cuwire.ml.MlTesting;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The cluster over the IPC transport: emulated shared-memory handles here, CUDA IPC on a GPU host. */
class IpcClusterTest {
    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void shouldScatterComputeAndGatherOverIpc() {
        try (LocalCluster cluster =
                LocalCluster.builder().workers(2).transport("ipc").start()) {
            assertEquals("ipc", cluster.transport());
            Client client = cluster.client();
            SplittableRandom r = new SplittableRandom(7);
            double[] values = r.doubles(4_000).toArray();
            try (NdArray a = MlTesting.array(client.memory(), DType.FLOAT64, values, 1_000, 4)) {
                List<ObjectRef> parts = client.scatter(List.of(a));
                ObjectRef doubled = client.submit(parts.get(0).worker(), TestTasks.SCALE, parts.get(0), 2.0)
                        .join();
                List<NdArray> back = client.gather(List.of(doubled), NdArray.class);
                try {
                    double[] expected = new double[values.length];
                    for (int i = 0; i < values.length; i++) {
                        expected[i] = 2 * values[i];
                    }
                    assertArrayEquals(expected, back.getFirst().toDoubleArray(), 0);
                } finally {
                    MlTesting.closeAll(back);
                }
                client.free(List.of(parts.get(0), doubled));
            }
        }
    }
}
