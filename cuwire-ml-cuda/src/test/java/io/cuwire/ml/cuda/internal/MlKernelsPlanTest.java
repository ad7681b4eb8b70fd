package io.cuwire.ml.cuda.internal;

import static io.cuwire.ml.cuda.internal.MlKernelTable.NEAREST_ROWS_K32_F32;
import static io.cuwire.ml.cuda.internal.MlKernelTable.NEAREST_ROWS_K32_F64;
import static io.cuwire.ml.cuda.internal.MlKernelTable.NEAREST_ROWS_K8_F32;
import static io.cuwire.ml.cuda.internal.MlKernelTable.NEAREST_ROWS_K8_F64;
import static io.cuwire.ml.cuda.internal.MlKernelTable.NEAREST_ROWS_REGS_K4X2_F32;
import static io.cuwire.ml.cuda.internal.MlKernelTable.NEAREST_ROWS_REGS_K8X1_F32;
import static io.cuwire.ml.cuda.internal.MlKernelTable.NEAREST_ROWS_REGS_V4_K4X2_F32;
import static io.cuwire.ml.cuda.internal.MlKernelTable.NEAREST_ROWS_REGS_V4_K8X1_F32;
import static io.cuwire.ml.cuda.internal.MlKernelTable.NEAREST_ROWS_V4_K32_F32;
import static io.cuwire.ml.cuda.internal.MlKernelTable.NEAREST_ROWS_V4_K8_F32;
import static io.cuwire.ml.cuda.internal.MlKernelTable.SELECT_K32_F32;
import static io.cuwire.ml.cuda.internal.MlKernelTable.SELECT_K32_F64;
import static io.cuwire.ml.cuda.internal.MlKernelTable.SELECT_K8_F32;
import static io.cuwire.ml.cuda.internal.MlKernelTable.SELECT_K8_F64;
import static io.cuwire.ml.cuda.internal.MlKernelTable.SELECT_MERGE_K32_F64;
import static io.cuwire.ml.cuda.internal.MlKernelTable.SELECT_MERGE_K8_F32;
import static io.cuwire.ml.cuda.internal.MlKernelTable.SELECT_RADIX_F32;
import static io.cuwire.ml.cuda.internal.MlKernelTable.SELECT_RADIX_F64;
import static io.cuwire.ml.cuda.internal.MlKernelTable.SELECT_RADIX_MERGE_F32;
import static io.cuwire.ml.cuda.internal.MlKernelTable.SELECT_RADIX_MERGE_F64;
import static io.cuwire.ml.cuda.internal.MlKernelTable.SMALLEST_K_F32;
import static io.cuwire.ml.cuda.internal.MlKernelTable.SMALLEST_K_F64;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.cuwire.cuda.Kernel;
import io.cuwire.cuda.KernelParam;
import io.cuwire.memory.DType;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Without a GPU: the launch plans of {@link MlKernels} (which kernel of {@link MlKernelTable}, how many blocks, how
 * much scratch) at the bounds of each path, and the kernel table that the kernels manifest generates.
 */
class MlKernelsPlanTest {
    /** The table holds each kernel of the manifest once, and its selectors find each instantiation by its axes. */
    @Test
    void shouldSelectEachInstantiationOfTheManifestByItsAxes() {
        assertEquals(
                MlKernelTable.ALL.size(),
                MlKernelTable.ALL.stream().map(Kernel::name).distinct().count());
        assertEquals("ml_map_f32", MlKernelTable.map(DType.FLOAT32).name());
        assertEquals(
                List.of(KernelParam.I64, KernelParam.I32, KernelParam.PTR, KernelParam.PTR),
                MlKernelTable.map(DType.FLOAT64).signature());
        assertEquals(
                "ml_merge_neighbors_f64_i32",
                MlKernelTable.mergeNeighbors(DType.FLOAT64, DType.INT32).name());
        assertEquals(
                "ml_select_merge_k32_f32",
                MlKernelTable.selectMerge(32, DType.FLOAT32).name());
        assertEquals("ml_gather_rows_w4", MlKernelTable.gatherRows(4).name());
        assertEquals(
                List.of(
                        KernelParam.I64,
                        KernelParam.I64,
                        KernelParam.I32,
                        KernelParam.F64,
                        KernelParam.PTR,
                        KernelParam.PTR,
                        KernelParam.F64,
                        KernelParam.PTR),
                MlKernelTable.gemvRows(DType.FLOAT32).signature());
        assertEquals(
                "no kernel ml_map_{T} for T = INT32",
                assertThrows(IllegalArgumentException.class, () -> MlKernelTable.map(DType.INT32))
                        .getMessage());
        assertEquals(
                "no kernel ml_select_{K}_{T} for K = 16, T = FLOAT32",
                assertThrows(IllegalArgumentException.class, () -> MlKernelTable.select(16, DType.FLOAT32))
                        .getMessage());
    }

