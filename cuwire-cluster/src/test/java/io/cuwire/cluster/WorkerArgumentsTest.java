package io.cuwire.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.cuwire.cluster.rpc.Reply;
import io.cuwire.cluster.rpc.Request;
import io.cuwire.memory.DType;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What a worker does with the memory of the arguments it is sent and does not keep (found by the hostile-peer suite:
 * 128 device bytes stayed allocated after a round of header mutants whose argument lists had grown). Every decoded
 * argument owns its memory on the worker's device; a request must free what it does not store, whatever its op, and
 * freeing a stored value must free all of it, the keys of its maps too.
 */
class WorkerArgumentsTest {
    private static final byte[] SECRET = "a cluster secret of 32 bytes....".getBytes(java.nio.charset.StandardCharsets
            .US_ASCII);

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void shouldFreeTheArgumentsARequestDoesNotKeepWhateverItsOp() throws Exception {
        try (WorkerProcess w = WorkerProcess.start(0, "tcp", SECRET, Map.of());
                TestClient client = TestClient.connect(w.address(), SECRET);
                NdArray extra = NdArray.zeros(client.device, DType.FLOAT32, Order.C, 256)) {
            assertEquals(0L, client.workerDeviceBytes());
            ObjectRef nowhere = new ObjectRef(0, 1L << 40);
            List<List<Object>> requests = List.of(
                    List.of("ping", extra),
                    List.of("stats", extra),
                    List.of("get", nowhere, extra),
                    List.of("free", List.of(), extra),
                    List.of("peers", List.of(), extra));
            for (List<Object> r : requests) {
                List<Object> args = new ArrayList<>(r.subList(1, r.size()));
                Reply reply = client.request((String) r.getFirst(), args.toArray()).get(60, TimeUnit.SECONDS);
                assertEquals(0L, client.workerDeviceBytes(), r.getFirst() + " (answered " + reply.status() + ") left "
                        + "its unused argument's memory allocated");
            }
            long bid = 1L << 41;  // an abort is answered under the broadcast's id
            CompletableFuture<Reply> aborted = client.endpoint.expect(bid);
            client.endpoint.send(new Request(TestClient.nextId(), "bcast-abort", null, List.of(bid, bid, 1L, "why",
                    extra))).get(60, TimeUnit.SECONDS);
            aborted.get(60, TimeUnit.SECONDS);
            assertEquals(0L, client.workerDeviceBytes(), "bcast-abort left its unused argument's memory allocated");
            for (Object missing : List.of(nowhere, new ObjectRef(7, 1), new ModelHandle(1L << 41, 1))) {
                Reply call = client.endpoint.call(new Request(TestClient.nextId(), "call", TestTasks.DROP.name(),
                        List.of(missing, extra))).get(60, TimeUnit.SECONDS);
                assertEquals(Reply.ERROR, call.status(), "a task argument that does not resolve: " + missing);
                assertEquals(0L, client.workerDeviceBytes(), "a task whose argument " + missing + " did not resolve "
                        + "left the memory of the arguments after it allocated");
            }
            Reply put = client.request("put", 1L, extra).get(60, TimeUnit.SECONDS);
            ObjectRef ref = (ObjectRef) put.value();
            assertEquals(0L, client.workerDeviceBytes(), "put stores its first argument only, and kept the second's "
                    + "memory allocated");
            client.call("free", List.of(ref.id()));
            client.call("shutdown");
            assertEquals(WorkerExit.CLOSED.code(), w.awaitExit(Duration.ofSeconds(30)),
                    String.join("\n", w.output()));
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
            ObjectRef ref = (ObjectRef) client.call("put", map);
            assertEquals(1024L, client.workerDeviceBytes(), "the key's array is on the worker's device");
            client.call("free", List.of(ref.id()));
            assertEquals(0L, client.workerDeviceBytes(), "freeing the map left its key's memory allocated");
            client.call("shutdown");
            assertEquals(WorkerExit.CLOSED.code(), w.awaitExit(Duration.ofSeconds(30)),
                    String.join("\n", w.output()));
        }
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void shouldFreeArraysNestedInOptionalsAndRecordsThatARequestDoesNotKeep() throws Exception {
        try (WorkerProcess w = WorkerProcess.start(0, "tcp", SECRET, Map.of());
                TestClient client = TestClient.connect(w.address(), SECRET);
                NdArray x = NdArray.zeros(client.device, DType.FLOAT32, Order.C, 16)) {
            List<Object> nested = List.of(Optional.of(x), new Request(5, "ping", null, List.of(x)),
                    new Reply(5, Reply.OK, x, null, null, null));
            for (Object value : nested) {
                Reply ping = client.request("ping", value).get(60, TimeUnit.SECONDS);
                assertEquals(Reply.OK, ping.status(), ping.error());
                assertEquals(0L, client.workerDeviceBytes(), "ping [" + value.getClass().getSimpleName() + " of an "
                        + "array] left the array's memory allocated");
                Reply call = client.endpoint.call(new Request(TestClient.nextId(), "call", TestTasks.DROP.name(),
                        List.of(value))).get(60, TimeUnit.SECONDS);
                assertEquals(Reply.OK, call.status(), call.error());
                assertEquals(0L, client.workerDeviceBytes(), "a task's argument (" + value.getClass().getSimpleName()
                        + " of an array) was left allocated after the task");
            }
            client.call("shutdown");
            assertEquals(WorkerExit.CLOSED.code(), w.awaitExit(Duration.ofSeconds(30)),
                    String.join("\n", w.output()));
        }
    }
}
