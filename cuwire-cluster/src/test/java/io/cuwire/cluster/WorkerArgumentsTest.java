package io.cuwire.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.cuwire.cluster.rpc.Reply;
import io.cuwire.memory.Buffer;
import io.cuwire.memory.DType;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.Frame;
import io.cuwire.serialize.Serialized;
import io.cuwire.transport.Message;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What a worker does with the memory of the values it is sent and does not keep (found by the hostile-peer suite:
 * 128 device bytes stayed allocated after a round of header mutants whose argument lists had grown). Every decoded
 * value owns its memory on the worker's device; a request must free what it does not store, whatever its kind, and
 * freeing a stored value must free all of it, the keys of its maps too. A request that carries a field its kind does
 * not have is refused before any field is decoded, and what that field carried is freed with the message.
 */
class WorkerArgumentsTest {
    private static final byte[] SECRET =
            "a cluster secret of 32 bytes....".getBytes(java.nio.charset.StandardCharsets.US_ASCII);

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void shouldRefuseARequestWithAFieldItsKindDoesNotHaveAndFreeWhatTheFieldCarried() throws Exception {
        try (WorkerProcess w = WorkerProcess.start(0, "tcp", SECRET, Map.of());
                TestClient client = TestClient.connect(w.address(), SECRET);
                NdArray extra = NdArray.zeros(client.device, DType.FLOAT32, Order.C, 256)) {
            assertEquals(0L, client.workerDeviceBytes());
            for (Class<?> kind : List.of(
                    WorkerRequest.Ping.class,
                    WorkerRequest.Stats.class,
                    WorkerRequest.Get.class,
                    WorkerRequest.Free.class,
                    WorkerRequest.Peers.class,
                    WorkerRequest.BroadcastAbort.class,
                    WorkerRequest.Shutdown.class)) {
                long id = TestClient.nextId();
                Message m;
                // a Put's header (id, value: a device array) under the name of a kind that has no value field
                try (Serialized s = client.registry.serialize(new WorkerRequest.Put(id, extra), Family.CUDA)) {
                    Map<String, Object> top =
                            HeaderFuzzer.seed("extra", s.encodeHeader()).top();
                    @SuppressWarnings("unchecked")
                    Map<String, Object> root = (Map<String, Object>) top.get("root");
                    root.put("t", client.registry.nameOf(kind));
                    List<Buffer> frames = new ArrayList<>();
                    for (Frame f : s.frames()) {
                        frames.add(f.buffer());
                    }
                    m = Message.of(HeaderFuzzer.encode(top), frames);
                    CompletableFuture<Reply> reply = client.endpoint.expect(id);
                    client.endpoint.sendMessage(m).get(60, TimeUnit.SECONDS);
                    ExecutionException e = assertThrows(
                            ExecutionException.class,
                            () -> reply.get(60, TimeUnit.SECONDS),
                            kind.getSimpleName() + " with a value field was served");
                    RemoteDecodeException refused = assertInstanceOf(RemoteDecodeException.class, e.getCause());
                    assertEquals("SchemaMismatchException", refused.remoteType(), refused.getMessage());
                }
                assertEquals(
                        0L,
                        client.workerDeviceBytes(),
                        kind.getSimpleName() + " with a value field left its " + "array's memory allocated");
            }
            for (Object missing :
                    List.of(new ObjectRef(0, 1L << 40), new ObjectRef(7, 1), new ModelHandle(1L << 41, 1))) {
                Reply call = client.request(
                                id -> new WorkerRequest.Call(id, TestTasks.DROP.name(), List.of(missing, extra)))
                        .get(60, TimeUnit.SECONDS);
                assertInstanceOf(Reply.Failed.class, call, "a task argument that does not resolve: " + missing);
                assertEquals(
                        0L,
                        client.workerDeviceBytes(),
                        "a task whose argument " + missing + " did not resolve "
                                + "left the memory of the arguments after it allocated");
            }
            Reply call = client.request(id -> new WorkerRequest.Call(id, "frobnicate", List.of(extra)))
                    .get(60, TimeUnit.SECONDS);
            assertInstanceOf(Reply.Failed.class, call, "an unknown task");
            assertEquals(0L, client.workerDeviceBytes(), "a call of an unknown task left its argument allocated");
            ObjectRef ref = (ObjectRef) client.call(id -> new WorkerRequest.Put(id, List.of(1L)));
            client.call(id -> new WorkerRequest.Free(id, List.of(ref.id())));
            client.call(WorkerRequest.Shutdown::new);
            assertEquals(WorkerExit.CLOSED.code(), w.awaitExit(Duration.ofSeconds(30)), String.join("\n", w.output()));
        }
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void shouldFreeTheKeysOfAStoredMapWhenTheValueIsFreed() throws Exception {
        try (WorkerProcess w = WorkerProcess.start(0, "tcp", SECRET, Map.of());
                TestClient client = TestClient.connect(w.address(), SECRET);
                NdArray key = NdArray.zeros(client.device, DType.FLOAT32, Order.C, 256)) {
            Map<Object, Object> map = new LinkedHashMap<>();
            map.put(key, 1L);
            ObjectRef ref = (ObjectRef) client.call(id -> new WorkerRequest.Put(id, map));
            assertEquals(1024L, client.workerDeviceBytes(), "the key's array is on the worker's device");
            client.call(id -> new WorkerRequest.Free(id, List.of(ref.id())));
            assertEquals(0L, client.workerDeviceBytes(), "freeing the map left its key's memory allocated");
            client.call(WorkerRequest.Shutdown::new);
            assertEquals(WorkerExit.CLOSED.code(), w.awaitExit(Duration.ofSeconds(30)), String.join("\n", w.output()));
        }
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void shouldFreeArraysNestedInOptionalsAndRecordsThatARequestDoesNotKeep() throws Exception {
        try (WorkerProcess w = WorkerProcess.start(0, "tcp", SECRET, Map.of());
                TestClient client = TestClient.connect(w.address(), SECRET);
                NdArray x = NdArray.zeros(client.device, DType.FLOAT32, Order.C, 16)) {
            List<Object> nested = List.of(Optional.of(x), new WorkerRequest.Put(5, x), Reply.ok(5, x));
            for (Object value : nested) {
                Reply call = client.request(id -> new WorkerRequest.Call(id, TestTasks.DROP.name(), List.of(value)))
                        .get(60, TimeUnit.SECONDS);
                assertInstanceOf(Reply.Ok.class, call, call.toString());
                assertEquals(
                        0L,
                        client.workerDeviceBytes(),
                        "a task's argument (" + value.getClass().getSimpleName()
                                + " of an array) was left allocated after the task");
            }
            client.call(WorkerRequest.Shutdown::new);
            assertEquals(WorkerExit.CLOSED.code(), w.awaitExit(Duration.ofSeconds(30)), String.join("\n", w.output()));
        }
    }
}