    @Test
    void shouldGiveEachLaneOfARowGroupAtMostEightElementsOfARowWithinOneWarp() {
        assertEquals(1, MlKernels.rowLanes(0));
        assertEquals(1, MlKernels.rowLanes(8));
        assertEquals(2, MlKernels.rowLanes(9));
        assertEquals(8, MlKernels.rowLanes(64));
        assertEquals(16, MlKernels.rowLanes(100));
        assertEquals(32, MlKernels.rowLanes(256));
        assertEquals(32, MlKernels.rowLanes(1_000_000));
        assertTrue(MlKernels.nearestRowsFits(8, 64));
        assertTrue(MlKernels.nearestRowsFits(32, 128));
        assertTrue(!MlKernels.nearestRowsFits(33, 2)
                && !MlKernels.nearestRowsFits(8, 513)
                && !MlKernels.nearestRowsFits(0, 4));
    }

    /**
     * gemvRows takes the float4 kernel only for float32 rows of a multiple of 4 elements from a 16-byte aligned start
     * and when allowed, with one float4 of a row a lane up to 128 columns; every other shape the scalar kernel.
     */
    @Test
    void shouldTakeTheFloat4GemvKernelOnlyForAlignedFloat32RowsOfWholeFloat4s() {
        assertEquals(
                "ml_gemv_rows_v4_f32",
                MlKernels.gemvKernel(true, DType.FLOAT32, 64, true).name());
        assertEquals(
                "ml_gemv_rows_v4_f32",
                MlKernels.gemvKernel(true, DType.FLOAT32, 4, true).name());
        assertEquals(
                "ml_gemv_rows_f32",
                MlKernels.gemvKernel(true, DType.FLOAT32, 66, true).name());
        assertEquals(
                "ml_gemv_rows_f32",
                MlKernels.gemvKernel(true, DType.FLOAT32, 64, false).name());
        assertEquals(
                "ml_gemv_rows_f32",
                MlKernels.gemvKernel(false, DType.FLOAT32, 64, true).name());
        assertEquals(
                "ml_gemv_rows_f64",
                MlKernels.gemvKernel(true, DType.FLOAT64, 64, true).name());
        assertEquals(1, MlKernels.rowLanesV4(4));
        assertEquals(2, MlKernels.rowLanesV4(8));
        assertEquals(4, MlKernels.rowLanesV4(12));
        assertEquals(16, MlKernels.rowLanesV4(64));
        assertEquals(32, MlKernels.rowLanesV4(128));
        assertEquals(32, MlKernels.rowLanesV4(4096));
        assertTrue(MlKernels.gemvV4Setting(), "auto unless -Dcuwire.ml.gemvKernel=scalar");
    }

