// Shared by every family of cuwire-ml-cuda's kernels: the grid-stride loop, constants, the operation codes and the
// device helpers: the operations' dispatch (ml_unary, ml_binary, ml_combine: the one CUDA place an operation of the
// manifest is implemented), value order, error reports, block reductions.
#pragma once

#include <math_constants.h>
#include <stdint.h>

#define GRID_STRIDE_LOOP(i, n) \
    for (int64_t i = (int64_t) blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
         i += (int64_t) blockDim.x * gridDim.x)

#define ML_BLOCK 256
#define ML_FOREST_CHUNK 8
// Row-group kernels (gemv rows, nearest rows): the elements of a row each lane loads before it computes.
#define ML_ROW_UNROLL 8
// ml_gemv_rows_v4: the rows a thread loads at once.
#define ML_GEMV_V4_ROWS 4
// Nearest rows: the centers (as doubles) a block holds in shared memory, k x cols at most.
#define ML_NEAREST_SHARED 4096
// Deterministic scatter-add: the doubles of a block's per-warp sums (warps x k x 32), 48 KiB: k <= 192.
#define ML_SCATTER_SHARED 6144
// Bincount with per-block counters: the most bins.
#define ML_BINCOUNT_SHARED 4096

namespace {

// The operation codes (MlUnary, MlBinary, MlReduce), generated from cuwire-ml's operations.manifest.
#include "ml_ops.cuh"

__device__ __forceinline__ double ml_sigmoid(double x) {
    if (x >= 0) {
        return 1.0 / (1.0 + exp(-x));
    }
    double e = exp(x);
    return e / (1.0 + e);
}

__device__ __forceinline__ double ml_unary(int32_t op, double x) {
    switch (op) {
        case ML_EXP: return exp(x);
        case ML_LOG: return log(x);
        case ML_SQRT: return sqrt(x);
        case ML_SIGMOID: return ml_sigmoid(x);
        case ML_TANH: return tanh(x);
        default: return CUDART_NAN;  // an operation of the manifest without its case here
    }
}

__device__ __forceinline__ double ml_binary(int32_t op, double a, double b) {
    switch (op) {
        case ML_ADD: return a + b;
        case ML_SUB: return a - b;
        case ML_MUL: return a * b;
        case ML_DIV: return a / b;
        default: return CUDART_NAN;  // an operation of the manifest without its case here
    }
}

// Java's Math.min / Math.max (NaN wins; -0.0 is below 0.0) and the sum.
__device__ __forceinline__ double ml_combine(int32_t op, double a, double b) {
    if (op == ML_SUM) {
        return a + b;
    }
    if (a != a) {
        return a;
    }
    if (b != b) {
        return b;
    }
    if (a == b) {
        bool negA = signbit(a);
        return (op == ML_MIN) == negA ? a : b;
    }
    if (op == ML_MIN) {
        return b < a ? b : a;
    }
    return b > a ? b : a;
}

__device__ __forceinline__ double ml_identity(int32_t op) {
    return op == ML_SUM ? 0.0 : (op == ML_MIN ? CUDART_INF : -CUDART_INF);
}

// Java's Double.compare: -0.0 below 0.0, NaN above everything and equal to itself.
__device__ __forceinline__ int ml_compare(double a, double b) {
    if (a < b) {
        return -1;
    }
    if (a > b) {
        return 1;
    }
    bool nanA = a != a;
    bool nanB = b != b;
    if (nanA || nanB) {
        return nanA == nanB ? 0 : (nanA ? 1 : -1);
    }
    bool negA = signbit(a);
    bool negB = signbit(b);
    return negA == negB ? 0 : (negA ? -1 : 1);
}

__device__ __forceinline__ void ml_report(unsigned long long* error, int64_t position) {
    atomicMin(error, (unsigned long long) position);
}

// Combines v over the block (blockDim.x == ML_BLOCK); thread 0 writes the result to *out.
__device__ __forceinline__ void ml_block_reduce(int32_t op, double v, double* out) {
    __shared__ double partial[ML_BLOCK];
    partial[threadIdx.x] = v;
    __syncthreads();
    for (unsigned int stride = ML_BLOCK / 2; stride > 0; stride >>= 1) {
        if (threadIdx.x < stride) {
            partial[threadIdx.x] = ml_combine(op, partial[threadIdx.x], partial[threadIdx.x + stride]);
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        *out = partial[0];
    }
}

}  // namespace
