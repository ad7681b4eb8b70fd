package io.cuwire.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import io.cuwire.cluster.rpc.Endpoint;
import io.cuwire.cluster.rpc.Reply;
import io.cuwire.cluster.rpc.Request;
import io.cuwire.memory.BufferAllocator;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import io.cuwire.serialize.DecodeTarget;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.Limits;
import io.cuwire.serialize.TypeRegistry;
import io.cuwire.transport.Connection;
import io.cuwire.transport.DeviceMap;
import io.cuwire.transport.TransportConfig;
import io.cuwire.transport.Transports;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongFunction;

/**
 * A connection to a worker as its client (or, when it is not the worker's first, as a peer), with the cluster's
 * registry and families (or a node's of another role: {@link #connect(String, byte[], TypeRegistry, Family...)}) and
 * memory of its own, for tests that send what {@link Client} would not. Closing closes the connection and checks that
 * its memory came back.
 */
public final class TestClient implements AutoCloseable {
    private static final AtomicLong IDS = new AtomicLong(1);

    /** This side's device memory: what it sends and receives. */
    public final BufferAllocator<DeviceBuffer> device =
            Devices.get(0).newAllocator("test-client-device", BufferAllocator.UNLIMITED);

    final BufferAllocator<HostBuffer> host = BufferAllocator.host("test-client-host", BufferAllocator.UNLIMITED);
    final TypeRegistry registry;
    /** The connection's requests and replies. */
    public final Endpoint endpoint;

    private TestClient(String address, byte[] secret, TypeRegistry registry, Family... families) {
        this.registry = registry;
        TransportConfig config = TransportConfig.builder()
                .secret(secret)
                .receiveInto(DeviceMap.of(host, device))
                .families(families)
                .build();
        Connection c = Transports.forAddress(address).connect(address, config);
        endpoint = new Endpoint(
                        "test-client",
                        c,
                        registry,
                        new DecodeTarget(device, host, Limits.DEFAULT),
                        (from, r) -> {},
                        u -> new RemoteDecodeException(u.errorType(), u.error(), u.path()),
                        e -> new ClusterException("test client's connection broken", e),
                        e -> {})
                .start();
    }

    static TestClient connect(String address, byte[] secret) {
        return new TestClient(address, secret, ClusterTypes.registry(), ClusterTypes.families());
    }

    /** A connection to the node at {@code address}: messages encoded by {@code registry}, {@code families} offered. */
    public static TestClient connect(String address, byte[] secret, TypeRegistry registry, Family... families) {
        return new TestClient(address, secret, registry, families);
    }

    /** A new request id. */
    static long nextId() {
        return IDS.getAndIncrement();
    }

    /** Sends the request {@code request} makes of a new id and returns the reply's future. */
    public CompletableFuture<Reply> request(LongFunction<? extends Request> request) {
        return endpoint.call(request.apply(nextId()));
    }

    /** Sends the request {@code request} makes and returns the value of its {@code Ok} reply (within 60 s). */
    Object call(LongFunction<? extends Request> request) throws Exception {
        Reply r = request(request).get(60, TimeUnit.SECONDS);
        return assertInstanceOf(Reply.Ok.class, r, r.toString()).value();
    }

    /** The worker's device bytes in use, from its {@link WorkerStats}. */
    long workerDeviceBytes() throws Exception {
        return ((WorkerStats) call(WorkerRequest.Stats::new)).deviceBytes();
    }

    /** Closes the connection; fails unless this side's memory came back. */
    @Override
    public void close() {
        endpoint.close();
        assertEquals(0, device.allocatedBytes(), device.toString());
        assertEquals(0, host.allocatedBytes(), host.toString());
        device.close();
        host.close();
    }
}