    /**
     * The scatter plan's branches: no plan (the atomic kernel) for 0 or more than 192 rows out; lanes of 8 warps up
     * to 24 rows out, fewer above (each warp holds k x 32 doubles of the block's 48 KiB); runs of about 512 rows, at
     * most 1024 blocks over all column tiles, one run a tile when the tiles alone are more.
     */
    @Test
    void shouldPlanEachScatterPathAtItsBounds() {
        assertEquals(
                new MlKernels.ScatterPlan(196, 511, 8, 196, 196L * 8 * 32 * 8),
                MlKernels.scatterPlan(100_000, 32, 8),
                "the bench's KMeans step");
        assertEquals(new MlKernels.ScatterPlan(1, 100, 8, 1, 32L * 8), MlKernels.scatterPlan(100, 32, 1));
        assertEquals(new MlKernels.ScatterPlan(6, 500, 8, 12, 6L * 8 * 33 * 8), MlKernels.scatterPlan(3000, 33, 8));
        assertEquals(8, MlKernels.scatterPlan(2000, 70, 24).lanes());
        assertEquals(7, MlKernels.scatterPlan(2000, 70, 25).lanes());
        assertEquals(1, MlKernels.scatterPlan(2000, 70, MlKernels.SCATTER_MAX_K).lanes());
        assertEquals(
                0, MlKernels.scatterPlan(2000, 70, MlKernels.SCATTER_MAX_K + 1).parts());
        assertEquals(0, MlKernels.scatterPlan(2000, 70, 0).parts());
        assertEquals(0, MlKernels.scatterPlan(0, 70, 8).parts());
        MlKernels.ScatterPlan wide = MlKernels.scatterPlan(1_000_000, 4096, 8);
        assertEquals(8, wide.parts(), "1024 blocks over 128 column tiles");
        assertEquals(1024, wide.blocks());
        MlKernels.ScatterPlan wider = MlKernels.scatterPlan(1000, 40_000, 2);
        assertEquals(1, wider.parts());
        assertEquals(1250, wider.blocks());
        assertEquals(65_535, MlKernels.scatterPlan(10, 3_000_000, 1).blocks(), "the grid's limit; blocks loop");
    }

    /**
     * The selection plan's branches, on an H200's 132 SMs: a warp a row up to 2048 columns, a block a row beyond, rows
     * cut into parts when they are too few for 4 blocks an SM, the 8-key kernels up to k = 8, the radix select above
     * k = 32 up to k = 1024 (a block a row even for short rows, and cut as the others), and one thread a row above (or
     * for rows of 2^31 columns and more).
     */
    @Test
    void shouldPlanEachSelectionPathAtItsBounds() {
        int sms = 132;
        MlKernels.SelectPlan warp = MlKernels.selectPlan(DType.FLOAT32, 1000, 2048, 8, sms);
        assertEquals(new MlKernels.SelectPlan(SELECT_K8_F32, null, 1, 32, 125, 0), warp);
        assertEquals(
                SELECT_K32_F64,
                MlKernels.selectPlan(DType.FLOAT64, 1000, 2048, 9, sms).kernel());
        assertEquals(
                SELECT_K32_F32,
                MlKernels.selectPlan(DType.FLOAT32, 1, 32, 32, sms).kernel());
        assertEquals(
                new MlKernels.SelectPlan(SELECT_RADIX_F32, null, 1, 256, 1, 0),
                MlKernels.selectPlan(DType.FLOAT32, 1, 33, 33, sms));
        assertEquals(
                new MlKernels.SelectPlan(SELECT_RADIX_F64, null, 1, 256, 1000, 0),
                MlKernels.selectPlan(DType.FLOAT64, 1000, 2048, MlKernels.SELECT_RADIX_MAX_K, sms),
                "short rows: a block a row all the same");
        assertEquals(
                new MlKernels.SelectPlan(
                        SELECT_RADIX_F32, SELECT_RADIX_MERGE_F32, 13, 256, 41 * 13, 41L * 13 * 100 * 8),
                MlKernels.selectPlan(DType.FLOAT32, 41, 100_000, 100, sms),
                "few long rows: cut");
        assertEquals(
                new MlKernels.SelectPlan(SELECT_RADIX_F64, SELECT_RADIX_MERGE_F64, 528, 256, 528, 528L * 1024 * 16),
                MlKernels.selectPlan(DType.FLOAT64, 1, 10_000_000, 1024, sms));
        assertEquals(
                1, MlKernels.selectPlan(DType.FLOAT64, 528, 100_000, 33, sms).parts(), "rows enough: not cut");
        assertEquals(
                65_535,
                MlKernels.selectPlan(DType.FLOAT32, 100_000, 2000, 100, sms).blocks(),
                "grid capped");
        assertEquals(
                new MlKernels.SelectPlan(SMALLEST_K_F64, null, 1, 1, 1, 0),
                MlKernels.selectPlan(DType.FLOAT64, 3, 2000, MlKernels.SELECT_RADIX_MAX_K + 1, sms));
        assertEquals(
                SMALLEST_K_F32,
                MlKernels.selectPlan(DType.FLOAT32, 1, 1L << 31, 33, sms).kernel(),
                "columns past int32, k above 32: one thread a row");
        assertEquals(
                new MlKernels.SelectPlan(SELECT_K8_F64, null, 1, 256, 528, 0),
                MlKernels.selectPlan(DType.FLOAT64, 528, 2049, 5, sms),
                "enough rows: a block a row, no parts");
        // 41 rows of 100,000 (the neighbors bench's blocks): 13 slices of ~7,700, keys of 8 bytes
        assertEquals(
                new MlKernels.SelectPlan(SELECT_K8_F32, SELECT_MERGE_K8_F32, 13, 256, 41 * 13, 41L * 13 * 5 * 8),
                MlKernels.selectPlan(DType.FLOAT32, 41, 100_000, 5, sms));
        // one row of 10,000,000: as many slices as 4 blocks an SM, keys of 16 bytes for float64
        assertEquals(
                new MlKernels.SelectPlan(SELECT_K32_F64, SELECT_MERGE_K32_F64, 528, 256, 528, 528L * 32 * 16),
                MlKernels.selectPlan(DType.FLOAT64, 1, 10_000_000, 32, sms));
        assertEquals(2, MlKernels.selectPlan(DType.FLOAT32, 1, 8193, 1, sms).parts(), "slices of at least ~8192");
        assertEquals(1, MlKernels.selectPlan(DType.FLOAT32, 1, 8192, 1, sms).parts());
        assertEquals(null, MlKernels.selectPlan(DType.FLOAT32, 0, 10, 3, sms).kernel(), "no rows: nothing to launch");
        assertEquals(null, MlKernels.selectPlan(DType.FLOAT32, 10, 10, 0, sms).kernel(), "k = 0: nothing to launch");
        assertEquals(
                SMALLEST_K_F32,
                MlKernels.selectPlan(DType.FLOAT32, 1, 1L << 31, 5, sms).kernel(),
                "columns past int32: one thread a row");
        assertEquals(
                65_535,
                MlKernels.selectPlan(DType.FLOAT32, 10_000_000, 100, 5, sms).blocks(),
                "grid capped");
    }

