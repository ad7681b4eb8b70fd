package io.cuwire.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.cluster.rpc.Endpoint;
import io.cuwire.cluster.rpc.Reply;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.NdArray;
import io.cuwire.serialize.DecodeTarget;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.Limits;
import io.cuwire.transport.Connection;
import io.cuwire.transport.DeviceMap;
import io.cuwire.transport.Listener;
import io.cuwire.transport.TransportConfig;
import io.cuwire.transport.Transports;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

class EndpointTest {
    private static final AtomicInteger NAMES = new AtomicInteger();

    /**
     * A broadcast fails a worker's acknowledgement from a send's failure handler. When that send failed because the
     * connection broke, whoever sees the acknowledgement fail must already see the worker lost: the next broadcast
     * must not route through it (found on a GPU host, where a killed CUDA process takes long to die).
     */
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void shouldMarkTheWorkerLostBeforeAFailedSendFailsWhatWaitsOnIt() throws Exception {
        try (BufferAllocator<DeviceBuffer> device = Devices.get(0).newAllocator("endpoint-test-device", 1 << 20);
                BufferAllocator<HostBuffer> host = BufferAllocator.host("endpoint-test-host", 1 << 20)) {
            TransportConfig config = TransportConfig.builder()
                    .secret(new byte[32])
                    .receiveInto(DeviceMap.of(host, device))
                    .build();
            String address = "inproc://endpoint-test-" + NAMES.incrementAndGet();
            try (Listener listener = Transports.inProcess().listen(address, config)) {
                CompletableFuture<Connection> accepted =
                        CompletableFuture.supplyAsync(() -> listener.accept(Duration.ofSeconds(20)));
                Connection clientSide = Transports.inProcess().connect(address, config);
                Connection workerSide = accepted.get(20, TimeUnit.SECONDS);
                RemoteWorker worker = new RemoteWorker(0, 0, null);
                Endpoint endpoint = new Endpoint(
                                "client-to-0",
                                clientSide,
                                ClusterTypes.registry(),
                                new DecodeTarget(device, host, Limits.DEFAULT),
                                (from, r) -> {},
                                u -> new RemoteDecodeException(u.errorType(), u.error(), u.path()),
                                worker::lostException,
                                worker::markLost)
                        .start();
                worker.endpoint(endpoint);
                try (NdArray chunk = NdArray.fromArray(device, new float[1024], 1024)) {
                    CompletableFuture<Reply> ack = endpoint.expect(7);
                    AtomicReference<Boolean> aliveWhenAckFailed = new AtomicReference<>();
                    ack.whenComplete((r, e) -> aliveWhenAckFailed.set(worker.isAlive()));
                    // In process, a send stays in flight until the receiver is done with its frames; this worker
                    // never receives, so the send is still pending when its connection breaks.
                    endpoint.send(new WorkerRequest.BroadcastChunk(8, 0, 0, chunk), Family.CUDA)
                            .exceptionally(e -> {
                                endpoint.failExpected(7, e);
                                return null;
                            });
                    workerSide.close();

                    ExecutionException e = assertThrows(ExecutionException.class, () -> ack.get(20, TimeUnit.SECONDS));
                    assertInstanceOf(WorkerLostException.class, e.getCause());
                    assertEquals(Boolean.FALSE, aliveWhenAckFailed.get(), "alive when its acknowledgement failed");
                    assertFalse(worker.isAlive());
                    assertNotNull(worker.lost());
                    assertFalse(endpoint.isOpen());
                    assertTrue(endpoint.expect(9).isCompletedExceptionally(), "a later call fails at once");
                }
            }
        }
    }
}
