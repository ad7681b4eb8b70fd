package io.cuwire.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.cuwire.cluster.rpc.Reply;
import io.cuwire.memory.DType;
import io.cuwire.memory.Device;
import io.cuwire.memory.DeviceBuffer;
import io.cuwire.memory.DeviceStream;
import io.cuwire.memory.Devices;
import io.cuwire.memory.HostBuffer;
import io.cuwire.memory.IpcHandle;
import io.cuwire.memory.MemoryResource;
import io.cuwire.memory.NdArray;
import io.cuwire.memory.Order;
import io.cuwire.serialize.Family;
import io.cuwire.serialize.Serialized;
import io.cuwire.transport.Message;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Device frames a hostile client sends a real worker on the emulated device (issue 15, findings 2 and 6): many tiny
 * ones in one message, and references over IPC to memory its device never exported.
 */
class WorkerDeviceFramesTest {
    private static final byte[] SECRET = "a cluster secret of 32 bytes....".getBytes(StandardCharsets.US_ASCII);
    private static final Duration EXIT = Duration.ofSeconds(30);

    /**
     * Finding 2: one message of 65,536 one-byte device frames made the worker create a shared-memory file and a
     * mapping per frame before reading a byte; past {@code vm.max_map_count} (65,530) its JVM died, leaving the files.
     */
    @Test
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void shouldStoreAMessageOf65536OneByteDeviceFramesAndLeaveNoFileBehind(@TempDir Path shm) throws Exception {
        assumeTrue(Devices.platform().equals("emulated"), "the emulated device's files");
        int frames = 65_536;
        try (WorkerProcess w = WorkerProcess.start(0, "tcp", SECRET, Map.of("cuwire.emulated.dir", shm.toString()))) {
            try (TestClient client = TestClient.connect(w.address(), SECRET);
                    DeviceBuffer memory = client.device.allocate(frames)) {
                List<NdArray> tiny = new ArrayList<>(frames);
                for (int i = 0; i < frames; i++) {
                    tiny.add(NdArray.view(memory, i, DType.UINT8, Order.C, 1));
                }
                ObjectRef ref = (ObjectRef) client.call(id -> new WorkerRequest.Put(id, tiny));
                assertEquals((long) frames, client.workerDeviceBytes(), "the worker holds every frame");
                assertTrue(files(shm) <= 4, "65,536 one-byte frames fill at most 4 slabs: " + files(shm) + " files");
                client.call(id -> new WorkerRequest.Free(id, List.of(ref.id())));
                assertEquals(0L, client.workerDeviceBytes());
                assertEquals(0, files(shm), "the slabs went with their blocks");
                client.call(WorkerRequest.Shutdown::new);
            }
            assertEquals(WorkerExit.CLOSED.code(), w.awaitExit(EXIT), String.join("\n", w.output()));
        }
        assertEquals(0, files(shm), "no file is left behind");
    }