    /** Which nearest-rows kernel runs for each setting, dtype, width, center count and alignment. */
    @Test
    void shouldPickTheNearestRowsKernelOfTheSetting() {
        MlKernels.NearestKernel auto = MlKernels.NearestKernel.AUTO;
        MlKernels.NearestKernel v4 = MlKernels.NearestKernel.V4;
        MlKernels.NearestKernel scalar = MlKernels.NearestKernel.SCALAR;
        assertEquals(NEAREST_ROWS_REGS_V4_K8X1_F32, MlKernels.nearestKernel(auto, DType.FLOAT32, 64, 8, true));
        assertEquals(NEAREST_ROWS_REGS_K8X1_F32, MlKernels.nearestKernel(auto, DType.FLOAT32, 64, 8, false));
        assertEquals(NEAREST_ROWS_REGS_K8X1_F32, MlKernels.nearestKernel(auto, DType.FLOAT32, 63, 1, true));
        assertEquals(NEAREST_ROWS_REGS_V4_K8X1_F32, MlKernels.nearestKernel(auto, DType.FLOAT32, 256, 5, true));
        assertEquals(NEAREST_ROWS_REGS_V4_K4X2_F32, MlKernels.nearestKernel(auto, DType.FLOAT32, 260, 4, true));
        assertEquals(NEAREST_ROWS_REGS_K4X2_F32, MlKernels.nearestKernel(auto, DType.FLOAT32, 511, 2, true));
        assertEquals(NEAREST_ROWS_V4_K8_F32, MlKernels.nearestKernel(auto, DType.FLOAT32, 260, 5, true));
        assertEquals(NEAREST_ROWS_V4_K8_F32, MlKernels.nearestKernel(auto, DType.FLOAT32, 516, 1, true));
        assertEquals(NEAREST_ROWS_K8_F32, MlKernels.nearestKernel(auto, DType.FLOAT32, 513, 1, true));
        assertEquals(NEAREST_ROWS_V4_K32_F32, MlKernels.nearestKernel(auto, DType.FLOAT32, 64, 9, true));
        assertEquals(NEAREST_ROWS_K32_F32, MlKernels.nearestKernel(auto, DType.FLOAT32, 66, 9, true));
        assertEquals(NEAREST_ROWS_K8_F64, MlKernels.nearestKernel(auto, DType.FLOAT64, 64, 8, true));
        assertEquals(NEAREST_ROWS_K32_F64, MlKernels.nearestKernel(v4, DType.FLOAT64, 64, 9, true));
        assertEquals(NEAREST_ROWS_V4_K8_F32, MlKernels.nearestKernel(v4, DType.FLOAT32, 64, 8, true));
        assertEquals(NEAREST_ROWS_K8_F32, MlKernels.nearestKernel(v4, DType.FLOAT32, 64, 8, false));
        assertEquals(NEAREST_ROWS_K8_F32, MlKernels.nearestKernel(scalar, DType.FLOAT32, 64, 8, true));
        assertEquals(
                System.getProperty(MlKernels.NEAREST_KERNEL_PROPERTY, "auto"),
                MlKernels.nearestKernelSetting().settingName(),
                "the setting of this run (auto by default)");
        assertEquals("scalar", scalar.settingName());
    }

