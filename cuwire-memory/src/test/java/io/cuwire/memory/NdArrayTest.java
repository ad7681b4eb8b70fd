package io.cuwire.memory;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Arrays;
import java.util.Objects;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class NdArrayTest {
    /** Runs {@code body} with a fresh allocator of {@code memory}, then proves nothing leaked and closes it. */
    private static void withAllocator(TestMemory memory, AllocatorBody body) throws Exception {
        BufferAllocator<?> alloc = memory.open("ndarray-test");
        try {
            body.run(alloc);
            assertEquals(0, alloc.allocatedBytes(), () -> "leaked: " + alloc);
        } finally {
            alloc.close();
        }
    }

    @FunctionalInterface
    private interface AllocatorBody {
        void run(BufferAllocator<?> alloc) throws Exception;
    }

    // ------------------------------------------------------------------ round trips

    @ParameterizedTest
    @EnumSource(TestMemory.class)
    void shouldRoundTripEveryDtypeInRandomShapes(TestMemory memory) throws Exception {
        Random r = TestMemory.random("roundTrip" + memory);
        withAllocator(memory, alloc -> {
            for (int trial = 0; trial < 20; trial++) {
                for (DType dtype : DType.values()) {
                    long[] shape = NdArrays.randomShape(r);
                    Object data = NdArrays.random(r, dtype, NdArrays.size(shape));
                    try (NdArray a = NdArrays.fromArray(alloc, data, shape)) {
                        assertEquals(dtype, a.dtype());
                        assertEquals(Order.C, a.order());
                        assertArrayEquals(shape, a.shape());
                        assertEquals(shape.length, a.rank());
                        assertEquals(NdArrays.size(shape), a.size());
                        assertEquals((long) NdArrays.size(shape) * dtype.byteSize(), a.byteSize());
                        assertEquals(a.byteSize(), a.buffer().byteSize());
                        assertEquals(memory.name(), a.kind().name());
                        assertEquals(memory == TestMemory.DEVICE ? 0 : Buffer.HOST_ORDINAL, a.deviceOrdinal());
                        assertTrue(a.isOwner());
                        assertTrue(
                                Objects.deepEquals(data, NdArrays.export(a)),
                                () -> dtype + " " + Arrays.toString(shape) + " differs");
                    }
                }
            }
        });
    }

    @ParameterizedTest
    @EnumSource(TestMemory.class)
    void shouldExportFOrderArraysOfEveryDtypeInLogicalCOrder(TestMemory memory) throws Exception {
        Random r = TestMemory.random("fOrder" + memory);
        withAllocator(memory, alloc -> {
            long[][] shapes = {{3, 4}, {4, 3}, {1, 5}, {5, 1}, {2, 3, 4}, {2, 1, 3, 2}, {0, 3}, {7}, {}};
            for (long[] shape : shapes) {
                for (DType dtype : DType.values()) {
                    Object data = NdArrays.random(r, dtype, NdArrays.size(shape));
                    try (NdArray f = NdArrays.fOrder(alloc, data, dtype, shape);
                            NdArray c = NdArrays.fromArray(alloc, data, shape)) {
                        assertEquals(Order.F, f.order());
                        assertTrue(
                                Objects.deepEquals(data, NdArrays.export(f)),
                                () -> dtype + " " + Arrays.toString(shape) + " F differs");
                        assertTrue(f.contentEquals(c), () -> dtype + " " + Arrays.toString(shape));
                        assertTrue(c.contentEquals(f), () -> dtype + " " + Arrays.toString(shape));
                    }
                }
            }
        });
    }

    @ParameterizedTest
    @EnumSource(TestMemory.class)
    void shouldRoundTripMatricesInBothOrders(TestMemory memory) throws Exception {
        Random r = TestMemory.random("matrix" + memory);
        withAllocator(memory, alloc -> {
            double[][] d = new double[7][5];
            float[][] f = new float[5][7];
            for (int i = 0; i < 7; i++) {
                for (int j = 0; j < 5; j++) {
                    d[i][j] = r.nextGaussian();
                    f[j][i] = (float) r.nextGaussian();
                }
            }
            try (NdArray dc = NdArray.fromMatrix(alloc, d);
                    NdArray fc = NdArray.fromMatrix(alloc, f);
                    NdArray df = NdArrays.fOrder(alloc, dc.toDoubleArray(), DType.FLOAT64, 7, 5);
                    NdArray ff = NdArrays.fOrder(alloc, fc.toFloatArray(), DType.FLOAT32, 5, 7)) {
                assertArrayEquals(new long[] {7, 5}, dc.shape());
                assertArrayEquals(d, dc.toDoubleMatrix());
                assertArrayEquals(d, df.toDoubleMatrix());
                assertArrayEquals(f, fc.toFloatMatrix());
                assertArrayEquals(f, ff.toFloatMatrix());
            }
            try (NdArray empty = NdArray.fromMatrix(alloc, new float[0][])) {
                assertArrayEquals(new long[] {0, 0}, empty.shape());
                assertEquals(0, empty.toFloatMatrix().length);
            }
        });
    }

    @ParameterizedTest
    @EnumSource(TestMemory.class)
    void shouldStageLargeMatricesInChunksAndRowsLongerThanAChunkOneByOne(TestMemory memory) throws Exception {
        Random r = TestMemory.random("bigMatrix" + memory);
        withAllocator(memory, alloc -> {
            for (int[] dims : new int[][] {{1000, 300}, {3, 300_000}}) {
                double[][] d = new double[dims[0]][dims[1]];
                for (double[] row : d) {
                    for (int j = 0; j < row.length; j++) {
                        row[j] = r.nextDouble();
                    }
                }
                try (TransferScope scope = CopyEngine.openScope("fromMatrix");
                        NdArray a = NdArray.fromMatrix(alloc, d)) {
                    long in = scope.bytes(CopyDirection.H2D) + scope.bytes(CopyDirection.H2H);
                    assertEquals(a.byteSize(), in);
                    assertArrayEquals(d, a.toDoubleMatrix());
                }
            }
        });
    }

    @ParameterizedTest
    @EnumSource(TestMemory.class)
    void shouldFillZerosOfEveryDtypeInBothOrders(TestMemory memory) throws Exception {
        withAllocator(memory, alloc -> {
            for (DType dtype : DType.values()) {
                for (Order order : Order.values()) {
                    try (NdArray z = NdArray.zeros(alloc, dtype, order, 3, 700, 200)) {
                        Object zeros = NdArrays.random(new Random(0), dtype, 0);
                        Object exported = NdArrays.export(z);
                        assertEquals(420_000, java.lang.reflect.Array.getLength(exported));
                        MemorySegment bytes = NdArrays.bytes(exported);
                        assertEquals(-1, bytes.mismatch(MemorySegment.ofArray(new byte[(int) bytes.byteSize()])));
                        assertEquals(zeros.getClass(), exported.getClass());
                    }
                }
            }
        });
    }

    @Test
    void shouldWriteZerosThroughTheCopyEngineOnADevice() throws Exception {
        withAllocator(TestMemory.DEVICE, alloc -> {
            try (TransferScope scope = CopyEngine.openScope("zeros");
                    NdArray z = NdArray.zeros(alloc, DType.FLOAT64, Order.C, 1000, 300)) {
                assertEquals(z.byteSize(), scope.bytes(CopyDirection.H2D));
                assertEquals(3, scope.copies(CopyDirection.H2D));
            }
            try (TransferScope scope = CopyEngine.openScope("empty");
                    NdArray e = NdArray.empty(alloc, DType.FLOAT64, Order.F, 1000, 300)) {
                assertEquals(2_400_000, e.byteSize());
                assertEquals(0, scope.stats().totalBytes());
            }
        });
    }

    @ParameterizedTest
    @EnumSource(TestMemory.class)
    void shouldCopyToEveryMemoryKeepingDtypeShapeOrderAndElements(TestMemory memory) throws Exception {
        Random r = TestMemory.random("copyTo" + memory);
        withAllocator(memory, alloc -> {
            for (TestMemory target : TestMemory.values()) {
                withAllocator(target, targetAlloc -> {
                    Object data = NdArrays.random(r, DType.INT64, 24);
                    try (NdArray f = NdArrays.fOrder(alloc, data, DType.INT64, 2, 3, 4);
                            NdArray copy = f.copyTo(targetAlloc)) {
                        assertEquals(target.name(), copy.kind().name());
                        assertEquals(Order.F, copy.order());
                        assertArrayEquals(f.shape(), copy.shape());
                        assertArrayEquals((long[]) data, copy.toLongArray());
                        assertTrue(copy.isOwner());
                    }
                });
            }
        });
    }

    @ParameterizedTest
    @EnumSource(TestMemory.class)
    void shouldCopyStorageRangesInStorageOrder(TestMemory memory) throws Exception {
        withAllocator(memory, alloc -> {
            float[] data = {0, 1, 2, 3, 4, 5};
            try (NdArray c = NdArray.fromArray(alloc, data, 2, 3);
                    NdArray f = NdArrays.fOrder(alloc, data, DType.FLOAT32, 2, 3)) {
                float[] out = new float[5];
                c.copyStorageTo(2, out, 1, 3);
                assertArrayEquals(new float[] {0, 2, 3, 4, 0}, out);
                f.copyStorageTo(0, out, 0, 5);
                assertArrayEquals(new float[] {0, 3, 1, 4, 2}, out);
                IndexOutOfBoundsException e =
                        assertThrows(IndexOutOfBoundsException.class, () -> c.copyStorageTo(4, new float[5], 0, 3));
                assertEquals(
                        "firstElement: 4, count: 3 (expected: 0 <= firstElement <= firstElement + count <= 6,"
                                + " the size of NdArray[float32, (2, 3), C, " + memory.location() + "])",
                        e.getMessage());
                assertThrows(IndexOutOfBoundsException.class, () -> c.copyStorageTo(0, new float[5], 3, 3));
            }
            try (NdArray d = NdArray.fromArray(alloc, new double[] {1, 2, 3}, 3);
                    NdArray i = NdArray.fromArray(alloc, new int[] {1, 2, 3}, 3);
                    NdArray l = NdArray.fromArray(alloc, new long[] {1, 2, 3}, 3);
                    NdArray b = NdArray.fromArray(alloc, new boolean[] {true, false, true}, 3)) {
                double[] dd = new double[2];
                d.copyStorageTo(1, dd, 0, 2);
                assertArrayEquals(new double[] {2, 3}, dd);
                int[] ii = new int[2];
                i.copyStorageTo(1, ii, 0, 2);
                assertArrayEquals(new int[] {2, 3}, ii);
                long[] ll = new long[2];
                l.copyStorageTo(0, ll, 0, 2);
                assertArrayEquals(new long[] {1, 2}, ll);
                byte[] bb = new byte[3];
                b.copyStorageTo(0, bb, 0, 3);
                assertArrayEquals(new byte[] {1, 0, 1}, bb);
            }
        });
    }

    @Test
    void shouldRefuseWholeExportBeyondAJavaArrayButCopyItInPieces(@TempDir Path dir) throws Exception {
        long n = (long) Integer.MAX_VALUE + 16;
        try (Arena arena = Arena.ofConfined();
                FileChannel ch = FileChannel.open(
                        dir.resolve("big"),
                        StandardOpenOption.CREATE_NEW,
                        StandardOpenOption.READ,
                        StandardOpenOption.WRITE,
                        StandardOpenOption.SPARSE)) {
            MemorySegment sparse = ch.map(FileChannel.MapMode.READ_WRITE, 0, n, arena);
            sparse.set(java.lang.foreign.ValueLayout.JAVA_BYTE, n - 1, (byte) 7);
            HostBuffer buffer = HostBuffer.wrap(sparse);
            try (NdArray a = NdArray.view(buffer, 0, DType.UINT8, Order.C, n)) {
                IllegalStateException e = assertThrows(IllegalStateException.class, a::toByteArray);
                assertEquals(
                        "NdArray[uint8, (2147483663,), C, HOST] has 2147483663 elements, more than a Java array"
                                + " holds (2147483639); copy it out in pieces with copyStorageTo",
                        e.getMessage());
                byte[] tail = new byte[4];
                a.copyStorageTo(n - 4, tail, 0, 4);
                assertArrayEquals(new byte[] {0, 0, 0, 7}, tail);
            }
            buffer.close();
        }
    }

    @Test
    void shouldHandleScalarsAndEmptyArraysOnEveryMemory() throws Exception {
        for (TestMemory memory : TestMemory.values()) {
            withAllocator(memory, alloc -> {
                try (NdArray scalar = NdArray.fromArray(alloc, new double[] {42});
                        NdArray empty = NdArray.fromArray(alloc, new float[0], 3, 0);
                        NdArray emptyCopy = empty.copyTo(alloc)) {
                    assertEquals(0, scalar.rank());
                    assertEquals(1, scalar.size());
                    assertArrayEquals(new double[] {42}, scalar.toDoubleArray());
                    assertEquals(0, empty.byteSize());
                    assertArrayEquals(new float[0], emptyCopy.toFloatArray());
                    assertTrue(empty.contentEquals(emptyCopy));
                    assertEquals("NdArray[float64, (), C, " + memory.location() + "]", scalar.toString());
                }
            });
        }
    }

    // ------------------------------------------------------------------ copy counters

    @Test
    void shouldCountUploadToDeviceAsH2DAndExportAsD2H() throws Exception {
        Random r = TestMemory.random("counters");
        withAllocator(TestMemory.DEVICE, alloc -> {
            float[] data = (float[]) NdArrays.random(r, DType.FLOAT32, 12_000);
            NdArray a;
            try (TransferScope scope = CopyEngine.openScope("upload")) {
                a = NdArray.fromArray(alloc, data, 30, 400);
                assertEquals(48_000, scope.bytes(CopyDirection.H2D));
                assertEquals(1, scope.copies(CopyDirection.H2D));
                assertEquals(48_000, scope.stats().totalBytes());
            }
            try (a;
                    TransferScope scope = CopyEngine.openScope("export")) {
                assertArrayEquals(data, a.toFloatArray());
                assertEquals(48_000, scope.bytes(CopyDirection.D2H));
                assertEquals(1, scope.copies(CopyDirection.D2H));
                assertEquals(48_000, scope.stats().totalBytes());
            }
        });
    }

    @Test
    void shouldCountFOrderExportFromDeviceAsOneD2HCopy() throws Exception {
        withAllocator(TestMemory.DEVICE, alloc -> {
            try (NdArray f = NdArrays.fOrder(alloc, new double[12], DType.FLOAT64, 3, 4);
                    TransferScope scope = CopyEngine.openScope("export F")) {
                f.toDoubleArray();
                assertEquals(96, scope.bytes(CopyDirection.D2H));
                assertEquals(1, scope.copies(CopyDirection.D2H));
                assertEquals(96, scope.stats().totalBytes());
            }
        });
    }

    @Test
    void shouldCountDeviceToDeviceCopyAsD2DOnly() throws Exception {
        withAllocator(TestMemory.DEVICE, alloc -> {
            try (NdArray a = NdArray.fromArray(alloc, new long[1000], 10, 100);
                    TransferScope scope = CopyEngine.openScope("d2d");
                    NdArray b = a.copyTo(alloc)) {
                assertEquals(8000, scope.bytes(CopyDirection.D2D));
                assertEquals(1, scope.copies(CopyDirection.D2D));
                assertEquals(0, scope.stats().hostDeviceBytes());
                assertEquals(DType.INT64, b.dtype());
                assertEquals(MemoryKind.DEVICE, b.kind());
            }
        });
    }

    @Test
    void shouldCountHostToDeviceAndDeviceToHostCopies() throws Exception {
        withAllocator(
                TestMemory.HOST,
                host -> withAllocator(TestMemory.DEVICE, device -> {
                    try (NdArray h = NdArray.fromArray(host, new int[256], 256)) {
                        try (TransferScope scope = CopyEngine.openScope("h2d");
                                NdArray d = h.copyTo(device)) {
                            assertEquals(1024, scope.bytes(CopyDirection.H2D));
                            try (TransferScope back = CopyEngine.openScope("d2h");
                                    NdArray h2 = d.copyTo(host)) {
                                assertEquals(1024, back.bytes(CopyDirection.D2H));
                                assertEquals(1024, back.stats().totalBytes());
                                assertTrue(h2.contentEquals(h));
                            }
                        }
                    }
                }));
    }

    // ------------------------------------------------------------------ ownership

    @ParameterizedTest
    @EnumSource(TestMemory.class)
    void shouldCloseTheBufferWhenAnAdoptingArrayCloses(TestMemory memory) throws Exception {
        withAllocator(memory, alloc -> {
            Buffer buffer = alloc.allocate(64);
            NdArray a = NdArray.adopt(buffer, DType.INT32, Order.C, 4, 4);
            assertTrue(a.isOwner());
            assertEquals(64, alloc.allocatedBytes());
            a.close();
            assertFalse(buffer.isOpen());
            assertFalse(a.isOpen());
            assertEquals(0, alloc.allocatedBytes());
        });
    }

    @ParameterizedTest
    @EnumSource(TestMemory.class)
    void shouldLeaveTheBufferOpenWhenAViewCloses(TestMemory memory) throws Exception {
        withAllocator(memory, alloc -> {
            try (Buffer buffer = alloc.allocate(128)) {
                NdArray v = NdArray.view(buffer, 32, DType.FLOAT64, Order.F, 2, 3);
                assertFalse(v.isOwner());
                assertEquals(32, v.byteOffset());
                assertEquals(32, v.buffer().rootOffset());
                assertEquals(48, v.buffer().byteSize());
                v.close();
                assertTrue(buffer.isOpen());
                IllegalStateException e = assertThrows(IllegalStateException.class, v::toDoubleArray);
                assertEquals("NdArray[float64, (2, 3), F, " + memory.location() + "] is closed", e.getMessage());
                assertEquals(128, alloc.allocatedBytes());
            }
        });
    }

    @Test
    void shouldRefuseUseOfAViewWhoseBufferWasClosed() throws Exception {
        withAllocator(TestMemory.HOST, alloc -> {
            Buffer buffer = alloc.allocate(16);
            try (NdArray v = NdArray.view(buffer, 0, DType.UINT8, Order.C, 16)) {
                buffer.close();
                assertFalse(v.isOpen());
                IllegalStateException e = assertThrows(IllegalStateException.class, v::toByteArray);
                assertEquals("NdArray[uint8, (16,), C, HOST]: its buffer HOST[16 bytes] is closed", e.getMessage());
            }
        });
    }

    @Test
    void shouldRejectClosingAnArrayTwice() throws Exception {
        withAllocator(TestMemory.DEVICE, alloc -> {
            NdArray a = NdArray.zeros(alloc, DType.BOOL, Order.C, 3);
            a.close();
            IllegalStateException e = assertThrows(IllegalStateException.class, a::close);
            assertEquals(
                    "NdArray[bool, (3,), C, " + TestMemory.DEVICE.location() + "] is already closed", e.getMessage());
            assertEquals("NdArray[bool, (3,), C, " + TestMemory.DEVICE.location() + "] (closed)", a.toString());
        });
    }

    @Test
    void shouldReportAnArrayLeftOpenWhenItsAllocatorCloses() {
        BufferAllocator<?> alloc = TestMemory.DEVICE.open("leaky");
        NdArray a = NdArray.fromArray(alloc, new float[8], 8);
        MemoryLeakException e = assertThrows(MemoryLeakException.class, alloc::close);
        assertTrue(e.getMessage().startsWith("allocator 'leaky' closed with 32 bytes outstanding"), e.getMessage());
        a.close();
        assertEquals(0, alloc.allocatedBytes());
    }

    @Test
    void shouldUseIdentityForEqualsAndElementsForContentEquals() throws Exception {
        withAllocator(TestMemory.PINNED, alloc -> {
            try (NdArray a = NdArray.fromArray(alloc, new float[] {1, Float.NaN, 3}, 3);
                    NdArray b = NdArray.fromArray(alloc, new float[] {1, Float.NaN, 3}, 3);
                    NdArray other = NdArray.fromArray(alloc, new float[] {1, Float.NaN, 4}, 3);
                    NdArray reshaped = NdArray.fromArray(alloc, new float[] {1, Float.NaN, 3}, 1, 3);
                    NdArray signedZero = NdArray.fromArray(alloc, new float[] {-0f}, 1);
                    NdArray zero = NdArray.fromArray(alloc, new float[] {0f}, 1);
                    NdArray ints = NdArray.fromArray(alloc, new int[] {1, 2, 3}, 3)) {
                assertNotEquals(a, b);
                assertEquals(a, a);
                assertTrue(a.contentEquals(b));
                assertFalse(a.contentEquals(other));
                assertFalse(a.contentEquals(reshaped));
                assertFalse(a.contentEquals(ints));
                assertFalse(zero.contentEquals(signedZero));
            }
        });
    }

    // ------------------------------------------------------------------ validation

    @Test
    void shouldRejectBufferSmallerThanShape() throws Exception {
        withAllocator(TestMemory.HOST, alloc -> {
            try (Buffer buffer = alloc.allocate(40)) {
                IllegalArgumentException e = assertThrows(
                        IllegalArgumentException.class, () -> NdArray.view(buffer, 0, DType.FLOAT32, Order.C, 3, 4));
                assertEquals(
                        "buffer HOST[40 bytes] too small for float32 (3, 4): needs 48 bytes at byteOffset 0"
                                + " (expected: byteOffset + 48 <= 40)",
                        e.getMessage());
                e = assertThrows(
                        IllegalArgumentException.class, () -> NdArray.view(buffer, 8, DType.FLOAT64, Order.C, 5));
                assertEquals(
                        "buffer HOST[40 bytes] too small for float64 (5,): needs 40 bytes at byteOffset 8"
                                + " (expected: byteOffset + 40 <= 40)",
                        e.getMessage());
                assertThrows(IllegalArgumentException.class, () -> NdArray.adopt(buffer, DType.INT64, Order.C, 6));
                assertTrue(buffer.isOpen());
            }
        });
    }

    @Test
    void shouldRejectNegativeDimensions() throws Exception {
        withAllocator(TestMemory.HOST, alloc -> {
            try (Buffer buffer = alloc.allocate(64)) {
                IllegalArgumentException e = assertThrows(
                        IllegalArgumentException.class, () -> NdArray.view(buffer, 0, DType.FLOAT32, Order.C, 3, -4));
                assertEquals("shape[1]: -4 (expected: >= 0) in shape (3, -4)", e.getMessage());
                e = assertThrows(IllegalArgumentException.class, () -> NdArray.empty(alloc, DType.INT32, Order.F, -1));
                assertEquals("shape[0]: -1 (expected: >= 0) in shape (-1,)", e.getMessage());
                assertEquals(64, alloc.allocatedBytes());
            }
        });
    }

    @Test
    void shouldRejectRankAboveEight() throws Exception {
        withAllocator(TestMemory.HOST, alloc -> {
            IllegalArgumentException e = assertThrows(
                    IllegalArgumentException.class,
                    () -> NdArray.zeros(alloc, DType.UINT8, Order.C, 1, 1, 1, 1, 1, 1, 1, 1, 1));
            assertEquals("rank: 9 (expected: 0 <= rank <= 8)", e.getMessage());
            try (NdArray eight = NdArray.zeros(alloc, DType.UINT8, Order.C, 1, 2, 1, 2, 1, 2, 1, 2)) {
                assertEquals(8, eight.rank());
            }
        });
    }

    @Test
    void shouldRejectShapeWhoseByteSizeOverflowsALong() throws Exception {
        withAllocator(TestMemory.HOST, alloc -> {
            IllegalArgumentException e = assertThrows(
                    IllegalArgumentException.class,
                    () -> NdArray.empty(alloc, DType.FLOAT32, Order.C, 1L << 40, 1L << 40));
            assertEquals(
                    "shape (1099511627776, 1099511627776) of float32: the size in bytes overflows a long",
                    e.getMessage());
            e = assertThrows(
                    IllegalArgumentException.class, () -> NdArray.empty(alloc, DType.INT64, Order.C, 1L << 61));
            assertEquals("shape (2305843009213693952,) of int64: the size in bytes overflows a long", e.getMessage());
            assertEquals(0, alloc.openBuffers());
        });
    }

    @Test
    void shouldRejectNegativeOrMisalignedByteOffsets() throws Exception {
        withAllocator(TestMemory.PINNED, alloc -> {
            try (Buffer buffer = alloc.allocate(64)) {
                IllegalArgumentException e = assertThrows(
                        IllegalArgumentException.class, () -> NdArray.view(buffer, -4, DType.FLOAT32, Order.C, 2));
                assertEquals("byteOffset: -4 (expected: >= 0)", e.getMessage());
                e = assertThrows(
                        IllegalArgumentException.class, () -> NdArray.view(buffer, 2, DType.FLOAT32, Order.C, 2));
                assertEquals("byteOffset: 2 (expected: a multiple of 4, the size of float32)", e.getMessage());
                try (NdArray bytes = NdArray.view(buffer, 3, DType.UINT8, Order.C, 61)) {
                    assertEquals(61, bytes.byteSize());
                }
            }
        });
    }

    @Test
    void shouldRejectAdoptingASliceOrAClosedBuffer() throws Exception {
        withAllocator(TestMemory.DEVICE, alloc -> {
            Buffer buffer = alloc.allocate(16);
            Buffer slice = buffer.slice(8, 8);
            IllegalArgumentException e =
                    assertThrows(IllegalArgumentException.class, () -> NdArray.adopt(slice, DType.INT64, Order.C, 1));
            assertEquals(
                    "cannot adopt " + slice.describe() + ": it is a slice, which cannot be closed; adopt the"
                            + " buffer it was sliced from, or make a view",
                    e.getMessage());
            try (NdArray view = NdArray.view(slice, 0, DType.INT64, Order.C, 1)) {
                assertEquals(8, view.buffer().rootOffset());
            }
            buffer.close();
            assertThrows(IllegalStateException.class, () -> NdArray.adopt(buffer, DType.INT64, Order.C, 1));
        });
    }

    @Test
    void shouldRejectDataWhoseLengthDiffersFromTheShape() throws Exception {
        withAllocator(TestMemory.DEVICE, alloc -> {
            IllegalArgumentException e =
                    assertThrows(IllegalArgumentException.class, () -> NdArray.fromArray(alloc, new float[10], 3, 4));
            assertEquals("data: 10 elements (expected: 12, the element count of shape (3, 4))", e.getMessage());
            e = assertThrows(IllegalArgumentException.class, () -> NdArray.fromArray(alloc, new int[2]));
            assertEquals("data: 2 elements (expected: 1, the element count of shape ())", e.getMessage());
            e = assertThrows(
                    IllegalArgumentException.class, () -> NdArray.fromMatrix(alloc, new double[][] {{1, 2}, {3}}));
            assertEquals("rows[1].length: 1 (expected: 2, the length of rows[0])", e.getMessage());
            assertEquals(0, alloc.openBuffers());
        });
    }

    @Test
    void shouldRejectExportsOfAnotherDtypeOrRank() throws Exception {
        withAllocator(TestMemory.HOST, alloc -> {
            try (NdArray ints = NdArray.fromArray(alloc, new int[] {1, 2, 3}, 3);
                    NdArray cube = NdArray.zeros(alloc, DType.FLOAT64, Order.C, 1, 2, 3)) {
                IllegalArgumentException e = assertThrows(IllegalArgumentException.class, ints::toFloatArray);
                assertEquals(
                        "toFloatArray: dtype int32 (expected: float32) of NdArray[int32, (3,), C, HOST]",
                        e.getMessage());
                assertThrows(IllegalArgumentException.class, ints::toLongArray);
                assertThrows(IllegalArgumentException.class, ints::toBooleanArray);
                assertThrows(IllegalArgumentException.class, () -> ints.copyStorageTo(0, new byte[3], 0, 3));
                e = assertThrows(IllegalArgumentException.class, cube::toDoubleMatrix);
                assertEquals(
                        "toDoubleMatrix: rank 3 (expected: 2) of NdArray[float64, (1, 2, 3), C, HOST]", e.getMessage());
                IndexOutOfBoundsException d = assertThrows(IndexOutOfBoundsException.class, () -> cube.dim(3));
                assertEquals(
                        "dim: 3 (expected: 0 <= dim < 3, the rank of NdArray[float64, (1, 2, 3), C, HOST])",
                        d.getMessage());
                assertEquals(2, cube.dim(1));
            }
        });
    }

    @Test
    void shouldDescribeItselfWithDtypeShapeOrderAndPlace() throws Exception {
        withAllocator(TestMemory.DEVICE, alloc -> {
            try (NdArray a = NdArray.zeros(alloc, DType.FLOAT32, Order.C, 3, 4)) {
                assertEquals(
                        "NdArray[float32, (3, 4), C, DEVICE:" + Devices.get(0).platform() + "0]", a.toString());
                long[] shape = a.shape();
                shape[0] = 99;
                assertArrayEquals(new long[] {3, 4}, a.shape());
            }
        });
    }
}
