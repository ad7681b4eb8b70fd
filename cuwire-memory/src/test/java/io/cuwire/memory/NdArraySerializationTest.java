package io.cuwire.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.NotSerializableException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** JDK serialization of arrays: the pickle-like baseline, with the copy counters as witnesses. */
class NdArraySerializationTest {
    private static byte[] write(Object value) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
            out.writeObject(value);
        }
        return bytes.toByteArray();
    }

    private static Object read(byte[] bytes) throws IOException, ClassNotFoundException {
        try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes))) {
            return in.readObject();
        }
    }

    @ParameterizedTest
    @EnumSource(TestMemory.class)
    void shouldRoundTripEveryDtypeAndOrderOntoTheReadTarget(TestMemory memory) throws Exception {
        Random r = TestMemory.random("jdk" + memory);
        try (BufferAllocator<?> from = memory.open("jdk-from");
                BufferAllocator<?> to = memory.open("jdk-to")) {
            for (DType dtype : DType.values()) {
                for (Order order : Order.values()) {
                    long[] shape = NdArrays.randomShape(r);
                    Object data = NdArrays.random(r, dtype, NdArrays.size(shape));
                    try (NdArray a = order == Order.C
                            ? NdArrays.fromArray(from, data, shape)
                            : NdArrays.fOrder(from, data, dtype, shape)) {
                        byte[] bytes = write(a);
                        Object back;
                        NdArray.ReadScope scope = NdArray.readTarget(to);
                        try {
                            back = read(bytes);
                        } finally {
                            scope.close();
                        }
                        try (NdArray b = (NdArray) back) {
                            assertTrue(a.contentEquals(b), a + " vs " + b);
                            assertEquals(order, b.order());
                            assertEquals(memory.name(), b.kind().name());
                            assertSame(to, b.buffer().allocator(), "rebuilt from the read target");
                            assertTrue(b.isOwner());
                        }
                    }
                }
            }
            assertEquals(0, to.allocatedBytes());
        }
    }

    @Test
    void shouldCopyADeviceArrayToTheHostOnceAndBackOnceKeepingSharedReferences() throws Exception {
        try (BufferAllocator<DeviceBuffer> device = Devices.get(0).newAllocator("jdk-device", 1 << 20)) {
            try (NdArray a = NdArray.fromArray(device, new float[] {1, 2, 3, 4, 5, 6}, 2, 3)) {
                List<Object> value = new ArrayList<>(List.of(a, "between", a));
                byte[] bytes;
                try (TransferScope scope = CopyEngine.openScope("jdk write")) {
                    bytes = write(value);
                    assertEquals(a.byteSize(), scope.bytes(CopyDirection.D2H), "copied to the heap, once");
                    assertEquals(0, scope.bytes(CopyDirection.H2D));
                }
                List<?> back;
                NdArray.ReadScope target = NdArray.readTarget(device);
                try (TransferScope scope = CopyEngine.openScope("jdk read")) {
                    back = (List<?>) read(bytes);
                    assertEquals(a.byteSize(), scope.bytes(CopyDirection.H2D), "rebuilt on the device, once");
                    assertEquals(0, scope.bytes(CopyDirection.D2H));
                } finally {
                    target.close();
                }
                assertSame(back.get(0), back.get(2), "a shared array stays shared");
                try (NdArray b = (NdArray) back.get(0)) {
                    assertEquals(MemoryKind.DEVICE, b.kind());
                    assertTrue(a.contentEquals(b));
                }
            }
            assertEquals(0, device.allocatedBytes());
        }
    }

    @Test
    void shouldKeepEachArrayOnItsSideWithADeviceAndAHostTarget() throws Exception {
        try (BufferAllocator<DeviceBuffer> device = Devices.get(0).newAllocator("jdk-device", 1 << 20);
                BufferAllocator<HostBuffer> pinned = Devices.get(0).newPinnedAllocator("jdk-pinned", 1 << 20);
                BufferAllocator<HostBuffer> host = BufferAllocator.host("jdk-host", 1 << 20);
                BufferAllocator<DeviceBuffer> toDevice = Devices.get(0).newAllocator("jdk-to-device", 1 << 20);
                BufferAllocator<HostBuffer> toHost = BufferAllocator.host("jdk-to-host", 1 << 20);
                NdArray d = NdArray.fromArray(device, new float[] {1, 2}, 2);
                NdArray p = NdArray.fromArray(pinned, new int[] {3, 4}, 2);
                NdArray h = NdArray.fromArray(host, new long[] {5, 6}, 2)) {
            byte[] bytes = write(new ArrayList<>(List.of(d, p, h)));
            List<?> back;
            NdArray.ReadScope scope = NdArray.readTarget(toDevice, toHost);
            try {
                back = (List<?>) read(bytes);
            } finally {
                scope.close();
            }
            List<BufferAllocator<?>> expected = List.of(toDevice, toHost, toHost);
            List<NdArray> sent = List.of(d, p, h);
            for (int i = 0; i < 3; i++) {
                try (NdArray b = (NdArray) back.get(i)) {
                    assertSame(expected.get(i), b.buffer().allocator(), sent.get(i) + " rebuilt on its side");
                    assertTrue(sent.get(i).contentEquals(b));
                }
            }
        }
    }

    @Test
    void shouldRebuildOnTheDefaultHostAllocatorWhenNoTargetIsSet() throws Exception {
        try (BufferAllocator<DeviceBuffer> device = Devices.get(0).newAllocator("jdk-device", 1 << 20);
                NdArray a = NdArray.fromArray(device, new int[] {7, 8, 9}, 3)) {
            long before = NdArray.defaultReadTarget().allocatedBytes();
            try (NdArray b = (NdArray) read(write(a))) {
                assertEquals(MemoryKind.HOST, b.kind());
                assertSame(NdArray.defaultReadTarget(), b.buffer().allocator());
                assertTrue(a.contentEquals(b));
            }
            assertEquals(before, NdArray.defaultReadTarget().allocatedBytes());
        }
    }

    @Test
    void shouldRestoreThePreviousTargetWhenAScopeCloses() throws Exception {
        try (BufferAllocator<HostBuffer> outer = BufferAllocator.host("outer", 1 << 20);
                BufferAllocator<HostBuffer> inner = BufferAllocator.host("inner", 1 << 20);
                NdArray a = NdArray.fromArray(outer, new double[] {1.5}, 1)) {
            byte[] bytes = write(a);
            try (NdArray.ReadScope o = NdArray.readTarget(outer)) {
                NdArray.ReadScope i = NdArray.readTarget(inner);
                assertThrows(IllegalStateException.class, o::close, "out of nesting order");
                try (NdArray b = (NdArray) read(bytes)) {
                    assertSame(inner, b.buffer().allocator());
                }
                i.close();
                i.close();
                try (NdArray b = (NdArray) read(bytes)) {
                    assertSame(outer, b.buffer().allocator());
                }
            }
            try (NdArray b = (NdArray) read(bytes)) {
                assertSame(NdArray.defaultReadTarget(), b.buffer().allocator());
            }
        }
    }

    @Test
    void shouldRefuseAnArrayLargerThanAJavaByteArrayNamingTheLimit(@TempDir Path dir) throws Exception {
        long bytes = (long) NdArray.MAX_ARRAY_LENGTH + 8;
        try (Arena arena = Arena.ofShared();
                FileChannel ch = FileChannel.open(
                        dir.resolve("sparse"),
                        StandardOpenOption.CREATE_NEW,
                        StandardOpenOption.READ,
                        StandardOpenOption.WRITE)) {
            MemorySegment sparse = ch.map(FileChannel.MapMode.READ_WRITE, 0, bytes, arena);
            try (HostBuffer buffer = HostBuffer.wrap(sparse);
                    NdArray big = NdArray.view(buffer, 0, DType.UINT8, Order.C, bytes);
                    TransferScope scope = CopyEngine.openScope("refused")) {
                NotSerializableException e = assertThrows(NotSerializableException.class, () -> write(big));
                assertTrue(
                        e.getMessage().contains("2 GiB") && e.getMessage().contains(String.valueOf(bytes)),
                        e.getMessage());
                assertEquals(0, scope.stats().totalBytes(), "refused before copying anything");
            }
        }
    }
}
