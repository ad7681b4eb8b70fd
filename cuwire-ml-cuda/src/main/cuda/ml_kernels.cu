// The kernels of cuwire-ml's CUDA compute backend, compiled by nvcc into io/cuwire/ml/cuda/ml_kernels.fatbin (a module
// of its own, loaded by io.cuwire.cuda.KernelModule) and launched from io.cuwire.ml.cuda.internal.MlKernels. One header
// per algorithm family under ml/ (implementations in ml/detail/); ml/common.cuh holds what they share; this file holds
// the extern "C" entry points.
//
// Conventions, as in cuwire-cuda's kernels.cu: 64-bit counts and indices, grid-stride loops (any grid covers any n).
// Launches use blocks of ML_BLOCK threads (io.cuwire.cuda.KernelModule.BLOCK); the block reductions rely on it.
// Arithmetic is done in double precision whatever the element type, so that a float32 result is the double result
// rounded once, as on cuwire-ml's CPU backend; only the cuBLAS products, the float32 atomics of ml_scatter_add_rows
// (more than 192 rows out), the float32 sum of tree outputs beyond 8 classes and the float32 nearest-rows distances of
// ml_nearest_rows_v4 (runs of 8) and ml_nearest_rows_regs (whole rows) accumulate in float32. The top-k selections
// compare values exactly (as ordered integers), whatever the element type.
//
// Arguments that may alias (in and out of map, softmax, cross-entropy) are not __restrict__. Kernels that validate
// values report the smallest failing position with atomicMin into an unsigned 64-bit error word that the host
// filled with INT64_MAX before the launch.

#include "ml/elementwise.cuh"
#include "ml/reduce.cuh"
#include "ml/distance.cuh"
#include "ml/loss.cuh"
#include "ml/indexing.cuh"
#include "ml/select.cuh"
#include "ml/forest.cuh"

