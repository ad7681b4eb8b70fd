package io.cuwire.cuda;

import static io.cuwire.cuda.CudaTestSupport.assumeCuda;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.memory.Device;
import io.cuwire.memory.DeviceStream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * A CUDA event times work on a stream and, as an owner of a driver handle, refuses a second close and any use after
 * the first (docs/architecture.md, "Close policy"). GPU only: skipped with the reason elsewhere.
 */
@Tag("gpu")
class CudaEventTest {
    @Test
    void shouldTimeAStreamAndThrowOnASecondCloseAndOnUseAfterClose() {
        assumeCuda();
        Device gpu = Cuda.device(0);
        try (DeviceStream stream = gpu.newStream()) {
            CudaEvent start = CudaEvent.create(gpu);
            CudaEvent end = CudaEvent.create(gpu);
            start.record(stream);
            end.record(stream);
            end.synchronize();
            float ms = CudaEvent.elapsedMillis(start, end);
            assertTrue(ms >= 0, "elapsed " + ms + " ms");
            start.close();
            end.close();
            IllegalStateException twice =
                    assertThrows(IllegalStateException.class, start::close, "a second close of a CUDA event");
            assertTrue(twice.getMessage().contains("already closed"), twice.getMessage());
            assertThrows(IllegalStateException.class, () -> end.record(stream), "record after close");
            assertThrows(IllegalStateException.class, end::synchronize, "synchronize after close");
        }
    }
}
