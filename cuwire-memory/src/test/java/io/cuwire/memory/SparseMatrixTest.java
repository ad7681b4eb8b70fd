package io.cuwire.memory;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class SparseMatrixTest {
    private static void withAllocator(TestMemory memory, AllocatorBody body) throws Exception {
        BufferAllocator<?> alloc = memory.open("sparse-test");
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

    /** A random matrix with about a fifth of its entries nonzero, values exact in float32. */
    private static double[][] randomSparse(Random r, int rows, int cols) {
        double[][] d = new double[rows][cols];
        for (double[] row : d) {
            for (int j = 0; j < cols; j++) {
                if (r.nextInt(5) == 0) {
                    row[j] = (float) r.nextGaussian();
                }
            }
        }
        return d;
    }

    private static long nonzeros(double[][] d) {
        long n = 0;
        for (double[] row : d) {
            for (double v : row) {
                if (v != 0) {
                    n++;
                }
            }
        }
        return n;
    }

    private static float[][] toFloat(double[][] d) {
        float[][] f = new float[d.length][];
        for (int i = 0; i < d.length; i++) {
            f[i] = new float[d[i].length];
            for (int j = 0; j < d[i].length; j++) {
                f[i][j] = (float) d[i][j];
            }
        }
        return f;
    }

    @ParameterizedTest
    @EnumSource(TestMemory.class)
    void shouldRoundTripDenseMatricesThroughEveryFormat(TestMemory memory) throws Exception {
        Random r = TestMemory.random("sparseDense" + memory);
        withAllocator(memory, alloc -> {
            for (int[] dims : new int[][] {{7, 5}, {1, 9}, {9, 1}, {0, 0}, {30, 40}}) {
                double[][] d = randomSparse(r, dims[0], dims[1]);
                long nnz = nonzeros(d);
                try (CsrMatrix csr = CsrMatrix.fromDense(alloc, d);
                        CscMatrix csc = CscMatrix.fromDense(alloc, toFloat(d));
                        CooMatrix coo = CooMatrix.fromDense(alloc, d)) {
                    for (SparseMatrix m : new SparseMatrix[] {csr, csc, coo}) {
                        assertArrayEquals(new long[] {dims[0], dims[1]}, m.shape());
                        assertEquals(nnz, m.nnz());
                        assertEquals(memory.name(), m.kind().name());
                        assertEquals(memory == TestMemory.DEVICE ? 0 : Buffer.HOST_ORDINAL, m.deviceOrdinal());
                        assertEquals(DType.INT32, m.indexType());
                        assertEquals(3, m.components().size());
                        assertArrayEquals(d, m.toDense(), m::toString);
                    }
                    assertEquals(DType.FLOAT64, csr.dataType());
                    assertEquals(DType.FLOAT32, csc.dataType());
                    assertEquals(dims[0] + 1, csr.indptr().size());
                    assertEquals(dims[1] + 1, csc.indptr().size());
                    assertSame(csr.indptr(), csr.components().get(0));
                    assertSame(coo.data(), coo.components().get(2));
                }
            }
        });
    }

    @ParameterizedTest
    @EnumSource(TestMemory.class)
    void shouldConvertBetweenFormatsKeepingDtypesAndValues(TestMemory memory) throws Exception {
        Random r = TestMemory.random("sparseConvert" + memory);
        withAllocator(memory, alloc -> {
            double[][] d = randomSparse(r, 13, 11);
            try (CsrMatrix csr = CsrMatrix.fromDense(alloc, toFloat(d));
                    CooMatrix coo = csr.toCoo(alloc);
                    CscMatrix csc = coo.toCsc(alloc);
                    CsrMatrix back = csc.toCsr(alloc);
                    CscMatrix direct = csr.toCsc(alloc);
                    CooMatrix fromCsc = csc.toCoo(alloc);
                    CsrMatrix fromCoo = coo.toCsr(alloc)) {
                for (SparseMatrix m : new SparseMatrix[] {coo, csc, back, direct, fromCsc, fromCoo}) {
                    assertArrayEquals(d, m.toDense(), m::toString);
                    assertEquals(DType.FLOAT32, m.dataType());
                    assertEquals(DType.INT32, m.indexType());
                    assertEquals(csr.nnz(), m.nnz());
                }
                assertTrue(back.indptr().contentEquals(csr.indptr()));
                assertTrue(back.indices().contentEquals(csr.indices()));
                assertTrue(back.data().contentEquals(csr.data()));
                assertTrue(direct.indices().contentEquals(csc.indices()));
            }
        });
    }

    @Test
    void shouldBuildEveryFormatFromJavaArraysOfBothIndexTypes() throws Exception {
        double[][] expected = {{1, 0, 2}, {0, 0, 0}, {0, 3, 0}};
        withAllocator(TestMemory.DEVICE, alloc -> {
            try (CsrMatrix a = CsrMatrix.fromArrays(
                            alloc, 3, 3, new int[] {0, 2, 2, 3}, new int[] {0, 2, 1}, new float[] {1, 2, 3});
                    CsrMatrix b = CsrMatrix.fromArrays(
                            alloc, 3, 3, new long[] {0, 2, 2, 3}, new long[] {0, 2, 1}, new double[] {1, 2, 3});
                    CscMatrix c = CscMatrix.fromArrays(
                            alloc, 3, 3, new int[] {0, 1, 2, 3}, new int[] {0, 2, 0}, new double[] {1, 3, 2});
                    CscMatrix d = CscMatrix.fromArrays(
                            alloc, 3, 3, new long[] {0, 1, 2, 3}, new long[] {0, 2, 0}, new float[] {1, 3, 2});
                    CooMatrix e = CooMatrix.fromArrays(
                            alloc, 3, 3, new int[] {2, 0, 0}, new int[] {1, 2, 0}, new float[] {3, 2, 1});
                    CooMatrix f = CooMatrix.fromArrays(
                            alloc, 3, 3, new long[] {0, 2, 0}, new long[] {0, 1, 2}, new double[] {1, 3, 2})) {
                for (SparseMatrix m : new SparseMatrix[] {a, b, c, d, e, f}) {
                    assertArrayEquals(expected, m.toDense(), m::toString);
                    assertEquals(3, m.nnz());
                }
                assertEquals(DType.INT64, b.indexType());
                assertEquals(DType.FLOAT64, b.dataType());
                assertEquals(DType.INT64, f.indexType());
                try (CsrMatrix sorted = e.toCsr(alloc)) {
                    assertArrayEquals(new int[] {0, 2, 2, 3}, sorted.indptr().toIntArray());
                    assertArrayEquals(new int[] {2, 0, 1}, sorted.indices().toIntArray());
                    assertArrayEquals(new float[] {2, 1, 3}, sorted.data().toFloatArray());
                }
            }
        });
    }

    @Test
    void shouldSumDuplicateCoordinates() throws Exception {
        withAllocator(TestMemory.HOST, alloc -> {
            try (CooMatrix m = CooMatrix.fromArrays(
                            alloc, 2, 2, new int[] {1, 1, 0}, new int[] {0, 0, 1}, new double[] {1.5, 2, 4});
                    CsrMatrix csr = m.toCsr(alloc)) {
                assertArrayEquals(new double[][] {{0, 4}, {3.5, 0}}, m.toDense());
                assertEquals(3, csr.nnz());
                assertArrayEquals(new double[][] {{0, 4}, {3.5, 0}}, csr.toDense());
            }
        });
    }

    @Test
    void shouldCountUploadToDeviceAsH2DOnly() throws Exception {
        withAllocator(TestMemory.DEVICE, alloc -> {
            try (TransferScope scope = CopyEngine.openScope("sparse upload");
                    CsrMatrix m = CsrMatrix.fromArrays(
                            alloc, 2, 4, new long[] {0, 1, 3}, new long[] {3, 0, 1}, new float[] {1, 2, 3})) {
                assertEquals(3 * 8 + 3 * 8 + 3 * 4, scope.bytes(CopyDirection.H2D));
                assertEquals(3, scope.copies(CopyDirection.H2D));
                assertEquals(scope.bytes(CopyDirection.H2D), scope.stats().totalBytes());
                assertEquals(MemoryKind.DEVICE, m.kind());
            }
        });
    }

    // ------------------------------------------------------------------ ownership

    @Test
    void shouldCloseItsComponentsAndRefuseClosingTwice() throws Exception {
        withAllocator(TestMemory.DEVICE, alloc -> {
            CsrMatrix m = CsrMatrix.fromDense(alloc, new double[][] {{1, 0}, {0, 2}});
            assertTrue(m.isOpen());
            m.close();
            assertFalse(m.isOpen());
            for (NdArray a : m.components()) {
                assertFalse(a.isOpen());
            }
            assertEquals(0, alloc.allocatedBytes());
            IllegalStateException e = assertThrows(IllegalStateException.class, m::close);
            assertEquals(
                    "CsrMatrix[(2, 2), nnz 2, int32 indices, float64 values, " + TestMemory.DEVICE.location()
                            + "] is already closed",
                    e.getMessage());
            assertThrows(IllegalStateException.class, m::toDense);
        });
    }

    @Test
    void shouldLeaveComponentsWithTheCallerWhenTheConstructorRefusesThem() throws Exception {
        withAllocator(TestMemory.HOST, alloc -> {
            try (NdArray indptr = NdArray.fromArray(alloc, new int[] {0, 1}, 2);
                    NdArray indices = NdArray.fromArray(alloc, new int[] {0}, 1);
                    NdArray data = NdArray.fromArray(alloc, new double[] {1}, 1)) {
                assertThrows(IllegalArgumentException.class, () -> new CsrMatrix(2, 1, indptr, indices, data));
                assertTrue(indptr.isOpen());
                assertTrue(indices.isOpen());
                assertTrue(data.isOpen());
            }
        });
    }

    @Test
    void shouldOnlyEndTheUseOfViewComponents() throws Exception {
        withAllocator(TestMemory.PINNED, alloc -> {
            try (Buffer buffer = alloc.allocate(64)) {
                CooMatrix m = new CooMatrix(
                        4,
                        4,
                        NdArray.view(buffer, 0, DType.INT32, Order.C, 2),
                        NdArray.view(buffer, 8, DType.INT32, Order.C, 2),
                        NdArray.view(buffer, 16, DType.FLOAT64, Order.C, 2));
                assertArrayEquals(new double[4][4], m.toDense());
                m.close();
                assertTrue(buffer.isOpen());
            }
        });
    }

    // ------------------------------------------------------------------ validation

    @Test
    void shouldRejectComponentsOfWrongLengthDtypeOrRank() throws Exception {
        withAllocator(TestMemory.HOST, alloc -> {
            try (NdArray indptr3 = NdArray.fromArray(alloc, new int[] {0, 1, 2}, 3);
                    NdArray indptr2 = NdArray.fromArray(alloc, new int[] {0, 2}, 2);
                    NdArray indices = NdArray.fromArray(alloc, new int[] {0, 1}, 2);
                    NdArray longIndices = NdArray.fromArray(alloc, new long[] {0, 1}, 2);
                    NdArray data = NdArray.fromArray(alloc, new float[] {1, 2}, 2);
                    NdArray data3 = NdArray.fromArray(alloc, new float[] {1, 2, 3}, 3);
                    NdArray intData = NdArray.fromArray(alloc, new int[] {1, 2}, 2);
                    NdArray floatIndptr = NdArray.fromArray(alloc, new float[] {0, 1, 2}, 3);
                    NdArray matrix = NdArray.fromArray(alloc, new int[] {0, 1}, 1, 2)) {
                assertMessage(
                        "indptr: 2 elements (expected: 3, rows + 1)",
                        () -> new CsrMatrix(2, 2, indptr2, indices, data));
                assertMessage(
                        "indptr: 3 elements (expected: 2, cols + 1)",
                        () -> new CscMatrix(2, 1, indptr3, indices, data));
                assertMessage(
                        "indices: 2 elements (expected: 3, the length of data)",
                        () -> new CsrMatrix(2, 2, indptr3, indices, data3));
                assertMessage(
                        "indices: dtype int64 (expected: int32, the dtype of indptr)",
                        () -> new CsrMatrix(2, 2, indptr3, longIndices, data));
                assertMessage(
                        "data: dtype int32 (expected: float32 or float64)",
                        () -> new CsrMatrix(2, 2, indptr3, indices, intData));
                assertMessage(
                        "indptr: dtype float32 (expected: int32 or int64)",
                        () -> new CsrMatrix(2, 2, floatIndptr, indices, data));
                assertMessage(
                        "col: rank 2 (expected: 1) of NdArray[int32, (1, 2), C, HOST]",
                        () -> new CooMatrix(2, 2, indices, matrix, data));
                assertMessage(
                        "row and col are the same NdArray NdArray[int32, (2,), C, HOST]",
                        () -> new CooMatrix(2, 2, indices, indices, data));
                assertMessage(
                        "row: 2 elements (expected: 3, the length of data)",
                        () -> new CooMatrix(2, 2, indices, indptr2, data3));
                assertMessage("rows: -1, cols: 2 (expected: >= 0)", () -> new CooMatrix(-1, 2, indices, indptr2, data));
                NullPointerException npe =
                        assertThrows(NullPointerException.class, () -> new CsrMatrix(2, 2, indptr3, null, data));
                assertEquals("indices", npe.getMessage());
            }
        });
    }

    @Test
    void shouldRejectComponentsInDifferentMemory() throws Exception {
        withAllocator(
                TestMemory.HOST,
                host -> withAllocator(TestMemory.DEVICE, device -> {
                    try (NdArray indptr = NdArray.fromArray(host, new int[] {0, 1}, 2);
                            NdArray indices = NdArray.fromArray(device, new int[] {0}, 1);
                            NdArray data = NdArray.fromArray(host, new double[] {1}, 1)) {
                        assertMessage(
                                "components live in different memory: indptr in HOST, indices in "
                                        + TestMemory.DEVICE.location() + " (expected: one memory kind on one device)",
                                () -> new CsrMatrix(1, 1, indptr, indices, data));
                    }
                }));
    }

    @Test
    void shouldRejectClosedComponents() throws Exception {
        withAllocator(TestMemory.HOST, alloc -> {
            NdArray row = NdArray.fromArray(alloc, new int[] {0}, 1);
            row.close();
            try (NdArray col = NdArray.fromArray(alloc, new int[] {0}, 1);
                    NdArray data = NdArray.fromArray(alloc, new double[] {1}, 1)) {
                IllegalStateException e =
                        assertThrows(IllegalStateException.class, () -> new CooMatrix(1, 1, row, col, data));
                assertEquals("row: NdArray[int32, (1,), C, HOST] (closed) is closed", e.getMessage());
            }
        });
    }

    @Test
    void shouldRejectInvalidContentsOfJavaArraysBeforeUploading() throws Exception {
        withAllocator(TestMemory.DEVICE, alloc -> {
            assertMessage(
                    "indptr[0]: 1 (expected: 0)",
                    () -> CsrMatrix.fromArrays(alloc, 2, 2, new int[] {1, 1, 2}, new int[] {0, 1}, new float[2]));
            assertMessage(
                    "indptr[2]: 1 (expected: >= indptr[1] = 2)",
                    () -> CsrMatrix.fromArrays(alloc, 2, 2, new int[] {0, 2, 1}, new int[] {0, 1}, new float[2]));
            assertMessage(
                    "indptr[2]: 1 (expected: 2, the number of stored values)",
                    () -> CsrMatrix.fromArrays(alloc, 2, 2, new int[] {0, 1, 1}, new int[] {0, 1}, new float[2]));
            assertMessage(
                    "indices[1]: 2 (expected: 0 <= index < 2, the number of columns)",
                    () -> CsrMatrix.fromArrays(alloc, 2, 2, new int[] {0, 1, 2}, new int[] {0, 2}, new float[2]));
            assertMessage(
                    "indices[0]: 5 (expected: 0 <= index < 3, the number of rows)",
                    () -> CscMatrix.fromArrays(alloc, 3, 1, new long[] {0, 1}, new long[] {5}, new double[1]));
            assertMessage(
                    "indices: 2 elements, data: 3 elements (expected: equal, one per stored value)",
                    () -> CsrMatrix.fromArrays(alloc, 2, 2, new int[] {0, 1, 2}, new int[] {0, 1}, new float[3]));
            assertMessage(
                    "col[0]: -1 (expected: 0 <= index < 2, the number of columns)",
                    () -> CooMatrix.fromArrays(alloc, 2, 2, new int[] {0}, new int[] {-1}, new float[1]));
            assertMessage(
                    "dense[1].length: 1 (expected: 2, the length of dense[0])",
                    () -> CsrMatrix.fromDense(alloc, new double[][] {{1, 2}, {3}}));
            assertEquals(0, alloc.openBuffers());
        });
    }

    @Test
    void shouldReportInvalidContentsFoundWhenReading() throws Exception {
        withAllocator(TestMemory.DEVICE, alloc -> {
            try (CsrMatrix m = new CsrMatrix(
                    2,
                    2,
                    NdArray.fromArray(alloc, new int[] {0, 1, 2}, 3),
                    NdArray.fromArray(alloc, new int[] {0, 7}, 2),
                    NdArray.fromArray(alloc, new float[2], 2))) {
                IllegalStateException e = assertThrows(IllegalStateException.class, m::toDense);
                assertEquals(
                        "invalid contents of CsrMatrix[(2, 2), nnz 2, int32 indices, float32 values, "
                                + TestMemory.DEVICE.location()
                                + "]: indices[1]: 7 (expected: 0 <= index < 2, the number of"
                                + " columns)",
                        e.getMessage());
                assertThrows(IllegalStateException.class, () -> m.toCoo(alloc));
            }
        });
    }

    private static void assertMessage(String expected, org.junit.jupiter.api.function.Executable body) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, body);
        assertEquals(expected, e.getMessage());
    }
}