    /**
     * The fused k-NN kernel: lists of 8 keys up to 8 neighbors, 32 up to 32, nothing above (the GEMM path) or at 2^31
     * rows; blocks of 32 queries, the rows cut into slices of at least 4,096 when the queries alone give the SMs
     * fewer than 8 blocks each, a merge exactly then, and the scratch of its keys (8 bytes a float32 key, 16 a
     * float64 one).
     */
    @Test
    void shouldPlanTheFusedNeighborsKernelByKAndCutTheRowsOnlyForFewQueries() {
        int sms = 132;
        MlKernels.KnnPlan many = MlKernels.knnPlan(DType.FLOAT32, 10_000, 1_000_000, 5, sms);
        assertEquals(MlKernelTable.knnFused(8, DType.FLOAT32), many.kernel());
        assertEquals(4, many.parts(), "313 blocks of queries, 1056 wanted: 4 slices");
        assertEquals(313 * 4, many.blocks());
        assertEquals(MlKernelTable.knnMerge(8, DType.FLOAT32), many.merge());
        assertEquals(10_000L * 4 * 5 * 8, many.scratchBytes());
        MlKernels.KnnPlan wide = MlKernels.knnPlan(DType.FLOAT64, 40_000, 1_000_000, 9, sms);
        assertEquals(MlKernelTable.knnFused(32, DType.FLOAT64), wide.kernel());
        assertEquals(1, wide.parts(), "1,250 blocks of queries: enough");
        assertEquals(null, wide.merge());
        assertEquals(0, wide.scratchBytes());
        MlKernels.KnnPlan few = MlKernels.knnPlan(DType.FLOAT64, 3, 20_000, 32, sms);
        assertEquals(4, few.parts(), "slices of at least 4,096 rows");
        assertEquals(3L * 4 * 32 * 16, few.scratchBytes());
        assertEquals(1, MlKernels.knnPlan(DType.FLOAT32, 1, 8191, 1, sms).parts());
        assertEquals(2, MlKernels.knnPlan(DType.FLOAT32, 1, 8192, 1, sms).parts());
        assertTrue(MlKernels.kNearestFusedFits(Integer.MAX_VALUE, MlKernels.KNN_FUSED_MAX_K));
        assertTrue(!MlKernels.kNearestFusedFits(1L << 31, 5) && !MlKernels.kNearestFusedFits(100, 33));
        assertEquals(
                "kNearestFused: k 33 of 100 rows (expected: 1 <= k <= 32 and rows < 2^31)",
                assertThrows(IllegalArgumentException.class, () -> MlKernels.knnPlan(DType.FLOAT32, 10, 100, 33, sms))
                        .getMessage());
    }

    @Test
    void shouldGatherInTheWidestWordThatDividesRowsAndAddresses() {
        assertEquals(8, MlKernels.wordSize(24, w -> 256 % w == 0 && 512 % w == 0));
        assertEquals(4, MlKernels.wordSize(12, w -> 256 % w == 0 && 512 % w == 0));
        assertEquals(4, MlKernels.wordSize(24, w -> 260 % w == 0 && 512 % w == 0));
        assertEquals(1, MlKernels.wordSize(3, w -> 256 % w == 0 && 512 % w == 0));
    }

    @Test
    void shouldSizeAForestBlobAsTheLayoutDoes() {
        // header 48, table (2 + 1) x 16, 8 nodes x 16, 5 leaves x 2 outputs x 8
        assertEquals(48 + 48 + 128 + 80, MlKernels.forestBytes(2, 2, 8, 5));
    }
}
