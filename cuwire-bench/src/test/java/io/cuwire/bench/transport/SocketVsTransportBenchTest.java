package io.cuwire.bench.transport;

import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The raw socket against TCP, small: the receiver starts in its child JVM, and both frame memories run. */
class SocketVsTransportBenchTest {
    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void shouldCompareTheRawSocketWithTcpForNativeAndHeapFrames() throws Exception {
        SocketVsTransportBench.main(new String[] {"tcp", Long.toString(1 << 20), "1", "native"});
        SocketVsTransportBench.main(new String[] {"tcp", Long.toString(1 << 20), "1", "heap"});
    }

    @Test
    void shouldRefuseAFrameMemoryItDoesNotKnow() {
        assertThrows(
                IllegalArgumentException.class,
                () -> SocketVsTransportBench.main(new String[] {"tcp", "1024", "1", "disk"}));
    }
}