    /**
     * Finding 6: an authenticated {@code ipc://} peer read any file whose name began with {@code cuwire-emu-}: its
     * device-frame reference named the path, the worker mapped it into a frame, and {@code get} sent it back. Now the
     * worker refuses the reference before mapping anything, stops (the client violated the protocol) and says why.
     */
    @ParameterizedTest
    @ValueSource(strings = {"path", "other-process"})
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void shouldRefuseAReferenceToMemoryThePeersDeviceNeverExported(String forgery, @TempDir Path dir) throws Exception {
        assumeTrue(Devices.platform().equals("emulated"), "the emulated device's handles");
        byte[] secret = "the contents of a file no peer may read".getBytes(StandardCharsets.UTF_8);
        Path file = Files.write(dir.resolve("cuwire-emu-secret"), secret);
        byte[] handle = forgery.equals("path")
                ? file.toString().getBytes(StandardCharsets.UTF_8)
                : ByteBuffer.allocate(24).putLong(1).put(new byte[16]).array();
        try (WorkerProcess w = WorkerProcess.start(0, "ipc", SECRET, Map.of())) {
            try (TestClient client = TestClient.connect(w.address(), SECRET);
                    NdArray shape = NdArray.zeros(client.device, DType.UINT8, Order.C, secret.length)) {
                long id = TestClient.nextId();
                Message forged;
                try (Serialized s = client.registry.serialize(new WorkerRequest.Put(id, shape), Family.CUDA)) {
                    Device device = ((DeviceBuffer) shape.buffer()).device();
                    DeviceBuffer frame = DeviceBuffer.owning(
                            new Forger(
                                    device.ordinal(),
                                    new IpcHandle(device.platform(), device.ordinal(), handle, 0, secret.length)),
                            () -> secret.length,
                            secret.length,
                            () -> {});
                    forged = Message.of(s.encodeHeader(), List.of(frame));
                }
                CompletableFuture<Reply> put = client.endpoint.expect(id);
                client.endpoint.sendMessage(forged);
                ExecutionException e = assertThrows(
                        ExecutionException.class,
                        () -> put.get(60, TimeUnit.SECONDS),
                        "the worker stored the file's contents");
                assertInstanceOf(ClusterException.class, e.getCause());
            }
            int code = w.awaitExit(EXIT);
            String output = String.join("\n", w.output());
            assertEquals(WorkerExit.PROTOCOL_VIOLATION.code(), code, output);
            List<String> lines = w.lines("cuwire worker 0: client ");
            assertEquals(1, lines.size(), output);
            assertTrue(
                    lines.getFirst()
                            .contains(
                                    forgery.equals("path")
                                            ? "sent a malformed IPC reference: IpcHandle[emulated0, "
                                            : "sent a reference to an allocation of process 1: a peer may send its own only"),
                    lines.getFirst());
        }
    }

    private static long files(Path dir) throws IOException {
        try (var list = Files.list(dir)) {
            return list.count();
        }
    }

    /** A device whose buffers' references are whatever handle a hostile peer chose; it holds no memory. */
    private static final class Forger extends Device {
        private final IpcHandle handle;

        Forger(int ordinal, IpcHandle handle) {
            super(ordinal);
            this.handle = handle;
        }

        @Override
        public String platform() {
            return handle.platform();
        }

        @Override
        public String name() {
            return "forger";
        }

        @Override
        public long totalMemory() {
            return 0;
        }

        @Override
        public long freeMemory() {
            return 0;
        }

        @Override
        public MemoryResource<DeviceBuffer> memory() {
            throw new UnsupportedOperationException();
        }

        @Override
        public MemoryResource<HostBuffer> pinnedMemory() {
            throw new UnsupportedOperationException();
        }

        @Override
        public DeviceStream newStream() {
            throw new UnsupportedOperationException();
        }

        @Override
        public boolean canAccessPeer(Device other) {
            return false;
        }

        @Override
        public IpcHandle exportHandle(DeviceBuffer buffer) {
            return handle;
        }

        @Override
        public DeviceBuffer openHandle(IpcHandle h) {
            throw new UnsupportedOperationException();
        }

        @Override
        public IpcHandle exportAllocation(DeviceBuffer buffer) {
            return handle;
        }

        @Override
        public long allocationOffset(DeviceBuffer buffer) {
            return handle.offset();
        }

        @Override
        protected void copyHostToDevice(MemorySegment src, DeviceBuffer dst, long dstOffset, DeviceStream stream) {
            throw new UnsupportedOperationException();
        }

        @Override
        protected void copyDeviceToHost(DeviceBuffer src, long srcOffset, MemorySegment dst, DeviceStream stream) {
            throw new UnsupportedOperationException();
        }

        @Override
        protected void copyDeviceToDevice(
                DeviceBuffer src, long srcOffset, DeviceBuffer dst, long dstOffset, long bytes, DeviceStream stream) {
            throw new UnsupportedOperationException();
        }

        @Override
        protected void copyHostToHost(MemorySegment src, MemorySegment dst, DeviceStream stream) {
            throw new UnsupportedOperationException();
        }
    }
}