extern "C" {

// ---------------------------------------------------------------- fill (float fills are fill_f32 / fill_f64)

__global__ void ml_fill_i32(int64_t n, int32_t value, int32_t* y) {
    GRID_STRIDE_LOOP(i, n) {
        y[i] = value;
    }
}

__global__ void ml_fill_i64(int64_t n, int64_t value, int64_t* y) {
    GRID_STRIDE_LOOP(i, n) {
        y[i] = value;
    }
}

// ---------------------------------------------------------------- element-wise

__global__ void ml_map_f32(int64_t n, int32_t op, const float* in, float* out) {
    ml_map(n, op, in, out);
}

__global__ void ml_map_f64(int64_t n, int32_t op, const double* in, double* out) {
    ml_map(n, op, in, out);
}

__global__ void ml_broadcast_rows_f32(int64_t n, int64_t cols, int32_t op, float* a, const float* v) {
    ml_broadcast_rows(n, cols, op, a, v);
}

__global__ void ml_broadcast_rows_f64(int64_t n, int64_t cols, int32_t op, double* a, const double* v) {
    ml_broadcast_rows(n, cols, op, a, v);
}

__global__ void ml_softmax_rows_f32(int64_t rows, int64_t cols, const float* in, float* out) {
    ml_softmax_rows(rows, cols, in, out);
}

__global__ void ml_softmax_rows_f64(int64_t rows, int64_t cols, const double* in, double* out) {
    ml_softmax_rows(rows, cols, in, out);
}

// ---------------------------------------------------------------- reductions: partial[blockIdx.x] per block

__global__ void ml_reduce_f32(int64_t n, int32_t op, const float* a, double* partial) {
    ml_reduce(n, op, a, partial);
}

__global__ void ml_reduce_f64(int64_t n, int32_t op, const double* a, double* partial) {
    ml_reduce(n, op, a, partial);
}

__global__ void ml_reduce_i32(int64_t n, int32_t op, const int32_t* a, double* partial) {
    ml_reduce(n, op, a, partial);
}

__global__ void ml_reduce_i64(int64_t n, int32_t op, const int64_t* a, double* partial) {
    ml_reduce(n, op, a, partial);
}

__global__ void ml_dot_f32(int64_t n, const float* x, const float* y, double* partial) {
    ml_dot(n, x, y, partial);
}

__global__ void ml_dot_f64(int64_t n, const double* x, const double* y, double* partial) {
    ml_dot(n, x, y, partial);
}

__global__ void ml_count_equal_i32(int64_t n, const int32_t* a, const int32_t* b, double* partial) {
    ml_count_equal(n, a, b, partial);
}

__global__ void ml_count_equal_i64(int64_t n, const int64_t* a, const int64_t* b, double* partial) {
    ml_count_equal(n, a, b, partial);
}

__global__ void ml_arg_rows_f32(int64_t rows, int64_t cols, int32_t largest, const float* a, int32_t* index,
                                float* best) {
    ml_arg_rows(rows, cols, largest, a, index, best);
}

__global__ void ml_arg_rows_f64(int64_t rows, int64_t cols, int32_t largest, const double* a, int32_t* index,
                                double* best) {
    ml_arg_rows(rows, cols, largest, a, index, best);
}

// ---------------------------------------------------------------- fused

__global__ void ml_cross_entropy_f32(int64_t rows, int64_t cols, const float* z, const int32_t* labels,
                                     float* grad, double* rowLoss, unsigned long long* error) {
    ml_cross_entropy(rows, cols, z, labels, grad, rowLoss, error);
}

__global__ void ml_cross_entropy_f64(int64_t rows, int64_t cols, const double* z, const int32_t* labels,
                                     double* grad, double* rowLoss, unsigned long long* error) {
    ml_cross_entropy(rows, cols, z, labels, grad, rowLoss, error);
}

__global__ void ml_row_sq_norms_f32(int64_t rows, int64_t cols, const float* x, float* norms) {
    ml_row_sq_norms(rows, cols, x, norms);
}

__global__ void ml_row_sq_norms_f64(int64_t rows, int64_t cols, const double* x, double* norms) {
    ml_row_sq_norms(rows, cols, x, norms);
}

__global__ void ml_add_norms_clamp_f32(int64_t n, int64_t m, float* out, const float* xn, const float* yn) {
    ml_add_norms_clamp(n, m, out, xn, yn);
}

__global__ void ml_add_norms_clamp_f64(int64_t n, int64_t m, double* out, const double* xn, const double* yn) {
    ml_add_norms_clamp(n, m, out, xn, yn);
}

// ---------------------------------------------------------------- row groups (launched with rows x lanes threads)

__global__ void ml_gemv_rows_f32(int64_t rows, int64_t cols, int32_t lanes, double alpha, const float* a,
                                 const float* x, double beta, float* y) {
    ml_gemv_rows(rows, cols, lanes, alpha, a, x, beta, y);
}

__global__ void ml_gemv_rows_f64(int64_t rows, int64_t cols, int32_t lanes, double alpha, const double* a,
                                 const double* x, double beta, double* y) {
    ml_gemv_rows(rows, cols, lanes, alpha, a, x, beta, y);
}

__global__ void ml_nearest_rows_k8_f32(int64_t rows, int64_t cols, int64_t k, int32_t lanes, const float* x,
                                       const float* c, int32_t* index, float* best) {
    ml_nearest_rows<8>(rows, cols, k, lanes, x, c, index, best);
}

__global__ void ml_nearest_rows_k8_f64(int64_t rows, int64_t cols, int64_t k, int32_t lanes, const double* x,
                                       const double* c, int32_t* index, double* best) {
    ml_nearest_rows<8>(rows, cols, k, lanes, x, c, index, best);
}

__global__ void ml_nearest_rows_k32_f32(int64_t rows, int64_t cols, int64_t k, int32_t lanes, const float* x,
                                        const float* c, int32_t* index, float* best) {
    ml_nearest_rows<32>(rows, cols, k, lanes, x, c, index, best);
}

__global__ void ml_nearest_rows_k32_f64(int64_t rows, int64_t cols, int64_t k, int32_t lanes, const double* x,
                                        const double* c, int32_t* index, double* best) {
    ml_nearest_rows<32>(rows, cols, k, lanes, x, c, index, best);
}

__global__ void ml_nearest_rows_v4_k8_f32(int64_t rows, int64_t cols, int64_t k, int32_t lanes, const float* x,
                                          const float* c, int32_t* index, float* best) {
    ml_nearest_rows_v4<8>(rows, cols, k, lanes, x, c, index, best);
}

__global__ void ml_nearest_rows_v4_k32_f32(int64_t rows, int64_t cols, int64_t k, int32_t lanes, const float* x,
                                           const float* c, int32_t* index, float* best) {
    ml_nearest_rows_v4<32>(rows, cols, k, lanes, x, c, index, best);
}

// The registers kernels: 64 center floats and two rows' elements a thread; at most 128 registers, two blocks an SM.
__launch_bounds__(ML_BLOCK, 2)
__global__ void ml_nearest_rows_regs_v4_k8x1_f32(int64_t rows, int64_t cols, int64_t k, int32_t lanes, const float* x,
                                                 const float* c, int32_t* index, float* best) {
    ml_nearest_rows_regs<8, 1, true>(rows, cols, k, lanes, x, c, index, best);
}

__launch_bounds__(ML_BLOCK, 2)
__global__ void ml_nearest_rows_regs_k8x1_f32(int64_t rows, int64_t cols, int64_t k, int32_t lanes, const float* x,
                                              const float* c, int32_t* index, float* best) {
    ml_nearest_rows_regs<8, 1, false>(rows, cols, k, lanes, x, c, index, best);
}

__launch_bounds__(ML_BLOCK, 2)
__global__ void ml_nearest_rows_regs_v4_k4x2_f32(int64_t rows, int64_t cols, int64_t k, int32_t lanes, const float* x,
                                                 const float* c, int32_t* index, float* best) {
    ml_nearest_rows_regs<4, 2, true>(rows, cols, k, lanes, x, c, index, best);
}

__launch_bounds__(ML_BLOCK, 2)
__global__ void ml_nearest_rows_regs_k4x2_f32(int64_t rows, int64_t cols, int64_t k, int32_t lanes, const float* x,
                                              const float* c, int32_t* index, float* best) {
    ml_nearest_rows_regs<4, 2, false>(rows, cols, k, lanes, x, c, index, best);
}

// ---------------------------------------------------------------- indexing

__global__ void ml_gather_rows_w8(int64_t count, int64_t words, int64_t srcRows, const void* index, int32_t index64,
                                  const uint64_t* src, uint64_t* out, unsigned long long* error) {
    ml_gather_rows(count, words, srcRows, index, index64, src, out, error);
}

__global__ void ml_gather_rows_w4(int64_t count, int64_t words, int64_t srcRows, const void* index, int32_t index64,
                                  const uint32_t* src, uint32_t* out, unsigned long long* error) {
    ml_gather_rows(count, words, srcRows, index, index64, src, out, error);
}

__global__ void ml_gather_rows_w1(int64_t count, int64_t words, int64_t srcRows, const void* index, int32_t index64,
                                  const uint8_t* src, uint8_t* out, unsigned long long* error) {
    ml_gather_rows(count, words, srcRows, index, index64, src, out, error);
}

__global__ void ml_scatter_add_rows_f32(int64_t n, int64_t cols, int64_t k, const float* src, const int32_t* index,
                                       float* out, unsigned long long* error) {
    ml_scatter_add_rows(n, cols, k, src, index, out, error);
}

__global__ void ml_scatter_add_rows_f64(int64_t n, int64_t cols, int64_t k, const double* src,
                                       const int32_t* index, double* out, unsigned long long* error) {
    ml_scatter_add_rows(n, cols, k, src, index, out, error);
}

__global__ void ml_bincount_f32(int64_t n, int64_t k, const int32_t* index, float* out, unsigned long long* error) {
    ml_bincount(n, k, index, out, error);
}

__global__ void ml_bincount_f64(int64_t n, int64_t k, const int32_t* index, double* out,
                                unsigned long long* error) {
    ml_bincount(n, k, index, out, error);
}

__global__ void ml_scatter_sums_f32(int64_t n, int64_t cols, int64_t k, int64_t parts, int64_t rowsPerPart,
                                    int32_t lanes, const float* src, const int32_t* index, double* partial,
                                    unsigned long long* error) {
    ml_scatter_sums(n, cols, k, parts, rowsPerPart, lanes, src, index, partial, error);
}

__global__ void ml_scatter_sums_f64(int64_t n, int64_t cols, int64_t k, int64_t parts, int64_t rowsPerPart,
                                    int32_t lanes, const double* src, const int32_t* index, double* partial,
                                    unsigned long long* error) {
    ml_scatter_sums(n, cols, k, parts, rowsPerPart, lanes, src, index, partial, error);
}

__global__ void ml_scatter_finish_f32(int64_t parts, int64_t elements, const double* partial, float* out) {
    ml_scatter_finish(parts, elements, partial, out);
}

__global__ void ml_scatter_finish_f64(int64_t parts, int64_t elements, const double* partial, double* out) {
    ml_scatter_finish(parts, elements, partial, out);
}

__global__ void ml_bincount_blocks_f32(int64_t n, int64_t k, const int32_t* index, float* out,
                                       unsigned long long* error) {
    ml_bincount_blocks(n, k, index, out, error);
}

__global__ void ml_bincount_blocks_f64(int64_t n, int64_t k, const int32_t* index, double* out,
                                       unsigned long long* error) {
    ml_bincount_blocks(n, k, index, out, error);
}

__global__ void ml_count_rows_f32(int64_t rows, int64_t k, int64_t classes, const int32_t* labels, float* out,
                                  unsigned long long* error) {
    ml_count_rows(rows, k, classes, labels, out, error);
}

__global__ void ml_count_rows_f64(int64_t rows, int64_t k, int64_t classes, const int32_t* labels, double* out,
                                  unsigned long long* error) {
    ml_count_rows(rows, k, classes, labels, out, error);
}

// ---------------------------------------------------------------- neighbors

__global__ void ml_smallest_k_f32(int64_t rows, int64_t cols, int64_t k, int64_t idOffset, const float* values,
                                  float* outValues, int64_t* outIds) {
    ml_smallest_k(rows, cols, k, idOffset, values, outValues, outIds);
}

__global__ void ml_smallest_k_f64(int64_t rows, int64_t cols, int64_t k, int64_t idOffset, const double* values,
                                  double* outValues, int64_t* outIds) {
    ml_smallest_k(rows, cols, k, idOffset, values, outValues, outIds);
}

__global__ void ml_select_k8_f32(int64_t rows, int64_t cols, int64_t k, int64_t parts, int32_t group, int64_t idOffset,
                                 const float* values, float* outValues, int64_t* outIds, void* partial) {
    ml_select<float, 8>(rows, cols, k, parts, group, idOffset, values, outValues, outIds,
                        (unsigned long long*) partial);
}

__global__ void ml_select_merge_k8_f32(int64_t rows, int64_t cols, int64_t k, int64_t parts, int64_t idOffset,
                                       const float* values, const void* partial, float* outValues,
                                       int64_t* outIds) {
    ml_select_merge<float, 8>(rows, cols, k, parts, idOffset, values, (const unsigned long long*) partial,
                              outValues, outIds);
}

__global__ void ml_select_k8_f64(int64_t rows, int64_t cols, int64_t k, int64_t parts, int32_t group, int64_t idOffset,
                                 const double* values, double* outValues, int64_t* outIds, void* partial) {
    ml_select<double, 8>(rows, cols, k, parts, group, idOffset, values, outValues, outIds,
                         (unsigned long long*) partial);
}

__global__ void ml_select_merge_k8_f64(int64_t rows, int64_t cols, int64_t k, int64_t parts, int64_t idOffset,
                                       const double* values, const void* partial, double* outValues,
                                       int64_t* outIds) {
    ml_select_merge<double, 8>(rows, cols, k, parts, idOffset, values, (const unsigned long long*) partial,
                               outValues, outIds);
}

__global__ void ml_select_k32_f32(int64_t rows, int64_t cols, int64_t k, int64_t parts, int32_t group, int64_t idOffset,
                                  const float* values, float* outValues, int64_t* outIds, void* partial) {
    ml_select<float, 32>(rows, cols, k, parts, group, idOffset, values, outValues, outIds,
                         (unsigned long long*) partial);
}

__global__ void ml_select_merge_k32_f32(int64_t rows, int64_t cols, int64_t k, int64_t parts, int64_t idOffset,
                                        const float* values, const void* partial, float* outValues,
                                        int64_t* outIds) {
    ml_select_merge<float, 32>(rows, cols, k, parts, idOffset, values, (const unsigned long long*) partial,
                               outValues, outIds);
}

// Two blocks a multiprocessor: 32 keys of 3 words and 4 elements in flight would take ~140 registers (one block
// of 256); capped at 128, ptxas spills a few words (40 bytes) of the rare insertion path.
__launch_bounds__(ML_BLOCK, 2)
__global__ void ml_select_k32_f64(int64_t rows, int64_t cols, int64_t k, int64_t parts, int32_t group, int64_t idOffset,
                                  const double* values, double* outValues, int64_t* outIds, void* partial) {
    ml_select<double, 32>(rows, cols, k, parts, group, idOffset, values, outValues, outIds,
                          (unsigned long long*) partial);
}

__global__ void ml_select_merge_k32_f64(int64_t rows, int64_t cols, int64_t k, int64_t parts, int64_t idOffset,
                                        const double* values, const void* partial, double* outValues,
                                        int64_t* outIds) {
    ml_select_merge<double, 32>(rows, cols, k, parts, idOffset, values, (const unsigned long long*) partial,
                                outValues, outIds);
}

__global__ void ml_select_radix_f32(int64_t rows, int64_t cols, int64_t k, int64_t parts, int64_t idOffset,
                                    const float* values, float* outValues, int64_t* outIds, void* partial) {
    ml_select_radix(rows, cols, k, parts, idOffset, values, outValues, outIds, (unsigned long long*) partial);
}

__global__ void ml_select_radix_merge_f32(int64_t rows, int64_t cols, int64_t k, int64_t parts, int64_t idOffset,
                                          const float* values, const void* partial, float* outValues,
                                          int64_t* outIds) {
    ml_select_radix_merge(rows, cols, k, parts, idOffset, values, (const unsigned long long*) partial, outValues,
                          outIds);
}

__global__ void ml_select_radix_f64(int64_t rows, int64_t cols, int64_t k, int64_t parts, int64_t idOffset,
                                    const double* values, double* outValues, int64_t* outIds, void* partial) {
    ml_select_radix(rows, cols, k, parts, idOffset, values, outValues, outIds, (unsigned long long*) partial);
}

__global__ void ml_select_radix_merge_f64(int64_t rows, int64_t cols, int64_t k, int64_t parts, int64_t idOffset,
                                          const double* values, const void* partial, double* outValues,
                                          int64_t* outIds) {
    ml_select_radix_merge(rows, cols, k, parts, idOffset, values, (const unsigned long long*) partial, outValues,
                          outIds);
}

__global__ void ml_merge_neighbors_f32_i32(int64_t rows, int64_t ka, int64_t kb, int64_t k, const float* da,
                                           const int32_t* ia, const float* db, const int32_t* ib, float* od,
                                           int32_t* oi) {
    ml_merge_neighbors(rows, ka, kb, k, da, ia, db, ib, od, oi);
}

__global__ void ml_merge_neighbors_f32_i64(int64_t rows, int64_t ka, int64_t kb, int64_t k, const float* da,
                                           const int64_t* ia, const float* db, const int64_t* ib, float* od,
                                           int64_t* oi) {
    ml_merge_neighbors(rows, ka, kb, k, da, ia, db, ib, od, oi);
}

__global__ void ml_merge_neighbors_f64_i32(int64_t rows, int64_t ka, int64_t kb, int64_t k, const double* da,
                                           const int32_t* ia, const double* db, const int32_t* ib, double* od,
                                           int32_t* oi) {
    ml_merge_neighbors(rows, ka, kb, k, da, ia, db, ib, od, oi);
}

__global__ void ml_merge_neighbors_f64_i64(int64_t rows, int64_t ka, int64_t kb, int64_t k, const double* da,
                                           const int64_t* ia, const double* db, const int64_t* ib, double* od,
                                           int64_t* oi) {
    ml_merge_neighbors(rows, ka, kb, k, da, ia, db, ib, od, oi);
}

// ---------------------------------------------------------------- forests

__global__ void ml_predict_forest_f32(int64_t rows, int32_t trees, int32_t features, int32_t outputs, int64_t nodes,
                                      int64_t leaves, const unsigned char* blob, const float* x, float* out,
                                      unsigned long long* error) {
    ml_predict_forest(rows, trees, features, outputs, nodes, leaves, blob, x, out, error);
}

__global__ void ml_predict_forest_f64(int64_t rows, int32_t trees, int32_t features, int32_t outputs, int64_t nodes,
                                      int64_t leaves, const unsigned char* blob, const double* x, double* out,
                                      unsigned long long* error) {
    ml_predict_forest(rows, trees, features, outputs, nodes, leaves, blob, x, out, error);
}

}  // extern "C"
